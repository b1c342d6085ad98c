//! The exact split of GPU time: one sweep over the start and end points of a stage's GPU
//! ops (all streams) gives the busy stretches, each labelled by the highest-priority kind
//! running (compute > communication > memcpy/memset), and the idle gaps between them.
//! Then every idle nanosecond is given one cause by the rules of `docs/report-labels.md`
//! ("Timeline"): the launching thread blocked in a synchronize (`sync`), a graph replay
//! already launched (`graph`), else waiting for the host to launch (`launch`); host gaps
//! between steps are cut out by the caller.
//!
//! Busy stretches and gaps tile the span without overlap, so any window's parts sum to
//! its length exactly. Cost: sorting 2n points, then binary searches per window.

use rustc_hash::FxHashMap;

use crate::analyze::sweep_points::{AtOneInstant, SweepPoints};
use crate::trace::event::{Ns, Sym, Trace};
use crate::trace::link::Linked;

/// What ran on the GPU during a busy stretch (the highest priority among running ops).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum BusyKind {
    Memcpy = 0,
    Comm = 1,
    Compute = 2,
}

/// One GPU op as the sweep sees it: an index into `trace.gpu_ops` and its kind.
#[derive(Copy, Clone, Debug)]
pub(super) struct SweepOp {
    pub op: u32,
    pub start: Ns,
    pub end: Ns,
    pub kind: BusyKind,
}

/// A maximal stretch in which one kind had the highest priority.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct BusyStretch {
    pub start: Ns,
    pub end: Ns,
    pub kind: BusyKind,
}

/// A maximal stretch of the span with no GPU op running.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct IdleGap {
    pub start: Ns,
    pub end: Ns,
    /// The op (index into `trace.gpu_ops`) that ended at `start`.
    pub before: u32,
    /// The op that started at `end`: the one whose launch the GPU waited for.
    pub after: u32,
}

impl IdleGap {
    pub(super) fn dur(&self) -> Ns {
        self.end - self.start
    }
}

/// The busy stretches and idle gaps of a stage's span, both sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub(super) struct Sweep {
    pub span: (Ns, Ns),
    pub busy: Vec<BusyStretch>,
    pub gaps: Vec<IdleGap>,
}

/// Sweeps the start and end points of `ops` (any order; at least one op).
pub(super) fn sweep(ops: &[SweepOp]) -> Sweep {
    // At one instant starts come first, so an op that starts where another ends
    // leaves no zero-length gap.
    let points = SweepPoints::new(
        (0..ops.len() as u32).collect(),
        |i| ops[i as usize].start,
        |i| ops[i as usize].end,
        AtOneInstant::StartsFirst,
    );
    let mut running = [0u32; 3];
    let mut result = Sweep {
        span: points.span().unwrap_or((0, 0)),
        ..Sweep::default()
    };
    let mut last_t = result.span.0;
    let mut gap_open: Option<(Ns, u32)> = None;
    for (t, is_end, i) in points {
        if t > last_t {
            let top = [BusyKind::Compute, BusyKind::Comm, BusyKind::Memcpy]
                .into_iter()
                .find(|&k| running[k as usize] > 0);
            if let Some(kind) = top {
                match result.busy.last_mut() {
                    Some(last) if last.end == last_t && last.kind == kind => last.end = t,
                    _ => result.busy.push(BusyStretch {
                        start: last_t,
                        end: t,
                        kind,
                    }),
                }
            }
            last_t = t;
        }
        let op = &ops[i as usize];
        let slot = &mut running[op.kind as usize];
        if is_end {
            *slot = slot.saturating_sub(1);
            if running == [0, 0, 0] {
                gap_open = Some((t, op.op));
            }
        } else {
            if let Some((start, before)) = gap_open.take() {
                if t > start {
                    result.gaps.push(IdleGap {
                        start,
                        end: t,
                        before,
                        after: op.op,
                    });
                }
            }
            *slot += 1;
        }
    }
    result
}

