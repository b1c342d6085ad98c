//! EP imbalance (issue 19 point 6): where all-to-all ops carry per-peer split sizes
//! (PyTorch's `record_param_comms`: `In split size`, `Out split size`), how many
//! elements each rank sent to and received from each peer, per stage and process
//! group, and how unevenly: the hottest peer of each rank and the hottest member of
//! each group (the expert rank that receives most).
//!
//! ```text
//! trace.split_sizes --rank_splits--> RankSplits   one rank's parsed ops, skips counted
//! [RankSplits]      --ep_imbalance-> EpImbalance  rows per rank and group, cross-check
//! ```
//!
//! One rank shows its own side: its sends and receives per peer, and each group's
//! members as this rank's sends reached them. With `--all-ranks` every rank's ops are
//! summed, and each sender's count for a receiver is checked against the receiver's
//! count from that sender in the same collective.
//!
//! Dispatch and combine: an MoE layer's all-to-all pair sends tokens to their experts
//! (dispatch) and the expert outputs back (combine), so the combine's split lists are
//! the dispatch's, swapped: it sends each peer what it received from it and receives
//! what it sent. Two consecutive ops of a rank in one group and stage that mirror each
//! other so are the pair, dispatch first ([`pair_phases`]); any other op is counted as a
//! plain all-to-all. Rows are per phase: dispatch shows which expert rank is hot, the
//! combine the same traffic going home, which summed would blur the skew.
//!
//! Units: the split sizes count elements of the op's dtype. A token is `hidden size`
//! elements, which the trace does not record, so the report says elements.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::kernels::StagedTrace;
use crate::report::model::{EpGroupRow, EpImbalance, EpMismatch, EpPeer, EpRankRow};
use crate::trace::event::{Ns, Sym, Trace};
use crate::trace::stage::Stage;

/// Mismatches the report lists; all are counted.
const MISMATCHES_KEPT: usize = 20;

/// Which half of an MoE layer's all-to-all pair an op is ([`pair_phases`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    Dispatch,
    Combine,
    /// Not one of a mirrored pair: another all-to-all, or a pair the capture cut.
    #[default]
    Unpaired,
}

impl Phase {
    /// The report's `phase` value.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Phase::Dispatch => "dispatch",
            Phase::Combine => "combine",
            Phase::Unpaired => "all-to-all",
        }
    }
}

/// One all-to-all op whose split sizes were read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SplitOp {
    pub stage: Stage,
    /// When the op started on its rank's clock: the order [`pair_phases`] walks.
    pub ts: Ns,
    pub phase: Phase,
    pub group: String,
    pub group_desc: Option<String>,
    /// The group's global ranks, when `Process Group Ranks` lists one per split entry.
    pub members: Option<Vec<u32>>,
    pub dtype: Option<String>,
    pub seq: Option<u64>,
    /// The recording rank's global rank.
    pub rank: Option<u32>,
    /// Per peer in group order: elements sent (`In split size`), received (`Out`).
    pub sent: Vec<u64>,
    pub received: Vec<u64>,
}

/// One rank's ops and what was left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RankSplits {
    pub ops: Vec<SplitOp>,
    pub malformed: usize,
    pub truncated: usize,
    pub one_sided: usize,
}

impl RankSplits {
    /// Whether any op carried a non-empty split list (read or skipped).
    fn any(&self) -> bool {
        !self.ops.is_empty() || self.malformed + self.truncated + self.one_sided > 0
    }
}

/// Why a split list was not read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ListError {
    /// Not `[` integers `]`, or a count past `u64`.
    Malformed,
    /// PyTorch wrote only the first entries and `...` (its list truncation).
    Truncated,
}

/// A Python-style list of non-negative integers as PyTorch writes split sizes and
/// group ranks: `[]`, `[1, 2, 3]`, any spaces. Anything else is an error, never a guess.
pub(crate) fn parse_list(text: &str) -> Result<Vec<u64>, ListError> {
    let inner = text
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or(ListError::Malformed)?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.last() == Some(&"...") {
        return Err(ListError::Truncated);
    }
    parts
        .iter()
        .map(|p| {
            let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            digits
                .then(|| p.parse::<u64>().ok())
                .flatten()
                .ok_or(ListError::Malformed)
        })
        .collect()
}

