//! Global alignment of a graph replay's kernel sequence against a reference sequence (a
//! capture trace's graph nodes, or the mapping trace's eager launches of one step), so
//! each replayed kernel can take its counterpart's launch site.
//!
//! Plain types only (a [`NodeKey`] is a canonical kernel name and a family), so the
//! capture and the mapping paths share it without either's trace types.
//!
//! The alignment is a Needleman-Wunsch dynamic programme over the two sequences: a pair
//! of equal canonical names scores [`EXACT_SCORE`], a pair of different names of the same
//! known family [`FAMILY_SCORE`], a node left out [`GAP_SCORE`]; nodes of different
//! families are never paired by the programme. Traceback runs from the ends and prefers a
//! pair, then leaving out a query node, then a reference node, so ties resolve the same
//! way every run (among equal choices, the later nodes pair).
//!
//! Fusion (one kernel in one sequence doing the work of several in the other) is decided
//! after the programme, between two exact pairs: when one side of such a stretch holds a
//! single node, the other side 2 to [`MAX_FUSED_PARTS`] nodes, and one of those has the
//! single node's family, the single node is matched to that one (the first such) and
//! every part to the single node, all as [`PairKind::Fused`] with a lower confidence.
//! Last, a node still left over pairs with an unpaired node of its name within
//! [`REORDER_REACH`] nodes of where its neighbours put it: a kernel on another stream
//! starts at another point among the compute kernels in each run, and the programme
//! cannot cross pairs to reach it. Anything else left over has no counterpart
//! ([`Unmatched::NoCounterpart`]): a node missing from the other sequence, or extra in
//! this one.
//!
//! Cost: O(n·m) time, one byte of traceback per cell and two rows of scores. A replay has
//! hundreds to a few thousand nodes, so 4k x 4k = 16M cells is done once per distinct
//! (graph, reference) pair, never per replay: [`AlignmentCache`] keeps the answers.
//! Sequences past [`MAX_CELLS`] are not aligned ([`Unmatched::TooLong`]).

use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;

/// Score of a pair of equal canonical names.
pub const EXACT_SCORE: i32 = 4;
/// Score of a pair of different names of the same known family.
pub const FAMILY_SCORE: i32 = 1;
/// Score of a node left without a counterpart.
pub const GAP_SCORE: i32 = -1;
/// The most traceback cells one alignment may use (64 MiB): 8k x 8k nodes.
pub const MAX_CELLS: usize = 1 << 26;
/// The most split kernels one fused kernel is taken to stand for.
pub const MAX_FUSED_PARTS: usize = 4;
/// How far (in nodes) from where its neighbours put it a left-over node looks for an
/// unpaired node of its name (see the module docs).
pub const REORDER_REACH: usize = 16;

/// What the alignment compares of one kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeKey<'a> {
    /// The canonical kernel name (`trace::names::canonical_name`).
    pub name: &'a str,
    /// The kernel family; `None` when no family rule claims the name (`other`), and two
    /// `None`s never count as the same family.
    pub family: Option<&'a str>,
}

pub use crate::trace::link::PairKind;

/// Why a node has no counterpart.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unmatched {
    /// The other sequence has no node for it: missing there, or extra here.
    NoCounterpart,
    /// The two sequences together were past [`MAX_CELLS`]; nothing was aligned.
    TooLong,
}

impl Unmatched {
    /// The reason as reports and notes say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unmatched::NoCounterpart => "no counterpart",
            Unmatched::TooLong => "sequences too long to align",
        }
    }
}

/// One node's result: its counterpart in the other sequence, or why it has none.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeMatch {
    Matched { other: usize, kind: PairKind },
    Unmatched(Unmatched),
}

impl NodeMatch {
    /// The counterpart's index, when there is one.
    pub fn other(self) -> Option<usize> {
        match self {
            NodeMatch::Matched { other, .. } => Some(other),
            NodeMatch::Unmatched(_) => None,
        }
    }

