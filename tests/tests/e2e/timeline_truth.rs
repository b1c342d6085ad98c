//! The timeline of the JSON report (`stages[].timeline`) against the ground truth of the
//! generated timeline fixtures: every step's parts sum exactly to its wall time, busy plus
//! idle is the span, and at least 95% of each injected delay (host gap in a named Python
//! frame, sync wait, launch-bound stretch, in-graph gap; CUDA and HIP, eager and graph
//! replay) is charged to the right cause, and for host delays to the right frame. Also
//! the step layouts with a rule of their own (a graph replay's gap while the host waits
//! in a sync is `sync`; vLLM's `execute_…` inside `ProfilerStep#N` is the step; a launch
//! in two overlapping markers belongs to the later one), a step marker only a real
//! cdylib plugin names (plugin API 1.4), an API 1.3 plugin whose steps fall back to the
//! host's rows, and that `make-fixtures --timeline DIR` writes every scenario with its
//! ground truth.

use std::path::{Path, PathBuf};
use std::process::Command;

use llm_triage_tests::timeline::{write_timeline_set, Cause, TimelineTruth, PLUGIN_MARKER};
use serde_json::Value;

use crate::util::{target_dir, triage_json, workspace_root};

/// Integer ns from a report µs value: the report divides integer ns by 1000, so rounding
/// the product back recovers them exactly.
fn ns(v: &Value) -> Option<i64> {
    v.as_f64().map(|us| (us * 1000.0).round() as i64)
}

const PARTS: [&str; 7] = [
    "compute_us",
    "exposed_comm_us",
    "memcpy_us",
    "launch_idle_us",
    "sync_idle_us",
    "graph_gap_us",
    "host_gap_us",
];

fn step_field(cause: Cause) -> &'static str {
    match cause {
        Cause::Launch => "launch_idle_us",
        Cause::Sync => "sync_idle_us",
        Cause::Graph => "graph_gap_us",
        Cause::Host => "host_gap_us",
    }
}

/// At least 95% of `amount`.
fn enough(charged: i64, amount: u64) -> bool {
    charged * 100 >= amount as i64 * 95
}