/// Idle time of one window by cause, in ns.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct IdleParts {
    pub launch: Ns,
    pub sync: Ns,
    pub graph: Ns,
    pub host: Ns,
}

impl IdleParts {
    pub(super) fn total(&self) -> Ns {
        self.launch + self.sync + self.graph + self.host
    }

    pub(super) fn add(&mut self, other: IdleParts) {
        self.launch += other.launch;
        self.sync += other.sync;
        self.graph += other.graph;
        self.host += other.host;
    }

    /// The cause with the largest part (`host`, `sync`, `graph`, `launch` on a tie).
    pub(super) fn dominant(&self) -> &'static str {
        [
            (self.host, "host"),
            (self.sync, "sync"),
            (self.graph, "graph"),
            (self.launch, "launch"),
        ]
        .into_iter()
        .fold(
            (Ns::MIN, "launch"),
            |best, x| if x.0 > best.0 { x } else { best },
        )
        .1
    }
}

/// Runtime calls that block the calling thread until the GPU (or a stream, or an event)
/// is done: synchronizes and blocking copies. Checked against the CUDA runtime and HIP
/// API names Kineto records (`cudaStreamSynchronize`, `hipMemcpyWithStream`, ...); a
/// `_v<N>` suffix (`cudaMemcpy_v3020`) is the same call.
const BLOCKING_CALLS: &[&str] = &[
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipMemcpy",
    "hipMemcpyWithStream",
    "hipMemcpy2D",
];

/// Whether a runtime call blocks its thread until GPU work is done.
pub(super) fn is_blocking_call(name: &str) -> bool {
    BLOCKING_CALLS.iter().any(|call| {
        name.strip_prefix(call)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("_v"))
    })
}

/// A launching thread: (pid, tid).
pub(super) type Thread = (Sym, Sym);

/// What the cause rules need of a trace: each op's launch, and the blocking calls of each
/// thread, sorted.
pub(super) struct Causes<'t> {
    trace: &'t Trace,
    linked: &'t Linked,
    blocking: FxHashMap<Thread, Vec<(Ns, Ns)>>,
}

impl<'t> Causes<'t> {
    pub(super) fn new(trace: &'t Trace, linked: &'t Linked) -> Self {
        let mut is_blocking: FxHashMap<Sym, bool> = FxHashMap::default();
        let mut blocking: FxHashMap<Thread, Vec<(Ns, Ns)>> = FxHashMap::default();
        for call in &trace.runtime {
            let hit = *is_blocking
                .entry(call.name)
                .or_insert_with(|| is_blocking_call(trace.name(call.name)));
            if hit && call.dur > 0 {
                blocking
                    .entry((call.pid, call.tid))
                    .or_default()
                    .push((call.ts, call.ts.saturating_add(call.dur)));
            }
        }
        for calls in blocking.values_mut() {
            calls.sort_unstable();
        }
        Causes {
            trace,
            linked,
            blocking,
        }
    }

    /// The thread that launched op `op`, if it was linked to a runtime call.
    pub(super) fn launching_thread(&self, op: u32) -> Option<Thread> {
        let site = self.linked.sites.get(op as usize)?;
        let call = self.trace.runtime.at(site.runtime? as usize);
        Some((call.pid, call.tid))
    }

    /// Time of `[x, y)` the thread spent inside blocking calls.
    fn blocked(&self, thread: Option<Thread>, x: Ns, y: Ns) -> Ns {
        let Some(calls) = thread.and_then(|t| self.blocking.get(&t)) else {
            return 0;
        };
        // Calls of one thread do not overlap, so ends are sorted as starts are.
        let first = calls.partition_point(|&(_, end)| end <= x);
        calls[first..]
            .iter()
            .take_while(|&&(start, _)| start < y)
            .map(|&(start, end)| end.min(y) - start.max(x))
            .filter(|&d| d > 0)
            .sum()
    }

