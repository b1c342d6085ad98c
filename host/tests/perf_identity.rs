//! The fast paths give the same results as the straightforward ones, on every real trace
//! in `shared/traces` and on synthetic edge cases:
//!
//! - the reader: the hand-written event scanner (`read_trace`) against serde for every
//!   event (`read_trace_reference`): equal `Trace` values, interning order included;
//! - the linker: `link` (sorted index lists, per-thread item lists, parallel sweeps)
//!   against `reference::link`, the straightforward version it replaced (tables of
//!   lists, intervals of every thread), kept here verbatim as the specification.
//!
//! Reports are functions of these two values, so equal values give byte-identical
//! reports; `tests/tests/e2e/perf_identity.rs` checks that on the rendered output too.

use std::path::{Path, PathBuf};

use llm_triage::trace::event::Trace;
use llm_triage::trace::link::link;
use llm_triage::trace::read::{read_trace, read_trace_reference};

fn shared_traces() -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    files.sort();
    // Every trace there is one SOURCES.md describes (so none is read by accident), and
    // the directory is not empty or half there.
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(
            sources.contains(&format!("`{name}`")),
            "{name} not in SOURCES.md"
        );
    }
    assert!(files.len() >= 9, "the real traces of SOURCES.md: {files:?}");
    files
}

fn read_both(path: &Path) -> (Trace, Trace) {
    let fast = read_trace(path, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let reference = read_trace_reference(path, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    (fast, reference)
}

#[test]
fn fast_reader_equals_serde_reader_on_every_real_trace() {
    for path in shared_traces() {
        let (fast, reference) = read_both(&path);
        // Field by field first, for a message that says where.
        assert_eq!(fast.gpu_ops, reference.gpu_ops, "{}", path.display());
        assert_eq!(fast.runtime, reference.runtime, "{}", path.display());
        assert_eq!(fast.cpu_ops, reference.cpu_ops, "{}", path.display());
        assert_eq!(fast.py_frames, reference.py_frames, "{}", path.display());
        assert_eq!(
            fast.annotations,
            reference.annotations,
            "{}",
            path.display()
        );
        assert_eq!(fast.meta, reference.meta, "{}", path.display());
        assert_eq!(fast.skipped, reference.skipped, "{}", path.display());
        assert!(fast == reference, "{}: traces differ", path.display());
        assert!(fast.event_count > 1000, "{}", path.display());
    }
}

#[test]
fn fast_reader_equals_serde_reader_on_unusual_events() {
    // Each event sends the scanner down one of its refusal paths (or through a corner
    // it accepts); serde must agree on every one.
    // Deeper than the scanner goes (64), shallower than serde's limit (128).
    let deep = format!(
        r#"{{"ph": "X", "cat": "cpu_op", "name": "deep", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "args": {{"a": {}{}}}}}"#,
        "[".repeat(70),
        "]".repeat(70)
    );
    let events: [&str; 12] = [
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2.25, "args": {"stream": 7, "correlation": 5, "External id": "9"}}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"esc\"aped \u00e9","pid":"1","tid":1,"ts":"3","dur":4}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "dup", "name": "twice", "pid": 1, "tid": 1, "ts": 3, "dur": 4}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "f", "pid": 1.5, "tid": -0, "ts": 1e3, "dur": 2E-1, "args": {"stream": 7.0, "correlation": -3, "device": "2"}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "n", "pid": null, "tid": 1, "ts": 5, "dur": 1, "args": {"stream": 1}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "nan", "pid": 0, "tid": 0, "ts": NaN, "dur": 1, "args": {"stream": 1}}"#,
        &deep,
        r#"{"ph": "X", "cat": "cpu_op", "name": "skipped", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "x": {"k": [true, false, null, -0.5e+3, "s\\t\/"]}, "args": {"External id": 12345678901234567890}}"#,
        r#"{"ph": "M", "name": "thread_name", "pid": 3, "tid": 4, "args": {"name": "worker"}}"#,
        r#"{"ph": "X", "cat": "python_function", "name": "a.py(1): f", "pid": 0, "tid": 0, "ts": 2, "dur": 9, "args": []}"#,
        r#"{"ph":"X" , "cat" :"user_annotation","name":"step","pid":0,"tid":0,"ts":0,"dur":100,"args":{}}"#,
        r#"{}"#,
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unusual.json");
    std::fs::write(&path, format!("[{}]", events.join(",\n"))).unwrap();
    let (fast, reference) = read_both(&path);
    assert!(fast == reference);
    assert_eq!(fast.event_count, events.len() as u64);
    // Independently counted: the kept events of the list above.
    assert_eq!(
        (fast.gpu_ops.len(), fast.cpu_ops.len(), fast.py_frames.len()),
        (3, 3, 1)
    );
}

