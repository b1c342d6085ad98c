//! Matching collectives across ranks and aligning the ranks' clocks.
//!
//! A collective is matched when every rank ran one under the same key (stage, step,
//! family, stream ordinal, ordinal). The ranks' clocks are never assumed to agree (each
//! host has its own): a synchronising collective ends within a few µs on every rank, so
//! each rank's offset against the reference rank (the first) is the median, over the
//! matched collectives, of the difference of their end times. The median shrugs off the
//! few collectives whose ends spread (a late kernel teardown, a clipped trace edge).

use std::collections::BTreeMap;

use super::digest::{Collective, CollectiveKey, RankDigest};
use super::steps::{step_shift, Basis};
use crate::trace::event::Ns;

/// One collective matched on every rank: per rank (in digest order), its record.
pub(super) struct Matched<'a> {
    pub stage: &'a str,
    /// The key on the reference rank (its step numbering).
    pub key: CollectiveKey,
    pub per_rank: Vec<&'a Collective>,
}

/// A rank's stage whose steps were renumbered onto the reference rank's.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Shifted {
    /// Index into the digests.
    pub rank: usize,
    pub stage: String,
    pub shift: i64,
    pub basis: Basis,
}

/// Every collective all ranks ran, in (stage order, key) order, each rank's steps first
/// moved onto the reference rank's (`steps::step_shift`); how many of the ranks'
/// collectives found no partner on some rank; and the shifts that were not 0.
pub(super) fn match_collectives(digests: &[RankDigest]) -> (Vec<Matched<'_>>, usize, Vec<Shifted>) {
    let Some(reference) = digests.first() else {
        return (Vec::new(), 0, Vec::new());
    };
    let mut matched = Vec::new();
    let mut unmatched = 0;
    let mut shifted = Vec::new();
    for stage in &reference.stages {
        let mut by_key: BTreeMap<CollectiveKey, Vec<Option<&Collective>>> = BTreeMap::new();
        let mut total = 0;
        for (r, digest) in digests.iter().enumerate() {
            let Some(own) = digest.stages.iter().find(|s| s.stage == stage.stage) else {
                continue;
            };
            let shift = match step_shift(stage, own) {
                (shift, Some(basis)) if r > 0 && shift != 0 => {
                    shifted.push(Shifted {
                        rank: r,
                        stage: stage.stage.clone(),
                        shift,
                        basis,
                    });
                    shift
                }
                _ => 0,
            };
            for c in &own.collectives {
                total += 1;
                // A step before the reference rank's first has no partner there.
                let Ok(step) = usize::try_from(c.key.step as i64 + shift) else {
                    continue;
                };
                let key = CollectiveKey {
                    step,
                    ..c.key.clone()
                };
                by_key
                    .entry(key)
                    .or_insert_with(|| vec![None; digests.len()])[r] = Some(c);
            }
        }
        for (key, per_rank) in by_key {
            let all: Option<Vec<&Collective>> = per_rank.into_iter().collect();
            if let Some(per_rank) = all {
                total -= per_rank.len();
                matched.push(Matched {
                    stage: &stage.stage,
                    key,
                    per_rank,
                });
            }
        }
        unmatched += total;
    }
    (matched, unmatched, shifted)
}

/// Each rank's clock minus the reference rank's, in ns, and the number of collectives
/// it was estimated from (0: no matched collective, offset 0).
pub(super) fn clock_offsets(ranks: usize, matched: &[Matched<'_>]) -> Vec<(Ns, usize)> {
    (0..ranks)
        .map(|r| {
            let mut diffs: Vec<Ns> = matched
                .iter()
                .map(|m| m.per_rank[r].end - m.per_rank[0].end)
                .collect();
            diffs.sort_unstable();
            // The lower median: an element of the data, so an exact integer.
            let offset = match diffs.len() {
                0 => 0,
                n => diffs[(n - 1) / 2],
            };
            (offset, diffs.len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::digest::{StageDigest, Stretch};
    use crate::report::model::StageTimeline;

    fn rank(rank: u32, offset: Ns, ends: &[(usize, Ns)], skip: Option<usize>) -> RankDigest {
        let collectives = ends
            .iter()
            .filter(|(step, _)| Some(*step) != skip)
            .map(|&(step, end)| Collective {
                key: CollectiveKey {
                    step,
                    family: "all_reduce".into(),
                    stream_ordinal: 0,
                    ordinal: 0,
                },
                start: end - 10_000 + offset,
                end: end + offset,
                before: Stretch::default(),
                covered: Vec::new(),
            })
            .collect();
        RankDigest {
            rank,
            file: format!("rank{rank}"),
            stages: vec![StageDigest {
                stage: "decode".into(),
                timeline: StageTimeline::default(),
                collectives,
                outside_steps: 0,
            }],
            splits: Default::default(),
            read_notes: Vec::new(),
            skipped: 0,
        }
    }

    #[test]
    fn offsets_are_the_median_end_difference_and_unmatched_collectives_are_counted() {
        // Rank 1's clock runs 3 ms ahead; one of its ends is 40 µs off (a clipped edge),
        // which the median ignores; rank 2 lacks step 2's collective.
        let ends = [
            (0, 1_000_000),
            (1, 2_000_000),
            (2, 3_000_000),
            (3, 4_000_000),
        ];
        let mut odd = ends;
        odd[1].1 += 40_000;
        let digests = vec![
            rank(0, 0, &ends, None),
            rank(1, 3_000_000, &odd, None),
            rank(2, -1_500, &ends, Some(2)),
        ];
        let (matched, unmatched, shifted) = match_collectives(&digests);
        assert!(shifted.is_empty(), "{shifted:?}");
        assert_eq!(matched.len(), 3);
        assert_eq!(unmatched, 2, "step 2 on ranks 0 and 1");
        let offsets = clock_offsets(3, &matched);
        assert_eq!(offsets, vec![(0, 3), (3_000_000, 3), (-1_500, 3)]);
    }
}
