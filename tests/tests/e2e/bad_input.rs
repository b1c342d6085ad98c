//! End-to-end: bad input gets one clear line naming the file, and its exit code.

use std::io::Write;

use crate::util::*;

fn assert_fails(args: &[&str], code: i32, needle: &str) -> String {
    let out = llm_triage().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn missing_input_path() {
    assert_fails(
        &["--input", "/nonexistent/trace.json.gz"],
        3,
        "/nonexistent/trace.json.gz",
    );
}

#[test]
fn truncated_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(shared_trace(
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
    ))
    .unwrap();
    let path = dir.path().join("cut.trace.json.gz");
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();
    assert_fails(
        &["--framework", "sglang", "--input", path.to_str().unwrap()],
        3,
        "cut.trace.json.gz",
    );
}

#[test]
fn json_that_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.trace.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(br#"{"traceEvents": 5}"#)
        .unwrap();
    assert_fails(
        &["--framework", "sglang", "--input", path.to_str().unwrap()],
        3,
        "x.trace.json",
    );
}

#[test]
fn malformed_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.trace.json");
    std::fs::write(&path, b"{\"traceEvents\": [{\"ph\": \"X\", ").unwrap();
    assert_fails(
        &["--framework", "sglang", "--input", path.to_str().unwrap()],
        3,
        "bad.trace.json",
    );
}

#[test]
fn unknown_framework_is_a_usage_error() {
    let path = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    assert_fails(
        &["--framework", "llamacpp", "--input", path.to_str().unwrap()],
        2,
        "llamacpp",
    );
}

#[test]
fn no_input_is_a_usage_error() {
    assert_fails(&["--framework", "sglang"], 2, "--input");
}

#[test]
fn empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    assert_fails(
        &["--input", dir.path().to_str().unwrap()],
        3,
        "no trace files",
    );
}

#[test]
fn a_directory_lists_a_non_trace_named_like_a_trace_and_triages_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let trace = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    // No rank in either name, one stage: the newer file, the non-trace, would be the one read.
    std::os::unix::fs::symlink(&trace, dir.path().join("host_1.pt.trace.json.gz")).unwrap();
    let named = dir.path().join("bench.trace.json");
    std::fs::write(&named, br#"{"requests": [{"latency": 1.5}]}"#).unwrap();
    let generic = dir.path().join("bench.json");
    std::fs::write(&generic, br#"{"requests": [{"latency": 1.5}]}"#).unwrap();
    let report = triage_json(&["--input", dir.path().to_str().unwrap()]);
    assert_eq!(report["inputs"].as_array().unwrap().len(), 1);
    let notes = report["notes"].to_string();
    for skipped in [&named, &generic] {
        let note = format!(
            "not a trace, skipped: {} (a JSON object with neither traceEvents nor a \
             torch.profiler key in its first 64 KiB)",
            skipped.display()
        );
        assert!(notes.contains(&note), "{note} in {notes}");
    }
}

#[test]
fn no_trace_files_names_the_json_that_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.trace.json");
    std::fs::write(&path, b"[1, 2, 3]").unwrap();
    let err = assert_fails(
        &["--input", dir.path().to_str().unwrap()],
        3,
        "no trace files",
    );
    assert!(
        err.trim_end().ends_with(&format!(
            "not traces: {} (a JSON list without event objects in its first 64 KiB)",
            path.display()
        )),
        "{err}"
    );
}
