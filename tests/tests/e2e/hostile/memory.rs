//! Hostile inputs under a memory limit: small `.json.gz` files that inflate to one huge
//! value (a string, a number, nesting, whitespace, a key) run the real binary with its
//! address space capped (`ulimit -v`). Each must end with exit 0 (the value skipped, and
//! counted where the reader would have kept it) or exit 3, never an abort (134) or a
//! kill. The files are written with streaming gzip, so the test stays small too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::support::*;
use crate::util::{empty_xdg_data_home, target_dir};

/// The address-space cap. A normal small triage needs under 256 MiB (measured with
/// `ulimit -v` on the debug binary, threads and plugins included); each hostile value
/// is larger than this cap, so holding it would fail.
const LIMIT_KIB: u64 = 512 << 10;

/// Bytes of the one huge value: past the cap.
const HUGE: usize = 640 << 20;

/// Writes `{"traceEvents": [<valid events>, <head><HUGE copies of fill><tail>]}` as gzip,
/// streaming, and returns its path.
fn hostile_gz(dir: &Path, name: &str, head: &str, fill: u8, tail: &str) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let text = trace_text(&valid_events());
    let cut = text.rfind("]}").unwrap();
    gz.write_all(&text.as_bytes()[..cut]).unwrap();
    gz.write_all(b",").unwrap();
    gz.write_all(head.as_bytes()).unwrap();
    let block = vec![fill; 1 << 20];
    for _ in 0..HUGE / block.len() {
        gz.write_all(&block).unwrap();
    }
    gz.write_all(tail.as_bytes()).unwrap();
    gz.write_all(b"]}").unwrap();
    gz.finish().unwrap();
    path
}

/// `llm-triage --format json` on `path` under the memory cap: exit code, stdout, stderr.
fn triage_capped(path: &Path) -> (Option<i32>, String, String) {
    let script = format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\"");
    let out = Command::new("sh")
        .args(["-c", &script])
        .arg(target_dir().join("llm-triage"))
        .args([
            "--framework",
            "sglang",
            "--min-share",
            "0",
            "--format",
            "json",
        ])
        .arg("--input")
        .arg(path)
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .output()
        .expect("sh runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the capped triage and checks it succeeded with the valid rows plus `extra`, and
/// the notes holding `note` (when given).
fn assert_read_under_cap(path: &Path, extra: &[&str], note: Option<&str>) {
    let (code, stdout, stderr) = triage_capped(path);
    assert_eq!(
        code,
        Some(0),
        "exit under a {LIMIT_KIB} KiB cap; stderr: {stderr}"
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON report");
    let mut names: Vec<String> = kernel_rows(&report).into_iter().map(|r| r.0).collect();
    names.sort();
    let mut want: Vec<String> = valid_rows().into_iter().map(|r| r.0).collect();
    want.extend(extra.iter().map(|s| s.to_string()));
    want.sort();
    assert_eq!(names, want);
    if let Some(note) = note {
        let notes = notes(&report);
        assert!(
            notes.iter().any(|n| n.contains(note)),
            "{note:?} in {notes:?}"
        );
    }
}

const KERNEL_HEAD: &str =
    r#"{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 5000, "dur": 10"#;

#[test]
fn a_huge_args_string_is_skipped_unbuffered_and_its_event_kept() {
    let dir = tempfile::tempdir().unwrap();
    let head = format!(r#"{KERNEL_HEAD}, "name": "blob_kernel", "args": {{"stream": 7, "blob": ""#);
    let path = hostile_gz(dir.path(), "args.trace.json.gz", &head, b'x', r#""}}"#);
    assert!(
        std::fs::metadata(&path).unwrap().len() < 8 << 20,
        "a small file"
    );
    assert_read_under_cap(&path, &["blob_kernel"], None);
}

#[test]
fn a_huge_kernel_name_is_skipped_and_counted_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let head = format!(r#"{KERNEL_HEAD}, "args": {{"stream": 7}}, "name": ""#);
    let path = hostile_gz(dir.path(), "name.trace.json.gz", &head, b'k', r#""}"#);
    assert_read_under_cap(
        &path,
        &[],
        Some("1 with a value over the reader's 64 KiB limit (name 1)"),
    );
}

#[test]
fn a_huge_number_literal_is_skipped_and_counted_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let head = r#"{"ph": "X", "cat": "kernel", "name": "n", "pid": 0, "tid": 7, "dur": 1, "args": {"stream": 7}, "ts": 1"#;
    let path = hostile_gz(dir.path(), "number.trace.json.gz", head, b'0', "}");
    assert_read_under_cap(&path, &[], Some("(ts 1)"));
}

#[test]
fn deep_nesting_whitespace_and_a_huge_key_in_one_event_are_skipped_unbuffered() {
    let dir = tempfile::tempdir().unwrap();
    // Half the value opens arrays, half closes them: the head opens, the fill is spaces
    // around a huge key, the tail closes. One event, every kind at once.
    let head = format!(
        r#"{KERNEL_HEAD}, "name": "spaced_kernel", "args": {{"stream": 7}}, "x": {}"#,
        "[".repeat(1000)
    );
    let tail = format!(r#"{}, "{}": 1}}"#, "]".repeat(1000), "k".repeat(1 << 20));
    let path = hostile_gz(dir.path(), "spaces.trace.json.gz", &head, b' ', &tail);
    assert_read_under_cap(&path, &["spaced_kernel"], None);
    let head = format!(r#"{KERNEL_HEAD}, "name": "deep_kernel", "args": {{"stream": 7, "deep": "#);
    let path = hostile_gz(dir.path(), "deep.trace.json.gz", &head, b'[', "");
    // Unclosed: the document ends inside it, a truncated trace (exit 3), not an abort.
    let (code, stdout, stderr) = triage_capped(&path);
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("deep.trace.json.gz: truncated JSON"),
        "{stderr}"
    );
}

#[test]
fn a_huge_top_level_object_without_trace_events_is_refused_not_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.trace.json.gz");
    let file = std::fs::File::create(&path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    gz.write_all(br#"{"schemaVersion": 1, "other": {"a": ""#)
        .unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..HUGE / block.len() {
        gz.write_all(&block).unwrap();
    }
    gz.write_all(br#""}}"#).unwrap();
    gz.finish().unwrap();
    let (code, _, stderr) = triage_capped(&path);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("other.trace.json.gz: not a torch.profiler trace: top-level object has no traceEvents array"),
        "{stderr}"
    );
}