    /// The cause of every idle nanosecond of `[x, y)`, when the GPU waits for op `next`
    /// (no host gap: the caller cuts those out first).
    pub(super) fn classify(&self, x: Ns, y: Ns, next: u32) -> IdleParts {
        if y <= x {
            return IdleParts::default();
        }
        let site = self.linked.sites.get(next as usize);
        let thread = self.launching_thread(next);
        let launch = site.and_then(|s| s.launch_ts).unwrap_or(y);
        let replay = site.is_some_and(|s| s.graph_replay);
        // Before the launch call begins the GPU waits for the host; after it, an eager op
        // is still in flight (launch latency), a replayed one is the graph's own gap.
        let issued = launch.clamp(x, y);
        let sync_before = self.blocked(thread, x, issued);
        let sync_after = self.blocked(thread, issued, y);
        let before = issued - x - sync_before;
        let after = y - issued - sync_after;
        IdleParts {
            launch: before + if replay { 0 } else { after },
            sync: sync_before + sync_after,
            graph: if replay { after } else { 0 },
            host: 0,
        }
    }
}

/// Busy time of `[x, y)` by kind: (compute, comm, memcpy).
pub(super) fn busy_in(busy: &[BusyStretch], x: Ns, y: Ns) -> [Ns; 3] {
    let mut parts = [0; 3];
    let first = busy.partition_point(|s| s.end <= x);
    for s in busy[first..].iter().take_while(|s| s.start < y) {
        parts[2 - s.kind as usize] += s.end.min(y) - s.start.max(x);
    }
    parts
}

/// The gaps that overlap `[x, y)`.
pub(super) fn gaps_in(gaps: &[IdleGap], x: Ns, y: Ns) -> &[IdleGap] {
    let first = gaps.partition_point(|g| g.end <= x);
    let last = first + gaps[first..].partition_point(|g| g.start < y);
    &gaps[first..last]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(op: u32, start: Ns, end: Ns, kind: BusyKind) -> SweepOp {
        SweepOp {
            op,
            start,
            end,
            kind,
        }
    }

    #[test]
    fn sweep_labels_overlaps_by_priority_and_finds_the_gaps() {
        // comm 0-100 under compute 50-150 on another stream; memcpy 200-250; compute
        // 250-300 starts exactly where the copy ends (no gap).
        let s = sweep(&[
            op(0, 0, 100, BusyKind::Comm),
            op(1, 50, 150, BusyKind::Compute),
            op(2, 200, 250, BusyKind::Memcpy),
            op(3, 250, 300, BusyKind::Compute),
        ]);
        assert_eq!(s.span, (0, 300));
        let kinds: Vec<(Ns, Ns, BusyKind)> =
            s.busy.iter().map(|b| (b.start, b.end, b.kind)).collect();
        assert_eq!(
            kinds,
            [
                (0, 50, BusyKind::Comm),
                (50, 150, BusyKind::Compute),
                (200, 250, BusyKind::Memcpy),
                (250, 300, BusyKind::Compute)
            ]
        );
        assert_eq!(
            s.gaps,
            [IdleGap {
                start: 150,
                end: 200,
                before: 1,
                after: 2
            }]
        );
        assert_eq!(busy_in(&s.busy, 0, 300), [150, 50, 50]);
        assert_eq!(busy_in(&s.busy, 40, 210), [100, 10, 10]);
    }

    #[test]
    fn blocking_calls_are_named_exactly() {
        assert!(is_blocking_call("cudaStreamSynchronize"));
        assert!(is_blocking_call("cudaMemcpy"));
        assert!(is_blocking_call("cudaMemcpy_v3020"));
        assert!(is_blocking_call("hipMemcpyWithStream"));
        assert!(is_blocking_call("hipDeviceSynchronize"));
        assert!(!is_blocking_call("cudaMemcpyAsync"));
        assert!(!is_blocking_call("hipMemcpyAsync"));
        assert!(!is_blocking_call("cudaStreamWaitEvent"));
        assert!(!is_blocking_call("cudaLaunchKernel"));
    }
}
