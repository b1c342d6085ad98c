//! The representative step: the stage's step of median wall time, drawn op by op (a lane
//! per stream) with its idle gaps and their causes, for the HTML report's step timeline
//! (`report::model::StepTimeline`). One pass over the stage's ops; the gaps come from the
//! same sweep and cause rules as the step's own split, so they sum to its idle parts.

use rustc_hash::FxHashMap;

use super::idle::{gaps_in, Causes, IdleParts, Sweep, SweepOp};
use super::steps::StepWindow;
use super::StepNs;
use crate::report::model::{StepGap, StepLane, StepOp, StepTimeline};
use crate::trace::event::{ns_to_us, Ns, Sym, Trace};
use crate::trace::names::canonical_name;

/// Ops drawn at most: a prefill step of a large model runs thousands of kernels, and the
/// HTML report embeds this (the 1 GB benchmark's page must stay under 2 MB).
const MAX_OPS: usize = 1000;

/// The index of the step of median wall time (the lower median; the earliest on a tie).
pub(super) fn median_step(steps: &[StepNs]) -> Option<usize> {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| (steps[i].wall, i));
    order.get(steps.len().saturating_sub(1) / 2).copied()
}

/// One stage of one trace as the timeline swept it.
pub(super) struct SweptStage<'a> {
    pub trace: &'a Trace,
    pub sweep: &'a Sweep,
    pub causes: &'a Causes<'a>,
    /// The stage's GPU ops.
    pub ops: &'a [SweepOp],
    /// The stage's first GPU op (the op a step's idle before the span waits for).
    pub first_op: u32,
}

/// Step `index` of `steps` (found as `windows[index]`) drawn from the stage's ops.
pub(super) fn representative_step(
    stage: &SweptStage<'_>,
    steps: &[StepNs],
    windows: &[StepWindow],
    index: usize,
) -> Option<StepTimeline> {
    let SweptStage {
        trace,
        sweep,
        causes,
        ops,
        first_op,
    } = *stage;
    let step = steps.get(index)?;
    let window = windows.get(index)?;
    let (start, end) = (step.start, step.start + step.wall);
    let mut inside: Vec<&SweepOp> = ops
        .iter()
        .filter(|o| o.start < end && o.end > start)
        .collect();
    inside.sort_by_key(|o| (o.start, o.op));
    let ops_left_out = inside.len().saturating_sub(MAX_OPS);
    inside.truncate(MAX_OPS);

    let mut lanes: Vec<StepLane> = Vec::new();
    let mut lane_of: FxHashMap<LaneKey, usize> = FxHashMap::default();
    let mut names: Vec<String> = Vec::new();
    let mut name_of: FxHashMap<Sym, usize> = FxHashMap::default();
    for op in inside {
        let gpu = trace.gpu_ops.at(op.op as usize);
        let key = match gpu.stream {
            Some(stream) => LaneKey::Stream(stream),
            None => LaneKey::Thread(gpu.tid),
        };
        let lane = *lane_of.entry(key).or_insert_with(|| {
            lanes.push(StepLane {
                stream: match key {
                    LaneKey::Stream(s) => s.to_string(),
                    LaneKey::Thread(t) => trace.name(t).to_string(),
                },
                ops: Vec::new(),
            });
            lanes.len() - 1
        });
        let name = *name_of.entry(gpu.name).or_insert_with(|| {
            names.push(canonical_name(trace.name(gpu.name)));
            names.len() - 1
        });
        lanes[lane].ops.push(StepOp {
            offset_us: ns_to_us(op.start - start),
            dur_us: ns_to_us(op.end - op.start),
            name,
        });
    }
    Some(StepTimeline {
        step: index,
        start_us: ns_to_us(start),
        wall_us: ns_to_us(step.wall),
        lanes,
        names,
        gaps: step_gaps(sweep, causes, window, start, end, first_op),
        ops_left_out,
    })
}

/// A lane: the op's stream, else its thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum LaneKey {
    Stream(i64),
    Thread(Sym),
}

/// The idle stretches of `[start, end)`, each with the cause holding most of it, charged
/// as `split_steps` charges them: before the first launch `host`, the rest by cause.
fn step_gaps(
    sweep: &Sweep,
    causes: &Causes<'_>,
    window: &StepWindow,
    start: Ns,
    end: Ns,
    first_op: u32,
) -> Vec<StepGap> {
    let charge = |x: Ns, y: Ns, next: u32| {
        let host_end = window.first_launch.clamp(x, y);
        let mut parts = IdleParts {
            host: host_end - x,
            ..IdleParts::default()
        };
        parts.add(causes.classify(host_end, y, next));
        StepGap {
            offset_us: ns_to_us(x - start),
            dur_us: ns_to_us(y - x),
            cause: parts.dominant().to_string(),
        }
    };
    let mut gaps = Vec::new();
    if start < sweep.span.0 {
        gaps.push(charge(start, sweep.span.0.min(end), first_op));
    }
    for gap in gaps_in(&sweep.gaps, start, end) {
        gaps.push(charge(gap.start.max(start), gap.end.min(end), gap.after));
    }
    gaps
}
