//! End-to-end: the real binary and real plugins on the real traces in ../shared/traces.
//! Expected verdicts come from shared/traces/SOURCES.md; times and counts are recounted
//! here from the raw events, independently of the tool.

use std::collections::BTreeSet;

use crate::util::*;
use serde_json::Value;

fn framework_of(report: &Value) -> &str {
    report["framework"]["name"].as_str().unwrap()
}

fn stage_labels(report: &Value) -> Vec<&str> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect()
}

#[test]
fn auto_detection_matches_sources_md() {
    let expected = [
        ("AMD-AGI__TraceLens__eager_trace.json.gz", "vllm"),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
            "sglang",
        ),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
            "sglang",
        ),
        (
            "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
            "vllm",
        ),
    ];
    for (file, framework) in expected {
        let path = shared_trace(file);
        let report = triage_json(&["--framework", "auto", "--input", path.to_str().unwrap()]);
        assert_eq!(framework_of(&report), framework, "{file}");
        let decided = report["framework"]["decided_by"].as_array().unwrap();
        assert!(!decided.is_empty(), "{file}: no evidence recorded");
    }
}

#[test]
fn auto_detection_refuses_non_serving_traces() {
    for file in [
        "AMD-AGI__TraceLens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
        "pytorch__kineto__worker0.pt.trace.json.gz",
        "zhang-yuhui__nano-vllm__decode_gpu_0.json",
    ] {
        let path = shared_trace(file);
        let out = llm_triage()
            .args(["--framework", "auto", "--input", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{file} should be refused");
        assert!(
            out.stdout.is_empty(),
            "{file}: a refused trace prints no report"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--framework"), "{file}: advice missing: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{file}: one-line error: {err}"
        );
    }
}

#[test]
fn explicit_framework_analyses_a_refused_trace() {
    // The legacy-schema training trace is refused by auto but still parses.
    let path = shared_trace("pytorch__kineto__worker0.pt.trace.json.gz");
    let report = triage_json(&["--framework", "vllm", "--input", path.to_str().unwrap()]);
    assert_eq!(framework_of(&report), "vllm");
    let decided = report["framework"]["decided_by"][0].as_str().unwrap();
    assert!(decided.contains("--framework"), "{decided}");
    let events = raw_events(&path);
    let gpu = gpu_events(&events);
    let total_ns: i64 = gpu.iter().map(|e| us_to_ns(&e["dur"])).sum();
    let reported: f64 = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["total_gpu_time_us"].as_f64().unwrap())
        .sum();
    assert!(
        (reported * 1000.0 - total_ns as f64).abs() < 0.5,
        "{reported} us vs {total_ns} ns"
    );
}

#[test]
fn a_named_framework_is_honoured_with_a_warning_when_the_evidence_says_another() {
    let path = shared_trace("AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz");
    let input = path.to_str().unwrap();
    let run = |framework: &str| {
        let out = llm_triage()
            .args([
                "--framework",
                framework,
                "--input",
                input,
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        (String::from_utf8_lossy(&out.stderr).into_owned(), report)
    };
    let (stderr, report) = run("sglang");
    assert_eq!(framework_of(&report), "sglang", "the name is honoured");
    // What auto would have concluded, and on what evidence, is the vLLM plugin's claim.
    let auto = triage_json(&["--framework", "auto", "--input", input]);
    assert_eq!(framework_of(&auto), "vllm");
    let evidence = auto["framework"]["decided_by"][0].as_str().unwrap();
    let warning: Vec<&str> = stderr.lines().collect();
    assert_eq!(warning.len(), 1, "one line: {stderr:?}");
    let line = warning[0].strip_prefix("llm-triage: warning: ").unwrap();
    assert!(line.contains("--framework sglang"), "{line}");
    assert!(line.contains("points to vLLM"), "{line}");
    assert!(line.contains(evidence), "{line} should name {evidence:?}");
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(notes.contains(&line), "{notes:?}");

    // Naming the engine the evidence points to warns of nothing.
    let (stderr, report) = run("vllm");
    assert_eq!(stderr, "");
    assert!(
        !report["notes"].to_string().contains("points to"),
        "{}",
        report["notes"]
    );
}

#[test]
fn sglang_stages_follow_step_annotations() {
    let prefill = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz");
    let report = triage_json(&["--input", prefill.to_str().unwrap()]);
    assert_eq!(stage_labels(&report)[0], "extend/prefill");

    let decode = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    let report = triage_json(&["--input", decode.to_str().unwrap()]);
    assert_eq!(stage_labels(&report)[0], "decode");
}

/// The top rows' GPU time and launch counts equal a recount over the raw events that
/// carry the row's raw names.
#[test]
fn vllm_b200_top_rows_are_exact() {
    let path = shared_trace("AMD-AGI__TraceLens__eager_trace.json.gz");
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
    let events = raw_events(&path);
    let gpu = gpu_events(&events);
    let stages = report["stages"].as_array().unwrap();
    let all_rows: Vec<&Value> = stages
        .iter()
        .flat_map(|s| s["kernels"].as_array().unwrap())
        .collect();
    // Every GPU event lands in exactly one row.
    let launches: u64 = all_rows
        .iter()
        .map(|r| r["launches"].as_u64().unwrap())
        .sum();
    assert_eq!(launches as usize, gpu.len());
    for stage in stages {
        let rows = stage["kernels"].as_array().unwrap();
        for row in rows.iter().take(5) {
            let names: BTreeSet<&str> = row["raw_names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            let matching: Vec<&&Value> = gpu
                .iter()
                .filter(|e| names.contains(e["name"].as_str().unwrap()))
                .collect();
            let ns: i64 = matching.iter().map(|e| us_to_ns(&e["dur"])).sum();
            let row_ns = (row["gpu_time_us"].as_f64().unwrap() * 1000.0).round() as i64;
            // Single-stage trace: all events of those names are in this stage.
            if stages.len() == 1 {
                assert_eq!(row_ns, ns, "{}", row["name"]);
                assert_eq!(row["launches"].as_u64().unwrap() as usize, matching.len());
            }
        }
    }
}

#[test]
fn vllm_b200_locations_resolve_into_vllm_model_code() {
    let path = shared_trace("AMD-AGI__TraceLens__eager_trace.json.gz");
    let report = triage_json(&["--input", path.to_str().unwrap()]);
    let rows: Vec<&Value> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["kernels"].as_array().unwrap())
        .collect();
    let located = rows
        .iter()
        .filter(|r| {
            r["python_locations"][0]["location"]
                .as_str()
                .unwrap_or("")
                .starts_with("vllm/model_executor/")
        })
        .count();
    assert!(
        located * 2 >= rows.len(),
        "only {located} of {} rows resolve into vllm/model_executor/",
        rows.len()
    );
}

#[test]
fn graph_replayed_kernels_resolve_to_the_graph_launch_site() {
    let path = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
    let decode = &report["stages"][0];
    let rows = decode["kernels"].as_array().unwrap();
    let via_graph = rows
        .iter()
        .filter(|r| {
            r["cpu_ops"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == "hipGraphLaunch")
        })
        .count();
    assert!(via_graph > 0, "no row attributed to hipGraphLaunch");
    for row in rows.iter().filter(|r| r["cpu_ops"][0] == "hipGraphLaunch") {
        let loc = row["python_locations"][0]["location"].as_str().unwrap();
        assert!(
            loc.starts_with("python/sglang/srt/"),
            "graph replay resolved to {loc}"
        );
    }
}

/// Issue 14 point 12: `--format text` of a real trace fits a terminal: no line over 120
/// characters (the SGLang decode trace had a 639-character line).
#[test]
fn text_reports_of_shared_traces_fit_the_line_width() {
    for file in [
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
        "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
    ] {
        let trace = shared_trace(file);
        let out = llm_triage()
            .args(["--input", trace.to_str().unwrap(), "--min-share", "0"])
            .args(["--format", "text"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{file}");
        let text = String::from_utf8(out.stdout).unwrap();
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 120, "{file}: a line of {widest} characters");
    }
}
