//! Run logs are files someone else may control (issue 15 point 6): each is read with a
//! cap and never blocks. A named `--run-log` that is not a plain file is a usage error
//! (exit 2); a `*.log` beside the trace that is a FIFO is skipped and noted; a sparse
//! 8 GB log is scanned only in part, in bounded memory. Every run has a time limit and
//! an address-space limit, so a hang or an unbounded read fails the test instead of
//! hanging the suite or taking the machine's memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::support::*;
use crate::util::target_dir;

/// A hang shows as a kill long before this; a debug build triages the small trace in
/// well under a second.
const QUICK: Duration = Duration::from_secs(30);

/// The binary's address space, in KiB: a reader that keeps a whole 8 GB log, or reads
/// `/dev/zero` without end, aborts instead of taking the machine's memory.
const MEMORY_KIB: u64 = 4 << 20;

/// `llm-triage ARGS` under [`MEMORY_KIB`] of address space and the [`QUICK`] time limit;
/// fails the test unless it ends by itself with `code`.
fn run_bounded(args: &[&str], code: i32) -> Ran {
    let out = assert_cmd::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
        .arg(target_dir().join("llm-triage"))
        .args(args)
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", crate::util::empty_xdg_data_home())
        .env("NO_COLOR", "1")
        .timeout(QUICK)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // Killed at the time limit: no exit code.
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    Ran {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

fn trace_in(dir: &Path) -> PathBuf {
    let path = dir.join("run.trace.json");
    std::fs::write(&path, trace_text(&valid_events())).unwrap();
    path
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

fn json_triage(trace: &Path) -> serde_json::Value {
    let args = [
        "--framework",
        "sglang",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ];
    let ran = run_bounded(&args, 0);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(kernel_rows(&report), valid_rows());
    report
}

#[test]
fn a_named_run_log_on_a_device_or_a_pipe_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_in(dir.path());
    let pipe = dir.path().join("server.pipe");
    mkfifo(&pipe);
    for (log, what) in [
        (Path::new("/dev/zero"), "a device"),
        (pipe.as_path(), "a named pipe"),
    ] {
        let args = [
            "--framework",
            "sglang",
            "--input",
            trace.to_str().unwrap(),
            "--run-log",
            log.to_str().unwrap(),
        ];
        assert_refused(
            &run_bounded(&args, 2),
            2,
            &[&format!(
                "--run-log {}: not a regular file ({what})",
                log.display()
            )],
        );
    }
}

#[test]
fn a_pipe_named_like_a_log_beside_the_trace_is_skipped_and_noted() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_in(dir.path());
    let pipe = dir.path().join("server.log");
    mkfifo(&pipe);
    let report = json_triage(&trace);
    assert!(
        notes(&report).contains(&format!(
            "run log skipped: {} (not a regular file: a named pipe)",
            pipe.display()
        )),
        "{:?}",
        notes(&report)
    );
}

/// An 8 GB log of zeros (sparse: it takes no disk) beside the trace, under the 4 GiB
/// address-space limit: reading it whole, as one "line", would abort; the scan reads
/// its first 16 MiB and says so.
#[test]
fn a_sparse_8_gb_log_beside_the_trace_is_scanned_in_part_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_in(dir.path());
    let log = dir.path().join("server.log");
    let length: u64 = 8 << 30;
    std::fs::File::create(&log)
        .unwrap()
        .set_len(length)
        .unwrap();
    let report = json_triage(&trace);
    assert!(
        notes(&report).contains(&format!(
            "run log scanned in part: {} (its first 16 MiB of {length} bytes were checked for \
             the diffusers fallback)",
            log.display()
        )),
        "{:?}",
        notes(&report)
    );
}
