//! Where a stage's wall time goes: its steps, GPU busy and idle time, idle time by
//! cause, the gap histogram, the longest gaps with the host activity during them, and
//! per-step statistics. (trace, stage split, catalog) -> `report::model::StageTimeline`.
//!
//! ```text
//! stage's GPU ops --idle::sweep--> busy stretches (compute > comm > memcpy) + idle gaps
//!                 --steps---------> step windows (markers, graph launches, whole stage)
//! per step: wall = busy parts + idle parts by cause   (exact ns, no remainder)
//! per gap:  cause parts, histogram bin; the longest --host--> host activity
//! ```
//!
//! A step's wall time begins at the end of the previous step's last GPU op when the host
//! took longer than that to launch it (that stretch is its host gap), else at its first
//! launch; it ends with its last GPU op. Only the GPU pid the kernel table covers counts.

mod host;
mod idle;
mod representative;
mod stats;
mod steps;
#[cfg(test)]
mod tests;

use rustc_hash::FxHashMap;

use crate::analyze::kernels::{busiest_gpu_pid, StagedTrace};
use crate::analyze::location::Locator;
use crate::catalog::{FamilyRules, StepCatalog};
use crate::report::model::{
    Gap, GapBin, IdleByCause, StageReport, StageTimeline, Step, StepStats, StepTimeline,
};
use crate::trace::event::{ns_to_us, GpuKind, Ns, Sym, Trace};
use crate::trace::link::Linked;
use crate::trace::names::canonical_name;
use crate::trace::stage::Stage;

use idle::{busy_in, gaps_in, BusyKind, Causes, IdleGap, IdleParts, Sweep, SweepOp};
use steps::StepWindow;

/// What the caller chooses.
#[derive(Copy, Clone, Debug)]
pub(crate) struct TimelineOptions<'a> {
    /// Gaps listed per stage (`--top-gaps`).
    pub top_gaps: usize,
    /// Step markers and forward calls (the host's `catalog/steps.toml` and every loaded
    /// plugin's step catalog), in the order they are tried.
    pub steps: &'a StepCatalog,
}

/// Lower bounds of the gap histogram's bins, in ns (the last bin is open).
const BIN_LOWER_NS: [Ns; 6] = [0, 5_000, 20_000, 100_000, 1_000_000, 10_000_000];

