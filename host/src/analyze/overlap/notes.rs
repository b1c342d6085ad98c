//! The notes under a stage's overlap table: what the reader must know to trust the rows
//! (one busy stream, same-stream overlap, the single-trace caveat, how scopes were
//! joined, rows below the share bar, ops left out of the sweep).

use std::collections::BTreeMap;

use super::scope::{Join, Scope, ScopeMap};
use super::sweep::Sweep;
use super::{MainStream, OverlapOptions, RowTotals, StageOps, NEGLIGIBLE_OTHER_STREAMS_PCT};
use crate::trace::event::ns_to_us;
use crate::trace::names::{short_name, SHORT_ARGS_MAX};

/// What one stage's sweep and scope join found, as the notes need it.
pub(super) struct StageNoteFacts<'a> {
    pub(super) formal: &'a StageOps,
    pub(super) rows: &'a [RowTotals],
    pub(super) joined: &'a [(Option<&'a Scope>, Join)],
    pub(super) measured: &'a Sweep,
    pub(super) stream_labels: &'a [String],
    pub(super) mapping_mode: bool,
    pub(super) scopes: Option<&'a ScopeMap>,
    pub(super) below_bar: usize,
    pub(super) opts: &'a OverlapOptions,
    /// Set when the other streams are negligible: the stage counts as one stream.
    pub(super) main_stream: Option<&'a MainStream>,
}

/// What the reader must know to trust the rows: one stream, same-stream overlap, the
/// single-trace caveat, the scope join, rows below the bar, ops left out.
pub(super) fn stage_notes(f: StageNoteFacts<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    let op_count = f.formal.ops.len();
    if f.measured.streams <= 1 {
        let stream = f.stream_labels.first().map_or("no stream", String::as_str);
        notes.push(format!(
            "one GPU stream ({stream}) ran all {op_count} GPU ops of this stage: nothing overlaps, so there are no overlap rows"
        ));
    }
    if let Some(main) = f.main_stream {
        notes.push(format!(
            "effectively one GPU stream ({}): the other {} stream(s) ran {} of {op_count} GPU ops, {:.2}% of the GPU op time (under the {:.1}% negligible bar), so nothing meaningful overlaps and there are no overlap rows",
            main.label,
            main.streams - 1,
            main.other_ops,
            main.other_pct,
            NEGLIGIBLE_OTHER_STREAMS_PCT
        ));
    }
    if f.measured.same_stream > 0 {
        let ops: u64 = f.rows.iter().map(|r| r.same_stream_ops).sum();
        // The row with the most same-stream time; the first one on a tie.
        let top = f
            .rows
            .iter()
            .reduce(|best, r| {
                if r.same_stream > best.same_stream {
                    r
                } else {
                    best
                }
            })
            .map(|r| short_name(&r.name, SHORT_ARGS_MAX))
            .unwrap_or_default();
        notes.push(format!(
            "{ops} GPU ops ran while another op of their own stream was running ({:.1} us of same-stream overlap, most in {top}); they count as exclusive unless another stream was busy",
            ns_to_us(f.measured.same_stream)
        ));
    }
    if f.measured.streams >= 2 && f.main_stream.is_none() {
        if f.mapping_mode {
            match f.scopes {
                None => notes.push(
                    "no mapping trace covers this stage: Python scopes are unmapped and dependency risk reads only same-stream adjacency".to_string(),
                ),
                Some(map) => {
                    let mut counts: BTreeMap<Join, usize> = BTreeMap::new();
                    for (_, join) in f.joined {
                        *counts.entry(*join).or_default() += 1;
                    }
                    let label = |j: Join| match j {
                        Join::Name => "by canonical name",
                        Join::BaseName => "by name without template arguments",
                        Join::FamilyLocation => "by family and launch location",
                        Join::Family => "by family (one location in the mapping trace)",
                        Join::Unmapped => "unmapped",
                    };
                    let parts: Vec<String> = counts
                        .iter()
                        .map(|(j, n)| format!("{n} {}", label(*j)))
                        .collect();
                    notes.push(format!(
                        "Python scope from the mapping trace for {} kernels: {}",
                        f.rows.len(),
                        parts.join(", ")
                    ));
                    if map.graph_replays > 0 {
                        notes.push(format!(
                            "the mapping trace replays CUDA graphs ({} of {} GPU ops): those carry no per-kernel scope; capture it with CUDA graphs off",
                            map.graph_replays, map.ops
                        ));
                    }
                }
            }
        } else {
            let replays: u64 = f.rows.iter().map(|r| r.graph_replays).sum();
            let graphs = if replays > 0 {
                format!(
                    "{replays} of {op_count} GPU ops replay CUDA graphs, so their Python scope is the graph launch here, as in the kernel table; "
                )
            } else {
                String::new()
            };
            notes.push(format!(
                "single-trace mode: hidden and exclusive times are exact; {graphs}Python scopes under CUDA graphs and the dependency risk (producer/consumer chains) need mapping+formal mode (--mapping-input with graphs off, --formal-input)"
            ));
        }
        if f.below_bar > 0 {
            notes.push(format!(
                "{} candidate rows below {:.1}% of busy time hidden",
                f.below_bar, f.opts.min_share_pct
            ));
        }
    }
    notes.extend(f.formal.notes.iter().cloned());
    notes
}
