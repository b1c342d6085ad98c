//! The timeline ground truth against the written trace alone: every injected delay is
//! GPU idle where the truth says, caused the way it says, and nothing else in the trace
//! idles as long, so a generator bug cannot pass the end-to-end test silently.

use std::collections::BTreeMap;

use serde_json::Value;

use super::truth::{Cause, TimelineTruth};
use super::{scenarios, write_scenario, CudaApis, Platform};
use crate::recount::load;

const LAUNCHES: [&str; 11] = [
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernelEx",
    "cudaMemsetAsync",
    "cudaMemcpyAsync",
    "cudaGraphLaunch",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
    "hipGraphLaunch",
];
const BLOCKING: [&str; 3] = [
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "hipMemcpyWithStream",
];
const GRAPH_LAUNCHES: [&str; 2] = ["cudaGraphLaunch", "hipGraphLaunch"];

fn ns(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1000.0).round() as u64
}

/// One `ph: X` event: category, name, start, end, correlation.
struct Span {
    cat: String,
    name: String,
    start: u64,
    end: u64,
    tid: u64,
    correlation: Option<u64>,
}

fn spans(trace: &Value) -> Vec<Span> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let start = ns(&e["ts"]);
            Span {
                cat: e["cat"].as_str().unwrap().to_string(),
                name: e["name"].as_str().unwrap().to_string(),
                start,
                end: start + ns(&e["dur"]),
                tid: e["tid"].as_u64().unwrap(),
                correlation: e["args"]["correlation"].as_u64(),
            }
        })
        .collect()
}