/// The timeline of every stage present, in stage order.
pub(crate) fn stage_timelines(
    inputs: &[StagedTrace<'_>],
    locator: &Locator,
    families: &FamilyRules,
    options: &TimelineOptions<'_>,
) -> Vec<(Stage, StageTimeline)> {
    let mut per_stage: Vec<(Stage, Vec<TraceStage>)> = Vec::new();
    for input in inputs {
        for (stage, part) in trace_timelines(input, locator, families, options) {
            match per_stage.iter_mut().find(|(s, _)| *s == stage) {
                Some((_, parts)) => parts.push(part),
                None => per_stage.push((stage, vec![part])),
            }
        }
    }
    per_stage.sort_by_key(|(stage, _)| stage.order());
    per_stage
        .into_iter()
        .map(|(stage, parts)| (stage, merge(parts, options)))
        .collect()
}

/// Puts each timeline on its stage and, where idle is the larger share of the span,
/// leads the stage's summary with it.
pub(crate) fn attach(
    mut stages: Vec<StageReport>,
    timelines: Vec<(Stage, StageTimeline)>,
) -> Vec<StageReport> {
    for (stage, timeline) in timelines {
        if let Some(report) = stages.iter_mut().find(|s| s.stage == stage.label()) {
            if let Some(headline) = idle_headline(&timeline) {
                report.summary = format!("{headline}; busy: {}", report.summary);
            }
            report.timeline = Some(timeline);
        }
    }
    stages
}

/// "GPU idle 86% of the span: launch-bound eager execution (...)", when idle time is
/// larger than busy time.
fn idle_headline(t: &StageTimeline) -> Option<String> {
    if t.idle_us <= t.busy_us {
        return None;
    }
    let c = &t.idle_by_cause;
    let mut causes = [
        (c.launch_us, "launch", "launch-bound execution"),
        (
            c.sync_us,
            "sync",
            "the host blocked in synchronizes or blocking copies",
        ),
        (c.graph_us, "graph", "gaps inside graph replays"),
        (c.host_us, "host", "host time between steps"),
    ];
    causes.sort_by(|a, b| b.0.total_cmp(&a.0));
    let listed: Vec<String> = causes
        .iter()
        .filter(|c| c.0 > 0.0)
        .map(|c| format!("{} {:.2} ms", c.1, c.0 / 1000.0))
        .collect();
    let eager = t.steps.iter().all(|s| s.graph_gap_us == 0.0) && causes[0].1 == "launch";
    let lead = if eager {
        "launch-bound eager execution"
    } else {
        causes[0].2
    };
    Some(format!(
        "GPU idle {:.0}% of the span: {lead} ({})",
        t.idle_pct,
        listed.join(", ")
    ))
}

/// One stage of one trace, in exact ns, before traces of the same stage are merged.
#[derive(Clone, Debug, Default)]
struct TraceStage {
    span: Ns,
    busy: Ns,
    idle_inside: Ns,
    by_cause: IdleParts,
    bins: [(u64, Ns); 6],
    /// The longest gaps of this trace, with their host activity, longest first.
    top_gaps: Vec<(Ns, Gap)>,
    steps: Vec<StepNs>,
    /// The step of median wall time, drawn op by op (index into `steps`).
    representative: Option<StepTimeline>,
    source: String,
    notes: Vec<String>,
}

/// One step's wall time split, in ns: `wall = sum of the parts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct StepNs {
    label: String,
    start: Ns,
    wall: Ns,
    /// compute, exposed communication, memcpy/memset.
    busy: [Ns; 3],
    idle: IdleParts,
}

fn busy_kind(kind: GpuKind, family: &str) -> BusyKind {
    match kind {
        GpuKind::Memcpy | GpuKind::Memset => BusyKind::Memcpy,
        GpuKind::Kernel if family == "communication" => BusyKind::Comm,
        GpuKind::Kernel => BusyKind::Compute,
    }
}

/// The timeline of each stage of one trace.
fn trace_timelines(
    input: &StagedTrace<'_>,
    locator: &Locator,
    families: &FamilyRules,
    options: &TimelineOptions<'_>,
) -> Vec<(Stage, TraceStage)> {
    let StagedTrace { trace, linked, .. } = *input;
    let by_stage = stage_ops(input, families);
    let causes = Causes::new(trace, linked);
    by_stage
        .into_iter()
        .map(|(stage, ops)| {
            let part = stage_of_trace(trace, linked, &causes, locator, &ops, options);
            (stage, part)
        })
        .collect()
}

/// The GPU ops of each stage of one trace that the timeline covers (the busiest GPU
/// pid, positive durations), in stage order of first appearance.
fn stage_ops(input: &StagedTrace<'_>, families: &FamilyRules) -> Vec<(Stage, Vec<SweepOp>)> {
    let StagedTrace { trace, split, .. } = *input;
    let Some(gpu_pid) = busiest_gpu_pid(trace) else {
        return Vec::new();
    };
    // The family is looked up once per distinct name, never per event.
    let mut kind_of: FxHashMap<Sym, BusyKind> = FxHashMap::default();
    let mut by_stage: Vec<(Stage, Vec<SweepOp>)> = Vec::new();
    for (i, op) in trace.gpu_ops.iter().enumerate() {
        if op.pid != gpu_pid || op.dur <= 0 {
            continue;
        }
        let kind = *kind_of
            .entry(op.name)
            .or_insert_with(|| busy_kind(op.kind, families.family_of(trace.name(op.name))));
        let stage = split.stages.get(i).copied().unwrap_or(Stage::All);
        let sweep_op = SweepOp {
            op: i as u32,
            start: op.ts,
            end: op.end(),
            kind,
        };
        match by_stage.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, ops)) => ops.push(sweep_op),
            None => by_stage.push((stage, vec![sweep_op])),
        }
    }
    by_stage
}

