//! The exposure sweep (the predecessor's, with two fixes: stream 0 is a stream like any
//! other, and ops overlapping on one stream are reported rather than counted exposed):
//! one pass over
//! the start and end points of every GPU op of a stage, in integer nanoseconds.
//!
//! Between two consecutive points the set of running ops is fixed (a *segment*). For a
//! running op the segment is **hidden** when another stream is busy, **hidden by
//! compute** when a compute op runs on another stream, and **exclusive** otherwise; the
//! busiest op of the other streams (category priority, then the longest) is its partner
//! for the segment. Two ops running at once on the *same* stream (PDL, or a trace whose
//! clocks disagree) are counted as same-stream overlap and reported; they do not hide
//! each other, because they compete for the same queue.
//!
//! Cost: sorting the points, O(n log n), then O(active streams) per segment. Per-op
//! times are not added segment by segment: each stream keeps running totals, and an op's
//! hidden time is the difference of its stream's total between its end and its start.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

use crate::analyze::sweep_points::{AtOneInstant, SweepPoints};
use crate::trace::event::Ns;

/// The overlap table's kernel categories (the predecessor's five; a partner op is ranked
/// compute > communication > memory > elementwise > other), derived from kernel families.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Category {
    Other,
    Elementwise,
    Memory,
    Communication,
    Compute,
}

impl Category {
    /// From a kernel-table family (`catalog/kernel-families.toml`): token rules, so
    /// `gemma_*` is not a GEMM and `nvjet_*` is (the predecessor's substring lists got both
    /// wrong).
    pub(crate) fn of_family(family: &str) -> Category {
        match family {
            "communication" => Category::Communication,
            "memory" => Category::Memory,
            "gemm" | "attention" | "moe" | "hybrid_linear" => Category::Compute,
            "norm" | "rope" | "softmax" | "activation" | "quantize" | "reduce_topk"
            | "sampling_io" | "elementwise" => Category::Elementwise,
            _ => Category::Other,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Category::Other => "other",
            Category::Elementwise => "elementwise",
            Category::Memory => "memory",
            Category::Communication => "communication",
            Category::Compute => "compute",
        }
    }
}

/// One GPU op as the sweep sees it. `stream` and `row` are dense indices the caller
/// assigns (one per distinct (pid, stream), one per kernel row).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct SweepOp {
    pub start: Ns,
    pub end: Ns,
    pub stream: u32,
    pub row: u32,
    pub category: Category,
}

impl SweepOp {
    pub(crate) fn dur(&self) -> Ns {
        self.end - self.start
    }
}

/// What the sweep found for one op. `exclusive = dur - hidden`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpExposure {
    pub hidden: Ns,
    pub hidden_by_compute: Ns,
    /// Time another op ran on the same stream at the same time.
    pub same_stream: Ns,
}

/// What the sweep found for a stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// Parallel to the input ops.
    pub ops: Vec<OpExposure>,
    /// (row, partner row) -> time the row's ops ran while the partner was the busiest
    /// op of another stream.
    pub partners: HashMap<(u32, u32), Ns>,
    /// Union of the time any op ran.
    pub busy: Ns,
    /// Union of the time ops ran on two or more streams at once.
    pub overlapped: Ns,
    /// First start to last end, minus `busy`.
    pub idle: Ns,
    /// Union of the time two or more ops ran on one stream, summed over streams.
    pub same_stream: Ns,
    /// Distinct streams with work.
    pub streams: usize,
    /// Most streams busy at once.
    pub max_concurrent_streams: usize,
}

/// Orders running ops so the busiest partner is the largest: category priority, then
/// duration, then the earlier op.
type PartnerKey = (Category, Ns, Reverse<u32>);

#[derive(Default)]
struct StreamState {
    running: u32,
    running_compute: u32,
    /// Running ops by partner key.
    by_key: BTreeSet<PartnerKey>,
    /// Running ops per row (row, count); a handful at most.
    rows: Vec<(u32, u32)>,
    /// Running totals an op's exposure is read from.
    hidden: Ns,
    hidden_by_compute: Ns,
    same_stream: Ns,
}

