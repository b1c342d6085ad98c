//! The steps of one stage of one trace: the engines' step markers (SGLang
//! `step[DECODE bs=32]`, vLLM `execute_<N>_context_<R>(…)_generation_<R>(…)`, torch's
//! `ProfilerStep#N`), else graph launches as boundaries, else the whole stage as one
//! step (with a note).
//!
//! Markers are CPU annotations, so an op belongs to the step whose window contains its
//! *launch* (the GPU may run it later). A step spans from its first launch to the end of
//! its last GPU op. When several marker kinds are present (SGLang writes both
//! `execute_…` and `step[…]`), the most specific kind that holds an op wins: `step[`,
//! then `execute_`, then `ProfilerStep#`.

use crate::trace::event::{Ns, Trace};
use crate::trace::link::Linked;

use super::idle::SweepOp;

/// Which marker bounds the steps, most specific first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum MarkerKind {
    Sglang,
    Vllm,
    ProfilerStep,
}

impl MarkerKind {
    const PRIORITY: [MarkerKind; 3] = [
        MarkerKind::Sglang,
        MarkerKind::Vllm,
        MarkerKind::ProfilerStep,
    ];

    fn of(name: &str) -> Option<MarkerKind> {
        if name.starts_with("step[") {
            Some(MarkerKind::Sglang)
        } else if name.starts_with("execute_")
            && name.contains("context_")
            && name.contains("_generation_")
        {
            Some(MarkerKind::Vllm)
        } else if name.starts_with("ProfilerStep#") {
            Some(MarkerKind::ProfilerStep)
        } else {
            None
        }
    }

    fn source(self) -> &'static str {
        match self {
            MarkerKind::Sglang => "step[...] annotations",
            MarkerKind::Vllm => "execute_... annotations",
            MarkerKind::ProfilerStep => "ProfilerStep annotations",
        }
    }
}

/// One step: from its first launch to the end of its last GPU op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct StepWindow {
    pub label: String,
    pub first_launch: Ns,
    pub end: Ns,
}

/// The steps of one stage of one trace, in time order.
#[derive(Clone, Debug, Default)]
pub(super) struct Steps {
    pub source: &'static str,
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
}

impl Open {
    fn new(label: String) -> Self {
        Open {
            label,
            first_launch: Ns::MAX,
            end: Ns::MIN,
            ops: 0,
        }
    }

    fn take(&mut self, launch: Ns, op: &SweepOp) {
        // A launch recorded after its op started (clock skew) must not start the step
        // after its first op.
        self.first_launch = self.first_launch.min(launch).min(op.start);
        self.end = self.end.max(op.end);
        self.ops += 1;
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
        })
        .collect();
    windows.sort_by_key(|w| (w.first_launch, w.end));
    windows
}

/// The steps of the stage whose ops are `ops` (at least one).
pub(super) fn find_steps(trace: &Trace, linked: &Linked, ops: &[SweepOp]) -> Steps {
    for kind in MarkerKind::PRIORITY {
        let mut markers: Vec<(Ns, Ns, &str)> = trace
            .annotations
            .iter()
            .filter(|a| !a.on_gpu)
            .filter_map(|a| {
                let name = trace.name(a.name);
                (MarkerKind::of(name) == Some(kind))
                    .then(|| (a.ts, a.ts.saturating_add(a.dur), name))
            })
            .collect();
        if markers.is_empty() {
            continue;
        }
        markers.sort_unstable();
        let mut open: Vec<Open> = markers.iter().map(|m| Open::new(m.2.to_string())).collect();
        let (mut outside, mut outside_ns) = (0u64, 0 as Ns);
        for op in ops {
            let t = launch_point(linked, op);
            // The last marker that starts at or before the launch, if it contains it.
            let i = markers.partition_point(|m| m.0 <= t);
            match i.checked_sub(1).filter(|&i| t <= markers[i].1) {
                Some(i) => open[i].take(t, op),
                None => {
                    outside += 1;
                    outside_ns += op.end - op.start;
                }
            }
        }
        let windows = close(open);
        if windows.is_empty() {
            continue;
        }
        let mut notes = Vec::new();
        if outside > 0 {
            notes.push(format!(
                "{outside} GPU ops ({:.3} ms) were launched outside every {} marker and belong to no step",
                outside_ns as f64 / 1e6,
                kind.source().trim_end_matches(" annotations")
            ));
        }
        return Steps {
            source: kind.source(),
            windows,
            notes,
        };
    }
    graph_launch_steps(trace, linked, ops).unwrap_or_else(|| whole_stage(linked, ops))
}

/// Without markers: each graph launch starts a step (ops launched before the first join
/// it).
fn graph_launch_steps(trace: &Trace, linked: &Linked, ops: &[SweepOp]) -> Option<Steps> {
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
        .map(|(i, l)| Open::new(format!("{} #{}", l.1, i + 1)))
        .collect();
    for op in ops {
        let t = launch_point(linked, op);
        let i = launches.partition_point(|l| l.0 <= t).saturating_sub(1);
        open[i].take(t, op);
    }
    Some(Steps {
        source: "graph launches",
        windows: close(open),
        notes: vec!["no step markers: each graph launch starts a step".to_string()],
    })
}

fn whole_stage(linked: &Linked, ops: &[SweepOp]) -> Steps {
    let mut open = Open::new("whole stage".to_string());
    for op in ops {
        open.take(launch_point(linked, op), op);
    }
    Steps {
        source: "whole stage",
        windows: close(vec![open]),
        notes: vec!["no step markers or graph launches: the whole stage is one step".to_string()],
    }
}

/// The step source a marker name would give, if it is a step marker (for tests).
#[cfg(test)]
pub(super) fn marker_kind_source(name: &str) -> Option<&'static str> {
    MarkerKind::of(name).map(MarkerKind::source)
}
