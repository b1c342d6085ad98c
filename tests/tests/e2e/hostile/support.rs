//! Helpers for the hostile-input and fault tests: the real binary under a time limit,
//! the shape every failure must have, and a small valid trace to break.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::llm_triage;

/// Long enough for a debug build reading 100 MB; short enough that a hang fails fast.
pub const LIMIT: Duration = Duration::from_secs(60);

/// What one bounded run of the binary gave.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `llm-triage ARGS` and fails the test when it does not end within `limit`
/// (assert_cmd kills it then, and a killed process has no exit code).
pub fn run_within(args: &[&str], limit: Duration) -> Ran {
    let out: Output = llm_triage()
        .args(args)
        .timeout(limit)
        .output()
        .expect("the binary starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let Some(code) = out.status.code() else {
        panic!("{args:?} did not end within {limit:?} (killed): {stderr}");
    };
    Ran {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

pub fn run(args: &[&str]) -> Ran {
    run_within(args, LIMIT)
}

/// A failure as the issue wants it: `code`, nothing on stdout, exactly one line on
/// stderr that contains every needle, and no panic. Returns the line.
pub fn assert_refused(ran: &Ran, code: i32, needles: &[&str]) -> String {
    assert_eq!(ran.code, code, "exit code; stderr: {}", ran.stderr);
    assert!(!ran.stderr.contains("panicked at"), "{}", ran.stderr);
    assert_eq!(ran.stdout, "", "nothing on stdout when refusing");
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {:?}", ran.stderr);
    let line = lines[0];
    assert!(line.starts_with("llm-triage: error: "), "{line}");
    for needle in needles {
        assert!(line.contains(needle), "expected {needle:?} in {line:?}");
    }
    line.to_string()
}

/// Triage of `path` as SGLang with every row shown, as JSON; the run must succeed.
pub fn report_of(path: &Path) -> Value {
    report_within(path, LIMIT)
}

/// [`report_of`], killed (and failed) past `limit`.
pub fn report_within(path: &Path, limit: Duration) -> Value {
    let ran = run_within(
        &[
            "--framework",
            "sglang",
            "--min-share",
            "0",
            "--format",
            "json",
            "--input",
            path.to_str().unwrap(),
        ],
        limit,
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("panicked at"), "{}", ran.stderr);
    serde_json::from_str(&ran.stdout).expect("stdout is one JSON report")
}

/// `(name, launches, GPU µs)` of every kernel row of the report's only stage.
pub fn kernel_rows(report: &Value) -> Vec<(String, u64, f64)> {
    let stages = report["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 1, "one stage: {report}");
    stages[0]["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["launches"].as_u64().unwrap(),
                k["gpu_time_us"].as_f64().unwrap(),
            )
        })
        .collect()
}

pub fn notes(report: &Value) -> Vec<String> {
    report["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// A kernel on stream 7 of GPU 0.
pub fn kernel(name: &str, ts_us: u64, dur_us: u64, correlation: u64) -> Value {
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
           "ts": ts_us, "dur": dur_us,
           "args": {"device": 0, "stream": 7, "correlation": correlation}})
}

/// The `cudaLaunchKernel` on CPU thread 100 that launched `correlation`.
pub fn launch(ts_us: u64, correlation: u64) -> Value {
    json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
           "ts": ts_us, "dur": 2, "args": {"correlation": correlation}})
}

/// Four steps of `gemm_kernel` (40 µs) then `rms_norm_kernel` (10 µs), each launched:
/// 160 µs + 40 µs of GPU time.
pub fn valid_events() -> Vec<Value> {
    let mut events = Vec::new();
    for i in 0..4u64 {
        events.push(launch(1000 + i * 100, i + 1));
        events.push(kernel("gemm_kernel", 1010 + i * 100, 40, i + 1));
        events.push(launch(1050 + i * 100, 100 + i));
        events.push(kernel("rms_norm_kernel", 1060 + i * 100, 10, 100 + i));
    }
    events
}

/// The rows [`valid_events`] must give.
pub fn valid_rows() -> Vec<(String, u64, f64)> {
    vec![
        ("gemm_kernel".to_string(), 4, 160.0),
        ("rms_norm_kernel".to_string(), 4, 40.0),
    ]
}

/// `{"schemaVersion": 1, "traceEvents": [...]}` as text.
pub fn trace_text(events: &[Value]) -> String {
    json!({"schemaVersion": 1, "traceEvents": events}).to_string()
}

/// The trace text with `raw` (JSON text that may not be valid JSON on its own, like
/// Python's `NaN`) appended to the events array.
pub fn trace_text_with_raw(events: &[Value], raw: &[&str]) -> String {
    let text = trace_text(events);
    let cut = text.rfind("]}").expect("ends with the events array");
    let mut out = text[..cut].to_string();
    for element in raw {
        out.push(',');
        out.push_str(element);
    }
    out.push_str("]}");
    out
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Deterministic noise (xorshift), so a failure reproduces.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.max(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// A tmpfs of `kib` KiB at a new directory, filled up; unmounted when dropped. `None`
/// where mounting is not permitted.
pub struct FullDisk {
    dir: tempfile::TempDir,
}

impl FullDisk {
    pub fn mount(kib: u32) -> Option<FullDisk> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?
            .success();
        if !mounted {
            return None;
        }
        let disk = FullDisk { dir };
        // Fill it: the write fails part way with ENOSPC.
        let filler = vec![0u8; kib as usize * 2048];
        assert!(std::fs::write(disk.path().join("filler"), filler).is_err());
        Some(disk)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `name` as if it was there before the disk filled up (the filler is made
    /// again afterwards, so the disk is full once more), and returns its path.
    pub fn with_old_file(&self, name: &str, text: &str) -> PathBuf {
        let old = self.path().join(name);
        let _ = std::fs::remove_file(self.path().join("filler"));
        std::fs::write(&old, text).unwrap();
        assert!(std::fs::write(self.path().join("filler"), vec![0u8; 128 << 10]).is_err());
        old
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}
