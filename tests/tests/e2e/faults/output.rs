//! Output safety: `--output` is all or nothing, a closed stdout pipe
//! (`| head`) ends quietly with exit 0, and stdout holds only the report.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use crate::hostile::support::*;
use crate::util::{names_in, target_dir};
use serde_json::json;

/// A valid trace with `kernels` distinct kernel names (a long report).
fn many_kernels(dir: &Path, kernels: u64) -> std::path::PathBuf {
    let mut events = valid_events();
    for i in 0..kernels {
        events.push(launch(10_000 + i * 10, 50_000 + i));
        events.push(kernel(
            &format!("distinct_kernel_{i}"),
            10_005 + i * 10,
            1 + i % 7,
            50_000 + i,
        ));
    }
    let path = dir.join("many.trace.json");
    std::fs::write(&path, trace_text(&events)).unwrap();
    path
}

#[test]
fn a_failed_triage_leaves_an_existing_output_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let report = out.join("report.json");
    std::fs::write(&report, "{\"previous\": true}\n").unwrap();
    let bad = dir.path().join("cut.trace.json");
    let text = trace_text(&valid_events());
    std::fs::write(&bad, &text[..text.len() / 2]).unwrap();
    for input in [bad.as_path(), Path::new("/nonexistent/x.trace.json")] {
        let ran = run(&[
            "--framework",
            "sglang",
            "--format",
            "json",
            "--input",
            input.to_str().unwrap(),
            "--output",
            report.to_str().unwrap(),
        ]);
        assert_refused(&ran, 3, &[input.to_str().unwrap()]);
        assert_eq!(
            std::fs::read_to_string(&report).unwrap(),
            "{\"previous\": true}\n"
        );
        assert_eq!(names_in(&out), ["report.json"], "no temporary file left");
    }
}

#[test]
fn a_successful_triage_replaces_the_output_whole() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ok.trace.json");
    std::fs::write(&trace, trace_text(&valid_events())).unwrap();
    let report = dir.path().join("report.json");
    std::fs::write(&report, "x".repeat(1 << 20)).unwrap();
    let args = [
        "--framework",
        "sglang",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ];
    let to_stdout = run(&args);
    assert_eq!(to_stdout.code, 0, "{}", to_stdout.stderr);
    let mut with_output = args.to_vec();
    with_output.extend(["--output", report.to_str().unwrap()]);
    let to_file = run(&with_output);
    assert_eq!((to_file.code, to_file.stdout.as_str()), (0, ""));
    assert_eq!(to_file.stderr, "");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), to_stdout.stdout);
    assert_eq!(names_in(dir.path()), ["ok.trace.json", "report.json"]);
}

#[test]
fn an_output_path_that_cannot_be_written_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ok.trace.json");
    std::fs::write(&trace, trace_text(&valid_events())).unwrap();
    let missing_dir = dir.path().join("no/such/dir/report.md");
    let is_dir = dir.path().join("adir");
    std::fs::create_dir(&is_dir).unwrap();
    for output in [&missing_dir, &is_dir] {
        let ran = run(&[
            "--framework",
            "sglang",
            "--input",
            trace.to_str().unwrap(),
            "--output",
            output.to_str().unwrap(),
        ]);
        assert_refused(&ran, 3, &[&format!("{}: ", output.display())]);
    }
    assert!(is_dir.is_dir());
    assert_eq!(names_in(dir.path()), ["adir", "ok.trace.json"]);
}

#[test]
fn a_full_disk_leaves_the_old_report_and_no_temporary_file() {
    // Where this machine lets the test mount a small tmpfs.
    let Some(disk) = FullDisk::mount(64) else {
        eprintln!("mount not permitted: full-disk case not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = many_kernels(dir.path(), 200);
    // The old report was there before the disk filled up.
    let report = disk.with_old_file("report.md", "old report\n");
    let ran = run(&[
        "--framework",
        "sglang",
        "--min-share",
        "0",
        "--input",
        trace.to_str().unwrap(),
        "--output",
        report.to_str().unwrap(),
    ]);
    assert_refused(
        &ran,
        3,
        &[&format!("{}: No space left on device", report.display())],
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "old report\n");
    assert_eq!(names_in(disk.path()), ["filler", "report.md"]);
}

#[test]
fn a_closed_stdout_pipe_is_a_quiet_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let trace = many_kernels(dir.path(), 3000);
    for format in ["markdown", "json"] {
        let mut child = std::process::Command::new(target_dir().join("llm-triage"))
            .env_remove("LLM_TRIAGE_PLUGIN_PATH")
            .env("XDG_DATA_HOME", dir.path())
            .args([
                "--framework",
                "sglang",
                "--min-share",
                "0",
                "--format",
                format,
            ])
            .args(["--input", trace.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -c 100`: read a little, then close the pipe.
        let mut stdout = child.stdout.take().unwrap();
        let mut head = [0u8; 100];
        stdout.read_exact(&mut head).unwrap();
        drop(stdout);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{format}: {stderr}");
        assert_eq!(stderr, "", "{format}: quiet");
        let head = String::from_utf8_lossy(&head);
        assert!(
            head.starts_with("Triage View")
                || head.starts_with("# Triage View")
                || head.starts_with('{'),
            "{head}"
        );
    }
}

#[test]
fn stdout_holds_only_the_report_and_stderr_only_errors() {
    let dir = tempfile::tempdir().unwrap();
    // A run with notes of every kind: skipped events, a second GPU pid, unlinked ops.
    let mut events = valid_events();
    events.push(json!("not an event"));
    events.push(kernel("orphan_kernel", 9000, 3, 424242));
    let mut other_gpu = kernel("other_gpu_kernel", 9100, 3, 1);
    other_gpu["pid"] = json!(1);
    events.push(other_gpu);
    let trace = dir.path().join("noisy.trace.json");
    std::fs::write(&trace, trace_text(&events)).unwrap();
    for format in ["json", "markdown", "text"] {
        let ran = run(&[
            "--framework",
            "sglang",
            "--format",
            format,
            "--input",
            trace.to_str().unwrap(),
        ]);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        assert_eq!(ran.stderr, "", "{format}: nothing on stderr");
        if format == "json" {
            let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
            let notes = notes(&report);
            assert!(
                notes
                    .iter()
                    .any(|n| n.contains("skipped 1 events (1 malformed")),
                "{notes:?}"
            );
        } else {
            assert!(
                ran.stdout.contains("skipped 1 events"),
                "{format}: notes in the report"
            );
        }
    }
    // And a failure prints nothing on stdout.
    let ran = run(&["--input", "/nonexistent"]);
    assert_refused(&ran, 3, &["/nonexistent"]);
}