    /// The pair's confidence; 0 for an unmatched node.
    pub fn confidence(self) -> f64 {
        match self {
            NodeMatch::Matched { kind, .. } => kind.confidence(),
            NodeMatch::Unmatched(_) => 0.0,
        }
    }
}

/// The alignment of a query sequence (a replay) with a reference sequence.
#[derive(Clone, Debug, PartialEq)]
pub struct Alignment {
    /// Per query node, in order.
    pub query: Vec<NodeMatch>,
    /// Per reference node, in order.
    pub reference: Vec<NodeMatch>,
    /// The programme's total score (higher is a better fit); 0 when not aligned.
    pub score: i64,
}

impl Alignment {
    /// Query nodes with a counterpart.
    pub fn matched_query(&self) -> usize {
        self.query.iter().filter(|m| m.other().is_some()).count()
    }
}

/// Aligns `query` against `reference` globally (see the module docs).
pub fn align(query: &[NodeKey], reference: &[NodeKey]) -> Alignment {
    align_within(query, reference, MAX_CELLS)
}

/// [`align`] with a cell budget of its own (tests use a small one).
fn align_within(query: &[NodeKey], reference: &[NodeKey], max_cells: usize) -> Alignment {
    let cells = (query.len() + 1).saturating_mul(reference.len() + 1);
    if cells > max_cells {
        let too_long = NodeMatch::Unmatched(Unmatched::TooLong);
        return Alignment {
            query: vec![too_long; query.len()],
            reference: vec![too_long; reference.len()],
            score: 0,
        };
    }
    let (query_ids, reference_ids) = interned(query, reference);
    let (steps, score) = programme(&query_ids, &reference_ids);
    let mut alignment = traceback(
        &steps,
        query.len(),
        reference.len(),
        &query_ids,
        &reference_ids,
    );
    alignment.score = i64::from(score);
    pair_fusions(&mut alignment, query, reference);
    pair_reordered(&mut alignment, &query_ids, &reference_ids);
    alignment
}

/// A node as the programme compares it: (name id, family id), ids shared by both sides.
type Ids = (u32, Option<u32>);

/// Both sequences with names and families turned into small integers, so each cell
/// compares two numbers instead of two long C++ names.
fn interned<'a>(query: &[NodeKey<'a>], reference: &[NodeKey<'a>]) -> (Vec<Ids>, Vec<Ids>) {
    let mut names: HashMap<&'a str, u32> = HashMap::default();
    let mut families: HashMap<&'a str, u32> = HashMap::default();
    let mut id_of = |key: &NodeKey<'a>| -> Ids {
        let next = names.len() as u32;
        let name = *names.entry(key.name).or_insert(next);
        let family = key.family.map(|f| {
            let next = families.len() as u32;
            *families.entry(f).or_insert(next)
        });
        (name, family)
    };
    let query_ids = query.iter().map(&mut id_of).collect();
    let reference_ids = reference.iter().map(&mut id_of).collect();
    (query_ids, reference_ids)
}

/// The score of pairing two nodes, or `None` when the programme may not pair them.
fn pair_score(a: Ids, b: Ids) -> Option<i32> {
    if a.0 == b.0 {
        Some(EXACT_SCORE)
    } else if a.1.is_some() && a.1 == b.1 {
        Some(FAMILY_SCORE)
    } else {
        None
    }
}

/// Traceback steps, one byte per cell of the (n + 1) x (m + 1) matrix.
const PAIR: u8 = 0;
const SKIP_QUERY: u8 = 1;
const SKIP_REFERENCE: u8 = 2;

