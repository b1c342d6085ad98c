//! The steps of one stage of one trace: step markers (the catalog's `[[marker]]` rows:
//! SGLang `step[DECODE bs=32]`, vLLM `execute_<N>_context_<R>(…)_generation_<R>(…)`
//! from their plugins, torch's `ProfilerStep#N` from the host, and any marker a
//! third-party plugin names), else the engine's forward call (`[[forward_call]]` rows:
//! one Python frame per step, such as vLLM's `gpu_model_runner.py: execute_model`), else
//! graph launches as boundaries, else the whole stage as one step (with a note).
//!
//! Markers are CPU annotations, so an op belongs to the step whose window contains its
//! *launch* (the GPU may run it later); when windows overlap or nest, to the one that
//! started last (the innermost). A step spans from its first launch to the end of its
//! last GPU op. When several marker kinds are present (SGLang writes both `execute_…`
//! and `step[…]`; a profiler schedule wraps vLLM's `execute_…` in `ProfilerStep#N`), the
//! first kind in catalog order that holds an op wins: the engines' own markers, then
//! `ProfilerStep#`.

use crate::catalog::StepCatalog;
use crate::trace::event::{Ns, Sym, Trace};
use crate::trace::link::Linked;

use super::idle::SweepOp;

/// One step: from its first launch to the end of its last GPU op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct StepWindow {
    pub label: String,
    pub first_launch: Ns,
    pub end: Ns,
    /// The step's GPU ops (indices into `trace.gpu_ops`, in the order given), when the
    /// caller asked for them ([`find_steps`]'s `collect_ops`); else empty.
    pub ops: Vec<u32>,
}

/// The steps of one stage of one trace, in time order.
#[derive(Clone, Debug, Default)]
pub(super) struct Steps {
    pub source: String,
    pub windows: Vec<StepWindow>,
    pub notes: Vec<String>,
}

/// Where an op was launched on the CPU clock (its own start when unlinked).
fn launch_point(linked: &Linked, op: &SweepOp) -> Ns {
    linked
        .sites
        .get(op.op as usize)
        .and_then(|s| s.launch_ts)
        .unwrap_or(op.start)
}

/// Accumulates ops into step windows.
#[derive(Clone, Debug)]
struct Open {
    label: String,
    first_launch: Ns,
    end: Ns,
    ops: u64,
    /// The ops taken, when collected (`None`: the timeline needs only the window).
    members: Option<Vec<u32>>,
}

impl Open {
    fn new(label: String, collect_ops: bool) -> Self {
        Open {
            label,
            first_launch: Ns::MAX,
            end: Ns::MIN,
            ops: 0,
            members: collect_ops.then(Vec::new),
        }
    }

    fn take(&mut self, launch: Ns, op: &SweepOp) {
        // A launch recorded after its op started (clock skew) must not start the step
        // after its first op.
        self.first_launch = self.first_launch.min(launch).min(op.start);
        self.end = self.end.max(op.end);
        self.ops += 1;
        if let Some(members) = &mut self.members {
            members.push(op.op);
        }
    }
}

fn close(open: Vec<Open>) -> Vec<StepWindow> {
    let mut windows: Vec<StepWindow> = open
        .into_iter()
        .filter(|o| o.ops > 0)
        .map(|o| StepWindow {
            label: o.label,
            first_launch: o.first_launch,
            end: o.end,
            ops: o.members.unwrap_or_default(),
        })
        .collect();
    windows.sort_by_key(|w| (w.first_launch, w.end));
    windows
}

/// The steps of the stage whose ops are `ops` (at least one); with `collect_ops`, each
/// window lists its ops.
pub(super) fn find_steps(
    trace: &Trace,
    linked: &Linked,
    ops: &[SweepOp],
    catalog: &StepCatalog,
    collect_ops: bool,
) -> Steps {
    // Each distinct annotation name is matched once: the first marker kind it is.
    let mut kind_of: Vec<Option<Option<usize>>> = vec![None; trace.strings.len()];
    let annotated: Vec<(usize, Ns, Ns, &str)> = trace
        .annotations
        .iter()
        .filter(|a| !a.on_gpu)
        .filter_map(|a| {
            let name = trace.name(a.name);
            let slot = kind_of.get_mut(a.name.0 as usize)?;
            let kind = (*slot.get_or_insert_with(|| catalog.marker_of(name)))?;
            Some((kind, a.ts, a.ts.saturating_add(a.dur), name))
        })
        .collect();
    for (kind, marker) in catalog.markers.iter().enumerate() {
        let windows: Vec<(Ns, Ns, &str)> = annotated
            .iter()
            .filter(|a| a.0 == kind)
            .map(|a| (a.1, a.2, a.3))
            .collect();
        let source = format!("{} annotations", marker.shown_as);
        if let Some(steps) =
            steps_in_windows(linked, ops, windows, source, &marker.shown_as, collect_ops)
        {
            return steps;
        }
    }
    let calls = forward_call_frames(trace, catalog);
    steps_in_windows(
        linked,
        ops,
        calls,
        FORWARD_CALLS.to_string(),
        "forward call",
        collect_ops,
    )
    .map(|mut steps| {
        let note = "no step markers: each forward call of the engine is a step";
        steps.notes.insert(0, note.to_string());
        steps
    })
    .or_else(|| graph_launch_steps(trace, linked, ops, collect_ops))
    .unwrap_or_else(|| whole_stage(linked, ops, collect_ops))
}

