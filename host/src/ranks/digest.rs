//! One rank, digested while its traces are still in memory: per stage, the numbers of
//! its own timeline, and every collective kernel (`catalog/collectives.toml`) with its
//! place in the step and what the rank did since its previous collective; and what its
//! reader skipped (its read notes), so no rank's skipped events go unreported. The traces are
//! dropped after this, so several ranks never have to be held at once.
//!
//! A collective's key is (step, family, stream ordinal, ordinal): the step from the
//! rank's own timeline (markers, graph launches or forward calls), its stream's place
//! among the streams that ran collectives (stream ids differ between processes), and its
//! ordinal among the collectives of that family and stream within the step (graph
//! replays keep node order, so replayed collectives count like eager ones).

use rustc_hash::FxHashMap;

use crate::analyze::ep_imbalance::{rank_splits, RankSplits};
use crate::analyze::kernels::busiest_gpu_pid;
use crate::catalog::CollectiveRules;
use crate::report::model::StageTimeline;
use crate::trace::event::{GpuKind, Ns, Sym, Trace};
use crate::trace::names::canonical_name;
use crate::trace::stage::Stage;
use crate::triage::{read_notes, Observed};

/// A collective's place, the same on every rank that ran it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct CollectiveKey {
    pub step: usize,
    pub family: String,
    pub stream_ordinal: usize,
    pub ordinal: usize,
}

/// One collective kernel on one rank (its own clock).
#[derive(Clone, Debug)]
pub(super) struct Collective {
    pub key: CollectiveKey,
    pub start: Ns,
    pub end: Ns,
    pub before: Stretch,
    /// Where another kernel of the rank (not a collective, not a copy) ran during this
    /// one: merged intervals clipped to `[start, end)`, in time order. A rank that
    /// arrived early waits at the collective's start, so what of its wait these cover
    /// was hidden behind compute (`split::exposed_wait`).
    pub covered: Vec<(Ns, Ns)>,
}

/// What a rank did from its previous collective's end (or its first GPU op) to this
/// collective's start.
#[derive(Clone, Debug, Default)]
pub(super) struct Stretch {
    /// Time some non-collective GPU op ran (union).
    pub busy: Ns,
    /// The stretch less `busy`.
    pub idle: Ns,
    /// Non-collective GPU time by canonical kernel name, largest first (at most
    /// [`KERNELS_KEPT`]).
    pub kernels: Vec<(String, Ns)>,
    /// The longest idle gap: the launch call of the op after it and the engine Python
    /// frame that ran (and ended) on the launching thread between the gap's start and
    /// that launch, with how long it overlapped the gap.
    pub launch: Option<String>,
    pub python: Option<(String, Ns)>,
}

/// Kernel names a stretch keeps.
const KERNELS_KEPT: usize = 8;

/// One stage of one rank.
#[derive(Clone, Debug)]
pub(super) struct StageDigest {
    pub stage: String,
    pub timeline: StageTimeline,
    pub collectives: Vec<Collective>,
    /// Collectives outside every step (not matched).
    pub outside_steps: usize,
}

/// One rank.
#[derive(Clone, Debug)]
pub(super) struct RankDigest {
    pub rank: u32,
    pub file: String,
    pub stages: Vec<StageDigest>,
    /// Its all-to-all ops that carried split sizes (`analyze::ep_imbalance`).
    pub splits: RankSplits,
    /// What its reader skipped or repaired, one note per file (as a one-rank report
    /// words them), and the events it skipped in all its files.
    pub read_notes: Vec<String>,
    pub skipped: u64,
}

/// The digest of one rank's triage.
pub(super) fn digest(observed: &Observed<'_>, rules: &CollectiveRules, rank: u32) -> RankDigest {
    let report = observed.report;
    let file = report
        .inputs
        .iter()
        .map(|i| i.path.clone())
        .collect::<Vec<_>>()
        .join(", ");
    let mut stages = Vec::new();
    // Each trace's frames by thread, sorted once for all its stages.
    let mut frames: Vec<ThreadFrames> = observed
        .staged
        .iter()
        .map(|s| ThreadFrames::of(s.trace))
        .collect();
    for stage_report in &report.stages {
        let Some(timeline) = &stage_report.timeline else {
            continue;
        };
        let steps: Vec<(Ns, Ns)> = timeline
            .steps
            .iter()
            .map(|s| {
                let start = (s.start_us * 1000.0).round() as Ns;
                (start, start + (s.wall_us * 1000.0).round() as Ns)
            })
            .collect();
        let mut collectives = Vec::new();
        let mut outside_steps = 0;
        for (staged, frames) in observed.staged.iter().zip(&mut frames) {
            let found = stage_collectives(
                staged.trace,
                &staged.split.stages,
                &stage_report.stage,
                rules,
                &steps,
                frames,
                observed,
            );
            outside_steps += found.1;
            collectives.extend(found.0);
        }
        stages.push(StageDigest {
            stage: stage_report.stage.clone(),
            timeline: timeline.clone(),
            collectives,
            outside_steps,
        });
    }
    let traces = observed.staged.iter().map(|s| s.trace);
    RankDigest {
        rank,
        file,
        stages,
        splits: rank_splits(observed.staged, Some(rank)),
        read_notes: read_notes(traces.clone()),
        skipped: traces.map(|t| t.skipped.total()).sum(),
    }
}

