//! Wall-time statistics over a stage's steps: median, p90 and max wall time, the
//! steady-state window (the longest run of consecutive steps within 10% of the median)
//! and the outlier steps (over 1.5x the median) with the part that grew most.

use crate::report::model::{Step, StepOutlier, StepStats};

/// A step within this fraction of the median wall time is in steady state.
const STEADY_TOLERANCE: f64 = 0.10;
/// A step over this multiple of the median wall time is an outlier.
const OUTLIER_FACTOR: f64 = 1.5;

/// The parts of a step, with their JSON names.
fn parts(step: &Step) -> [(&'static str, f64); 7] {
    [
        ("compute", step.compute_us),
        ("exposed_comm", step.exposed_comm_us),
        ("memcpy", step.memcpy_us),
        ("launch_idle", step.launch_idle_us),
        ("sync_idle", step.sync_idle_us),
        ("graph_gap", step.graph_gap_us),
        ("host_gap", step.host_gap_us),
    ]
}

/// Nearest-rank percentile of sorted values (`p` in 0..=100).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v
}

pub(super) fn step_stats(steps: &[Step]) -> StepStats {
    let walls = sorted(steps.iter().map(|s| s.wall_us));
    let median = percentile(&walls, 50.0);
    let (mut steady_first, mut steady_last) = (None, None);
    let mut run_start = None;
    let mut best = 0;
    for (i, step) in steps.iter().enumerate() {
        if (step.wall_us - median).abs() <= STEADY_TOLERANCE * median {
            let start = *run_start.get_or_insert(i);
            if i + 1 - start > best {
                best = i + 1 - start;
                (steady_first, steady_last) = (Some(start), Some(i));
            }
        } else {
            run_start = None;
        }
    }
    let part_medians: Vec<f64> = (0..7)
        .map(|k| percentile(&sorted(steps.iter().map(|s| parts(s)[k].1)), 50.0))
        .collect();
    let outliers = if steps.len() < 3 {
        // With one or two steps there is no typical step to compare with.
        Vec::new()
    } else {
        steps
            .iter()
            .filter(|s| s.wall_us > OUTLIER_FACTOR * median)
            .map(|s| {
                let (part, grew_us) = parts(s)
                    .iter()
                    .zip(&part_medians)
                    .map(|(&(name, v), &m)| (name, v - m))
                    .fold(
                        ("compute", f64::MIN),
                        |best, x| if x.1 > best.1 { x } else { best },
                    );
                StepOutlier {
                    index: s.index,
                    wall_us: s.wall_us,
                    part: part.to_string(),
                    grew_us,
                }
            })
            .collect()
    };
    StepStats {
        count: steps.len(),
        median_wall_us: median,
        p90_wall_us: percentile(&walls, 90.0),
        max_wall_us: walls.last().copied().unwrap_or(0.0),
        steady_first,
        steady_last,
        outliers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(index: usize, compute: f64, host: f64) -> Step {
        Step {
            index,
            wall_us: compute + host,
            compute_us: compute,
            host_gap_us: host,
            ..Step::default()
        }
    }

    #[test]
    fn the_outlier_names_the_part_that_grew_and_the_steady_run_skips_it() {
        let steps = vec![
            step(0, 100.0, 2.0),
            step(1, 100.0, 1.0),
            step(2, 101.0, 300.0),
            step(3, 99.0, 1.0),
            step(4, 100.0, 2.0),
            step(5, 100.0, 1.0),
        ];
        let stats = step_stats(&steps);
        assert_eq!(stats.count, 6);
        assert_eq!(stats.median_wall_us, 101.0);
        assert_eq!(stats.max_wall_us, 401.0);
        assert_eq!(stats.p90_wall_us, 401.0);
        assert_eq!((stats.steady_first, stats.steady_last), (Some(3), Some(5)));
        assert_eq!(stats.outliers.len(), 1);
        assert_eq!(stats.outliers[0].index, 2);
        assert_eq!(stats.outliers[0].part, "host_gap");
        assert_eq!(stats.outliers[0].grew_us, 299.0);
    }
}