/// The ops of one rank's traces that carry split sizes, parsed. `rank` is the rank
/// the caller knows the traces by (an op's own `Rank` arg wins). A kernel's copy of a
/// CPU op's facts (the same External id) is read once.
pub(crate) fn rank_splits(staged: &[StagedTrace<'_>], rank: Option<u32>) -> RankSplits {
    let mut out = RankSplits::default();
    for st in staged.iter().filter(|s| !s.trace.split_sizes.is_empty()) {
        let stage_of = stage_lookup(st);
        let recorded_on_cpu: Vec<u64> = st
            .trace
            .split_sizes
            .iter()
            .filter(|s| !s.on_gpu)
            .filter_map(|s| s.external_id)
            .collect();
        let trace = st.trace;
        let rank = rank.or(trace.meta.rank);
        for split in &trace.split_sizes {
            let copy = split.on_gpu
                && split
                    .external_id
                    .is_some_and(|id| recorded_on_cpu.contains(&id));
            if copy {
                continue;
            }
            let text = |s: Option<Sym>| s.map(|s| trace.name(s).to_string());
            let list = |s: Option<Sym>| parse_list(s.map_or("[]", |s| trace.name(s)));
            let (sent, received) = match (list(split.in_split), list(split.out_split)) {
                (Err(ListError::Truncated), _) | (_, Err(ListError::Truncated)) => {
                    out.truncated += 1;
                    continue;
                }
                (Ok(sent), Ok(received)) => (sent, received),
                _ => {
                    out.malformed += 1;
                    continue;
                }
            };
            if sent.is_empty() != received.is_empty() {
                out.one_sided += 1;
                continue;
            }
            if sent.len() != received.len() {
                out.malformed += 1;
                continue;
            }
            let members = split
                .group_ranks
                .and_then(|s| parse_list(trace.name(s)).ok())
                .filter(|m| m.len() == sent.len())
                .and_then(|m| m.into_iter().map(|r| u32::try_from(r).ok()).collect());
            let number = |s: Option<Sym>| s.and_then(|s| trace.name(s).trim().parse::<u64>().ok());
            out.ops.push(SplitOp {
                stage: stage_of(split.external_id),
                ts: split.ts,
                phase: Phase::Unpaired,
                group: text(split.group).unwrap_or_default(),
                group_desc: text(split.group_desc).filter(|d| !d.is_empty()),
                members,
                dtype: text(split.dtype),
                seq: number(split.seq),
                rank: number(split.rank)
                    .and_then(|r| u32::try_from(r).ok())
                    .or(rank),
                sent,
                received,
            });
        }
    }
    pair_phases(&mut out.ops);
    out
}

/// Marks each rank's dispatch/combine pairs: walking one rank's ops of a (stage,
/// group) in time order, an op whose next op mirrors it (sends what it received and
/// receives what it sent, over the same members) is a dispatch and that next op its
/// combine. A pair whose dispatch the capture cut off leaves its combine unpaired,
/// and so does a skipped (malformed) dispatch. The walk trusts the first op to be a
/// dispatch where a cut combine happens to mirror the next layer's dispatch (the same
/// routing twice running): sizes alone cannot tell those two apart.
fn pair_phases(ops: &mut [SplitOp]) {
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |o: &SplitOp| (o.stage.order(), o.group.clone(), o.ts);
        key(&ops[a]).cmp(&key(&ops[b])).then(a.cmp(&b))
    });
    let mirrors = |a: &SplitOp, b: &SplitOp| {
        a.stage == b.stage
            && a.group == b.group
            && a.members == b.members
            && !a.sent.is_empty()
            && a.sent == b.received
            && a.received == b.sent
    };
    let mut at = 0;
    while at + 1 < order.len() {
        let (first, second) = (order[at], order[at + 1]);
        if mirrors(&ops[first], &ops[second]) {
            ops[first].phase = Phase::Dispatch;
            ops[second].phase = Phase::Combine;
            at += 2;
        } else {
            at += 1;
        }
    }
}

/// An op's stage: that of the GPU op with its External id (the collective it
/// launched), else the stage every GPU op of the trace has, else `all`.
fn stage_lookup<'a>(st: &'a StagedTrace<'a>) -> impl Fn(Option<u64>) -> Stage + 'a {
    let mut by_external: FxHashMap<u64, Stage> = FxHashMap::default();
    let wanted: Vec<u64> = st
        .trace
        .split_sizes
        .iter()
        .filter_map(|s| s.external_id)
        .collect();
    for (op, stage) in st.trace.gpu_ops.iter().zip(&st.split.stages) {
        if let Some(id) = op.external_id.filter(|id| wanted.contains(id)) {
            by_external.entry(id).or_insert(*stage);
        }
    }
    let only = single_stage(st.trace, &st.split.stages);
    move |id| {
        id.and_then(|id| by_external.get(&id).copied())
            .unwrap_or(only)
    }
}