/// The collectives of one stage of one trace, keyed, with their stretches; and how many
/// fell outside every step.
fn stage_collectives(
    trace: &Trace,
    stages: &[Stage],
    label: &str,
    rules: &CollectiveRules,
    steps: &[(Ns, Ns)],
    frames: &mut ThreadFrames,
    observed: &Observed<'_>,
) -> (Vec<Collective>, usize) {
    let Some(pid) = busiest_gpu_pid(trace) else {
        return (Vec::new(), 0);
    };
    let mut families: FxHashMap<Sym, Option<String>> = FxHashMap::default();
    // (op index, family) of the stage's GPU ops, collectives marked, in start order.
    let mut ops: Vec<(usize, Option<String>)> = trace
        .gpu_ops
        .iter()
        .enumerate()
        .filter(|(i, op)| op.pid == pid && stages.get(*i).is_some_and(|s| s.label() == label))
        .map(|(i, op)| {
            let family = match op.kind {
                GpuKind::Kernel => families
                    .entry(op.name)
                    .or_insert_with(|| rules.family_of(trace.name(op.name)).map(str::to_string))
                    .clone(),
                _ => None,
            };
            (i, family)
        })
        .collect();
    ops.sort_by_key(|&(i, _)| (trace.gpu_ops.ts(i), i));
    let mut streams: Vec<Option<i64>> = ops
        .iter()
        .filter(|(_, f)| f.is_some())
        .map(|&(i, _)| trace.gpu_ops.at(i).stream)
        .collect();
    streams.sort_unstable();
    streams.dedup();
    let compute = compute_union(trace, &ops);
    let mut names: FxHashMap<Sym, String> = FxHashMap::default();
    let mut ordinals: FxHashMap<(usize, String, usize), usize> = FxHashMap::default();
    let mut found = Vec::new();
    let mut outside = 0;
    let mut since = ops.first().map_or(0, |&(i, _)| trace.gpu_ops.ts(i));
    let mut stretch_from = 0;
    for (at, (i, family)) in ops.iter().enumerate() {
        let Some(family) = family else { continue };
        let op = trace.gpu_ops.at(*i);
        let before = stretch(
            trace,
            &ops[stretch_from..at],
            since,
            op.ts,
            frames,
            &mut names,
            observed,
        );
        since = since.max(op.end());
        stretch_from = at + 1;
        // The step whose window holds the op's start (windows are in time order).
        let step = steps.partition_point(|&(start, _)| start <= op.ts);
        let Some(step) = step.checked_sub(1).filter(|&s| op.ts <= steps[s].1) else {
            outside += 1;
            continue;
        };
        let stream_ordinal = streams.partition_point(|s| *s < op.stream);
        let counter = ordinals
            .entry((step, family.clone(), stream_ordinal))
            .or_default();
        let ordinal = *counter;
        *counter += 1;
        found.push(Collective {
            key: CollectiveKey {
                step,
                family: family.clone(),
                stream_ordinal,
                ordinal,
            },
            start: op.ts,
            end: op.end(),
            before,
            covered: clipped(&compute, op.ts, op.end()),
        });
    }
    (found, outside)
}

/// The union of the non-collective kernels listed (start order), as merged intervals in
/// time order.
fn compute_union(trace: &Trace, ops: &[(usize, Option<String>)]) -> Vec<(Ns, Ns)> {
    let mut union: Vec<(Ns, Ns)> = Vec::new();
    for &(i, _) in ops.iter().filter(|(_, f)| f.is_none()) {
        let op = trace.gpu_ops.at(i);
        if op.kind != GpuKind::Kernel {
            continue;
        }
        match union.last_mut() {
            Some(last) if op.ts <= last.1 => last.1 = last.1.max(op.end()),
            _ => union.push((op.ts, op.end())),
        }
    }
    union
}