/// Checks `truth` against the trace it names; the first disagreement is the error.
fn check(truth: &TimelineTruth) -> Result<(), String> {
    let trace = load(&truth.trace);
    let all = spans(&trace);
    let mut gpu: Vec<&Span> = all
        .iter()
        .filter(|s| ["kernel", "gpu_memcpy", "gpu_memset"].contains(&s.cat.as_str()))
        .collect();
    gpu.sort_by_key(|s| s.start);
    let runtime: Vec<&Span> = all
        .iter()
        .filter(|s| s.cat == "cuda_runtime" || s.cat == "cuda_driver")
        .collect();
    let launch_of: BTreeMap<u64, &Span> = runtime
        .iter()
        .filter(|s| LAUNCHES.contains(&s.name.as_str()))
        .filter_map(|s| Some((s.correlation?, *s)))
        .collect();

    // Busy time (the union over streams) and the idle intervals between busy stretches:
    // (start, end, the op after, the op before).
    let mut busy = 0;
    let mut idle = Vec::new();
    let mut reach: Option<(u64, usize)> = None;
    for (i, op) in gpu.iter().enumerate() {
        let same_stream = gpu[..i].iter().any(|p| p.tid == op.tid && p.end > op.start);
        if same_stream {
            return Err(format!(
                "GPU ops overlap on stream {} at {}",
                op.tid, op.start
            ));
        }
        match reach {
            Some((end, _)) if op.start <= end => busy += op.end.saturating_sub(end),
            Some((end, before)) => {
                idle.push((end, op.start, i, before));
                busy += op.end - op.start;
            }
            None => busy += op.end - op.start,
        }
        if reach.is_none_or(|(end, _)| op.end > end) {
            reach = Some((op.end, i));
        }
    }
    let first = gpu.first().ok_or("no GPU op")?;
    let last = reach.ok_or("no GPU op")?.0;
    if (busy, first.start, last) != (truth.busy_ns, truth.gpu_start_ns, truth.gpu_end_ns) {
        return Err(format!(
            "busy/start/end {busy}/{}/{last} != truth {}/{}/{}",
            first.start, truth.busy_ns, truth.gpu_start_ns, truth.gpu_end_ns
        ));
    }

    // Steps: one marker each; first launch and last GPU op of the launches inside it.
    // The step markers are the annotations the truth names (a ProfilerStep#N around an
    // engine's marker is not one); a launch belongs to the latest-started one holding it.
    let markers: Vec<&Span> = all
        .iter()
        .filter(|s| s.cat == "user_annotation")
        .filter(|s| truth.steps.iter().any(|t| t.label == s.name))
        .collect();
    let holder = |l: &Span| {
        markers
            .iter()
            .enumerate()
            .filter(|(_, m)| m.start <= l.start && l.end <= m.end)
            .max_by_key(|(_, m)| m.start)
            .map(|(i, _)| i)
    };
    if markers.len() != truth.steps.len() {
        return Err(format!(
            "{} markers, {} steps",
            markers.len(),
            truth.steps.len()
        ));
    }
    for (index, (marker, step)) in markers.iter().zip(&truth.steps).enumerate() {
        let inside: Vec<&&Span> = launch_of
            .values()
            .filter(|l| holder(l) == Some(index))
            .collect();
        let first_launch = inside.iter().map(|l| l.start).min().ok_or("empty step")?;
        let ops: Vec<&&Span> = gpu
            .iter()
            .filter(|op| inside.iter().any(|l| l.correlation == op.correlation))
            .collect();
        let end = ops
            .iter()
            .map(|op| op.end)
            .max()
            .ok_or("step without GPU ops")?;
        // Communication read off the kernel names alone (all-reduce kernels); each
        // part is the time it ran and no higher-ranked part did.
        let kind = |op: &Span| {
            let comm = op.name.contains("reduce") || op.name.starts_with("nccl");
            match (op.cat.as_str(), comm) {
                ("kernel", false) => 0,
                ("kernel", true) => 1,
                _ => 2,
            }
        };
        let upto = |k: usize| {
            let spans: Vec<(u64, u64)> = ops
                .iter()
                .filter(|op| kind(op) <= k)
                .map(|op| (op.start, op.end))
                .collect();
            union(&spans)
        };
        let parts = [upto(0), upto(1) - upto(0), upto(2) - upto(1)];
        if parts != [step.compute_ns, step.comm_ns, step.memcpy_ns] {
            return Err(format!(
                "step {}: parts {parts:?} != truth {step:?}",
                marker.name
            ));
        }
        if (marker.name.as_str(), first_launch, end)
            != (step.label.as_str(), step.first_launch_ns, step.end_ns)
        {
            return Err(format!(
                "step {} [{first_launch}, {end}] != truth {step:?}",
                marker.name
            ));
        }
    }

    let mut claimed = vec![false; idle.len()];
    for delay in &truth.delays {
        let window = (delay.start_ns, delay.end_ns);
        let gaps: Vec<usize> = (0..idle.len())
            .filter(|&g| window.0 <= idle[g].0 && idle[g].1 <= window.1)
            .collect();
        let what = format!("{} delay at {}", delay.cause.as_str(), delay.start_ns);
        match delay.cause {
            Cause::Host => {
                // The frame runs inside one idle interval, outside every step marker, and
                // is nearly all of it.
                let frame = delay.frame.as_ref().ok_or(format!("{what}: no frame"))?;
                let ran = all.iter().any(|s| {
                    s.cat == "python_function" && s.name == frame.name && (s.start, s.end) == window
                });
                let gap = idle
                    .iter()
                    .position(|g| g.0 <= window.0 && window.1 <= g.1)
                    .ok_or(format!("{what}: GPU not idle over the frame"))?;
                let gap_ns = idle[gap].1 - idle[gap].0;
                // Between steps' own windows (a marker held open into the next step may
                // cover it).
                let in_step = truth
                    .steps
                    .iter()
                    .any(|st| st.first_launch_ns < window.1 && window.0 < st.end_ns);
                if !ran || in_step || gap_ns * 100 > delay.amount_ns * 110 {
                    return Err(format!(
                        "{what}: frame ran {ran}, inside a step {in_step}, gap {gap_ns}"
                    ));
                }
                claimed[gap] = true;
            }
            Cause::Sync | Cause::Graph => {
                let [gap] = gaps[..] else {
                    return Err(format!(
                        "{what}: {} idle intervals in the window",
                        gaps.len()
                    ));
                };
                if (idle[gap].0, idle[gap].1) != window || window.1 - window.0 != delay.amount_ns {
                    return Err(format!("{what}: idle {:?} != window", idle[gap]));
                }
                let (before, after) = (gpu[idle[gap].3], gpu[idle[gap].2]);
                let blocked = runtime.iter().any(|s| {
                    BLOCKING.contains(&s.name.as_str()) && s.start <= window.0 && window.1 <= s.end
                });
                let pending = launch_of
                    .get(&after.correlation.unwrap_or(0))
                    .is_some_and(|l| l.start < window.0);
                let ok = if delay.cause == Cause::Sync {
                    blocked && pending
                } else {
                    let graph = launch_of
                        .get(&after.correlation.unwrap_or(0))
                        .is_some_and(|l| GRAPH_LAUNCHES.contains(&l.name.as_str()));
                    graph && before.correlation == after.correlation && !blocked
                };
                if !ok {
                    return Err(format!(
                        "{what}: host blocked {blocked}, op pending {pending}"
                    ));
                }
                claimed[gap] = true;
            }
            Cause::Launch => {
                let sum: u64 = gaps.iter().map(|&g| idle[g].1 - idle[g].0).sum();
                if sum != delay.amount_ns || gaps.len() != delay.gaps {
                    return Err(format!("{what}: {} gaps of {sum} ns", gaps.len()));
                }
                for &g in &gaps {
                    let after = gpu[idle[g].2];
                    let launch = launch_of
                        .get(&after.correlation.unwrap_or(0))
                        .ok_or(format!("{what}: op without launch"))?;
                    if launch.start < idle[g].0 {
                        return Err(format!("{what}: launched before the GPU drained"));
                    }
                    claimed[g] = true;
                }
            }
        }
    }
    // Nothing else idles long: every other gap is under 20 µs and under each single-gap
    // delay, and there are at most five of those (a default top-5 lists them all).
    let smallest = truth
        .delays
        .iter()
        .filter(|d| d.cause != Cause::Launch)
        .map(|d| d.amount_ns)
        .min()
        .unwrap_or(u64::MAX);
    for (g, &(a, b, _, _)) in idle.iter().enumerate() {
        if !claimed[g] && (b - a >= 20_000 || b - a >= smallest) {
            return Err(format!("unclaimed idle [{a}, {b}]"));
        }
    }
    // Another thread's frame runs over every host delay, off the launching thread.
    for foreign in &truth.foreign_frames {
        for delay in truth.delays.iter().filter(|d| d.cause == Cause::Host) {
            let launching = all
                .iter()
                .find(|s| s.cat == "python_function" && s.start == delay.start_ns)
                .map(|s| s.tid);
            let covered = all.iter().any(|s| {
                s.name == foreign.name
                    && Some(s.tid) != launching
                    && s.start <= delay.start_ns
                    && delay.end_ns <= s.end
            });
            if !covered {
                return Err(format!(
                    "{} not over the delay at {}",
                    foreign.name, delay.start_ns
                ));
            }
        }
    }
    let singles = truth
        .delays
        .iter()
        .filter(|d| d.gaps == 1 && d.cause != Cause::Launch);
    if singles.count() > 5 {
        return Err("more than five single-gap delays".into());
    }
    Ok(())
}