/// Every disagreement between the report's timeline of `truth`'s trace (triaged with
/// `extra` arguments) and the truth.
fn disagreements(truth: &TimelineTruth, extra: &[&str]) -> Vec<String> {
    let trace = truth.trace.display().to_string();
    let mut args = vec!["--input", trace.as_str()];
    args.extend_from_slice(extra);
    let report = triage_json(&args);
    let Some(stage) = report["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["stage"] == truth.stage.as_str())
    else {
        return vec![format!("no stage `{}` in the report", truth.stage)];
    };
    let timeline = &stage["timeline"];
    if !timeline.is_object() {
        return vec![format!("stage `{}` has no timeline", truth.stage)];
    }
    let mut wrong = Vec::new();
    let field = |v: &Value, key: &str| ns(&v[key]).unwrap_or(i64::MIN);

    let (span, busy, idle) = (
        field(timeline, "span_us"),
        field(timeline, "busy_us"),
        field(timeline, "idle_us"),
    );
    if busy + idle != span {
        wrong.push(format!(
            "busy_us + idle_us = {} ns, span_us {span} ns",
            busy + idle
        ));
    }
    if busy != truth.busy_ns as i64 {
        wrong.push(format!(
            "busy_us: expected {} ns, got {busy} ns",
            truth.busy_ns
        ));
    }

    // Inside vs outside steps (steps span first launch to last GPU op; host delays lie
    // between steps), and the histogram: its totals are the idle time, and each
    // single-gap delay is counted in the bin of its length.
    let (inside, outside) = (
        field(timeline, "idle_inside_steps_us"),
        field(timeline, "idle_outside_steps_us"),
    );
    if inside + outside != idle {
        wrong.push(format!(
            "idle inside {inside} + outside {outside} ns != idle_us {idle} ns"
        ));
    }
    let injected = |host: bool| {
        truth
            .delays
            .iter()
            .filter(|d| (d.cause == Cause::Host) == host)
            .map(|d| d.amount_ns)
            .sum::<u64>()
    };
    if !enough(outside, injected(true)) || !enough(inside, injected(false)) {
        wrong.push(format!(
            "idle inside/outside steps {inside}/{outside} ns; injected {}/{} ns",
            injected(false),
            injected(true)
        ));
    }
    let bins = timeline["histogram"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let total: i64 = bins.iter().map(|b| field(b, "total_us")).sum();
    if total != idle {
        wrong.push(format!("histogram totals {total} ns, idle_us {idle} ns"));
    }
    for bin in &bins {
        let lo = field(bin, "lo_us");
        let hi = ns(&bin["hi_us"]).unwrap_or(i64::MAX);
        let single = truth
            .delays
            .iter()
            .filter(|d| d.cause != Cause::Launch && d.cause != Cause::Host)
            .filter(|d| (lo..hi).contains(&(d.amount_ns as i64)))
            .count() as i64;
        if field(bin, "count") < single {
            wrong.push(format!(
                "histogram bin {lo}-{hi} ns counts {}, {single} injected gaps lie there",
                bin["count"]
            ));
        }
    }

    let steps = timeline["steps"].as_array().cloned().unwrap_or_default();
    let labels: Vec<&str> = steps.iter().filter_map(|s| s["label"].as_str()).collect();
    let expected: Vec<&str> = truth.steps.iter().map(|s| s.label.as_str()).collect();
    if labels != expected {
        wrong.push(format!("steps: expected {expected:?}, got {labels:?}"));
        return wrong;
    }
    for (i, (step, want)) in steps.iter().zip(&truth.steps).enumerate() {
        let wall = field(step, "wall_us");
        let parts: i64 = PARTS.iter().map(|p| field(step, p)).sum();
        if parts != wall {
            wrong.push(format!(
                "step {i}: parts sum to {parts} ns, wall_us {wall} ns"
            ));
        }
        // The step's wall time starts at the previous step's end when the host gap
        // before it is its own (every later step here has one), else at its first launch.
        let start = match i {
            0 => want.first_launch_ns,
            _ => truth.steps[i - 1].end_ns,
        } as i64;
        let got = (field(step, "start_us"), field(step, "start_us") + wall);
        if got != (start, want.end_ns as i64) {
            wrong.push(format!(
                "step {i}: expected [{start}, {}] ns, got [{}, {}] ns",
                want.end_ns, got.0, got.1
            ));
        }
        let busy = [
            ("compute_us", want.compute_ns),
            ("exposed_comm_us", want.comm_ns),
            ("memcpy_us", want.memcpy_ns),
        ];
        for (part, expected) in busy {
            if field(step, part) != expected as i64 {
                wrong.push(format!(
                    "step {i}: {part} expected {expected} ns, got {} ns",
                    field(step, part)
                ));
            }
        }
        for cause in [Cause::Launch, Cause::Sync, Cause::Graph, Cause::Host] {
            let injected = truth.injected_ns(i, cause);
            let charged = field(step, step_field(cause));
            if !enough(charged, injected) {
                wrong.push(format!(
                    "step {i}: {} injected {injected} ns of {} idle, {} is {charged} ns",
                    truth
                        .delays
                        .iter()
                        .filter(|d| d.step == i && d.cause == cause)
                        .count(),
                    cause.as_str(),
                    step_field(cause)
                ));
            }
        }
    }

    // Each single-gap delay is one of the top gaps, with its cause (and frame).
    let gaps = timeline["top_gaps"].as_array().cloned().unwrap_or_default();
    for delay in truth.delays.iter().filter(|d| d.cause != Cause::Launch) {
        let what = format!(
            "{} delay of {} ns at {} ns (step {})",
            delay.cause.as_str(),
            delay.amount_ns,
            delay.start_ns,
            delay.step
        );
        let overlap = |g: &Value| {
            let start = field(g, "start_us");
            let end = start + field(g, "dur_us");
            (end.min(delay.end_ns as i64) - start.max(delay.start_ns as i64)).max(0)
        };
        let Some(gap) = gaps.iter().find(|g| enough(overlap(g), delay.amount_ns)) else {
            wrong.push(format!("{what}: no top gap covers 95% of it"));
            continue;
        };
        if gap["cause"] != delay.cause.as_str() {
            wrong.push(format!("{what}: top gap classed `{}`", gap["cause"]));
        }
        if let (Cause::Host, Some(frame)) = (delay.cause, &delay.frame) {
            let location = frame.location();
            let dur = field(gap, "dur_us");
            let charged = gap["host_activity"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| {
                    a["location"]
                        .as_str()
                        .is_some_and(|l| l.ends_with(&location))
                })
                .map(|a| (a["share_pct"].as_f64().unwrap_or(0.0) / 100.0 * dur as f64) as i64)
                .sum::<i64>();
            if !enough(charged, delay.amount_ns) {
                wrong.push(format!(
                    "{what}: `{location}` charged {charged} ns; host_activity {}",
                    gap["host_activity"]
                ));
            }
        }
    }
    // Other threads' frames are no host activity of the launching thread.
    for foreign in &truth.foreign_frames {
        let location = foreign.location();
        for gap in &gaps {
            let named = gap["host_activity"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| {
                    a["location"]
                        .as_str()
                        .is_some_and(|l| l.ends_with(&location))
                });
            if named {
                wrong.push(format!(
                    "top gap at {} names `{location}`, which ran on another thread",
                    gap["start_us"]
                ));
            }
        }
    }
    wrong
}

fn check_scenario(name: &str) {
    check_scenario_with(name, &[]);
}

fn check_scenario_with(name: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    write_timeline_set(dir.path()).unwrap();
    let truth = TimelineTruth::read(&dir.path().join(name)).unwrap();
    let wrong = disagreements(&truth, extra);
    assert!(
        wrong.is_empty(),
        "{name} ({}):\n  {}",
        Path::new(&truth.trace).display(),
        wrong.join("\n  ")
    );
}

#[test]
fn cuda_eager_host_sync_and_launch_delays_are_charged_to_their_cause_and_frame() {
    check_scenario("cuda-eager");
}

#[test]
fn cuda_graph_replay_gaps_and_host_delays_are_charged_to_their_cause_and_frame() {
    check_scenario("cuda-graph");
}

#[test]
fn hip_eager_delays_with_ext_module_launches_are_charged_to_their_cause_and_frame() {
    check_scenario("hip-eager");
}

#[test]
fn hip_graph_replay_gaps_and_blocking_copy_are_charged_to_their_cause_and_frame() {
    check_scenario("hip-graph");
}

#[test]
fn profiler_step_trace_mixing_every_delay_charges_each_to_its_cause_and_frame() {
    check_scenario("mixed");
}

#[test]
fn cuda_launch_ex_driver_launches_memsets_and_event_waits_are_charged_to_their_cause() {
    check_scenario("cuda-eager-ext");
}

#[test]
fn two_stream_overlap_splits_exposed_comm_exactly_and_keeps_delays_charged() {
    check_scenario("cuda-two-stream");
}

#[test]
fn a_graph_replay_gap_while_the_host_waits_in_a_sync_is_charged_to_sync() {
    check_scenario("graph-sync");
}

#[test]
fn vllm_execute_markers_inside_profiler_steps_are_the_steps() {
    check_scenario("nested-markers");
}

#[test]
fn current_vllm_execute_new_cached_markers_are_the_steps() {
    check_scenario("vllm-new-cached");
    let dir = tempfile::tempdir().unwrap();
    write_timeline_set(dir.path()).unwrap();
    let truth = TimelineTruth::read(&dir.path().join("vllm-new-cached")).unwrap();
    let trace = truth.trace.display().to_string();
    let report = triage_json(&["--input", trace.as_str()]);
    let stage = report["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["stage"] == "all")
        .unwrap_or_else(|| panic!("no `all` stage: {report}"));
    let timeline = &stage["timeline"];
    assert_eq!(
        timeline["step_source"], "execute_new_..._cached_... annotations",
        "{timeline}"
    );
    let labels: Vec<&str> = timeline["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["label"].as_str())
        .collect();
    let expected: Vec<&str> = truth.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, expected);
    assert!(
        expected.iter().all(|l| *l == "execute_new_0_cached_6"),
        "{expected:?}"
    );
}

#[test]
fn overlapping_step_markers_charge_each_launch_to_the_later_step_and_still_sum_exactly() {
    check_scenario("overlapping-steps");
}

/// Builds the test plugin `package` (library `lib_stem`) and copies it alone into a fresh
/// directory as `libllm_triage_plugin_<name>`, for `--plugin-dir`.
fn plugin_dir(package: &str, lib_stem: &str, name: &str) -> tempfile::TempDir {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", package])
        .current_dir(workspace_root())
        .status()
        .unwrap();
    assert!(status.success(), "building {package} failed");
    let built: PathBuf = target_dir().join(format!(
        "{}{lib_stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join(format!(
        "libllm_triage_plugin_{name}{}",
        std::env::consts::DLL_SUFFIX
    ));
    std::fs::copy(&built, &to).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    dir
}

/// The `all` stage's timeline of the plugin-marker fixture, triaged with `extra`.
fn plugin_marker_timeline(dir: &Path, extra: &[&str]) -> (TimelineTruth, Value) {
    let truth = TimelineTruth::read(&dir.join("plugin-marker")).unwrap();
    let trace = truth.trace.display().to_string();
    let mut args = vec!["--input", trace.as_str()];
    args.extend_from_slice(extra);
    let report = triage_json(&args);
    let stage = report["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["stage"] == truth.stage.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("no stage `{}`: {report}", truth.stage));
    (truth, stage["timeline"].clone())
}

#[test]
fn a_step_marker_named_by_a_plugin_bounds_the_steps() {
    let plugin = plugin_dir(
        "llm-triage-test-plugin-step-markers",
        "triage_test_step_markers",
        "step_markers",
    );
    let dir = tempfile::tempdir().unwrap();
    write_timeline_set(dir.path()).unwrap();
    // Without the plugin no row knows `forward_step#N`: the steps come from the engine's
    // forward call instead, and none is labelled by the marker.
    let (truth, alone) = plugin_marker_timeline(dir.path(), &[]);
    assert_eq!(alone["step_source"], "forward calls", "{alone}");
    let labels = |t: &Value| -> Vec<String> {
        t["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["label"].as_str().map(str::to_string))
            .collect()
    };
    assert!(
        labels(&alone).iter().all(|l| !l.starts_with(PLUGIN_MARKER)),
        "{alone}"
    );
    // With it, the plugin's marker bounds every step and the truth holds.
    let plugin_arg = plugin.path().display().to_string();
    let extra = ["--plugin-dir", plugin_arg.as_str()];
    let (_, named) = plugin_marker_timeline(dir.path(), &extra);
    assert_eq!(
        named["step_source"], "forward_step#N annotations",
        "{named}"
    );
    let expected: Vec<&str> = truth.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels(&named), expected);
    let wrong = disagreements(&truth, &extra);
    assert!(wrong.is_empty(), "plugin-marker:\n  {}", wrong.join("\n  "));
}

#[test]
fn a_plugin_built_for_api_1_3_still_loads_and_the_steps_fall_back_to_the_host_rows() {
    let plugin = plugin_dir(
        "llm-triage-test-plugin-api1-3",
        "triage_test_api1_3",
        "tooled",
    );
    let dir = tempfile::tempdir().unwrap();
    write_timeline_set(dir.path()).unwrap();
    let plugin_arg = plugin.path().display().to_string();
    let out = crate::util::llm_triage()
        .args(["plugins", "list", "--plugin-dir", plugin_arg.as_str()])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && listed.contains("tooled-engine"),
        "{listed}"
    );
    let (_, timeline) = plugin_marker_timeline(dir.path(), &["--plugin-dir", plugin_arg.as_str()]);
    // The old plugin names no markers: the host's rows and the engine plugins' apply.
    assert_eq!(timeline["step_source"], "forward calls", "{timeline}");
}

#[test]
fn make_fixtures_timeline_writes_every_scenario_with_its_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_make-fixtures"))
        .arg("--timeline")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let names = llm_triage_tests::timeline::scenarios()
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>();
    assert_eq!(crate::util::names_in(dir.path()), {
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted
    });
    for name in names {
        let truth = TimelineTruth::read(&dir.path().join(name)).unwrap();
        assert!(truth.trace.exists(), "{name}: {}", truth.trace.display());
        assert!(!truth.delays.is_empty(), "{name}");
        // One line per scenario: its trace, steps and injected delays.
        let line = format!(
            "{}: {} steps, {} injected delays",
            truth.trace.display(),
            truth.steps.len(),
            truth.delays.len()
        );
        assert!(stdout.lines().any(|l| l == line), "{line} not in {stdout}");
    }
}