fn single_stage(trace: &Trace, stages: &[Stage]) -> Stage {
    match stages.first() {
        Some(&first) if !trace.gpu_ops.is_empty() && stages.iter().all(|&s| s == first) => first,
        _ => Stage::All,
    }
}

/// The section from every rank's ops; `None` when no op carried a non-empty split list.
pub(crate) fn ep_imbalance(ranks: &[RankSplits]) -> Option<EpImbalance> {
    if !ranks.iter().any(RankSplits::any) {
        return None;
    }
    let ops: Vec<&SplitOp> = ranks.iter().flat_map(|r| &r.ops).collect();
    let mut dtypes: Vec<&str> = ops.iter().filter_map(|o| o.dtype.as_deref()).collect();
    dtypes.sort_unstable();
    dtypes.dedup();
    let unit = match dtypes.as_slice() {
        [one] if ops.iter().all(|o| o.dtype.is_some()) => format!("elements ({one})"),
        _ => "elements".to_string(),
    };
    let (cross_checked, mismatches, mismatch_examples) = cross_check(ranks);
    Some(EpImbalance {
        unit,
        ops: ops.len(),
        skipped_malformed: ranks.iter().map(|r| r.malformed).sum(),
        skipped_truncated: ranks.iter().map(|r| r.truncated).sum(),
        skipped_one_sided: ranks.iter().map(|r| r.one_sided).sum(),
        cross_checked,
        mismatches,
        mismatch_examples,
        ranks: rank_rows(&ops),
        groups: group_rows(&ops),
    })
}

/// (stage, group, phase) in section order.
type GroupKey = (u8, String, String, Phase);

fn group_key(op: &SplitOp) -> GroupKey {
    (
        op.stage.order(),
        op.stage.label().to_string(),
        op.group.clone(),
        op.phase,
    )
}

/// A peer's label: its global rank when the group lists them, else its index.
fn peer_label(op: &SplitOp, index: usize) -> u32 {
    op.members
        .as_ref()
        .and_then(|m| m.get(index).copied())
        .unwrap_or(index as u32)
}

fn rank_rows(ops: &[&SplitOp]) -> Vec<EpRankRow> {
    let mut rows: BTreeMap<(GroupKey, Option<u32>), EpRankRow> = BTreeMap::new();
    for op in ops {
        let key = group_key(op);
        let row = rows
            .entry((key.clone(), op.rank))
            .or_insert_with(|| EpRankRow {
                stage: key.1.clone(),
                group: key.2.clone(),
                phase: key.3.label().to_string(),
                rank: op.rank,
                ..EpRankRow::default()
            });
        row.count += 1;
        for (i, (&sent, &received)) in op.sent.iter().zip(&op.received).enumerate() {
            let peer = peer_label(op, i);
            row.sent += sent;
            row.received += received;
            match row.peers.iter_mut().find(|p| p.peer == peer) {
                Some(p) => {
                    p.sent += sent;
                    p.received += received;
                }
                None => row.peers.push(EpPeer {
                    peer,
                    sent,
                    received,
                }),
            }
        }
    }
    rows.into_values()
        .map(|mut row| {
            let sent: Vec<(u32, u64)> = row.peers.iter().map(|p| (p.peer, p.sent)).collect();
            (row.max_over_mean, row.hot_peer) = max_over_mean(&sent);
            row
        })
        .collect()
}

fn group_rows(ops: &[&SplitOp]) -> Vec<EpGroupRow> {
    let mut rows: BTreeMap<GroupKey, EpGroupRow> = BTreeMap::new();
    for op in ops {
        let key = group_key(op);
        let row = rows.entry(key.clone()).or_insert_with(|| EpGroupRow {
            stage: key.1.clone(),
            group: key.2.clone(),
            phase: key.3.label().to_string(),
            members_are_ranks: true,
            ..EpGroupRow::default()
        });
        if row.description.is_none() {
            row.description.clone_from(&op.group_desc);
        }
        row.members_are_ranks &= op.members.is_some();
        if let Some(rank) = op.rank.filter(|r| !row.senders.contains(r)) {
            row.senders.push(rank);
        }
        for (i, &sent) in op.sent.iter().enumerate() {
            let member = peer_label(op, i);
            match row.members.iter().position(|&m| m == member) {
                Some(at) => row.received[at] += sent,
                None => {
                    row.members.push(member);
                    row.received.push(sent);
                }
            }
        }
    }
    rows.into_values()
        .map(|mut row| {
            row.senders.sort_unstable();
            let received: Vec<(u32, u64)> = row
                .members
                .iter()
                .copied()
                .zip(row.received.iter().copied())
                .collect();
            (row.max_over_mean, row.hot_rank) = max_over_mean(&received);
            row
        })
        .collect()
}

