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

/// A directory holding one readable trace and `broken`, a file that passes the 64 KiB
/// sniff but fails the full read: the readable one is triaged, the broken one is named in
/// the notes with its reason (issue 14 point 15: one rule for every file of a directory).
fn triage_dir_with_broken(
    broken_name: &str,
    broken: &[u8],
) -> (tempfile::TempDir, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let trace = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    std::os::unix::fs::symlink(&trace, dir.path().join("q-TP-0-DECODE.trace.json.gz")).unwrap();
    std::fs::write(dir.path().join(broken_name), broken).unwrap();
    let report = triage_json(&[
        "--framework",
        "sglang",
        "--input",
        dir.path().to_str().unwrap(),
    ]);
    (dir, report)
}

/// The decompressed SGLang decode trace (580 KiB), for files that start like it.
fn decode_trace_text() -> Vec<u8> {
    let gz = std::fs::read(shared_trace(
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
    ))
    .unwrap();
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    text
}

fn assert_one_read_and_one_skipped(
    dir: &std::path::Path,
    report: &serde_json::Value,
    broken_name: &str,
) {
    let inputs = report["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert!(
        inputs[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("q-TP-0-DECODE.trace.json.gz"),
        "{inputs:?}"
    );
    let broken = dir.join(broken_name);
    let prefix = format!("could not be read, skipped: {}: ", broken.display());
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert_eq!(
        notes.len(),
        1,
        "one note for {broken_name}: {:?}",
        report["notes"]
    );
    assert!(
        notes[0].len() > prefix.len() && !notes[0].contains('\n'),
        "{notes:?}"
    );
}

#[test]
fn a_directory_skips_a_json_trace_malformed_past_the_sniff_and_triages_the_rest() {
    // Starts as a real trace for 200 KB, then stops mid-event.
    let text = decode_trace_text();
    let name = "q-TP-0-EXTEND.trace.json";
    let (dir, report) = triage_dir_with_broken(name, &text[..200_000]);
    assert_one_read_and_one_skipped(dir.path(), &report, name);
}

#[test]
fn a_directory_skips_a_truncated_gzip_trace_and_triages_the_rest() {
    let mut gz = Vec::new();
    {
        let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
        enc.write_all(&decode_trace_text()).unwrap();
        enc.finish().unwrap();
    }
    let name = "q-TP-0-EXTEND.trace.json.gz";
    let (dir, report) = triage_dir_with_broken(name, &gz[..gz.len() / 2]);
    assert_one_read_and_one_skipped(dir.path(), &report, name);
}

#[test]
fn a_directory_where_no_trace_can_be_read_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q-TP-0-DECODE.trace.json");
    std::fs::write(&path, &decode_trace_text()[..200_000]).unwrap();
    assert_fails(
        &[
            "--framework",
            "sglang",
            "--input",
            dir.path().to_str().unwrap(),
        ],
        3,
        path.to_str().unwrap(),
    );
}

/// A plain trace is read where it is mapped, and a file truncated mid-read raises SIGBUS
/// when the lost pages are touched. That ends the run with the one line and the exit
/// code of bad input, not with a silent death by signal. (A real truncation is a race
/// with the read; the signal itself is not, so the run is sent one while it waits on a
/// server that accepted it and says nothing.)
#[test]
fn a_bus_error_ends_the_run_with_one_line_and_the_input_code() {
    use std::process::{Command, Stdio};
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.local_addr().unwrap());
    let child = Command::new(target_dir().join("llm-triage"))
        .args(["--framework", "vllm", "--url", &url])
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Connected, so past `main`'s first lines, where the handler is installed.
    let (_held, _) = server.accept().unwrap();
    let killed = Command::new("kill")
        .args(["-BUS", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{:?}: {err}", out.status);
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(
        err.contains("(a plain trace) lost bytes while it was read"),
        "{err}"
    );
}