/// Runs the sweep. Ops with no duration take no part (their exposure is zero).
pub(crate) fn sweep(ops: &[SweepOp]) -> Sweep {
    // Ends before starts at the same time, so back-to-back ops never overlap.
    let with_length = (0..ops.len() as u32)
        .filter(|&i| ops[i as usize].end > ops[i as usize].start)
        .collect();
    let points = SweepPoints::new(
        with_length,
        |i| ops[i as usize].start,
        |i| ops[i as usize].end,
        AtOneInstant::EndsFirst,
    );
    let span = points.span();

    let stream_count = ops.iter().map(|o| o.stream as usize + 1).max().unwrap_or(0);
    let mut streams: Vec<StreamState> = (0..stream_count).map(|_| StreamState::default()).collect();
    let mut active: BTreeSet<u32> = BTreeSet::new();
    let mut running_compute: u32 = 0;
    // An op's slot holds its stream's running totals from its start to its end, when
    // it becomes the difference: the exposure.
    let mut result = Sweep {
        ops: vec![OpExposure::default(); ops.len()],
        ..Sweep::default()
    };
    let mut seen_streams: BTreeSet<u32> = BTreeSet::new();
    let mut previous: Option<Ns> = None;

    for (time, is_end, index) in points {
        if let Some(prev) = previous {
            let segment = time - prev;
            if segment > 0 && !active.is_empty() {
                advance(
                    &mut streams,
                    &active,
                    running_compute,
                    ops,
                    segment,
                    &mut result,
                );
            }
        }
        previous = Some(time);
        let op = &ops[index as usize];
        let state = &mut streams[op.stream as usize];
        let key = (op.category, op.dur(), Reverse(index));
        let is_compute = op.category == Category::Compute;
        if !is_end {
            result.ops[index as usize] = OpExposure {
                hidden: state.hidden,
                hidden_by_compute: state.hidden_by_compute,
                same_stream: state.same_stream,
            };
            state.running += 1;
            state.running_compute += u32::from(is_compute);
            running_compute += u32::from(is_compute);
            state.by_key.insert(key);
            match state.rows.iter_mut().find(|(row, _)| *row == op.row) {
                Some(entry) => entry.1 += 1,
                None => state.rows.push((op.row, 1)),
            }
            active.insert(op.stream);
            seen_streams.insert(op.stream);
            result.max_concurrent_streams = result.max_concurrent_streams.max(active.len());
        } else {
            let at_start = result.ops[index as usize];
            result.ops[index as usize] = OpExposure {
                hidden: state.hidden - at_start.hidden,
                hidden_by_compute: state.hidden_by_compute - at_start.hidden_by_compute,
                same_stream: state.same_stream - at_start.same_stream,
            };
            state.running -= 1;
            state.running_compute -= u32::from(is_compute);
            running_compute -= u32::from(is_compute);
            state.by_key.remove(&key);
            if let Some(pos) = state.rows.iter().position(|(row, _)| *row == op.row) {
                state.rows[pos].1 -= 1;
                if state.rows[pos].1 == 0 {
                    state.rows.swap_remove(pos);
                }
            }
            if state.running == 0 {
                active.remove(&op.stream);
            }
        }
    }
    result.streams = seen_streams.len();
    if let Some((first, last)) = span {
        result.idle = (last - first) - result.busy;
    }
    result
}