/// The parts of `union` (merged, in time order) inside `[from, to)`.
fn clipped(union: &[(Ns, Ns)], from: Ns, to: Ns) -> Vec<(Ns, Ns)> {
    let first = union.partition_point(|&(_, end)| end <= from);
    union[first..]
        .iter()
        .take_while(|&&(start, _)| start < to)
        .map(|&(start, end)| (start.max(from), end.min(to)))
        .filter(|(start, end)| start < end)
        .collect()
}

/// The stretch `[from, to)` over the non-collective ops listed (start order).
fn stretch(
    trace: &Trace,
    ops: &[(usize, Option<String>)],
    from: Ns,
    to: Ns,
    frames: &mut ThreadFrames,
    names: &mut FxHashMap<Sym, String>,
    observed: &Observed<'_>,
) -> Stretch {
    let mut busy = 0;
    let mut covered = from;
    let mut longest_gap: (Ns, Ns, Option<usize>) = (0, from, None);
    let mut kernels: Vec<(String, Ns)> = Vec::new();
    let mut by_sym: Vec<(Sym, Ns)> = Vec::new();
    for &(i, _) in ops.iter().filter(|(_, f)| f.is_none()) {
        let op = trace.gpu_ops.at(i);
        let (start, end) = (op.ts.max(from), op.end().min(to));
        if end <= start {
            continue;
        }
        if start > covered && start - covered > longest_gap.0 {
            longest_gap = (start - covered, covered, Some(i));
        }
        if end > covered {
            busy += end - start.max(covered);
            covered = end;
        }
        match by_sym.iter_mut().find(|(n, _)| *n == op.name) {
            Some(entry) => entry.1 += end - start,
            None => by_sym.push((op.name, end - start)),
        }
    }
    // Canonical names once per distinct kernel, not per op (several raw names may share one).
    for (sym, ns) in by_sym {
        let name = names
            .entry(sym)
            .or_insert_with(|| canonical_name(trace.name(sym)));
        match kernels.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 += ns,
            None => kernels.push((name.clone(), ns)),
        }
    }
    kernels.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    kernels.truncate(KERNELS_KEPT);
    let span = (to - from).max(0);
    let mut stretch = Stretch {
        busy,
        idle: span - busy.min(span),
        kernels,
        launch: None,
        python: None,
    };
    if let (_, gap_start, Some(after)) = longest_gap {
        let site = observed
            .staged
            .iter()
            .find(|s| std::ptr::eq(s.trace, trace));
        let call = site
            .and_then(|s| s.linked.sites.get(after))
            .and_then(|site| site.runtime)
            .and_then(|r| trace.runtime.get(r as usize));
        if let Some(call) = call {
            stretch.launch = Some(trace.name(call.name).to_string());
            stretch.python = frames.worked_before(trace, &call, gap_start, observed);
        }
    }
    stretch
}

/// The Python frames of a trace, by thread (pid, tid), in start order (for the
/// stretches' host side: a binary search per stretch). A thread's list is built the
/// first time a stretch asks for it: the stretches ask for the launching threads only,
/// a few of a trace's few dozen, and copying every frame into per-thread lists up front
/// (hashing each frame's thread) was a third of a rank's digest.
struct ThreadFrames {
    /// By the frame table's thread index ([`crate::trace::compact::PyFrames::threads`]).
    by_thread: Vec<Option<Vec<u32>>>,
    /// By thread index: where in its list the last stretch's search ended. Stretches
    /// come in time order within a stage, so the next search starts there: a binary
    /// search over a thread's whole list (half a million frames) missed the cache at
    /// each step, 45% of a digest's own time.
    searched_to: Vec<usize>,
    /// By symbol: each frame name's engine location (an index into `locations`), found
    /// once per name: the locator's path matching was 40% of a digest before (a few
    /// thousand distinct names, millions of frames). A table, not a hash map: a hash per
    /// frame looked at cost 40 ms of CPU more on 4 ranks of 250 MB.
    location_of: Vec<Location>,
    locations: Vec<String>,
}

/// A frame name's engine location in [`ThreadFrames::location_of`].
#[derive(Clone, Copy, PartialEq)]
enum Location {
    NotLookedUp,
    NotEngineCode,
    At(u32),
}