/// ns covered by at least one interval.
fn union(spans: &[(u64, u64)]) -> u64 {
    let mut sorted = spans.to_vec();
    sorted.sort_unstable();
    let mut total = 0;
    let mut reach = 0;
    for (start, end) in sorted {
        total += end.saturating_sub(start.max(reach));
        reach = reach.max(end);
    }
    total
}

fn written() -> (tempfile::TempDir, Vec<TimelineTruth>) {
    let dir = tempfile::tempdir().unwrap();
    let truths = super::write_timeline_set(dir.path()).unwrap();
    (dir, truths)
}

#[test]
fn every_scenarios_ground_truth_matches_its_trace() {
    let (_dir, truths) = written();
    assert_eq!(truths.len(), 12);
    for truth in &truths {
        check(truth).unwrap_or_else(|e| panic!("{}: {e}", truth.scenario));
    }
}

#[test]
fn ground_truth_json_reads_back_as_written() {
    let (_dir, truths) = written();
    for truth in &truths {
        let dir = truth.trace.parent().unwrap();
        assert_eq!(&TimelineTruth::read(dir).unwrap(), truth);
    }
}

#[test]
fn the_check_rejects_a_truth_that_is_off_by_one_microsecond() {
    let (_dir, truths) = written();
    for truth in &truths {
        for i in 0..truth.delays.len() {
            let mut moved = truth.clone();
            moved.delays[i].start_ns += 1_000;
            assert!(check(&moved).is_err(), "{} delay {i} moved", truth.scenario);
            let mut recaused = truth.clone();
            recaused.delays[i].cause = match truth.delays[i].cause {
                Cause::Sync => Cause::Graph,
                _ => Cause::Sync,
            };
            assert!(
                check(&recaused).is_err(),
                "{} delay {i} recaused",
                truth.scenario
            );
        }
        if !truth.foreign_frames.is_empty() {
            let mut launching = truth.clone();
            launching.foreign_frames[0] =
                truth.delays.iter().find_map(|d| d.frame.clone()).unwrap();
            assert!(
                check(&launching).is_err(),
                "{}: foreign = own frame",
                truth.scenario
            );
        }
        let mut busier = truth.clone();
        busier.busy_ns += 1;
        assert!(check(&busier).is_err());
    }
}