/// Adds one segment during which the running set does not change.
fn advance(
    streams: &mut [StreamState],
    active: &BTreeSet<u32>,
    running_compute: u32,
    ops: &[SweepOp],
    segment: Ns,
    result: &mut Sweep,
) {
    result.busy += segment;
    let several = active.len() >= 2;
    if several {
        result.overlapped += segment;
    }
    // The two streams with the busiest running op: a stream's partner is the best of
    // the others, which is the first unless that is the stream itself.
    let mut best: Option<(PartnerKey, u32)> = None;
    let mut second: Option<(PartnerKey, u32)> = None;
    for &s in active {
        if let Some(&key) = streams[s as usize].by_key.last() {
            if best.is_none_or(|(b, _)| key > b) {
                second = best;
                best = Some((key, s));
            } else if second.is_none_or(|(b, _)| key > b) {
                second = Some((key, s));
            }
        }
    }
    for &s in active {
        let state = &mut streams[s as usize];
        if several {
            state.hidden += segment;
            let partner = match best {
                Some((key, stream)) if stream != s => Some(key),
                _ => second.map(|(key, _)| key),
            };
            if let Some((_, _, Reverse(partner_op))) = partner {
                let partner_row = ops[partner_op as usize].row;
                for &(row, count) in &state.rows {
                    *result.partners.entry((row, partner_row)).or_default() +=
                        segment * count as Ns;
                }
            }
        }
        if running_compute > state.running_compute {
            state.hidden_by_compute += segment;
        }
        if state.running >= 2 {
            state.same_stream += segment;
            result.same_stream += segment;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(start: Ns, end: Ns, stream: u32, row: u32, category: Category) -> SweepOp {
        SweepOp {
            start,
            end,
            stream,
            row,
            category,
        }
    }

    #[test]
    fn a_comm_op_half_hidden_by_compute_on_another_stream() {
        // stream 0: gemm 0..100, norm 100..130; stream 1: all-reduce 50..120.
        let ops = [
            op(0, 100, 0, 0, Category::Compute),
            op(100, 130, 0, 1, Category::Elementwise),
            op(50, 120, 1, 2, Category::Communication),
        ];
        let s = sweep(&ops);
        assert_eq!(
            s.ops[0],
            OpExposure {
                hidden: 50,
                hidden_by_compute: 0,
                same_stream: 0
            }
        );
        assert_eq!(s.ops[1].hidden, 20);
        assert_eq!(s.ops[1].hidden_by_compute, 0);
        assert_eq!(s.ops[2].hidden, 70);
        assert_eq!(s.ops[2].hidden_by_compute, 50);
        assert_eq!(s.busy, 130);
        assert_eq!(s.overlapped, 70);
        assert_eq!(s.idle, 0);
        assert_eq!(s.streams, 2);
        assert_eq!(s.partners[&(2, 0)], 50);
        assert_eq!(s.partners[&(2, 1)], 20);
        assert_eq!(s.partners[&(0, 2)], 50);
        assert_eq!(s.partners[&(1, 2)], 20);
    }

    #[test]
    fn same_stream_overlap_is_counted_not_hidden() {
        let ops = [
            op(0, 10, 0, 0, Category::Compute),
            op(5, 20, 0, 1, Category::Compute),
            op(30, 40, 0, 0, Category::Compute),
        ];
        let s = sweep(&ops);
        assert_eq!(s.ops[0].hidden, 0);
        assert_eq!(s.ops[0].same_stream, 5);
        assert_eq!(s.ops[1].same_stream, 5);
        assert_eq!(s.ops[1].hidden_by_compute, 0);
        assert_eq!(s.same_stream, 5);
        assert_eq!(s.busy, 30);
        assert_eq!(s.idle, 10);
        assert_eq!(s.overlapped, 0);
        assert_eq!(s.streams, 1);
    }

    #[test]
    fn partner_is_the_highest_category_then_the_longest() {
        // stream 0 target; stream 1 a long copy; stream 2 a short gemm then nothing.
        let ops = [
            op(0, 100, 0, 0, Category::Elementwise),
            op(0, 100, 1, 1, Category::Memory),
            op(10, 30, 2, 2, Category::Compute),
        ];
        let s = sweep(&ops);
        assert_eq!(s.partners[&(0, 2)], 20);
        assert_eq!(s.partners[&(0, 1)], 80);
        // The gemm's partner is the copy (memory beats elementwise).
        assert_eq!(s.partners[&(2, 1)], 20);
        assert_eq!(s.ops[0].hidden_by_compute, 20);
        assert_eq!(s.max_concurrent_streams, 3);
    }

    #[test]
    fn zero_length_ops_are_ignored() {
        let s = sweep(&[op(5, 5, 0, 0, Category::Other)]);
        assert_eq!(s.busy, 0);
        assert_eq!(s.streams, 0);
        assert_eq!(s.ops[0], OpExposure::default());
    }
}