/// The steps of each stage of one trace, exactly as the timeline finds them, each as
/// the GPU ops it holds (indices into `trace.gpu_ops`): for analyses that work step by
/// step (`analyze::layers`).
pub(crate) fn stage_steps(
    input: &StagedTrace<'_>,
    families: &FamilyRules,
    steps_catalog: &StepCatalog,
) -> Vec<(Stage, Vec<Vec<u32>>)> {
    stage_ops(input, families)
        .into_iter()
        .map(|(stage, ops)| {
            let found = steps::find_steps(input.trace, input.linked, &ops, steps_catalog, true);
            (stage, found.windows.into_iter().map(|w| w.ops).collect())
        })
        .collect()
}

/// The timeline of one stage of one trace (`ops` not empty).
fn stage_of_trace(
    trace: &Trace,
    linked: &Linked,
    causes: &Causes<'_>,
    locator: &Locator,
    ops: &[SweepOp],
    options: &TimelineOptions<'_>,
) -> TraceStage {
    let sweep = idle::sweep(ops);
    let found = steps::find_steps(trace, linked, ops, options.steps, false);
    let first_op = ops
        .iter()
        .min_by_key(|o| (o.start, o.op))
        .map_or(0, |o| o.op);
    let (steps, host_windows) = split_steps(&sweep, &found.windows, causes, first_op);
    let swept = representative::SweptStage {
        trace,
        sweep: &sweep,
        causes,
        ops,
        first_op,
    };
    let representative = representative::median_step(&steps).and_then(|index| {
        representative::representative_step(&swept, &steps, &found.windows, index)
    });

    let (span_start, span_end) = sweep.span;
    let mut notes = found.notes;
    if let Some(early) = steps
        .first()
        .map(|s| span_start - s.start)
        .filter(|&d| d > 0)
    {
        // The first launch precedes the first GPU op: the step's wall time holds idle
        // the span does not, so the steps' walls sum to more than the span.
        notes.push(format!(
            "the first step starts {:.3} µs before the stage's first GPU op (at its first \
             launch): its wall time counts them as idle, the span does not",
            ns_to_us(early)
        ));
    }
    let busy: Ns = sweep.busy.iter().map(|b| b.end - b.start).sum();
    let cores = merged_cores(&found.windows);
    let mut by_cause = IdleParts::default();
    let mut bins = [(0u64, 0 as Ns); 6];
    let mut idle_inside = 0;
    let mut gap_parts: Vec<IdleParts> = Vec::with_capacity(sweep.gaps.len());
    for gap in &sweep.gaps {
        let parts = gap_causes(gap, &host_windows, causes);
        by_cause.add(parts);
        gap_parts.push(parts);
        let bin = BIN_LOWER_NS.partition_point(|&lo| lo <= gap.dur()) - 1;
        bins[bin].0 += 1;
        bins[bin].1 += gap.dur();
        idle_inside += covered(&cores, gap.start, gap.end);
    }
    let span = span_end - span_start;
    debug_assert_eq!(busy + by_cause.total(), span, "busy + idle = span");

    let top_gaps = top_gaps(
        trace,
        locator,
        causes,
        &sweep.gaps,
        &gap_parts,
        span_start,
        options.top_gaps,
    );
    TraceStage {
        span,
        busy,
        idle_inside,
        by_cause,
        bins,
        top_gaps,
        steps,
        representative,
        source: found.source,
        notes,
    }
}