/// The programme: the step taken into every cell, and the best total score.
fn programme(query: &[Ids], reference: &[Ids]) -> (Vec<u8>, i32) {
    let width = reference.len() + 1;
    let mut steps = vec![SKIP_REFERENCE; (query.len() + 1) * width];
    let mut previous: Vec<i32> = (0..width as i32).map(|j| j * GAP_SCORE).collect();
    let mut current = vec![0i32; width];
    for (i, &q) in query.iter().enumerate() {
        let row = (i + 1) * width;
        current[0] = previous[0] + GAP_SCORE;
        steps[row] = SKIP_QUERY;
        for (j, &r) in reference.iter().enumerate() {
            // Preference on ties: pair, then leave out the query node, then the reference's.
            let mut best = previous[j + 1] + GAP_SCORE;
            let mut step = SKIP_QUERY;
            if let Some(score) = pair_score(q, r) {
                if previous[j] + score >= best {
                    best = previous[j] + score;
                    step = PAIR;
                }
            }
            let left = current[j] + GAP_SCORE;
            if left > best {
                best = left;
                step = SKIP_REFERENCE;
            }
            current[j + 1] = best;
            steps[row + j + 1] = step;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    (steps, previous[width - 1])
}

/// The pairs the programme chose, walked back from the last cell.
fn traceback(steps: &[u8], n: usize, m: usize, query: &[Ids], reference: &[Ids]) -> Alignment {
    let none = NodeMatch::Unmatched(Unmatched::NoCounterpart);
    let mut alignment = Alignment {
        query: vec![none; n],
        reference: vec![none; m],
        score: 0,
    };
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        let step = if i == 0 {
            SKIP_REFERENCE
        } else if j == 0 {
            SKIP_QUERY
        } else {
            steps[i * (m + 1) + j]
        };
        match step {
            PAIR => {
                let (q, r) = (i - 1, j - 1);
                let kind = if query[q].0 == reference[r].0 {
                    PairKind::Exact
                } else {
                    PairKind::Family
                };
                alignment.query[q] = NodeMatch::Matched { other: r, kind };
                alignment.reference[r] = NodeMatch::Matched { other: q, kind };
                i -= 1;
                j -= 1;
            }
            SKIP_QUERY => i -= 1,
            _ => j -= 1,
        }
    }
    alignment
}

/// Re-pairs each stretch between two exact pairs that looks like a fusion (see the
/// module docs): one node on one side, 2..=[`MAX_FUSED_PARTS`] on the other, one of
/// which has the single node's family.
fn pair_fusions(alignment: &mut Alignment, query: &[NodeKey], reference: &[NodeKey]) {
    let mut anchors: Vec<(usize, usize)> = alignment
        .query
        .iter()
        .enumerate()
        .filter_map(|(q, m)| match *m {
            NodeMatch::Matched {
                other,
                kind: PairKind::Exact,
            } => Some((q, other)),
            _ => None,
        })
        .collect();
    anchors.push((query.len(), reference.len()));
    let mut start = (0, 0);
    for (q_end, r_end) in anchors {
        let (q_range, r_range) = (start.0..q_end, start.1..r_end);
        start = (q_end + 1, r_end + 1);
        if q_range.len() == 1 {
            fuse(
                q_range.start,
                r_range,
                query,
                reference,
                &mut alignment.query,
                &mut alignment.reference,
            );
        } else if r_range.len() == 1 {
            fuse(
                r_range.start,
                q_range,
                reference,
                query,
                &mut alignment.reference,
                &mut alignment.query,
            );
        }
    }
}

/// Pairs the single node `one` of side A with the parts `parts` of side B, when they
/// look like a fusion.
fn fuse(
    one: usize,
    parts: std::ops::Range<usize>,
    a: &[NodeKey],
    b: &[NodeKey],
    a_matches: &mut [NodeMatch],
    b_matches: &mut [NodeMatch],
) {
    if !(2..=MAX_FUSED_PARTS).contains(&parts.len()) {
        return;
    }
    let Some(family) = a[one].family else {
        return;
    };
    let Some(first) = parts.clone().find(|&p| b[p].family == Some(family)) else {
        return;
    };
    a_matches[one] = NodeMatch::Matched {
        other: first,
        kind: PairKind::Fused,
    };
    for p in parts {
        b_matches[p] = NodeMatch::Matched {
            other: one,
            kind: PairKind::Fused,
        };
    }
}

/// Pairs each node the programme and the fusion pass left over with an unpaired node of
/// the same name on the other side, within [`REORDER_REACH`] nodes of where its paired
/// neighbours put it (the nearest, the earlier on a tie). Kernels on other streams
/// start at another point among the compute kernels in each run, and the programme
/// cannot cross pairs to reach them.
fn pair_reordered(alignment: &mut Alignment, query: &[Ids], reference: &[Ids]) {
    // Where the next query node belongs: just past the last paired node's counterpart.
    let mut expected = 0usize;
    for (q, &node) in query.iter().enumerate() {
        if let Some(other) = alignment.query[q].other() {
            expected = other + 1;
            continue;
        }
        let low = expected.saturating_sub(REORDER_REACH);
        let high = (expected + REORDER_REACH + 1).min(reference.len());
        let nearest = (low..high)
            .filter(|&r| reference[r].0 == node.0 && alignment.reference[r].other().is_none())
            .min_by_key(|&r| (r.abs_diff(expected), r));
        if let Some(r) = nearest {
            let kind = PairKind::Exact;
            alignment.query[q] = NodeMatch::Matched { other: r, kind };
            alignment.reference[r] = NodeMatch::Matched { other: q, kind };
        }
    }
}

/// Alignments by a key the caller chooses (a graph and a reference), so the replays of
/// one graph share one alignment.
#[derive(Debug)]
pub struct AlignmentCache<K> {
    done: HashMap<K, Alignment>,
    /// How many alignments were computed (the rest were reused).
    pub computed: u64,
}

impl<K> Default for AlignmentCache<K> {
    fn default() -> Self {
        AlignmentCache {
            done: HashMap::default(),
            computed: 0,
        }
    }
}

impl<K: Hash + Eq> AlignmentCache<K> {
    /// The alignment stored under `key`, computed from the sequences the first time.
    /// The caller promises that one key always names the same two sequences.
    pub fn align(&mut self, key: K, query: &[NodeKey], reference: &[NodeKey]) -> &Alignment {
        let computed = &mut self.computed;
        self.done.entry(key).or_insert_with(|| {
            *computed += 1;
            align(query, reference)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes from `name:family` words; `name` alone has no family.
    fn keys(words: &'static str) -> Vec<NodeKey<'static>> {
        words
            .split_whitespace()
            .map(|word| match word.split_once(':') {
                Some((name, family)) => NodeKey {
                    name,
                    family: Some(family),
                },
                None => NodeKey {
                    name: word,
                    family: None,
                },
            })
            .collect()
    }

    fn exact(other: usize) -> NodeMatch {
        NodeMatch::Matched {
            other,
            kind: PairKind::Exact,
        }
    }

    const NONE: NodeMatch = NodeMatch::Unmatched(Unmatched::NoCounterpart);

    #[test]
    fn identical_sequences_pair_every_node_exactly() {
        let seq = keys("emb:memory qkv:gemm attn:attention o:gemm norm:norm");
        let a = align(&seq, &seq);
        assert_eq!(a.query, (0..5).map(exact).collect::<Vec<_>>());
        assert_eq!(a.reference, a.query);
        assert_eq!(a.score, 5 * i64::from(EXACT_SCORE));
        assert!(a.query.iter().all(|m| m.confidence() == 1.0));
    }

    #[test]
    fn a_node_missing_from_the_replay_leaves_its_reference_node_unmatched() {
        let replay = keys("a:gemm b:norm d:rope");
        let reference = keys("a:gemm b:norm c:attention d:rope");
        let a = align(&replay, &reference);
        assert_eq!(a.query, [exact(0), exact(1), exact(3)]);
        assert_eq!(a.reference, [exact(0), exact(1), NONE, exact(2)]);
        assert_eq!(a.score, 3 * i64::from(EXACT_SCORE) + i64::from(GAP_SCORE));
    }

    #[test]
    fn an_extra_replay_node_has_no_counterpart() {
        let replay = keys("a:gemm x:memory b:norm");
        let reference = keys("a:gemm b:norm");
        let a = align(&replay, &reference);
        assert_eq!(a.query, [exact(0), NONE, exact(1)]);
        assert_eq!(a.reference, [exact(0), exact(2)]);
    }

    #[test]
    fn different_names_of_one_family_pair_with_lower_confidence() {
        let replay = keys("a:norm gemm_tile_128:gemm b:norm");
        let reference = keys("a:norm gemm_tile_256:gemm b:norm");
        let a = align(&replay, &reference);
        let family = NodeMatch::Matched {
            other: 1,
            kind: PairKind::Family,
        };
        assert_eq!(a.query, [exact(0), family, exact(2)]);
        assert_eq!(a.query[1].confidence(), 0.5);
    }

    #[test]
    fn kernels_without_a_family_or_of_different_families_are_never_paired() {
        let replay = keys("a:norm mystery_x b:norm c:rope y:gemm d:rope");
        let reference = keys("a:norm mystery_y b:norm c:rope z:attention d:rope");
        let a = align(&replay, &reference);
        assert_eq!(
            a.query,
            [exact(0), NONE, exact(2), exact(3), NONE, exact(5)]
        );
        assert_eq!(
            a.reference,
            [exact(0), NONE, exact(2), exact(3), NONE, exact(5)]
        );
    }

    #[test]
    fn a_fused_replay_kernel_matches_the_first_split_kernel_of_its_family() {
        // fused_add_rmsnorm in the replay stands for add + rmsnorm in the reference.
        let replay = keys("q:gemm fused_add_rmsnorm:norm o:gemm");
        let reference = keys("q:gemm add:elementwise rmsnorm:norm o:gemm");
        let a = align(&replay, &reference);
        let fused = |other| NodeMatch::Matched {
            other,
            kind: PairKind::Fused,
        };
        assert_eq!(a.query, [exact(0), fused(2), exact(3)]);
        assert_eq!(a.reference, [exact(0), fused(1), fused(1), exact(2)]);
        assert_eq!(a.query[1].confidence(), PairKind::Fused.confidence());
        assert!(PairKind::Fused.confidence() < PairKind::Family.confidence());
    }

    #[test]
    fn split_replay_kernels_all_match_the_fused_reference_kernel() {
        let replay = keys("q:gemm add:elementwise rmsnorm:norm o:gemm");
        let reference = keys("q:gemm fused_add_rmsnorm:norm o:gemm");
        let a = align(&replay, &reference);
        let fused = |other| NodeMatch::Matched {
            other,
            kind: PairKind::Fused,
        };
        assert_eq!(a.query, [exact(0), fused(1), fused(1), exact(2)]);
        assert_eq!(a.reference, [exact(0), fused(2), exact(3)]);
    }

    #[test]
    fn a_lone_node_beside_split_nodes_of_other_families_is_not_taken_for_a_fusion() {
        let replay = keys("q:gemm x:rope o:gemm");
        let reference = keys("q:gemm add:elementwise rmsnorm:norm o:gemm");
        let a = align(&replay, &reference);
        assert_eq!(a.query, [exact(0), NONE, exact(3)]);
        assert_eq!(a.reference, [exact(0), NONE, NONE, exact(2)]);
        // More parts than a fusion is taken to have: no counterpart either.
        let replay = keys("q:gemm f:norm o:gemm");
        let reference = keys("q:gemm a:norm b:norm c:norm d:norm e:norm o:gemm");
        let a = align(&replay, &reference);
        // Equal scores: the traceback (from the end) pairs the later node.
        assert_eq!(
            a.query[1],
            NodeMatch::Matched {
                other: 5,
                kind: PairKind::Family
            }
        );
        assert_eq!(a.reference[1..5], [NONE; 4]);
    }

    #[test]
    fn repeated_layers_stay_in_phase_around_a_missing_node() {
        // Four layers of (norm, gemm, attn, gemm); the replay lacks layer 2's attention.
        let layer = ["n:norm", "g:gemm", "a:attention", "o:gemm"];
        let reference_words: Vec<&str> = (0..4).flat_map(|_| layer).collect();
        let reference = keys(Box::leak(reference_words.join(" ").into_boxed_str()));
        let mut replay_words = reference_words.clone();
        replay_words.remove(2 * 4 + 2);
        let replay = keys(Box::leak(replay_words.join(" ").into_boxed_str()));
        let a = align(&replay, &reference);
        for (q, m) in a.query.iter().enumerate() {
            let want = if q < 10 { q } else { q + 1 };
            assert_eq!(*m, exact(want), "replay node {q}");
        }
        assert_eq!(a.reference[10], NONE);
    }

    /// A kernel on another stream starts at another point among the compute kernels in
    /// each run (the NCCL all-reduce beside the MLP): it pairs by name within reach.
    #[test]
    fn a_kernel_that_starts_out_of_order_still_pairs_with_its_name_nearby() {
        let replay = keys("a:norm b:gemm c:rope nccl:communication d:attention e:gemm");
        let reference = keys("a:norm nccl:communication b:gemm c:rope d:attention e:gemm");
        let a = align(&replay, &reference);
        assert_eq!(
            a.query,
            [exact(0), exact(2), exact(3), exact(1), exact(4), exact(5)]
        );
        assert_eq!(a.reference[1], exact(3));
        // Out of reach: left without a counterpart.
        let far: Vec<&str> = std::iter::once("nccl:communication")
            .chain(std::iter::repeat_n("g:gemm", REORDER_REACH + 2))
            .collect();
        let mut moved = far[1..].to_vec();
        moved.push("nccl:communication");
        let far = keys(Box::leak(far.join(" ").into_boxed_str()));
        let moved = keys(Box::leak(moved.join(" ").into_boxed_str()));
        let a = align(&moved, &far);
        assert_eq!(a.query[moved.len() - 1], NONE);
    }

    #[test]
    fn empty_sequences_align_to_nothing() {
        let seq = keys("a:gemm b:norm");
        let a = align(&[], &seq);
        assert!(a.query.is_empty());
        assert_eq!(a.reference, [NONE, NONE]);
        let a = align(&seq, &[]);
        assert_eq!(a.query, [NONE, NONE]);
    }

    #[test]
    fn sequences_past_the_cell_budget_are_not_aligned() {
        let seq = keys("a:gemm b:norm c:rope");
        let a = align_within(&seq, &seq, 15);
        let too_long = NodeMatch::Unmatched(Unmatched::TooLong);
        assert_eq!(a.query, [too_long; 3]);
        assert_eq!(a.reference, [too_long; 3]);
        assert_eq!(a.score, 0);
        // (3 + 1) x (3 + 1) cells fit in 16.
        assert_eq!(align_within(&seq, &seq, 16).matched_query(), 3);
    }

    #[test]
    fn the_cache_aligns_each_key_once() {
        let replay = keys("a:gemm b:norm");
        let reference = keys("a:gemm c:rope b:norm");
        let mut cache = AlignmentCache::default();
        let first = cache.align((1, 0), &replay, &reference).clone();
        assert_eq!(first.query, [exact(0), exact(2)]);
        assert_eq!(cache.align((1, 0), &replay, &reference), &first);
        assert_eq!(cache.computed, 1);
        cache.align((2, 0), &replay, &replay);
        assert_eq!(cache.computed, 2);
    }

    /// A few thousand nodes a side (the size of a real decode graph) align at once.
    #[test]
    fn a_graph_of_four_thousand_nodes_aligns() {
        let names: Vec<String> = (0..4000).map(|i| format!("k{}", i % 37)).collect();
        let reference: Vec<NodeKey> = names
            .iter()
            .map(|n| NodeKey {
                name: n,
                family: Some("gemm"),
            })
            .collect();
        let mut replay = reference.clone();
        replay.remove(1234);
        let a = align(&replay, &reference);
        assert_eq!(a.matched_query(), 3999);
        assert_eq!(
            a.reference.iter().filter(|m| m.other().is_none()).count(),
            1
        );
    }
}