#[test]
fn fast_reader_fails_like_serde_reader_on_invalid_events() {
    let invalid = [
        r#"{"ph": "X", "cat": "kernel", "name": "n", "pid": 0, "tid": 01, "ts": 5, "dur": 1}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "ctl	tab", "pid": 0, "tid": 0, "ts": 1, "dur": 1}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "args": {"x": [1, 2,]}}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 0, "tid": 0, "ts": 1., "dur": 1}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "x": tru}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "a" "pid": 0}"#,
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, event) in invalid.iter().enumerate() {
        let path = dir.path().join(format!("invalid{i}.json"));
        std::fs::write(&path, format!("[{{\"ph\": \"i\"}}, {event}]")).unwrap();
        let fast = read_trace(&path, &mut |_| {}).map(|_| ()).unwrap_err();
        let reference = read_trace_reference(&path, &mut |_| {})
            .map(|_| ())
            .unwrap_err();
        assert_eq!(fast.to_string(), reference.to_string());
        assert!(fast.to_string().contains("invalid JSON at byte"), "{fast}");
    }
}

#[test]
fn fast_linker_equals_reference_linker_on_every_real_trace() {
    for path in shared_traces() {
        let trace = read_trace(&path, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let fast = link(&trace);
        let slow = reference::link(&trace);
        assert_eq!(fast.sites, slow.sites, "{}", path.display());
        assert_eq!(fast.stacks, slow.stacks, "{}", path.display());
        assert_eq!(fast.counts, slow.counts, "{}", path.display());
    }
}

/// The linker as it was before the memory work (commit 9321051), unchanged but for
/// paths: the specification the fast one is held to.
mod reference {
    use rustc_hash::FxHashMap as HashMap;

    use llm_triage::trace::event::{Ns, Sym, Trace};
    use llm_triage::trace::link::{
        is_graph_launch, LaunchSite, LinkCounts, Linked, SiteSource, StackId,
    };

    /// Timestamps come from microsecond floats; allow one nanosecond of rounding.
    const TOLERANCE_NS: Ns = 1;

    /// Links every GPU op of `trace` to its runtime call, cpu_op and Python stack.
    pub fn link(trace: &Trace) -> Linked {
        let runtime_of = runtime_calls_of_ops(trace);
        let ops_by_external = index_cpu_ops_by_external_id(trace);

        // Where and when each op was launched: (thread, CPU time), if known.
        let mut sites = Vec::with_capacity(trace.gpu_ops.len());
        let mut launch_points: Vec<Option<(Thread, Ns)>> = Vec::with_capacity(trace.gpu_ops.len());
        // The cpu_op chosen by External id, before the containment check.
        let mut external_ops: Vec<Option<u32>> = Vec::with_capacity(trace.gpu_ops.len());
        for (op, runtime) in trace.gpu_ops.iter().zip(&runtime_of) {
            let mut site = LaunchSite::default();
            let mut point = None;
            let mut external_op = None;
            if let Some(r) = *runtime {
                let call = trace.runtime.at(r as usize);
                site.runtime = Some(r);
                site.launch_ts = Some(call.ts);
                site.graph_replay = is_graph_launch(trace.name(call.name));
                if site.graph_replay {
                    site.cpu_op = Some(call.name);
                    site.source = SiteSource::GraphLaunch;
                }
                point = Some(((call.pid, call.tid), call.ts));
                let external = call.external_id.or(op.external_id);
                external_op = external.and_then(|id| {
                    pick_cpu_op(
                        trace,
                        ops_by_external.get(&id)?,
                        (call.pid, call.tid),
                        call.ts,
                    )
                });
            } else if let Some(id) = op.external_id {
                // Legacy traces: no runtime events, the op's External id names its cpu_op.
                if let Some(c) = ops_by_external.get(&id).and_then(|cands| {
                    nearest_start_at_or_before(cands, |&c| trace.cpu_ops.at(c as usize).ts, op.ts)
                }) {
                    let cpu = trace.cpu_ops.at(c as usize);
                    site.cpu_op = Some(cpu.name);
                    site.input_dims = cpu.input_dims;
                    site.input_types = cpu.input_types;
                    site.launch_ts = Some(cpu.ts);
                    // Probe inside the op, past its own start, where its frames are open.
                    point = Some(((cpu.pid, cpu.tid), cpu.ts + (cpu.dur / 2).min(1000)));
                    external_op = Some(c);
                }
            }
            sites.push(site);
            launch_points.push(point);
            external_ops.push(external_op);
        }

        // cpu_op: the External-id op when it contains the launch on the launching thread,
        // else the innermost op there that does, else the External-id op anyway.
        let innermost_ops = innermost_cpu_ops(trace, &launch_points);
        for (i, site) in sites.iter_mut().enumerate() {
            if site.cpu_op.is_some() {
                continue;
            }
            let contains = |c: u32| {
                let cpu = trace.cpu_ops.at(c as usize);
                launch_points[i].is_some_and(|((pid, tid), t)| {
                    cpu.pid == pid && cpu.tid == tid && contains_time(cpu.ts, cpu.ts + cpu.dur, t)
                })
            };
            let chosen = match external_ops[i] {
                Some(c) if contains(c) => Some(c),
                other => innermost_ops[i].or(other),
            };
            let chosen = chosen.map(|c| trace.cpu_ops.at(c as usize));
            site.cpu_op = chosen.map(|cpu| cpu.name);
            // An eager launch carries its CPU op's recorded shapes.
            site.input_dims = chosen.and_then(|cpu| cpu.input_dims);
            site.input_types = chosen.and_then(|cpu| cpu.input_types);
        }

        let (stack_of, stacks) = python_stacks(trace, &launch_points);
        let mut counts = LinkCounts::default();
        for ((site, stack), &runtime) in sites.iter_mut().zip(stack_of).zip(&runtime_of) {
            site.stack = stack;
            counts.linked += u64::from(site.runtime.is_some() || site.cpu_op.is_some());
            counts.no_launch += u64::from(runtime.is_none());
            counts.no_stack += u64::from(stack.is_none());
            counts.graph_replays += u64::from(site.graph_replay);
        }
        // Collisions (a correlation repeated inside one process) are a count the
        // specification did not keep; the test compares sites, stacks and counts.
        Linked {
            sites,
            stacks,
            counts,
            ..Linked::default()
        }
    }

    /// (pid, tid) of a CPU thread.
    type Thread = (Sym, Sym);

    fn contains_time(start: Ns, end: Ns, t: Ns) -> bool {
        start <= t + TOLERANCE_NS && t <= end + TOLERANCE_NS
    }

    /// The runtime call of each GPU op, by correlation. When a correlation repeats, the
    /// call that started last at or before the op wins (else the earliest one).
    fn runtime_calls_of_ops(trace: &Trace) -> Vec<Option<u32>> {
        let mut by_correlation: HashMap<u64, Vec<u32>> = HashMap::default();
        for (i, call) in trace.runtime.iter().enumerate() {
            by_correlation
                .entry(call.correlation)
                .or_default()
                .push(i as u32);
        }
        for calls in by_correlation.values_mut() {
            calls.sort_by_key(|&c| trace.runtime.ts(c as usize));
        }
        trace
            .gpu_ops
            .iter()
            .map(|op| {
                let calls = by_correlation.get(&op.correlation?)?;
                nearest_start_at_or_before(calls, |&c| trace.runtime.ts(c as usize), op.ts)
            })
            .collect()
    }

    /// Among `sorted` (by start), the last that starts at or before `t`, else the first.
    fn nearest_start_at_or_before(
        sorted: &[u32],
        start: impl Fn(&u32) -> Ns,
        t: Ns,
    ) -> Option<u32> {
        let after = sorted.partition_point(|c| start(c) <= t + TOLERANCE_NS);
        match after {
            0 => sorted.first().copied(),
            n => Some(sorted[n - 1]),
        }
    }

    fn index_cpu_ops_by_external_id(trace: &Trace) -> HashMap<u64, Vec<u32>> {
        let mut by_external: HashMap<u64, Vec<u32>> = HashMap::default();
        for (i, op) in trace.cpu_ops.iter().enumerate() {
            if let Some(id) = op.external_id {
                by_external.entry(id).or_default().push(i as u32);
            }
        }
        for ops in by_external.values_mut() {
            ops.sort_by_key(|&c| trace.cpu_ops.at(c as usize).ts);
        }
        by_external
    }

    /// The candidate on the launching thread that contains the launch, else the one that
    /// started last before it, else the first.
    fn pick_cpu_op(trace: &Trace, candidates: &[u32], thread: Thread, t: Ns) -> Option<u32> {
        let on_thread_containing = candidates.iter().rev().copied().find(|&c| {
            let op = trace.cpu_ops.at(c as usize);
            (op.pid, op.tid) == thread && contains_time(op.ts, op.ts + op.dur, t)
        });
        on_thread_containing.or_else(|| {
            nearest_start_at_or_before(candidates, |&c| trace.cpu_ops.at(c as usize).ts, t)
        })
    }

    /// A time interval on one thread; `item` indexes the event it came from.
    #[derive(Copy, Clone, Debug)]
    struct Interval {
        start: Ns,
        end: Ns,
        item: u32,
    }

    /// For each query `(thread, t)`, calls `visit(query index, active)` with the intervals
    /// of that thread that contain `t`, outer..inner.
    ///
    /// Intervals on one thread nest (call stacks), so one sorted sweep with a stack finds
    /// them: an interval that does not enclose a newer one has ended and is popped.
    fn sweep_active(
        intervals: HashMap<Thread, Vec<Interval>>,
        queries: &[Option<(Thread, Ns)>],
        mut visit: impl FnMut(usize, &[Interval]),
    ) {
        let mut queries_by_thread: HashMap<Thread, Vec<(Ns, usize)>> = HashMap::default();
        for (q, query) in queries.iter().enumerate() {
            if let Some((thread, t)) = *query {
                queries_by_thread.entry(thread).or_default().push((t, q));
            }
        }
        let mut intervals = intervals;
        for (thread, mut queries) in queries_by_thread {
            let Some(mut thread_intervals) = intervals.remove(&thread) else {
                continue;
            };
            // Outer before inner when two start together.
            thread_intervals.sort_by_key(|iv| (iv.start, std::cmp::Reverse(iv.end)));
            queries.sort_unstable();
            let mut stack: Vec<Interval> = Vec::new();
            let mut next = 0;
            for (t, q) in queries {
                while next < thread_intervals.len()
                    && thread_intervals[next].start <= t + TOLERANCE_NS
                {
                    let iv = thread_intervals[next];
                    while stack.last().is_some_and(|top| top.end < iv.end) {
                        stack.pop();
                    }
                    stack.push(iv);
                    next += 1;
                }
                while stack.last().is_some_and(|top| top.end + TOLERANCE_NS < t) {
                    stack.pop();
                }
                visit(q, &stack);
            }
        }
    }

    /// The innermost cpu_op containing each launch point.
    fn innermost_cpu_ops(trace: &Trace, points: &[Option<(Thread, Ns)>]) -> Vec<Option<u32>> {
        let mut intervals: HashMap<Thread, Vec<Interval>> = HashMap::default();
        for (i, op) in trace.cpu_ops.iter().enumerate() {
            intervals
                .entry((op.pid, op.tid))
                .or_default()
                .push(Interval {
                    start: op.ts,
                    end: op.ts + op.dur,
                    item: i as u32,
                });
        }
        let mut innermost = vec![None; points.len()];
        sweep_active(intervals, points, |q, active| {
            innermost[q] = active.last().map(|iv| iv.item);
        });
        innermost
    }

    /// The Python stack at each launch point, interned: (stack per point, stacks).
    fn python_stacks(
        trace: &Trace,
        points: &[Option<(Thread, Ns)>],
    ) -> (Vec<Option<StackId>>, Vec<Vec<Sym>>) {
        let mut intervals: HashMap<Thread, Vec<Interval>> = HashMap::default();
        for (i, frame) in trace.py_frames.iter().enumerate() {
            intervals
                .entry((frame.pid, frame.tid))
                .or_default()
                .push(Interval {
                    start: frame.ts,
                    end: frame.end(),
                    item: i as u32,
                });
        }
        let mut ids: HashMap<Vec<Sym>, StackId> = HashMap::default();
        let mut stacks: Vec<Vec<Sym>> = Vec::new();
        let mut stack_of = vec![None; points.len()];
        // Kernels of one graph replay share a launch point: reuse the last answer.
        let mut last: Option<((Thread, Ns), Option<StackId>)> = None;
        sweep_active(intervals, points, |q, active| {
            if let (Some((point, id)), Some(now)) = (last, points[q]) {
                if point == now {
                    stack_of[q] = id;
                    return;
                }
            }
            if active.is_empty() {
                last = points[q].map(|p| (p, None));
                return;
            }
            let names: Vec<Sym> = active
                .iter()
                .map(|iv| trace.py_frames.at(iv.item as usize).name)
                .collect();
            let id = *ids.entry(names).or_insert_with_key(|names| {
                stacks.push(names.clone());
                (stacks.len() - 1) as StackId
            });
            stack_of[q] = Some(id);
            last = points[q].map(|p| (p, Some(id)));
        });
        (stack_of, stacks)
    }
}
