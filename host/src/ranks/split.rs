//! Transfer versus wait. Per matched collective the transfer is its shortest duration
//! across ranks (the rank that arrived last waited for nobody), and each rank's wait is
//! its duration less that; so transfer + wait is each measured duration, exactly in ns.
//! Start skew is the latest start less the earliest, clocks aligned.

use super::align::Matched;
use super::digest::{Collective, RankDigest};
use crate::report::model::{CollectiveRow, OverlapStage, RankRow, RankStage, StageReport};
use crate::trace::event::{ns_to_us, Ns};

/// One matched collective, split.
pub(super) struct Split {
    /// Per rank: duration and wait.
    pub durations: Vec<Ns>,
    pub waits: Vec<Ns>,
    /// Per rank: the part of its wait no other kernel of the rank covered.
    pub exposed_waits: Vec<Ns>,
    pub transfer: Ns,
    /// Per rank: start on the reference rank's clock.
    pub aligned_starts: Vec<Ns>,
    pub skew: Ns,
}

pub(super) fn split(m: &Matched<'_>, offsets: &[(Ns, usize)]) -> Split {
    let durations: Vec<Ns> = m.per_rank.iter().map(|c| c.end - c.start).collect();
    let transfer = durations.iter().copied().min().unwrap_or(0);
    let aligned_starts: Vec<Ns> = m
        .per_rank
        .iter()
        .zip(offsets)
        .map(|(c, (offset, _))| c.start - offset)
        .collect();
    let skew =
        aligned_starts.iter().max().unwrap_or(&0) - aligned_starts.iter().min().unwrap_or(&0);
    let waits: Vec<Ns> = durations.iter().map(|d| d - transfer).collect();
    Split {
        exposed_waits: m
            .per_rank
            .iter()
            .zip(&waits)
            .map(|(c, &wait)| exposed_wait(c, wait))
            .collect(),
        waits,
        durations,
        transfer,
        aligned_starts,
        skew,
    }
}

/// The part of a collective's `wait` that no other kernel of its rank covered. The wait
/// is the collective's first `wait` ns: a rank that arrived early spins there until the
/// last rank arrives, then all transfer together (the last rank's whole duration).
fn exposed_wait(c: &Collective, wait: Ns) -> Ns {
    let window_end = c.start + wait;
    let hidden: Ns = c
        .covered
        .iter()
        .map(|&(start, end)| (end.min(window_end) - start.max(c.start)).max(0))
        .sum();
    wait - hidden.min(wait)
}

/// One rank's matched collectives of one stage, summed.
#[derive(Default)]
struct StageSums {
    comm: Ns,
    wait: Ns,
    exposed_wait: Ns,
}

