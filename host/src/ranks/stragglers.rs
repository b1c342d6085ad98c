//! The straggler of each step and its cause.
//!
//! In each step the matched collective with the largest start skew is where a late rank
//! shows; its last rank to start is the straggler when the skew is at least
//! [`MIN_LATE_NS`]. What that rank did since its previous collective is set against the
//! other ranks' median over the same stretch: when its kernels ran longer by more than
//! its GPU idled longer, the cause is `kernels` (the kernel that grew most is named);
//! else the GPU waited for the host: `python` when an engine Python frame that ended
//! before the launch covers at least half of the extra idle (the frame is named), else
//! `launch` (the launch call is named).

use super::align::Matched;
use super::digest::Stretch;
use super::split::Split;
use crate::report::model::StragglerRow;
use crate::trace::event::{ns_to_us, Ns};

/// Skews below this are noise: collectives' entry spreads by a few µs on healthy runs.
pub(super) const MIN_LATE_NS: Ns = 5_000;

pub(super) fn stragglers(
    matched: &[Matched<'_>],
    splits: &[Split],
    ranks: &[u32],
) -> Vec<StragglerRow> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < matched.len() {
        let (stage, step) = (matched[i].stage, matched[i].key.step);
        let mut j = i;
        let mut worst = i;
        while j < matched.len() && matched[j].stage == stage && matched[j].key.step == step {
            if splits[j].skew > splits[worst].skew {
                worst = j;
            }
            j += 1;
        }
        i = j;
        let s = &splits[worst];
        if s.skew < MIN_LATE_NS {
            continue;
        }
        let late = (0..s.aligned_starts.len())
            .max_by_key(|&r| (s.aligned_starts[r], std::cmp::Reverse(r)))
            .unwrap_or(0);
        let others: Vec<usize> = (0..s.aligned_starts.len()).filter(|&r| r != late).collect();
        let mut others_wait: Vec<Ns> = others.iter().map(|&r| s.waits[r]).collect();
        others_wait.sort_unstable();
        let m = &matched[worst];
        let stretches: Vec<&Stretch> = others.iter().map(|&r| &m.per_rank[r].before).collect();
        let (cause, detail) = cause(&m.per_rank[late].before, &stretches);
        rows.push(StragglerRow {
            stage: stage.to_string(),
            step,
            rank: ranks[late],
            late_us: ns_to_us(s.skew),
            collective: m.key.ordinal,
            family: m.key.family.clone(),
            others_wait_us: ns_to_us(lower_median(&others_wait)),
            cause: cause.to_string(),
            detail,
        });
    }
    rows
}

fn lower_median(sorted: &[Ns]) -> Ns {
    match sorted.len() {
        0 => 0,
        n => sorted[(n - 1) / 2],
    }
}

fn median_of(values: impl Iterator<Item = Ns>) -> Ns {
    let mut v: Vec<Ns> = values.collect();
    v.sort_unstable();
    lower_median(&v)
}

/// The cause and what it names, from the late rank's stretch and the others'.
fn cause(late: &Stretch, others: &[&Stretch]) -> (&'static str, String) {
    let kernel_excess = late.busy - median_of(others.iter().map(|s| s.busy));
    let idle_excess = late.idle - median_of(others.iter().map(|s| s.idle));
    if kernel_excess >= idle_excess {
        let grew = late
            .kernels
            .iter()
            .map(|(name, ns)| {
                let usual = median_of(others.iter().map(|s| {
                    s.kernels
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or(0, |(_, ns)| *ns)
                }));
                (ns - usual, name)
            })
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(a.1)));
        let detail = grew.map_or_else(|| "-".to_string(), |(_, name)| name.clone());
        return ("kernels", detail);
    }
    match &late.python {
        Some((frame, ns)) if 2 * ns >= idle_excess => ("python", frame.clone()),
        _ => (
            "launch",
            late.launch.clone().unwrap_or_else(|| "-".to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stretch(busy: Ns, idle: Ns, gemm: Ns, python: Option<Ns>) -> Stretch {
        Stretch {
            busy,
            idle,
            kernels: vec![("norm".into(), busy - gemm), ("gemm".into(), gemm)],
            launch: Some("cudaGraphLaunch".into()),
            python: python.map(|ns| ("scheduler.py:10 prepare".to_string(), ns)),
        }
    }

    #[test]
    fn the_larger_excess_decides_and_names_what_grew() {
        let usual = stretch(15_000, 20_000, 12_000, None);
        let others = [&usual, &usual];
        let slow = stretch(55_000, 20_000, 52_000, None);
        assert_eq!(cause(&slow, &others), ("kernels", "gemm".to_string()));
        let python = stretch(15_000, 95_000, 12_000, Some(74_000));
        assert_eq!(
            cause(&python, &others),
            ("python", "scheduler.py:10 prepare".to_string())
        );
        // A frame covering less than half the extra idle is not the cause.
        let launch = stretch(15_000, 95_000, 12_000, Some(20_000));
        assert_eq!(
            cause(&launch, &others),
            ("launch", "cudaGraphLaunch".to_string())
        );
    }
}