#[test]
fn every_kind_of_delay_and_launch_api_is_covered() {
    let (_dir, truths) = written();
    let all = scenarios();
    for cause in [Cause::Launch, Cause::Sync, Cause::Graph, Cause::Host] {
        for platform in [Platform::Cuda, Platform::Rocm] {
            let covered = truths
                .iter()
                .zip(&all)
                .any(|(t, s)| s.platform == platform && t.delays.iter().any(|d| d.cause == cause));
            assert!(covered, "{cause:?} on {platform:?}");
        }
    }
    for (truth, scenario) in truths.iter().zip(&all) {
        let text = format!("{}", load(&truth.trace));
        let (wanted, unwanted): (&[&str], &str) = match (scenario.platform, scenario.cuda_apis) {
            (Platform::Cuda, CudaApis::Classic) => (
                &["cudaLaunchKernel", "cudaStreamSynchronize"],
                "\"name\":\"hip",
            ),
            (Platform::Cuda, CudaApis::Extended) => (
                &[
                    "\"cudaLaunchKernel\"",
                    "\"cudaLaunchKernelExC\"",
                    "\"cuLaunchKernelEx\"",
                    "\"cudaMemsetAsync\"",
                    "\"gpu_memset\"",
                    "\"cudaEventSynchronize\"",
                ],
                "\"name\":\"hip",
            ),
            (Platform::Rocm, _) => (
                &[
                    "hipLaunchKernel",
                    "hipExtModuleLaunchKernel",
                    "hipMemcpyWithStream",
                ],
                "\"name\":\"cuda",
            ),
        };
        for name in wanted {
            assert!(text.contains(name), "{}: no {name}", scenario.name);
        }
        assert!(!text.contains(unwanted), "{}: {unwanted}", scenario.name);
        let graphs = scenario.steps.iter().flat_map(|s| &s.parts).any(|p| {
            matches!(
                p,
                super::Part::Graph { .. } | super::Part::GraphDuringSync { .. }
            )
        });
        let graph_launch = match scenario.platform {
            Platform::Cuda => "cudaGraphLaunch",
            Platform::Rocm => "hipGraphLaunch",
        };
        assert_eq!(text.contains(graph_launch), graphs, "{}", scenario.name);
        // Two streams: a communication kernel really overlaps compute.
        let kernels: Vec<Span> = spans(&load(&truth.trace))
            .into_iter()
            .filter(|k| k.cat == "kernel")
            .collect();
        let overlapped = kernels.iter().any(|a| {
            a.tid == 21
                && kernels
                    .iter()
                    .any(|b| b.tid == 7 && b.start < a.end && a.start < b.end)
        });
        assert_eq!(overlapped, scenario.streams > 1, "{}", scenario.name);
        let size = std::fs::metadata(&truth.trace).unwrap().len();
        assert!(size < 32 * 1024, "{}: {size} bytes", scenario.name);
    }
}

#[test]
fn same_scenarios_same_bytes() {
    let (a, _) = written();
    let (b, _) = written();
    for scenario in scenarios() {
        let read = |root: &std::path::Path| {
            let dir = root.join(scenario.name);
            let truth = std::fs::read_to_string(dir.join("ground_truth.json")).unwrap();
            let trace = TimelineTruth::read(&dir).unwrap().trace;
            let text = format!("{}", load(&trace)).replace(&root.display().to_string(), "<dir>");
            (truth, text)
        };
        assert!(read(a.path()) == read(b.path()), "{}", scenario.name);
    }
}

#[test]
fn a_sync_wait_without_a_full_queue_is_refused() {
    let mut scenario = scenarios().remove(0);
    scenario.steps[0].parts = vec![super::Part::SyncWait { wait_ns: 100_000 }];
    let dir = tempfile::tempdir().unwrap();
    let result = std::panic::catch_unwind(|| write_scenario(dir.path(), &scenario));
    assert!(result.is_err());
}
