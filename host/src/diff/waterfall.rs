//! The waterfall of one stage: the change of its per-step wall time split into rows
//! whose changes add up to it exactly, in integer nanoseconds.
//!
//! Per side, the stage's summed step wall time `W` is split into stage totals:
//!
//! ```text
//! W = sum(kernel rows, communication kernels excepted)   each row's gpu_time
//!   + exposed communication + launch idle + sync idle + graph gap + host gap   (steps)
//!   + below share cut      GPU time of rows a saved report left out (--min-share)
//!   + concurrency          what is left: busy union minus summed kernel time (overlap
//!                          across streams, negative) and kernels outside every step
//! ```
//!
//! Communication kernels are covered by the exposed-communication row (their hidden part
//! costs no wall time). A stage without steps compares its GPU time, every kernel row
//! included, as one step. Each total is divided by the side's step count and rounded to
//! the nanosecond (`normalise::per_step`); the `rounding` row is the step time (`W`
//! divided and rounded once) less the sum of the rounded rows, so every side's rows sum
//! exactly to its step time and every stage's row deltas exactly to its delta.

use super::align::{align, MatchedBy, Pair};
use super::normalise::{ns, per_step, steps, us};
use crate::report::{DiffRow, KernelRow, StageReport};

/// The fixed rows, in waterfall order after the kernel rows.
pub(crate) const EXPOSED_COMM: &str = "exposed communication";
pub(crate) const LAUNCH_IDLE: &str = "launch idle";
pub(crate) const SYNC_IDLE: &str = "sync idle";
pub(crate) const GRAPH_GAP: &str = "graph gap";
pub(crate) const HOST_GAP: &str = "host gap";
pub(crate) const CONCURRENCY: &str = "concurrency";
pub(crate) const BELOW_CUT: &str = "below share cut";
pub(crate) const ROUNDING: &str = "rounding";

const FIXED: [&str; 7] = [
    EXPOSED_COMM,
    LAUNCH_IDLE,
    SYNC_IDLE,
    GRAPH_GAP,
    HOST_GAP,
    CONCURRENCY,
    BELOW_CUT,
];

/// The family whose kernels the exposed-communication row covers.
const COMMUNICATION: &str = "communication";

/// One side's stage, as exact stage totals.
#[derive(Debug, Default)]
struct SideParts<'r> {
    /// Steps the totals are divided by (0: the side lacks the stage; counted as 1).
    steps: usize,
    /// Whether the stage had steps (else its GPU time is its one step).
    has_steps: bool,
    wall_ns: i64,
    kernels: Vec<&'r KernelRow>,
    /// The totals of [`FIXED`], in its order.
    fixed: [i64; 7],
}

fn side_parts(stage: Option<&StageReport>) -> SideParts<'_> {
    let Some(stage) = stage else {
        return SideParts::default();
    };
    let steps = steps(stage);
    let total_gpu = ns(stage.total_gpu_time_us);
    let listed: i64 = stage.kernels.iter().map(|k| ns(k.gpu_time_us)).sum();
    let below_cut = total_gpu - listed;
    if steps.is_empty() {
        let mut fixed = [0; 7];
        fixed[6] = below_cut;
        return SideParts {
            steps: 1,
            has_steps: false,
            wall_ns: total_gpu,
            kernels: stage.kernels.iter().collect(),
            fixed,
        };
    }
    let sum =
        |part: fn(&crate::report::Step) -> f64| steps.iter().map(|s| ns(part(s))).sum::<i64>();
    let kernels: Vec<&KernelRow> = stage
        .kernels
        .iter()
        .filter(|k| k.family != COMMUNICATION)
        .collect();
    let kernel_ns: i64 = kernels.iter().map(|k| ns(k.gpu_time_us)).sum();
    let wall_ns = sum(|s| s.wall_us);
    let mut fixed = [
        sum(|s| s.exposed_comm_us),
        sum(|s| s.launch_idle_us),
        sum(|s| s.sync_idle_us),
        sum(|s| s.graph_gap_us),
        sum(|s| s.host_gap_us),
        0,
        below_cut,
    ];
    fixed[5] = wall_ns - kernel_ns - fixed.iter().sum::<i64>();
    SideParts {
        steps: steps.len(),
        has_steps: true,
        wall_ns,
        kernels,
        fixed,
    }
}