/// The largest count over the mean count, and whose it is (the first of equals);
/// `(0.0, None)` when everything is zero.
fn max_over_mean(counts: &[(u32, u64)]) -> (f64, Option<u32>) {
    let total: u64 = counts.iter().map(|c| c.1).sum();
    let Some(&(who, max)) = counts.iter().rev().max_by_key(|c| c.1) else {
        return (0.0, None);
    };
    if total == 0 {
        return (0.0, None);
    }
    let mean = total as f64 / counts.len() as f64;
    (max as f64 / mean, Some(who))
}

/// Every (sender, receiver) pair of one collective seen on both ranks: the sender's
/// `In split size` entry for the receiver against the receiver's `Out split size`
/// entry for the sender. A collective is its group and `Seq`, or, without `Seq`, its
/// place among the rank's ops of that group (which assumes the ranks profiled the same
/// collectives). Groups without member ranks cannot be checked.
fn cross_check(ranks: &[RankSplits]) -> (usize, usize, Vec<EpMismatch>) {
    let mut by_collective: BTreeMap<(String, u64), Vec<&SplitOp>> = BTreeMap::new();
    for rank in ranks {
        let mut ordinal: FxHashMap<&str, u64> = FxHashMap::default();
        for op in &rank.ops {
            let place = ordinal.entry(op.group.as_str()).or_default();
            let seq = op.seq.unwrap_or(*place);
            *place += 1;
            by_collective
                .entry((op.group.clone(), seq))
                .or_default()
                .push(op);
        }
    }
    let (mut checked, mut mismatches, mut examples) = (0, 0, Vec::new());
    for ((group, seq), ops) in &by_collective {
        for from in ops {
            let (Some(members), Some(sender)) = (&from.members, from.rank) else {
                continue;
            };
            let Some(from_at) = members.iter().position(|&m| m == sender) else {
                continue;
            };
            // Both sides must list the same group for their indices to mean the same peer.
            let others = ops
                .iter()
                .filter(|o| o.rank != from.rank && o.members.as_ref() == Some(members));
            for to in others {
                let Some(receiver) = to.rank else { continue };
                let Some(to_at) = members.iter().position(|&m| m == receiver) else {
                    continue;
                };
                checked += 1;
                let (sent, received) = (from.sent[to_at], to.received[from_at]);
                if sent != received {
                    mismatches += 1;
                    if examples.len() < MISMATCHES_KEPT {
                        examples.push(EpMismatch {
                            group: group.clone(),
                            seq: *seq,
                            from: sender,
                            to: receiver,
                            sent,
                            received,
                        });
                    }
                }
            }
        }
    }
    (checked, mismatches, examples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lists_as_pytorch_writes_them() {
        assert_eq!(parse_list("[]"), Ok(vec![]));
        assert_eq!(parse_list("[ ]"), Ok(vec![]));
        assert_eq!(parse_list("[1, 2, 3]"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_list("  [7,0 ,  12]  "), Ok(vec![7, 0, 12]));
        assert_eq!(
            parse_list("[18446744073709551615]"),
            Ok(vec![u64::MAX]),
            "the largest count fits"
        );
    }

    #[test]
    fn malformed_and_truncated_split_lists_are_errors() {
        for bad in [
            "",
            "1, 2",
            "[1, 2",
            "[1,, 2]",
            "[1, -2]",
            "[1.5, 2]",
            "[a, b]",
            "[1 2]",
            "[18446744073709551616]",
            "[99999999999999999999999999]",
            "null",
        ] {
            assert_eq!(parse_list(bad), Err(ListError::Malformed), "{bad:?}");
        }
        assert_eq!(parse_list("[1, 2, ...]"), Err(ListError::Truncated));
    }

    fn op(rank: u32, seq: u64, sent: &[u64], received: &[u64]) -> SplitOp {
        SplitOp {
            stage: Stage::Decode,
            ts: seq as Ns * 1000,
            phase: Phase::Unpaired,
            group: "2".to_string(),
            group_desc: Some("ep".to_string()),
            members: Some(vec![0, 1, 2]),
            dtype: Some("BFloat16".to_string()),
            seq: Some(seq),
            rank: Some(rank),
            sent: sent.to_vec(),
            received: received.to_vec(),
        }
    }

    #[test]
    fn hot_peer_hot_rank_and_the_cross_check() {
        // Rank 0 sends 10/10/40 (rank 2 is hot); rank 1 sends 10/20/30. Rank 1's
        // receive from rank 0 says 11, not the 10 rank 0 sent: one mismatch.
        let ranks = vec![
            RankSplits {
                ops: vec![op(0, 5, &[10, 10, 40], &[10, 10, 0])],
                ..RankSplits::default()
            },
            RankSplits {
                ops: vec![op(1, 5, &[10, 20, 30], &[11, 20, 0])],
                malformed: 1,
                ..RankSplits::default()
            },
        ];
        let ep = ep_imbalance(&ranks).expect("section");
        assert_eq!(ep.unit, "elements (BFloat16)");
        assert_eq!((ep.ops, ep.skipped_malformed), (2, 1));
        assert_eq!(ep.ranks.len(), 2);
        let r0 = &ep.ranks[0];
        assert_eq!((r0.sent, r0.received, r0.hot_peer), (60, 20, Some(2)));
        assert!(
            (r0.max_over_mean - 2.0).abs() < 1e-12,
            "{}",
            r0.max_over_mean
        );
        let g = &ep.groups[0];
        assert_eq!(g.members, vec![0, 1, 2]);
        assert_eq!(g.senders, vec![0, 1]);
        assert_eq!(g.received, vec![20, 30, 70]);
        assert_eq!(g.hot_rank, Some(2));
        assert!((g.max_over_mean - 70.0 / 40.0).abs() < 1e-12);
        // Pairs: 0->1, 1->0 (self pairs are not cross-rank).
        assert_eq!((ep.cross_checked, ep.mismatches), (2, 1));
        assert_eq!(
            ep.mismatch_examples,
            vec![EpMismatch {
                group: "2".to_string(),
                seq: 5,
                from: 0,
                to: 1,
                sent: 10,
                received: 11,
            }]
        );
    }

    #[test]
    fn mirrored_consecutive_ops_are_dispatch_then_combine() {
        let d = |seq| op(0, seq, &[10, 20, 60], &[10, 15, 5]);
        let c = |seq| op(0, seq, &[10, 15, 5], &[10, 20, 60]);
        // A combine whose dispatch the capture cut (another layer's routing), two
        // pairs, an unmirrored op, and a pair in another group.
        let mut other_group = vec![d(8), c(9)];
        for o in &mut other_group {
            o.group = "3".to_string();
        }
        let cut = op(0, 1, &[7, 7, 7], &[5, 9, 30]);
        let mut ops = vec![
            cut,
            d(2),
            c(3),
            op(0, 4, &[1, 2, 3], &[3, 2, 1]),
            d(5),
            c(6),
        ];
        ops.extend(other_group);
        // Out of time order in the file: the walk sorts.
        ops.swap(1, 5);
        let mut by_seq = ops.clone();
        pair_phases(&mut by_seq);
        by_seq.sort_by_key(|o| (o.group.clone(), o.seq));
        let phases: Vec<Phase> = by_seq.iter().map(|o| o.phase).collect();
        use Phase::{Combine, Dispatch, Unpaired};
        assert_eq!(
            phases,
            [Unpaired, Dispatch, Combine, Unpaired, Dispatch, Combine, Dispatch, Combine]
        );
        // A mirror over other members is not a pair.
        let mut ops = vec![d(1), c(2)];
        ops[1].members = Some(vec![0, 1, 3]);
        pair_phases(&mut ops);
        assert!(ops.iter().all(|o| o.phase == Unpaired));
        // Rows and groups split by phase: the dispatch group shows the hot rank, the
        // combine group the traffic going home.
        let mut ops = vec![d(1), c(2), d(3), c(4)];
        pair_phases(&mut ops);
        let ep = ep_imbalance(&[RankSplits {
            ops,
            ..RankSplits::default()
        }])
        .expect("section");
        let rows: Vec<(&str, usize, u64)> = ep
            .ranks
            .iter()
            .map(|r| (r.phase.as_str(), r.count, r.sent))
            .collect();
        assert_eq!(rows, [("dispatch", 2, 180), ("combine", 2, 60)]);
        let groups: Vec<(&str, Vec<u64>, Option<u32>)> = ep
            .groups
            .iter()
            .map(|g| (g.phase.as_str(), g.received.clone(), g.hot_rank))
            .collect();
        assert_eq!(
            groups,
            [
                ("dispatch", vec![20, 40, 120], Some(2)),
                ("combine", vec![20, 30, 10], Some(1)),
            ]
        );
    }

    #[test]
    fn no_split_sizes_no_section() {
        assert_eq!(ep_imbalance(&[RankSplits::default()]), None);
        let skipped = RankSplits {
            truncated: 1,
            ..RankSplits::default()
        };
        let ep = ep_imbalance(&[skipped]).expect("a skipped op still says so");
        assert_eq!((ep.ops, ep.skipped_truncated), (0, 1));
    }
}