impl ThreadFrames {
    fn of(trace: &Trace) -> ThreadFrames {
        ThreadFrames {
            by_thread: vec![None; trace.py_frames.threads().len()],
            searched_to: vec![0; trace.py_frames.threads().len()],
            location_of: vec![Location::NotLookedUp; trace.strings.len()],
            locations: Vec::new(),
        }
    }

    /// The engine frame that started after `gap_start` and ended before `call` began on
    /// its thread (work done instead of launching), the longest (the first location by
    /// name among equals); with its length.
    fn worked_before(
        &mut self,
        trace: &Trace,
        call: &crate::trace::event::RuntimeCall,
        gap_start: Ns,
        observed: &Observed<'_>,
    ) -> Option<(String, Ns)> {
        let (index, list) = on_thread(&mut self.by_thread, trace, (call.pid, call.tid))?;
        let frames = &trace.py_frames;
        let hint = &mut self.searched_to[index];
        let first =
            first_starting_at_or_after(list, *hint, |i| frames.span(i as usize).0 < gap_start);
        *hint = first;
        let mut best: Option<(usize, Ns)> = None;
        for &i in &list[first..] {
            let (start, end) = frames.span(i as usize);
            if start >= call.ts {
                break;
            }
            if end > call.ts {
                continue;
            }
            let name = frames.name(i as usize);
            let Some(slot) = self.location_of.get_mut(name.0 as usize) else {
                continue;
            };
            if *slot == Location::NotLookedUp {
                *slot = match observed.locator.location(&[trace.name(name)]) {
                    Some(location) => {
                        self.locations.push(location);
                        Location::At(self.locations.len() as u32 - 1)
                    }
                    None => Location::NotEngineCode,
                };
            }
            let Location::At(at) = *slot else { continue };
            let at = at as usize;
            let longer = best.is_none_or(|(best_at, best_len)| {
                (end - start)
                    .cmp(&best_len)
                    .then(self.locations[best_at].cmp(&self.locations[at]))
                    .is_ge()
            });
            if longer {
                best = Some((at, end - start));
            }
        }
        best.map(|(at, len)| (self.locations[at].clone(), len))
    }
}

/// The first index of `list` whose entry is not `before` (which holds for a prefix of
/// `list`, as for `partition_point`), searched from `hint` on: by doubling steps forward
/// from it when its entry is before, else by halving the part before it.
fn first_starting_at_or_after(list: &[u32], hint: usize, before: impl Fn(u32) -> bool) -> usize {
    let hint = hint.min(list.len());
    if hint == list.len() || !before(list[hint]) {
        return list[..hint].partition_point(|&i| before(i));
    }
    // `list[lo - 1]` is before; the answer is in `lo..=hi`.
    let mut lo = hint + 1;
    let mut step = 1;
    let hi = loop {
        let probe = hint + step;
        if probe >= list.len() || !before(list[probe]) {
            break probe.min(list.len());
        }
        lo = probe + 1;
        step *= 2;
    };
    lo + list[lo..hi].partition_point(|&i| before(i))
}

/// The frames of thread (pid, tid) in start order (by start, end, name), as indices
/// into the trace's frame table, built on first ask into `by_thread`
/// ([`ThreadFrames::by_thread`]), with the thread's index there; `None` if it ran none.
/// Indices, not the frames themselves: a quarter of the bytes to write, and the frames a
/// stretch reads are few.
/// Frames are mostly in start order in the file already, which one comparison per
/// frame confirms and saves the sort.
fn on_thread<'f>(
    by_thread: &'f mut [Option<Vec<u32>>],
    trace: &Trace,
    thread: (Sym, Sym),
) -> Option<(usize, &'f [u32])> {
    let frames = &trace.py_frames;
    let index = frames.threads().iter().position(|&t| t == thread)?;
    let key = |i: u32| {
        let (start, end) = frames.span(i as usize);
        (start, end, frames.name(i as usize))
    };
    let list = by_thread[index].get_or_insert_with(|| {
        // One thread ran them all: the list is every frame.
        let capacity = if frames.threads().len() == 1 {
            frames.len()
        } else {
            0
        };
        let mut list = Vec::with_capacity(capacity);
        let mut in_order = true;
        let mut last = None;
        for i in 0..frames.len() as u32 {
            if frames.thread_index(i as usize) as usize != index {
                continue;
            }
            let k = key(i);
            in_order &= last.is_none_or(|l| l <= k);
            last = Some(k);
            list.push(i);
        }
        if !in_order {
            list.sort_unstable_by_key(|&i| key(i));
        }
        list
    });
    Some((index, list))
}

