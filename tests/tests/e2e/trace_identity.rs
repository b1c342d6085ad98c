//! What a trace is, which stage, which model: a graph-capture trace is said to be one
//! (not triaged as a run), a file whose name and content disagree on the stage says so,
//! and the model class comes from the trace when no server args name the model. Expected
//! values are recounted here from the raw events or the generator's ground truth.

use std::path::Path;

use crate::util::*;
use llm_triage_tests::{write_fixture, Engine, FixtureSpec, StageKind};
use serde_json::Value;

const CAPTURE: &str = "AMD-AGI__TraceLens__bs_32_rank0.json.gz";
const SGLANG_DECODE: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";
const SGLANG_PREFILL: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz";
const VLLM_B200: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";

fn markdown(path: &Path) -> String {
    let out = llm_triage()
        .args(["--min-share", "0", "--input", path.to_str().unwrap()])
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_graph_capture_trace_is_reported_as_one_with_no_kernel_table_and_exit_0() {
    let path = shared_trace(CAPTURE);
    let events = raw_events(&path);
    let launches = events
        .iter()
        .filter(|e| matches!(e["cat"].as_str(), Some("cuda_runtime" | "cuda_driver")))
        .filter(|e| e["name"].as_str().unwrap_or("").contains("LaunchKernel"))
        .count() as u64;
    let executed = events.iter().filter(|e| e["cat"] == "kernel").count() as u64;
    assert!(
        launches > 100 && executed < 10,
        "{launches} launches, {executed} kernels"
    );

    let report = triage_json(&["--input", path.to_str().unwrap()]);
    let capture = &report["inputs"][0]["graph_capture"];
    assert_eq!(
        capture["annotations"],
        serde_json::json!(["capture_32_DECODE"])
    );
    assert_eq!(capture["launches"].as_u64(), Some(launches));
    assert_eq!(capture["kernels_executed"].as_u64(), Some(executed));
    assert_eq!(report["stages"], serde_json::json!([]), "no kernel table");

    let md = markdown(&path);
    let lines: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("Graph capture:"))
        .collect();
    assert_eq!(lines.len(), 1, "{md}");
    assert!(
        lines[0].contains(&format!("{launches} kernel launches")) && lines[0].contains("replay"),
        "{}",
        lines[0]
    );
    assert!(!md.contains("Kernel Table"), "{md}");
    assert!(!md.contains("no stage markers found"), "{md}");
}

#[test]
fn runs_are_not_graph_captures() {
    for file in [SGLANG_DECODE, SGLANG_PREFILL, VLLM_B200] {
        let report = triage_json(&["--input", shared_trace(file).to_str().unwrap()]);
        assert_eq!(report["inputs"][0]["graph_capture"], Value::Null, "{file}");
        assert!(!report["stages"].as_array().unwrap().is_empty(), "{file}");
    }
}

#[test]
fn the_model_class_comes_from_the_nn_module_frames_without_server_args() {
    for (file, class) in [
        (VLLM_B200, "GptOssForCausalLM"),
        (SGLANG_PREFILL, "Qwen3Model"),
    ] {
        let path = shared_trace(file);
        let frame = format!("nn.Module: {class}");
        assert!(
            raw_events(&path)
                .iter()
                .any(|e| e["name"].as_str().is_some_and(|n| n.starts_with(&frame))),
            "{file} has no {frame} frame"
        );
        let report = triage_json(&["--input", path.to_str().unwrap()]);
        assert_eq!(report["model"], Value::Null, "{file}: no server args");
        assert_eq!(report["model_class"], class, "{file}");
        assert!(
            markdown(&path).contains(&format!("Model class: `{class}`")),
            "{file}"
        );
    }
}

fn stage_notes<'a>(report: &'a Value, stage: &str) -> Vec<&'a str> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stage"] == stage)
        .flat_map(|s| s["notes"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn a_decode_named_file_holding_an_eager_prefill_step_says_so() {
    for engine in [Engine::Sglang, Engine::Vllm] {
        // One eager extend step and one graph-replayed decode step, as the generator's
        // mixed fixture writes them (`step[EXTEND bs=4 toks=512]` /
        // `execute_context_4(512)_generation_0(0)` annotations).
        let dir = tempfile::tempdir().unwrap();
        let spec = FixtureSpec {
            graph_replay: true,
            ..FixtureSpec::new(engine, StageKind::Mixed)
        };
        let (path, truth) = write_fixture(&dir.path().join("run"), &spec).unwrap();
        let extend = truth.stage("extend/prefill").unwrap().total_gpu_ns;
        let decode = truth.stage("decode").unwrap().total_gpu_ns;
        let share = format!("{:.1}%", 100.0 * extend as f64 / (extend + decode) as f64);
        // Eager launches count kernels only (copies are eager under graphs too).
        let extend_kernels: u64 = truth
            .stage("extend/prefill")
            .unwrap()
            .kernels
            .iter()
            .filter(|(name, _)| !name.starts_with("Memcpy") && !name.starts_with("Memset"))
            .map(|(_, k)| k.total_ns)
            .sum();
        let eager_share = format!(
            "{:.1}%",
            100.0 * extend_kernels as f64 / (extend + decode) as f64
        );

        // The same events under a neutral name split by annotation, with no such note.
        let neutral = triage_json(&["--input", path.to_str().unwrap()]);
        let labels: Vec<&str> = neutral["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["extend/prefill", "decode"], "{engine:?}");
        for label in labels {
            assert!(
                !stage_notes(&neutral, label)
                    .iter()
                    .any(|n| n.contains("file name says")),
                "{engine:?}"
            );
        }

        // Under a decode/ directory the file name decides, and the note says why not.
        let decode_dir = dir.path().join("decode");
        std::fs::create_dir_all(&decode_dir).unwrap();
        let renamed = decode_dir.join(path.file_name().unwrap());
        std::fs::copy(&path, &renamed).unwrap();
        let report = triage_json(&["--input", renamed.to_str().unwrap()]);
        assert_eq!(report["stages"][0]["stage"], "decode", "{engine:?}");
        let notes = stage_notes(&report, "decode");
        let note = notes
            .iter()
            .find(|n| n.starts_with("the file name says decode"))
            .unwrap_or_else(|| panic!("{engine:?}: {notes:#?}"));
        assert!(
            note.contains(&format!("{share} of its GPU time in extend/prefill steps")),
            "{engine:?}: {note}"
        );
        assert!(
            note.contains(&format!(
                "{eager_share} of its GPU time was launched eagerly"
            )),
            "{engine:?}: {note}"
        );
    }
}
