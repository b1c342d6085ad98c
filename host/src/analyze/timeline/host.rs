//! What the launching thread ran while the GPU sat idle: for each listed gap, the self
//! time of the innermost runtime call, the innermost CPU op and the innermost engine
//! Python frame (as the kernel table names locations) at each instant, as shares of
//! the gap.
//!
//! One pass over each event list serves every listed gap (there are few), so no
//! per-thread index is built.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use crate::analyze::location::Locator;
use crate::report::model::HostShare;
use crate::trace::event::{Ns, Sym, Trace};

use super::idle::Thread;

/// A window of one thread whose host activity is asked for.
#[derive(Copy, Clone, Debug)]
pub(super) struct Window {
    pub thread: Thread,
    pub start: Ns,
    pub end: Ns,
}

/// Entries of one kind shown per gap, and the smallest share shown.
const PER_KIND: usize = 3;
const MIN_SHARE_PCT: f64 = 1.0;

/// One interval of one event kind, clipped to nothing yet.
#[derive(Copy, Clone, Debug)]
struct Interval {
    start: Ns,
    end: Ns,
    name: Sym,
}

/// The host activity of each window (parallel to `windows`).
pub(super) fn host_activity(
    trace: &Trace,
    locator: &Locator,
    windows: &[Window],
) -> Vec<Vec<HostShare>> {
    let overlapping = |pid: Sym, tid: Sym, ts: Ns, end: Ns| {
        windows
            .iter()
            .enumerate()
            .filter(move |(_, w)| w.thread == (pid, tid) && ts < w.end && end > w.start)
            .map(|(i, _)| i)
    };
    let mut runtime: Vec<Vec<Interval>> = vec![Vec::new(); windows.len()];
    let mut cpu: Vec<Vec<Interval>> = vec![Vec::new(); windows.len()];
    let mut frames: Vec<Vec<Interval>> = vec![Vec::new(); windows.len()];
    let collect_span = |lists: &mut Vec<Vec<Interval>>, pid, tid, ts, end, name| {
        for i in overlapping(pid, tid, ts, end) {
            lists[i].push(Interval {
                start: ts,
                end,
                name,
            });
        }
    };
    for e in &trace.runtime {
        collect_span(
            &mut runtime,
            e.pid,
            e.tid,
            e.ts,
            e.ts.saturating_add(e.dur),
            e.name,
        );
    }
    // CPU ops and frames are millions: a record on a thread no window is on is passed
    // over by its thread index, before its times or the rest of it are decoded, and one
    // outside the hull of its thread's windows by one comparison, before the windows are
    // walked (at 1 GB about 10 windows against a million records on the launching thread).
    let hulls_of = |threads: &[(Sym, Sym)]| -> Vec<Option<(Ns, Ns)>> {
        threads
            .iter()
            .map(|t| {
                let on = windows.iter().filter(|w| w.thread == *t);
                let start = on.clone().map(|w| w.start).min()?;
                let end = on.map(|w| w.end).max()?;
                Some((start, end))
            })
            .collect()
    };
    // A superset of the windows' own test (`ts < w.end && end > w.start`).
    let in_hull = |(start, stop): (Ns, Ns), (ts, end): (Ns, Ns)| ts < stop && end > start;
    let ops = &trace.cpu_ops;
    let ops_hulls = hulls_of(ops.threads());
    for i in 0..ops.len() {
        if let Some(hull) = ops_hulls[ops.thread_index(i) as usize] {
            let span = ops.span(i);
            if in_hull(hull, span) {
                let (pid, tid) = ops.thread(i);
                collect_span(&mut cpu, pid, tid, span.0, span.1, ops.name(i));
            }
        }
    }
    let py = &trace.py_frames;
    let frames_hulls = hulls_of(py.threads());
    for i in 0..py.len() {
        if let Some(hull) = frames_hulls[py.thread_index(i) as usize] {
            let span = py.span(i);
            if in_hull(hull, span) {
                let (pid, tid) = py.thread(i);
                collect_span(&mut frames, pid, tid, span.0, span.1, py.name(i));
            }
        }
    }
    let innermost_name = |intervals: &[Interval], active: &[usize]| {
        active
            .last()
            .map(|&inner| trace.name(intervals[inner].name).to_string())
    };
    let engine_frame = |intervals: &[Interval], active: &[usize]| {
        let stack: Vec<&str> = active
            .iter()
            .map(|&a| trace.name(intervals[a].name))
            .collect();
        locator.location(&stack)
    };
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let mut shares: Vec<(usize, String, Ns)> = Vec::new();
            for (kind, list) in [(0, &runtime[i]), (1, &cpu[i])] {
                let named = self_time(list, w, innermost_name);
                shares.extend(named.into_iter().map(|(name, ns)| (kind, name, ns)));
            }
            let located = self_time(&frames[i], w, engine_frame);
            shares.extend(located.into_iter().map(|(name, ns)| (2, name, ns)));
            pick(shares, (w.end - w.start).max(1) as f64)
        })
        .collect()
}

/// The largest shares: at most [`PER_KIND`] of each kind, at least [`MIN_SHARE_PCT`],
/// largest first (runtime call, CPU op, frame on a tie).
fn pick(mut shares: Vec<(usize, String, Ns)>, len: f64) -> Vec<HostShare> {
    shares.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    let mut per_kind = [0usize; 3];
    shares
        .into_iter()
        .filter_map(|(kind, location, ns)| {
            let share_pct = 100.0 * ns as f64 / len;
            if share_pct < MIN_SHARE_PCT || per_kind[kind] >= PER_KIND {
                return None;
            }
            per_kind[kind] += 1;
            Some(HostShare {
                location,
                share_pct,
            })
        })
        .collect()
}

/// Self time in `window` by name: at each instant the active intervals (outer..inner,
/// by start) are handed to `name_of`, which names the instant or leaves it out.
fn self_time(
    intervals: &[Interval],
    window: &Window,
    name_of: impl Fn(&[Interval], &[usize]) -> Option<String>,
) -> Vec<(String, Ns)> {
    let mut points: Vec<(Ns, bool, usize)> = Vec::with_capacity(intervals.len() * 2);
    for (i, iv) in intervals.iter().enumerate() {
        points.push((iv.start.max(window.start), true, i));
        points.push((iv.end.min(window.end), false, i));
    }
    // Ends before starts at one instant.
    points.sort_unstable_by_key(|&(t, is_start, i)| (t, is_start, i));
    let key = |i: usize| (intervals[i].start, Reverse(intervals[i].end), i);
    let mut active: BTreeSet<(Ns, Reverse<Ns>, usize)> = BTreeSet::new();
    let mut totals: FxHashMap<String, Ns> = FxHashMap::default();
    let mut cache: FxHashMap<usize, Option<String>> = FxHashMap::default();
    let mut last = window.start;
    for (t, is_start, i) in points {
        if t > last {
            if let Some(&(_, _, inner)) = active.last() {
                let name = cache
                    .entry(inner)
                    .or_insert_with(|| {
                        let stack: Vec<usize> = active.iter().map(|&(_, _, a)| a).collect();
                        name_of(intervals, &stack)
                    })
                    .clone();
                if let Some(name) = name {
                    *totals.entry(name).or_default() += t - last;
                }
            }
            last = t;
        }
        if is_start {
            active.insert(key(i));
        } else {
            active.remove(&key(i));
        }
    }
    let mut totals: Vec<(String, Ns)> = totals.into_iter().collect();
    totals.sort();
    totals
}
