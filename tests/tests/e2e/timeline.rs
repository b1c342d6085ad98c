//! The timeline (issue 16) through the real binary: on every shared trace and every
//! generated matrix fixture, `busy_us + idle_us = span_us` and each step's parts sum to
//! its `wall_us` (to the nanosecond); and the acceptance numbers of the issue on the
//! B200 vLLM eager trace (idle 72.89 ms, mostly `launch`, printed in markdown and text)
//! and the SGLang decode trace (the 463.3 ms gap is the top gap, `sync`, with the
//! blocking copy and its Python frame; the step's other idle is 0.68 ms).

use crate::util::*;
use serde_json::Value;

const B200_EAGER: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";
const SGLANG_DECODE: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";

/// Microseconds of the report as integer nanoseconds.
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) * 1000.0).round() as i64
}

/// The exactness invariants of every stage's timeline; returns how many it checked.
fn assert_timelines_exact(report: &Value, what: &str) -> usize {
    let mut checked = 0;
    for stage in report["stages"].as_array().unwrap() {
        let label = stage["stage"].as_str().unwrap();
        let t = &stage["timeline"];
        assert!(t.is_object(), "{what} {label}: no timeline");
        assert_eq!(
            ns(&t["busy_us"]) + ns(&t["idle_us"]),
            ns(&t["span_us"]),
            "{what} {label}: busy + idle = span"
        );
        assert_eq!(
            ns(&t["idle_inside_steps_us"]) + ns(&t["idle_outside_steps_us"]),
            ns(&t["idle_us"]),
            "{what} {label}: inside + outside = idle"
        );
        let c = &t["idle_by_cause"];
        let causes: i64 = ["launch_us", "sync_us", "graph_us", "host_us"]
            .iter()
            .map(|k| ns(&c[*k]))
            .sum();
        assert_eq!(causes, ns(&t["idle_us"]), "{what} {label}: causes = idle");
        let bins: i64 = t["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| ns(&b["total_us"]))
            .sum();
        assert_eq!(bins, ns(&t["idle_us"]), "{what} {label}: histogram = idle");
        let steps = t["steps"].as_array().unwrap();
        assert!(!steps.is_empty(), "{what} {label}: no step");
        for step in steps {
            let parts: i64 = [
                "compute_us",
                "exposed_comm_us",
                "memcpy_us",
                "launch_idle_us",
                "sync_idle_us",
                "graph_gap_us",
                "host_gap_us",
            ]
            .iter()
            .map(|k| ns(&step[*k]))
            .sum();
            assert_eq!(
                parts,
                ns(&step["wall_us"]),
                "{what} {label} step {}: parts = wall",
                step["index"]
            );
        }
        for gap in t["top_gaps"].as_array().unwrap() {
            let cause = gap["cause"].as_str().unwrap();
            assert!(
                ["launch", "sync", "graph", "host"].contains(&cause),
                "{what} {label}: cause {cause}"
            );
        }
        checked += 1;
    }
    checked
}

#[test]
fn every_shared_trace_has_exact_timelines() {
    let mut stages = 0;
    for (path, verdict) in shared_trace_verdicts() {
        // A trace auto-detection refuses is still analysed when the engine is named.
        let framework = if verdict.starts_with("refuse") {
            "vllm"
        } else {
            "auto"
        };
        let report = triage_json(&[
            "--framework",
            framework,
            "--min-share",
            "0",
            "--input",
            path.to_str().unwrap(),
        ]);
        stages += assert_timelines_exact(&report, &path.display().to_string());
    }
    // Every shared trace but the graph capture (nothing ran) has at least one stage.
    assert!(stages >= 8, "only {stages} stages checked");
}

#[test]
fn every_matrix_fixture_has_exact_timelines() {
    let dir = tempfile::tempdir().unwrap();
    llm_triage_tests::write_matrix(dir.path()).unwrap();
    let mut stages = 0;
    for case in names_in(dir.path()) {
        let report = triage_json(&[
            "--framework",
            "auto",
            "--min-share",
            "0",
            "--input",
            dir.path().join(&case).to_str().unwrap(),
        ]);
        stages += assert_timelines_exact(&report, &case);
    }
    assert!(stages >= 16, "only {stages} stages checked");
}

#[test]
fn the_b200_eager_trace_is_idle_72_89_ms_mostly_waiting_for_launches() {
    let trace = shared_trace(B200_EAGER);
    let input = trace.to_str().unwrap();
    let report = triage_json(&["--input", input]);
    let stage = &report["stages"][0];
    let t = &stage["timeline"];
    let idle_ms = t["idle_us"].as_f64().unwrap() / 1000.0;
    assert!((idle_ms - 72.89).abs() <= 0.01, "idle {idle_ms} ms");
    let launch = t["idle_by_cause"]["launch_us"].as_f64().unwrap();
    assert!(launch > 0.9 * t["idle_us"].as_f64().unwrap(), "{t}");
    let gaps = t["top_gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 5, "the default --top-gaps");
    let launch_gaps = gaps.iter().filter(|g| g["cause"] == "launch").count();
    assert!(launch_gaps >= 3, "{gaps:?}");
    assert!(
        stage["summary"]
            .as_str()
            .unwrap()
            .starts_with("GPU idle 86% of the span: launch-bound eager execution"),
        "{}",
        stage["summary"]
    );

    for format in ["markdown", "text"] {
        let out = llm_triage()
            .args(["--input", input, "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("idle 72.89 ms (86.3%)"),
            "{format}: idle not printed:\n{text}"
        );
        assert!(text.contains("GPU idle 86% of the span"), "{format}");
    }
}

#[test]
fn the_sglang_decode_gap_is_a_sync_wait_in_the_blocking_copy() {
    let trace = shared_trace(SGLANG_DECODE);
    let report = triage_json(&["--input", trace.to_str().unwrap()]);
    let t = &report["stages"][0]["timeline"];
    let top = &t["top_gaps"][0];
    let gap_us = top["dur_us"].as_f64().unwrap();
    assert!((gap_us / 1000.0 - 463.3).abs() < 0.05, "{top}");
    assert_eq!(top["cause"], "sync");
    let locations: Vec<&str> = top["host_activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["location"].as_str().unwrap())
        .collect();
    for expected in ["hipMemcpyWithStream", "aten::copy_", "cuda_graph_runner.py"] {
        assert!(
            locations.iter().any(|l| l.contains(expected)),
            "{expected} not in {locations:?}"
        );
    }
    // The step's idle time other than (its part of) that gap.
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let step = &steps[0];
    assert_eq!(step["label"], "step[DECODE bs=32]");
    let idle: i64 = [
        "launch_idle_us",
        "sync_idle_us",
        "graph_gap_us",
        "host_gap_us",
    ]
    .iter()
    .map(|k| ns(&step[*k]))
    .sum();
    let (step_start, step_end) = (
        ns(&step["start_us"]),
        ns(&step["start_us"]) + ns(&step["wall_us"]),
    );
    let (gap_start, gap_end) = (
        ns(&top["start_us"]),
        ns(&top["start_us"]) + ns(&top["dur_us"]),
    );
    let gap_in_step = gap_end.min(step_end) - gap_start.max(step_start);
    let other_ms = (idle - gap_in_step) as f64 / 1e6;
    assert!((other_ms - 0.68).abs() <= 0.02, "other idle {other_ms} ms");
}

#[test]
fn top_gaps_lists_as_many_gaps_as_asked() {
    let trace = shared_trace(B200_EAGER);
    let report = triage_json(&["--input", trace.to_str().unwrap(), "--top-gaps", "2"]);
    let gaps = report["stages"][0]["timeline"]["top_gaps"]
        .as_array()
        .unwrap();
    assert_eq!(gaps.len(), 2);
    assert!(gaps[0]["dur_us"].as_f64() >= gaps[1]["dur_us"].as_f64());
}

/// nano-vllm writes no step markers and replays no graph: its `ModelRunner.run` frame
/// (catalog/steps.toml) bounds the one decode step, instead of "whole stage".
#[test]
fn a_trace_without_markers_takes_the_engines_forward_call_as_its_step() {
    let trace = shared_trace("zhang-yuhui__nano-vllm__decode_gpu_0.json");
    let report = triage_json(&["--input", trace.to_str().unwrap(), "--framework", "vllm"]);
    let t = &report["stages"][0]["timeline"];
    assert_eq!(t["step_source"], "forward calls", "{t}");
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{t}");
    assert_eq!(
        steps[0]["label"],
        "nanovllm/engine/model_runner.py(410): run"
    );
    // The step holds every op: nothing was launched outside the call.
    let wall = steps[0]["wall_us"].as_f64().unwrap();
    assert!(wall >= t["span_us"].as_f64().unwrap(), "{t}");
    assert!(
        !t["notes"]
            .to_string()
            .contains("outside every forward call"),
        "{t}"
    );
}
