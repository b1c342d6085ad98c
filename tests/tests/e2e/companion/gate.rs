//! The diffusion-backend gate: each of the three phrases in a run log (beside the traces,
//! in the input directory, or named with --run-log) stops the triage with exit 3 and one
//! line; a trace whose Python frames run in a diffusers pipeline is refused the same way.

use std::path::{Path, PathBuf};

use crate::util::{llm_triage, workspace_root};

const ADVICE: &str = "this is a backend-selection problem, not kernel evidence: make the engine run its native backend and profile again";

/// A copy of the example capture in a temporary directory.
fn example_copy(dir: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let to = dir.join("capture");
    copy(&workspace_root().join("examples/sglang-qwen3"), &to);
    to
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn each_phrase_stops_the_triage_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let capture = example_copy(dir.path());
    let beside_trace = capture.join("decode/1761000012.0012");
    let elsewhere = dir.path().join("logs");
    std::fs::create_dir_all(&elsewhere).unwrap();

    // (where the log goes, whether it is passed with --run-log, the phrase)
    let cases = [
        (
            capture.join("server.log"),
            false,
            "Falling back to diffusers backend",
        ),
        (
            beside_trace.join("worker.log"),
            false,
            "Using diffusers backend",
        ),
        (elsewhere.join("run.txt"), true, "Loaded diffusers pipeline"),
    ];
    for (log, explicit, phrase) in cases {
        std::fs::write(
            &log,
            format!(
                "INFO server starting\nWARNING {phrase} for Wan-AI/Wan2.2 (no native pipeline)\n"
            ),
        )
        .unwrap();
        let mut cmd = llm_triage();
        cmd.arg("--input").arg(&capture);
        if explicit {
            cmd.arg("--run-log").arg(&log);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{phrase}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert_eq!(
            stderr(&out),
            format!(
                "llm-triage: error: {}: line 2 says \"{phrase}\": the run used the diffusers backend; {ADVICE}\n",
                log.display()
            )
        );
        std::fs::remove_file(&log).unwrap();
    }

    // Clean logs, beside and named: the triage runs.
    std::fs::write(
        capture.join("server.log"),
        "INFO using the sglang backend\n",
    )
    .unwrap();
    std::fs::write(elsewhere.join("run.txt"), "Loaded pipeline shards\n").unwrap();
    let ok = llm_triage()
        .arg("--input")
        .arg(&capture)
        .arg("--run-log")
        .arg(elsewhere.join("run.txt"))
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));

    // A named log that is not there is an input error too.
    let missing = llm_triage()
        .arg("--input")
        .arg(&capture)
        .arg("--run-log")
        .arg(elsewhere.join("nope.log"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(3));
    assert!(stderr(&missing).contains("nope.log: cannot read run log"));
}

#[test]
fn python_frames_in_a_diffusers_pipeline_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let frame = |name: &str, ts: u64, dur: u64, id: u64| {
        format!(
            r#"{{"ph": "X", "cat": "python_function", "name": "{name}", "pid": 7, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"Python id": {id}, "Python parent id": 0}}}}"#
        )
    };
    let events = [
        frame(
            "/usr/lib/python3/site-packages/diffusers/pipelines/wan/pipeline_wan.py(512): __call__",
            100,
            900,
            1,
        ),
        frame(
            "/usr/lib/python3/site-packages/diffusers/pipelines/wan/pipeline_wan.py(530): __call__",
            150,
            100,
            2,
        ),
        frame("/usr/lib/python3/site-packages/torch/nn/modules/module.py(1773): _call_impl", 200, 50, 3),
        r#"{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "pid": 0, "tid": 7, "ts": 300, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 1}}"#.to_string(),
    ];
    let trace = dir.path().join("wan.trace.json");
    std::fs::write(
        &trace,
        format!("{{\"traceEvents\": [{}]}}", events.join(",\n")),
    )
    .unwrap();
    let out = llm_triage().arg("--input").arg(&trace).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "llm-triage: error: {}: 2 python frames run inside a diffusers pipeline (e.g. /usr/lib/python3/site-packages/diffusers/pipelines/wan/pipeline_wan.py): the run used the diffusers backend; {ADVICE}\n",
            trace.display()
        )
    );
}