/// Each step's wall split, and the host-gap windows (sorted, disjoint).
fn split_steps(
    sweep: &Sweep,
    windows: &[StepWindow],
    causes: &Causes<'_>,
    first_op: u32,
) -> (Vec<StepNs>, Vec<(Ns, Ns)>) {
    let mut steps = Vec::with_capacity(windows.len());
    let mut host_windows = Vec::new();
    let mut previous_end: Option<Ns> = None;
    for window in windows {
        let start = match previous_end {
            Some(end) if end < window.first_launch => end,
            _ => window.first_launch,
        };
        if start < window.first_launch {
            host_windows.push((start, window.first_launch));
        }
        let end = window.end;
        let [compute, comm, memcpy] = busy_in(&sweep.busy, start, end);
        let mut idle = IdleParts::default();
        let mut charge = |x: Ns, y: Ns, next: u32| {
            // The stretch before the first launch is the host gap; the rest by cause.
            let host_end = window.first_launch.clamp(x, y);
            idle.host += host_end - x;
            idle.add(causes.classify(host_end, y, next));
        };
        // Before the span's first GPU op (a step's first launch precedes it).
        if start < sweep.span.0 {
            charge(start, sweep.span.0.min(end), first_op);
        }
        for gap in gaps_in(&sweep.gaps, start, end) {
            charge(gap.start.max(start), gap.end.min(end), gap.after);
        }
        let wall = end - start;
        debug_assert_eq!(
            compute + comm + memcpy + idle.total(),
            wall,
            "step parts sum to the wall time"
        );
        steps.push(StepNs {
            label: window.label.clone(),
            start,
            wall,
            busy: [compute, comm, memcpy],
            idle,
        });
        previous_end = Some(previous_end.map_or(end, |e| e.max(end)));
    }
    (steps, host_windows)
}

/// One gap's idle time by cause: the parts inside host-gap windows are `host`.
fn gap_causes(gap: &IdleGap, host_windows: &[(Ns, Ns)], causes: &Causes<'_>) -> IdleParts {
    let mut parts = IdleParts::default();
    let mut x = gap.start;
    let first = host_windows.partition_point(|&(_, end)| end <= gap.start);
    for &(hs, he) in host_windows[first..].iter().take_while(|w| w.0 < gap.end) {
        let (hs, he) = (hs.max(gap.start), he.min(gap.end));
        parts.add(causes.classify(x, hs.max(x), gap.after));
        parts.host += he - hs.max(x);
        x = x.max(he);
    }
    parts.add(causes.classify(x, gap.end, gap.after));
    parts
}

