//! Many distinct kernel names cost little per name: a trace whose every kernel has a
//! name of its own triages within a small factor of the CPU time of the same number of
//! events under two names (it took 46x in the debug binary: every catalog row re-tokenised every kernel name and
//! the similarity search compared every pair of matching rows).
//!
//! The factor is of CPU time (user + system of the child, from `wait4`), not wall time:
//! on a machine shared with other builds the wall time of a debug run stretches with the
//! load (this test once passed the 60 s limit of `support::run` that way), its CPU time
//! hardly.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::support::*;
use crate::util::{empty_xdg_data_home, target_dir};
use serde_json::Value;

/// Kernels in each trace; each is launched, as in a real trace.
const KERNELS: u64 = 20_000;

/// Wall time after which a run counts as hung: only a guard, the measure is CPU time.
const HUNG: Duration = Duration::from_secs(900);

/// A trace of [`KERNELS`] launched kernels whose names cycle through `distinct` names.
fn trace_with_names(path: &Path, distinct: u64) {
    let events: Vec<Value> = (0..KERNELS)
        .flat_map(|i| {
            let name = format!("fused_moe_gate_kernel_{}", i % distinct);
            [
                launch(1000 + i * 10, i + 1),
                kernel(&name, 1003 + i * 10, 5, i + 1),
            ]
        })
        .collect();
    std::fs::write(path, trace_text(&events)).unwrap();
}

/// User + system CPU time of one markdown triage of `path` (the format with every
/// table), which must succeed.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4 (which gives its rusage), not Child::wait"
)]
fn triage_cpu_time(path: &Path) -> Duration {
    let stderr_path = path.with_extension("stderr");
    let mut child = Command::new(target_dir().join("llm-triage"))
        .args(["--framework", "sglang", "--input", path.to_str().unwrap()])
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(File::create(&stderr_path).unwrap())
        .spawn()
        .expect("the binary starts");
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain integers; all-zero is a valid value for wait4 to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live locals; WNOHANG never blocks.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break (status, usage);
        }
        assert_eq!(got, 0, "wait4: {}", std::io::Error::last_os_error());
        if started.elapsed() > HUNG {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{path:?} did not end within {HUNG:?} (killed)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "wait status {status:#x}: {stderr}"
    );
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The smaller CPU time of two triages of `path`.
fn least_cpu_time(path: &Path) -> Duration {
    (0..2).map(|_| triage_cpu_time(path)).min().unwrap()
}

#[test]
fn twenty_thousand_distinct_kernel_names_cost_little_more_cpu_time_than_two() {
    let dir = tempfile::tempdir().unwrap();
    let (two, every) = (dir.path().join("two.json"), dir.path().join("every.json"));
    trace_with_names(&two, 2);
    trace_with_names(&every, KERNELS);
    let report = report_within(&every, HUNG);
    let rows = kernel_rows(&report);
    assert_eq!(rows.len(), KERNELS as usize, "one row per name");
    assert!(
        rows.iter().all(|(_, launches, _)| *launches == 1),
        "every name launched once"
    );
    let (two_time, every_time) = (least_cpu_time(&two), least_cpu_time(&every));
    let ratio = every_time.as_secs_f64() / two_time.as_secs_f64();
    // The debug binary: per distinct name it matches every kernel-family and fusion row
    // unoptimised, which no cache can avoid (each name is new). It was 46x before the
    // per-rule re-tokenising, the all-pairs context search and the second family match
    // went; 8-9x after (the release binary's ratios are in the commit message). A
    // quadratic pass over 20,000 names would be far past the bar.
    assert!(
        ratio < 15.0,
        "{KERNELS} distinct names took {every_time:?} of CPU, two names {two_time:?}: {ratio:.1}x"
    );
}