fn stage_sums(matched: &[Matched<'_>], splits: &[Split], stage: &str, rank: usize) -> StageSums {
    let mut sums = StageSums::default();
    for (_, s) in matched.iter().zip(splits).filter(|(m, _)| m.stage == stage) {
        sums.comm += s.durations[rank];
        sums.wait += s.waits[rank];
        sums.exposed_wait += s.exposed_waits[rank];
    }
    sums
}

/// The nearest-rank percentile `p` (0-100) of sorted values.
pub(super) fn percentile(sorted: &[Ns], p: usize) -> Ns {
    match sorted.len() {
        0 => 0,
        n => sorted[((p * n).div_ceil(100)).clamp(1, n) - 1],
    }
}

/// Per stage and family: counts, transfer and wait totals, skew statistics.
pub(super) fn collective_rows(matched: &[Matched<'_>], splits: &[Split]) -> Vec<CollectiveRow> {
    let mut groups: Vec<((&str, &str), Vec<usize>)> = Vec::new();
    for (i, m) in matched.iter().enumerate() {
        let key = (m.stage, m.key.family.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
        .into_iter()
        .map(|((stage, family), members)| {
            let transfer: Ns = members
                .iter()
                .map(|&i| splits[i].transfer * splits[i].durations.len() as Ns)
                .sum();
            let wait: Ns = members
                .iter()
                .map(|&i| splits[i].waits.iter().sum::<Ns>())
                .sum();
            let mut skews: Vec<Ns> = members.iter().map(|&i| splits[i].skew).collect();
            skews.sort_unstable();
            CollectiveRow {
                stage: stage.to_string(),
                family: family.to_string(),
                count: members.len(),
                transfer_us: ns_to_us(transfer),
                wait_us: ns_to_us(wait),
                wait_share_pct: if transfer + wait > 0 {
                    100.0 * wait as f64 / (transfer + wait) as f64
                } else {
                    0.0
                },
                skew_p50_us: ns_to_us(percentile(&skews, 50)),
                skew_p90_us: ns_to_us(percentile(&skews, 90)),
                skew_max_us: ns_to_us(skews.last().copied().unwrap_or(0)),
            }
        })
        .collect()
}

/// Every rank's row: its offset and per stage its own timeline's numbers with its
/// matched collectives' time and wait.
pub(super) fn rank_rows(
    digests: &[RankDigest],
    offsets: &[(Ns, usize)],
    matched: &[Matched<'_>],
    splits: &[Split],
) -> Vec<RankRow> {
    digests
        .iter()
        .enumerate()
        .map(|(r, digest)| RankRow {
            rank: digest.rank,
            file: digest.file.clone(),
            clock_offset_us: ns_to_us(offsets[r].0),
            offset_samples: offsets[r].1,
            stages: digest
                .stages
                .iter()
                .map(|stage| {
                    let StageSums {
                        comm,
                        wait,
                        exposed_wait,
                    } = stage_sums(matched, splits, &stage.stage, r);
                    let t = &stage.timeline;
                    let exposed: Ns = t
                        .steps
                        .iter()
                        .map(|s| (s.exposed_comm_us * 1000.0).round() as Ns)
                        .sum();
                    RankStage {
                        stage: stage.stage.clone(),
                        busy_us: t.busy_us,
                        idle_us: t.idle_us,
                        exposed_comm_us: ns_to_us(exposed),
                        comm_us: ns_to_us(comm),
                        wait_us: ns_to_us(wait),
                        exposed_wait_us: ns_to_us(exposed_wait),
                        step_p50_us: t.step_stats.median_wall_us,
                        step_p90_us: t.step_stats.p90_wall_us,
                        late_steps: 0,
                    }
                })
                .collect(),
            skipped: digest.skipped,
            notes: digest.read_notes.clone(),
        })
        .collect()
}

/// The reference rank's kernel tables show communication as one share of GPU time; with
/// every rank read, a note under each stage's table splits its matched collectives into
/// the time spent waiting for other ranks and the transfer, as shares of the same GPU
/// time (the table's denominator).
pub(super) fn split_communication_shares(
    stages: &mut [StageReport],
    matched: &[Matched<'_>],
    splits: &[Split],
) {
    for stage in stages {
        let StageSums { comm, wait, .. } = stage_sums(matched, splits, &stage.stage, 0);
        if comm == 0 || stage.total_gpu_time_us <= 0.0 {
            continue;
        }
        let share = |ns: Ns| 100.0 * ns_to_us(ns) / stage.total_gpu_time_us;
        let ms = |ns: Ns| ns_to_us(ns) / 1000.0;
        stage.notes.push(format!(
            "all ranks: collectives matched on every rank {:.3} ms ({:.1}% of GPU time): waiting for other ranks {:.3} ms ({:.1}%), transfer {:.3} ms ({:.1}%)",
            ms(comm),
            share(comm),
            ms(wait),
            share(wait),
            ms(comm - wait),
            share(comm - wait)
        ));
    }
}

/// The reference rank's wall-time (timeline) and overlap sections, with every rank read:
/// a note under each stage saying how much of its matched collectives' wait ran with no
/// other kernel beside it (wall time lost to other ranks) and how much was hidden
/// behind compute.
pub(super) fn split_exposed_wait(
    stages: &mut [StageReport],
    overlap: &mut [OverlapStage],
    matched: &[Matched<'_>],
    splits: &[Split],
) {
    let ms = |ns: Ns| ns_to_us(ns) / 1000.0;
    for stage in stages {
        let StageSums {
            wait,
            exposed_wait: exposed,
            ..
        } = stage_sums(matched, splits, &stage.stage, 0);
        if wait == 0 {
            continue;
        }
        if let Some(timeline) = stage.timeline.as_mut() {
            let exposed_comm: f64 = timeline.steps.iter().map(|s| s.exposed_comm_us).sum();
            timeline.notes.push(format!(
                "all ranks: of the steps' exposed communication {:.3} ms, {:.3} ms was waiting for other ranks (matched collectives' wait with no other kernel running)",
                exposed_comm / 1000.0,
                ms(exposed)
            ));
        }
        if let Some(o) = overlap.iter_mut().find(|o| o.stage == stage.stage) {
            o.notes.push(format!(
                "all ranks: matched collectives waited {:.3} ms for other ranks: {:.3} ms behind other kernels (hidden), {:.3} ms exposed",
                ms(wait),
                ms(wait - exposed),
                ms(exposed)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_wait_is_the_collectives_first_wait_ns_less_what_other_kernels_covered() {
        let collective = |covered: Vec<(Ns, Ns)>| Collective {
            key: crate::ranks::digest::CollectiveKey {
                step: 0,
                family: "all_reduce".into(),
                stream_ordinal: 0,
                ordinal: 0,
            },
            start: 1_000,
            end: 11_000,
            before: Default::default(),
            covered,
        };
        // Wait is [1000, 7000): nothing covered, all of it exposed.
        assert_eq!(exposed_wait(&collective(vec![]), 6_000), 6_000);
        // Kernels beside it over [1000, 3000) and [6500, 9000) (clipped to it by the
        // digest): 2000 + 500 of the wait hidden; what they cover of the transfer does
        // not count.
        assert_eq!(
            exposed_wait(&collective(vec![(1_000, 3_000), (6_500, 9_000)]), 6_000),
            3_500
        );
        // Covered only during the transfer: the whole wait is exposed.
        assert_eq!(
            exposed_wait(&collective(vec![(8_000, 11_000)]), 6_000),
            6_000
        );
        // Wholly covered, and the rank that waited for nobody.
        assert_eq!(exposed_wait(&collective(vec![(1_000, 11_000)]), 6_000), 0);
        assert_eq!(exposed_wait(&collective(vec![(1_000, 11_000)]), 0), 0);
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        assert_eq!(percentile(&v, 50), 5);
        assert_eq!(percentile(&v, 90), 9);
        assert_eq!(percentile(&v, 100), 10);
        assert_eq!(percentile(&[7], 90), 7);
        assert_eq!(percentile(&[], 50), 0);
    }
}