/// The union of the steps' own windows (first launch to last GPU end), sorted.
fn merged_cores(windows: &[StepWindow]) -> Vec<(Ns, Ns)> {
    let mut cores: Vec<(Ns, Ns)> = windows.iter().map(|w| (w.first_launch, w.end)).collect();
    cores.sort_unstable();
    let mut merged: Vec<(Ns, Ns)> = Vec::with_capacity(cores.len());
    for (s, e) in cores {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Time of `[x, y)` inside the sorted, disjoint `windows`.
fn covered(windows: &[(Ns, Ns)], x: Ns, y: Ns) -> Ns {
    let first = windows.partition_point(|&(_, e)| e <= x);
    windows[first..]
        .iter()
        .take_while(|w| w.0 < y)
        .map(|&(s, e)| e.min(y) - s.max(x))
        .sum()
}

/// The `limit` longest gaps (earliest first on a tie), described.
fn top_gaps(
    trace: &Trace,
    locator: &Locator,
    causes: &Causes<'_>,
    gaps: &[IdleGap],
    parts: &[IdleParts],
    span_start: Ns,
    limit: usize,
) -> Vec<(Ns, Gap)> {
    let mut order: Vec<usize> = (0..gaps.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(gaps[i].dur()), gaps[i].start));
    order.truncate(limit);
    let windows: Vec<Option<host::Window>> = order
        .iter()
        .map(|&i| {
            let gap = &gaps[i];
            let thread = causes
                .launching_thread(gap.after)
                .or_else(|| causes.launching_thread(gap.before))?;
            Some(host::Window {
                thread,
                start: gap.start,
                end: gap.end,
            })
        })
        .collect();
    let known: Vec<host::Window> = windows.iter().flatten().copied().collect();
    let mut activity = host::host_activity(trace, locator, &known).into_iter();
    let op_name = |op: u32| canonical_name(trace.name(trace.gpu_ops.at(op as usize).name));
    order
        .iter()
        .zip(&windows)
        .map(|(&i, window)| {
            let gap = &gaps[i];
            let host_activity = match window {
                Some(_) => activity.next().unwrap_or_default(),
                None => Vec::new(),
            };
            let gap_report = Gap {
                start_us: ns_to_us(gap.start),
                offset_us: ns_to_us(gap.start - span_start),
                dur_us: ns_to_us(gap.dur()),
                before: op_name(gap.before),
                after: op_name(gap.after),
                cause: parts[i].dominant().to_string(),
                host_activity,
            };
            (gap.dur(), gap_report)
        })
        .collect()
}

/// The stage's timeline from the parts its traces contributed.
fn merge(parts: Vec<TraceStage>, options: &TimelineOptions<'_>) -> StageTimeline {
    let mut span = 0;
    let mut busy = 0;
    let mut inside = 0;
    let mut by_cause = IdleParts::default();
    let mut bins = [(0u64, 0 as Ns); 6];
    let mut gaps: Vec<(Ns, Gap)> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    let mut representative_step: Option<StepTimeline> = None;
    for part in parts {
        // The first trace's representative step, its index shifted past earlier steps.
        if representative_step.is_none() {
            representative_step = part.representative.map(|mut r| {
                r.step += steps.len();
                r
            });
        }
        span += part.span;
        busy += part.busy;
        inside += part.idle_inside;
        by_cause.add(part.by_cause);
        for (bin, (count, total)) in bins.iter_mut().zip(part.bins) {
            bin.0 += count;
            bin.1 += total;
        }
        gaps.extend(part.top_gaps);
        for step in part.steps {
            steps.push(step_report(steps.len(), &step));
        }
        notes.extend(part.notes);
        if !sources.contains(&part.source) {
            sources.push(part.source);
        }
    }
    gaps.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.start_us.total_cmp(&b.1.start_us)));
    gaps.truncate(options.top_gaps);
    let idle = by_cause.total();
    let histogram = bins
        .iter()
        .enumerate()
        .map(|(i, &(count, total))| GapBin {
            lo_us: ns_to_us(BIN_LOWER_NS[i]),
            hi_us: BIN_LOWER_NS.get(i + 1).map(|&hi| ns_to_us(hi)),
            count,
            total_us: ns_to_us(total),
        })
        .collect();
    let step_stats = if steps.is_empty() {
        StepStats::default()
    } else {
        stats::step_stats(&steps)
    };
    StageTimeline {
        span_us: ns_to_us(span),
        busy_us: ns_to_us(busy),
        idle_us: ns_to_us(idle),
        idle_pct: if span > 0 {
            100.0 * idle as f64 / span as f64
        } else {
            0.0
        },
        idle_inside_steps_us: ns_to_us(inside),
        idle_outside_steps_us: ns_to_us(idle - inside),
        idle_by_cause: IdleByCause {
            launch_us: ns_to_us(by_cause.launch),
            sync_us: ns_to_us(by_cause.sync),
            graph_us: ns_to_us(by_cause.graph),
            host_us: ns_to_us(by_cause.host),
        },
        histogram,
        top_gaps: gaps.into_iter().map(|(_, g)| g).collect(),
        step_source: sources.join(", "),
        steps,
        step_stats,
        notes,
        representative_step,
    }
}

fn step_report(index: usize, step: &StepNs) -> Step {
    Step {
        index,
        label: step.label.clone(),
        start_us: ns_to_us(step.start),
        wall_us: ns_to_us(step.wall),
        compute_us: ns_to_us(step.busy[0]),
        exposed_comm_us: ns_to_us(step.busy[1]),
        memcpy_us: ns_to_us(step.busy[2]),
        launch_idle_us: ns_to_us(step.idle.launch),
        sync_idle_us: ns_to_us(step.idle.sync),
        graph_gap_us: ns_to_us(step.idle.graph),
        host_gap_us: ns_to_us(step.idle.host),
    }
}