/// The step source of steps bounded by the engine's forward call.
const FORWARD_CALLS: &str = "forward calls";

/// Steps from CPU windows (markers or forward-call frames): each op joins the window
/// that started last among those containing its launch; `None` when no window holds an
/// op. `kind` names a window in the note on ops outside all of them.
fn steps_in_windows(
    linked: &Linked,
    ops: &[SweepOp],
    mut markers: Vec<(Ns, Ns, &str)>,
    source: String,
    kind: &str,
    collect_ops: bool,
) -> Option<Steps> {
    if markers.is_empty() {
        return None;
    }
    markers.sort_unstable();
    // The latest end among windows 0..=i: no window at or before i contains a launch
    // after it, which bounds the search back through nested or overlapping windows.
    let reach: Vec<Ns> = markers
        .iter()
        .scan(Ns::MIN, |max, m| {
            *max = (*max).max(m.1);
            Some(*max)
        })
        .collect();
    let mut open: Vec<Open> = markers
        .iter()
        .map(|m| Open::new(m.2.to_string(), collect_ops))
        .collect();
    let (mut outside, mut outside_ns) = (0u64, 0 as Ns);
    for op in ops {
        let t = launch_point(linked, op);
        let started = markers.partition_point(|m| m.0 <= t);
        let holder = (0..started)
            .rev()
            .take_while(|&i| reach[i] >= t)
            .find(|&i| t <= markers[i].1);
        match holder {
            Some(i) => open[i].take(t, op),
            None => {
                outside += 1;
                outside_ns += op.end - op.start;
            }
        }
    }
    let windows = close(open);
    if windows.is_empty() {
        return None;
    }
    let mut notes = Vec::new();
    if outside > 0 {
        notes.push(format!(
            "{outside} GPU ops ({:.3} ms) were launched outside every {kind} and belong to no step",
            outside_ns as f64 / 1e6,
        ));
    }
    Some(Steps {
        source,
        windows,
        notes,
    })
}

/// The outermost frames of the engine's forward call on each thread, as windows
/// labelled with the frame's name.
fn forward_call_frames<'t>(trace: &'t Trace, catalog: &StepCatalog) -> Vec<(Ns, Ns, &'t str)> {
    // Traces repeat a few thousand frame names over millions of frames: each distinct
    // name is matched once.
    let mut is_call: Vec<Option<bool>> = vec![None; trace.strings.len()];
    let mut frames: Vec<(Sym, Sym, Ns, Ns, &str)> = trace
        .py_frames
        .iter()
        .filter_map(|f| {
            let name = trace.name(f.name);
            let known = is_call.get_mut(f.name.0 as usize)?;
            let matched = *known.get_or_insert_with(|| catalog.forward_call(name).is_some());
            matched.then(|| (f.pid, f.tid, f.ts, f.end(), name))
        })
        .collect();
    frames.sort_unstable_by_key(|f| (f.0 .0, f.1 .0, f.2, std::cmp::Reverse(f.3)));
    let mut outermost: Vec<(Ns, Ns, &str)> = Vec::new();
    let mut last: Option<(Sym, Sym, Ns)> = None;
    for (pid, tid, start, end, name) in frames {
        // A frame inside the previous one of its thread (a recursive call) is not a step.
        if last.is_some_and(|(p, t, e)| p == pid && t == tid && start < e) {
            continue;
        }
        last = Some((pid, tid, end));
        outermost.push((start, end, name));
    }
    outermost
}

/// Without markers: each graph launch starts a step (ops launched before the first join
/// it).
fn graph_launch_steps(
    trace: &Trace,
    linked: &Linked,
    ops: &[SweepOp],
    collect_ops: bool,
) -> Option<Steps> {
    let mut launches: Vec<(Ns, &str)> = ops
        .iter()
        .filter_map(|op| {
            let site = linked.sites.get(op.op as usize)?;
            let call = trace.runtime.get(site.runtime? as usize)?;
            site.graph_replay.then(|| (call.ts, trace.name(call.name)))
        })
        .collect();
    launches.sort_unstable();
    launches.dedup_by_key(|l| l.0);
    if launches.is_empty() {
        return None;
    }
    let mut open: Vec<Open> = launches
        .iter()
        .enumerate()
        .map(|(i, l)| Open::new(format!("{} #{}", l.1, i + 1), collect_ops))
        .collect();
    for op in ops {
        let t = launch_point(linked, op);
        let i = launches.partition_point(|l| l.0 <= t).saturating_sub(1);
        open[i].take(t, op);
    }
    Some(Steps {
        source: "graph launches".to_string(),
        windows: close(open),
        notes: vec!["no step markers: each graph launch starts a step".to_string()],
    })
}

fn whole_stage(linked: &Linked, ops: &[SweepOp], collect_ops: bool) -> Steps {
    let mut open = Open::new("whole stage".to_string(), collect_ops);
    for op in ops {
        open.take(launch_point(linked, op), op);
    }
    Steps {
        source: "whole stage".to_string(),
        windows: close(vec![open]),
        notes: vec!["no step markers or graph launches: the whole stage is one step".to_string()],
    }
}