/// A stage's waterfall and its step times.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StageWaterfall {
    pub rows: Vec<DiffRow>,
    pub base_step_ns: i64,
    pub new_step_ns: i64,
    pub base_steps: usize,
    pub new_steps: usize,
    /// Whether each side had steps (else its GPU time was compared as one step).
    pub base_has_steps: bool,
    pub new_has_steps: bool,
}

/// The waterfall of one stage present on one side or both.
pub(crate) fn waterfall(
    base: Option<&StageReport>,
    new: Option<&StageReport>,
    noise_pct: f64,
) -> StageWaterfall {
    let (b, n) = (side_parts(base), side_parts(new));
    let base_step_ns = per_step(b.wall_ns, b.steps);
    let new_step_ns = per_step(n.wall_ns, n.steps);
    let mut rows: Vec<DiffRow> = align(&b.kernels, &n.kernels)
        .iter()
        .map(|pair| kernel_row(pair, b.steps, n.steps, noise_pct))
        .collect();
    rows.sort_by(|x, y| {
        y.delta_ns
            .abs()
            .cmp(&x.delta_ns.abs())
            .then(y.base_ns.max(y.new_ns).cmp(&x.base_ns.max(x.new_ns)))
            .then_with(|| x.key.cmp(&y.key))
    });
    for (i, key) in FIXED.iter().enumerate() {
        let (bt, nt) = (b.fixed[i], n.fixed[i]);
        if bt != 0 || nt != 0 {
            let mut row = diff_row(key, per_step(bt, b.steps), per_step(nt, n.steps), noise_pct);
            row.kind = "fixed".to_string();
            rows.push(row);
        }
    }
    let sum = |side: fn(&DiffRow) -> i64| rows.iter().map(side).sum::<i64>();
    let (base_rounding, new_rounding) = (
        base_step_ns - sum(|r| r.base_ns),
        new_step_ns - sum(|r| r.new_ns),
    );
    if base_rounding != 0 || new_rounding != 0 {
        let mut row = diff_row(ROUNDING, base_rounding, new_rounding, noise_pct);
        row.kind = "fixed".to_string();
        row.status = "same".to_string();
        rows.push(row);
    }
    StageWaterfall {
        rows,
        base_step_ns,
        new_step_ns,
        base_steps: b.steps,
        new_steps: n.steps,
        base_has_steps: b.has_steps,
        new_has_steps: n.has_steps,
    }
}

fn kernel_row(pair: &Pair<'_>, base_steps: usize, new_steps: usize, noise_pct: f64) -> DiffRow {
    let total = |row: Option<&KernelRow>| row.map_or(0, |r| ns(r.gpu_time_us));
    let main = pair.base.or(pair.new);
    let key = match (pair.matched_by, main) {
        (MatchedBy::Role, Some(row)) => format!("role {}", row.role.as_deref().unwrap_or("other")),
        (_, Some(row)) => row.name.clone(),
        (_, None) => String::new(),
    };
    let mut row = diff_row(
        &key,
        per_step(total(pair.base), base_steps),
        per_step(total(pair.new), new_steps),
        noise_pct,
    );
    // A row of one side only is new or gone, whatever its time.
    match (pair.base, pair.new) {
        (None, Some(_)) => row.status = "new".to_string(),
        (Some(_), None) => row.status = "gone".to_string(),
        _ => {}
    }
    row.kind = "kernel".to_string();
    row.matched_by = pair.matched_by.as_str().to_string();
    row.base_kernel = pair.base.map(|r| r.name.clone());
    row.new_kernel = pair.new.map(|r| r.name.clone());
    row.family = main.map(|r| r.family.clone());
    row
}

