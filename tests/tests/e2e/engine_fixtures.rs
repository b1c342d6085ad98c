//! End-to-end over generated engine-shaped traces with known ground truth: every
//! engine, stage kind, graph replay and stream count, through the real binary and the
//! real plugins. Times, launch counts, locations and CPU ops must equal the truth.

use crate::util::*;
use llm_triage_tests::{write_fixture, Engine, FixtureSpec, GroundTruth, StageKind};
use serde_json::Value;

fn triage_fixture(path: &std::path::Path) -> Value {
    triage_json(&[
        "--framework",
        "auto",
        "--min-share",
        "0",
        "--input",
        path.to_str().unwrap(),
    ])
}

fn check_against_truth(report: &Value, truth: &GroundTruth, what: &str) {
    assert_eq!(
        report["framework"]["name"], truth.framework,
        "{what}: framework"
    );
    let stages = report["stages"].as_array().unwrap();
    let labels: Vec<&str> = stages
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = truth.stages.keys().map(String::as_str).collect();
    let mut sorted_expected = expected.clone();
    sorted_expected.sort_by_key(|l| {
        ["extend/prefill", "decode", "all"]
            .iter()
            .position(|x| x == l)
    });
    assert_eq!(labels, sorted_expected, "{what}: stage sections");
    for stage in stages {
        let label = stage["stage"].as_str().unwrap();
        let st = truth.stage(label).unwrap();
        let total_ns = (stage["total_gpu_time_us"].as_f64().unwrap() * 1000.0).round() as u64;
        assert_eq!(total_ns, st.total_gpu_ns, "{what} {label}: stage total");
        let rows = stage["kernels"].as_array().unwrap();
        assert_eq!(rows.len(), st.kernels.len(), "{what} {label}: row count");
        for row in rows {
            let name = row["name"].as_str().unwrap();
            let k = st
                .kernels
                .get(name)
                .unwrap_or_else(|| panic!("{what} {label}: unexpected row {name}"));
            let ns = (row["gpu_time_us"].as_f64().unwrap() * 1000.0).round() as u64;
            assert_eq!(ns, k.total_ns, "{what} {label} {name}: gpu time");
            assert_eq!(
                row["launches"].as_u64().unwrap(),
                k.count,
                "{what} {label} {name}: launches"
            );
            assert_eq!(
                row["python_locations"][0]["location"].as_str().unwrap(),
                k.location(),
                "{what} {label} {name}: location"
            );
            assert_eq!(
                row["cpu_ops"][0].as_str().unwrap_or(""),
                k.cpu_op(),
                "{what} {label} {name}: cpu op"
            );
        }
    }
}

#[test]
fn every_engine_and_stage_matches_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let specs = llm_triage_tests::matrix_specs();
    let truths = llm_triage_tests::write_matrix(dir.path()).unwrap();
    for (spec, truth) in specs.iter().zip(&truths) {
        let what = format!(
            "{} {:?} graph={} streams={}",
            spec.engine.name(),
            spec.stage,
            spec.graph_replay,
            spec.streams
        );
        check_against_truth(&triage_fixture(&truth.path), truth, &what);
    }
    assert_eq!(truths.len(), 16);
}

#[test]
fn traces_without_python_stacks_are_unresolved_but_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = FixtureSpec::new(Engine::Sglang, StageKind::Extend);
    spec.with_stack = false;
    let (path, truth) = write_fixture(dir.path(), &spec).unwrap();
    // Without frames nothing names SGLang's source tree, so name the engine.
    let report = triage_json(&[
        "--framework",
        "sglang",
        "--min-share",
        "0",
        "--input",
        path.to_str().unwrap(),
    ]);
    check_against_truth(&report, &truth, "sglang without stacks");
}

#[test]
fn bundled_example_is_triaged_exactly() {
    // examples/sglang-qwen3 is what README command 1 triages.
    let example = workspace_root().join("examples/sglang-qwen3");
    let report = triage_json(&["--input", example.to_str().unwrap()]);
    assert_eq!(report["framework"]["name"], "sglang");
    assert_eq!(report["model"], "Qwen/Qwen3-8B");
    let stages = report["stages"].as_array().unwrap();
    let labels: Vec<&str> = stages
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["extend/prefill", "decode"]);
    for (stage, dir) in stages.iter().zip(["prefill", "decode"]) {
        let trace = std::fs::read_dir(example.join(dir))
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
            .map(|f| f.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".trace.json.gz"))
            .unwrap();
        let events = raw_events(&trace);
        let total_ns: i64 = gpu_events(&events)
            .iter()
            .map(|e| us_to_ns(&e["dur"]))
            .sum();
        let reported = (stage["total_gpu_time_us"].as_f64().unwrap() * 1000.0).round() as i64;
        assert_eq!(reported, total_ns, "{dir}");
    }
}