#[cfg(test)]
mod tests {
    use super::{clipped, first_starting_at_or_after, on_thread, ThreadFrames};
    use crate::trace::event::{PyFrame, Sym, Trace};

    #[test]
    fn a_threads_frames_are_its_own_in_start_order_whichever_thread_is_asked_first() {
        let mut trace = Trace::default();
        // 300 threads (past the compact table's 8-bit thread index), names past 2^24,
        // out of order in the file.
        for i in 0..3_000u32 {
            trace.py_frames.push(PyFrame {
                name: Sym(if i % 11 == 0 { (1 << 24) + i } else { i % 40 }),
                ts: i64::from((i * 7_919) % 3_001),
                dur: i64::from(i % 13),
                pid: Sym(i % 2),
                tid: Sym(i % 300),
            });
        }
        let mut frames = ThreadFrames::of(&trace);
        for tid in [299, 0, 7, 299] {
            let thread = (Sym(tid % 2), Sym(tid));
            let mut expected: Vec<(i64, i64, Sym)> = trace
                .py_frames
                .iter()
                .filter(|f| (f.pid, f.tid) == thread)
                .map(|f| (f.ts, f.end(), f.name))
                .collect();
            expected.sort_unstable();
            assert_eq!(expected.len(), 10);
            let got: Vec<(i64, i64, Sym)> = on_thread(&mut frames.by_thread, &trace, thread)
                .unwrap()
                .1
                .iter()
                .map(|&i| {
                    let f = trace.py_frames.at(i as usize);
                    (f.ts, f.end(), f.name)
                })
                .collect();
            assert_eq!(got, expected, "thread {tid}");
        }
        // A thread that ran no frame.
        assert!(on_thread(&mut frames.by_thread, &trace, (Sym(1), Sym(0))).is_none());
    }

    #[test]
    fn frames_already_in_start_order_keep_the_files_order_and_ties_are_ordered_by_end() {
        let mut trace = Trace::default();
        // One thread; in start order but for the two frames starting at 20, whose
        // longer one (the parent, written last) comes first in (start, end) order
        // only after the shorter.
        for (ts, dur, name) in [(0, 50, 1), (10, 5, 2), (20, 9, 3), (20, 4, 4), (40, 1, 5)] {
            trace.py_frames.push(PyFrame {
                name: Sym(name),
                ts,
                dur,
                pid: Sym(0),
                tid: Sym(0),
            });
        }
        let mut frames = ThreadFrames::of(&trace);
        let (_, list) = on_thread(&mut frames.by_thread, &trace, (Sym(0), Sym(0))).unwrap();
        assert_eq!(list, [0, 1, 3, 2, 4]);
        // Without the tie, the file's order as it is.
        let mut trace = Trace::default();
        for ts in [0, 3, 3, 8] {
            trace.py_frames.push(PyFrame {
                name: Sym(0),
                ts,
                dur: 2,
                pid: Sym(0),
                tid: Sym(0),
            });
        }
        let mut frames = ThreadFrames::of(&trace);
        let (_, list) = on_thread(&mut frames.by_thread, &trace, (Sym(0), Sym(0))).unwrap();
        assert_eq!(list, [0, 1, 2, 3]);
    }

    #[test]
    fn a_search_from_any_hint_ends_where_a_binary_search_does() {
        let list: Vec<u32> = vec![0, 0, 3, 3, 3, 7, 9, 9, 12, 40, 41, 41, 41, 100];
        for len in [0, 1, 2, 5, list.len()] {
            let list = &list[..len];
            for bound in 0..=101 {
                let want = list.partition_point(|&v| v < bound);
                for hint in 0..=len + 2 {
                    let got = first_starting_at_or_after(list, hint, |v| v < bound);
                    assert_eq!(got, want, "len {len}, bound {bound}, hint {hint}");
                }
            }
        }
    }

    #[test]
    fn a_collective_keeps_the_compute_union_clipped_to_its_span() {
        let union = [(0, 10), (20, 30), (40, 50), (60, 70)];
        // Cut at both ends, the interval wholly inside kept, the ones outside dropped.
        assert_eq!(clipped(&union, 25, 45), [(25, 30), (40, 45)]);
        // Touching ends cover nothing.
        assert_eq!(clipped(&union, 30, 40), []);
        assert_eq!(clipped(&union, 15, 65), [(20, 30), (40, 50), (60, 65)]);
        assert_eq!(clipped(&union, 80, 90), []);
        assert_eq!(clipped(&[], 0, 10), []);
    }
}