/// A row from its two per-step times; keyed by its own name (`matched_by` `name`).
pub(crate) fn diff_row(key: &str, base_ns: i64, new_ns: i64, noise_pct: f64) -> DiffRow {
    let delta_ns = new_ns - base_ns;
    DiffRow {
        key: key.to_string(),
        kind: String::new(),
        base_us: us(base_ns),
        new_us: us(new_ns),
        delta_us: us(delta_ns),
        delta_pct: pct(delta_ns, base_ns),
        base_ns,
        new_ns,
        delta_ns,
        status: status(base_ns, new_ns, noise_pct).to_string(),
        matched_by: MatchedBy::Name.as_str().to_string(),
        base_kernel: None,
        new_kernel: None,
        family: None,
    }
}

/// `100 * delta / |base|`; `None` for a zero base.
pub(crate) fn pct(delta_ns: i64, base_ns: i64) -> Option<f64> {
    (base_ns != 0).then(|| 100.0 * delta_ns as f64 / base_ns.abs() as f64)
}

/// `new` (no base time), `gone` (no new time), `same` (the change is at most
/// `noise_pct` of the base), else `slower` or `faster`.
pub(crate) fn status(base_ns: i64, new_ns: i64, noise_pct: f64) -> &'static str {
    let delta = new_ns - base_ns;
    match (base_ns, new_ns) {
        (0, 0) => "same",
        (0, _) => "new",
        (_, 0) => "gone",
        _ if 100.0 * delta.unsigned_abs() as f64 <= noise_pct * base_ns.unsigned_abs() as f64 => {
            "same"
        }
        _ if delta > 0 => "slower",
        _ => "faster",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{StageTimeline, Step};

    fn kernel(name: &str, family: &str, us: f64) -> KernelRow {
        KernelRow {
            name: name.to_string(),
            raw_names: vec![name.to_string()],
            family: family.to_string(),
            gpu_time_us: us,
            share_pct: 0.0,
            launches: 1,
            python_locations: vec![],
            cpu_ops: vec![],
            launch_site_source: "eager".to_string(),
            input_dims: None,
            launch_mix: vec![],
            roofline: None,
            role: None,
        }
    }

    fn stage(kernels: Vec<KernelRow>, steps: Vec<Step>) -> StageReport {
        let total: i64 = kernels.iter().map(|k| ns(k.gpu_time_us)).sum();
        StageReport {
            stage: "decode".to_string(),
            total_gpu_time_us: us(total),
            summary: String::new(),
            kernels,
            overlap: vec![],
            fusions: vec![],
            similarity: vec![],
            notes: vec![],
            timeline: Some(StageTimeline {
                steps,
                ..StageTimeline::default()
            }),
            sol: None,
            layers: None,
            roles: vec![],
        }
    }

    fn step(wall: f64, exposed: f64, launch: f64, host: f64) -> Step {
        Step {
            wall_us: wall,
            compute_us: wall - exposed - launch - host,
            exposed_comm_us: exposed,
            launch_idle_us: launch,
            host_gap_us: host,
            ..Step::default()
        }
    }

    #[test]
    fn rows_sum_exactly_to_the_step_times_and_the_delta() {
        // Three steps each side, so every per-step division rounds.
        let base = stage(
            vec![
                kernel("gemm", "gemm", 100.001),
                kernel("attn", "attention", 50.002),
                kernel("nccl_ar", "communication", 30.0),
            ],
            vec![
                step(60.0, 1.0, 2.0, 0.0),
                step(61.0, 1.0, 2.0, 0.0),
                step(40.001, 0.0, 1.0, 0.0),
            ],
        );
        let new = stage(
            vec![
                kernel("gemm", "gemm", 105.001),
                kernel("attn", "attention", 50.002),
                kernel("topk", "sampling", 3.0),
                kernel("nccl_ar", "communication", 31.0),
            ],
            vec![
                step(64.0, 1.5, 2.0, 1.0),
                step(65.0, 1.0, 2.0, 1.0),
                step(42.002, 0.0, 1.0, 1.0),
            ],
        );
        let w = waterfall(Some(&base), Some(&new), 1.0);
        assert_eq!(w.base_steps, 3);
        assert_eq!(w.base_step_ns, per_step(161_001, 3));
        assert_eq!(w.new_step_ns, per_step(171_002, 3));
        let sum = |f: fn(&DiffRow) -> i64| w.rows.iter().map(f).sum::<i64>();
        assert_eq!(sum(|r| r.base_ns), w.base_step_ns);
        assert_eq!(sum(|r| r.new_ns), w.new_step_ns);
        assert_eq!(sum(|r| r.delta_ns), w.new_step_ns - w.base_step_ns);
        let find = |key: &str| w.rows.iter().find(|r| r.key == key).unwrap();
        assert_eq!(
            find("gemm").delta_ns,
            per_step(105_001, 3) - per_step(100_001, 3)
        );
        assert_eq!(find("gemm").status, "slower");
        assert_eq!(find("attn").status, "same");
        assert_eq!(find("topk").status, "new");
        assert_eq!(find("topk").base_kernel, None);
        assert_eq!(find(HOST_GAP).new_ns, 1000);
        assert_eq!(find(HOST_GAP).status, "new");
        // The communication kernel is covered by the exposed-communication row.
        assert!(w.rows.iter().all(|r| r.key != "nccl_ar"));
        assert_eq!(find(EXPOSED_COMM).base_ns, per_step(2000, 3));
        // concurrency: W - kernels - fixed, per side, before dividing.
        let base_conc = 161_001 - 150_003 - 2000 - 5000;
        assert_eq!(find(CONCURRENCY).base_ns, per_step(base_conc, 3));
    }

    #[test]
    fn a_self_diff_is_zero_everywhere() {
        let base = stage(
            vec![kernel("gemm", "gemm", 10.0), kernel("norm", "norm", 1.0)],
            vec![step(20.0, 0.0, 3.0, 1.0)],
        );
        let w = waterfall(Some(&base), Some(&base), 0.0);
        assert!(
            w.rows.iter().all(|r| r.delta_ns == 0 && r.status == "same"),
            "{:?}",
            w.rows
        );
        assert_eq!(w.base_step_ns, w.new_step_ns);
    }

    #[test]
    fn a_stage_without_steps_compares_its_gpu_time_and_a_missing_side_is_zero() {
        let mut base = stage(vec![kernel("nccl_ar", "communication", 7.0)], vec![]);
        base.timeline = None;
        let w = waterfall(Some(&base), None, 1.0);
        assert_eq!(w.base_step_ns, 7000);
        assert_eq!(w.new_step_ns, 0);
        assert_eq!(w.rows.len(), 1);
        assert_eq!(w.rows[0].status, "gone");
        assert_eq!(w.rows[0].delta_ns, -7000);
    }

    #[test]
    fn a_saved_report_cut_at_its_share_bar_keeps_the_identity() {
        let mut base = stage(
            vec![kernel("gemm", "gemm", 10.0)],
            vec![step(30.0, 0.0, 0.0, 0.0)],
        );
        base.total_gpu_time_us = 12.5; // 2.5 µs in rows the report left out
        let w = waterfall(Some(&base), Some(&base), 1.0);
        let cut = w.rows.iter().find(|r| r.key == BELOW_CUT).unwrap();
        assert_eq!(cut.base_ns, 2500);
        assert_eq!(w.rows.iter().map(|r| r.base_ns).sum::<i64>(), 30_000);
    }

    #[test]
    fn statuses_follow_the_noise_threshold() {
        assert_eq!(status(1000, 1010, 1.0), "same");
        assert_eq!(status(1000, 1011, 1.0), "slower");
        assert_eq!(status(1000, 989, 1.0), "faster");
        assert_eq!(status(0, 5, 1.0), "new");
        assert_eq!(status(5, 0, 1.0), "gone");
        assert_eq!(status(0, 0, 1.0), "same");
        // Negative rows (concurrency): less overlap is a larger, slower value.
        assert_eq!(status(-1000, -500, 1.0), "slower");
    }
}
