//! Live-capture faults against the emulators: the server dies between
//! start and stop, the stop hangs, the flush outlasts the limit, the disk is full, the
//! trace is replaced under the waiter. Each is exit 5 with one line, no report (an old
//! `--output` file stays as it was), and a started profiler is always sent its stop.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::hostile::support::{assert_refused, run, FullDisk, Ran};
use llm_triage_tests::emulator::{Config, Emulator, Faults};
use llm_triage_tests::Engine;

/// Small, fast captures: one warm-up, two capture steps, prefill only.
const QUICK: [&str; 14] = [
    "--warmup-steps",
    "1",
    "--num-steps",
    "2",
    "--prefill-input-len",
    "16",
    "--decode-output-len",
    "8",
    "--probe-delay",
    "0",
    "--flush-timeout",
    "2",
    "--profile-workload",
    "prefill",
];

fn sglang(faults: Faults) -> Emulator {
    Emulator::start(Config {
        faults,
        ..Config::new(Engine::Sglang)
    })
}

/// A capture into `out` with the report going to `out/report.md` (which holds an old
/// report); `extra` flags replace QUICK's.
fn capture(emu: &Emulator, out: &Path, extra: &[&str]) -> Ran {
    let report = out.join("report.md");
    std::fs::write(&report, "old report\n").unwrap();
    let quick: Vec<&str> = QUICK
        .chunks(2)
        .filter(|pair| !extra.contains(&pair[0]))
        .flatten()
        .copied()
        .collect();
    let (url, out_dir) = (emu.url(), out.display().to_string());
    let mut args = vec![
        "--url",
        &url,
        "--output-dir",
        &out_dir,
        "--output",
        report.to_str().unwrap(),
    ];
    args.extend(extra);
    args.extend(quick);
    run(&args)
}

/// Nothing half-done: the old report as it was, no temporary report beside it.
fn assert_no_report(out: &Path) {
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        "old report\n"
    );
    let leftovers: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') || n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The profiler was stopped exactly once and is no longer running.
fn assert_stopped_once(emu: &Emulator) {
    assert_eq!(stops(emu), 1, "{:?}", emu.arrived());
    assert!(!emu.profiling(), "the stop took effect");
}

fn stops(emu: &Emulator) -> usize {
    emu.arrived()
        .iter()
        .filter(|r| r.ends_with(" /stop_profile"))
        .count()
}

#[test]
fn the_server_dies_between_start_and_stop() {
    let emu = sglang(Faults {
        die_after_start: true,
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let ran = capture(&emu, dir.path(), &[]);
    assert!(emu.dead());
    let url = emu.url();
    let line = assert_refused(
        &ran,
        5,
        &[
            &format!("{url}/generate (prefill capture request 1/2)"),
            &format!("then the stop failed too: POST {url}/stop_profile (stop the profiler)"),
        ],
    );
    assert!(line.contains("Connection refused"), "{line}");
    assert_no_report(dir.path());
}

#[test]
fn a_stop_that_hangs_times_out_after_reaching_the_server() {
    let emu = sglang(Faults {
        stop_delay: Some(Duration::from_secs(90)),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let ran = capture(&emu, dir.path(), &["--request-timeout", "1"]);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "waited out the hang"
    );
    assert_refused(
        &ran,
        5,
        &[&format!(
            "POST {}/stop_profile (stop the profiler): no answer within 1 s",
            emu.url()
        )],
    );
    assert_stopped_once(&emu);
    assert_no_report(dir.path());
}

#[test]
fn a_start_without_an_answer_is_followed_by_a_stop() {
    // The profiler starts, but the answer never comes: it may be running, so it is
    // stopped before the run fails.
    let emu = sglang(Faults {
        start_delay: Some(Duration::from_secs(90)),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let ran = capture(&emu, dir.path(), &["--request-timeout", "1"]);
    assert_refused(
        &ran,
        5,
        &[&format!(
            "POST {}/start_profile (start the profiler): no answer within 1 s (a stop was sent in case it had started)",
            emu.url()
        )],
    );
    assert_stopped_once(&emu);
    assert_no_report(dir.path());
}

#[test]
fn ctrl_c_while_profiling_still_stops_the_profiler() {
    // Capture requests take a while; Ctrl-C comes once the profiler started.
    let emu = sglang(Faults {
        generate_delay: Some(Duration::from_millis(400)),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (url, out) = (emu.url(), dir.path().display().to_string());
    let child = std::process::Command::new(crate::util::target_dir().join("llm-triage"))
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", dir.path())
        .args(["--url", &url, "--output-dir", &out, "--num-steps", "20"])
        .args(&QUICK[4..])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !emu.arrived().iter().any(|r| r.ends_with(" /start_profile")) {
        assert!(Instant::now() < deadline, "no start: {:?}", emu.arrived());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let ran = Ran {
        code: out.status.code().expect("exited, not killed by the signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_refused(
        &ran,
        5,
        &["interrupted by Ctrl-C during the prefill capture requests (the profiler was stopped)"],
    );
    assert_stopped_once(&emu);
    // Fewer than the 20 capture requests went out.
    let generated = emu
        .arrived()
        .iter()
        .filter(|r| r.ends_with(" /generate"))
        .count();
    assert!(generated < 1 + 20, "{generated}");
}

#[test]
fn ctrl_c_before_the_profiler_starts_ends_the_run_at_once() {
    let emu = sglang(Faults {
        generate_delay: Some(Duration::from_secs(3)),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (url, out) = (emu.url(), dir.path().display().to_string());
    let mut child = std::process::Command::new(crate::util::target_dir().join("llm-triage"))
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", dir.path())
        .args(["--url", &url, "--output-dir", &out])
        .args(QUICK)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !emu.arrived().iter().any(|r| r.ends_with(" /generate")) {
        assert!(Instant::now() < deadline, "no warm-up: {:?}", emu.arrived());
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "not after the warm-up"
    );
    assert!(emu.arrived().iter().all(|r| !r.ends_with("_profile")));
}

#[test]
fn a_flush_slower_than_the_limit_is_exit_5_naming_the_dir() {
    let emu = sglang(Faults {
        slow_flush: Some((10, Duration::from_millis(500))),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let ran = capture(&emu, dir.path(), &[]);
    let line = assert_refused(
        &ran,
        5,
        &[&format!(
            "no complete trace in {}/capture-",
            dir.path().display()
        )],
    );
    assert!(line.contains("/prefill after 2 s"), "{line}");
    assert_stopped_once(&emu);
    assert_no_report(dir.path());
}

#[test]
fn a_trace_replaced_by_a_cut_copy_is_never_read() {
    // Complete when the stop answers, then a cut copy is renamed over it before the
    // waiter's second look (polls are 200 ms apart).
    let emu = sglang(Faults {
        replace_with_truncated: Some(Duration::from_millis(60)),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let ran = capture(&emu, dir.path(), &[]);
    let line = assert_refused(
        &ran,
        5,
        &[&format!(
            "no complete trace in {}/capture-",
            dir.path().display()
        )],
    );
    assert!(line.contains("gzip stream not closed"), "{line}");
    assert_eq!(stops(&emu), 1);
    assert_no_report(dir.path());
}

#[test]
fn an_output_dir_that_cannot_take_the_trace() {
    // A path below a regular file: nothing can be created there.
    let emu = sglang(Faults::default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let below = dir.path().join("file/out");
    let report = dir.path().join("report.md");
    std::fs::write(&report, "old report\n").unwrap();
    let (url, below_s) = (emu.url(), below.display().to_string());
    let mut args = vec![
        "--url",
        &url,
        "--output-dir",
        &below_s,
        "--output",
        report.to_str().unwrap(),
    ];
    args.extend(QUICK);
    let ran = run(&args);
    assert_refused(
        &ran,
        5,
        &[
            &format!("cannot create {below_s}/capture-"),
            "Not a directory",
        ],
    );
    assert!(emu.arrived().iter().all(|r| !r.ends_with("/start_profile")));
    assert_no_report(dir.path());

    // A full disk (where this machine lets the test mount a small tmpfs): the server's
    // export fails, the stop answers 500, and that is the one line.
    if let Some(disk) = FullDisk::mount(256) {
        let emu = sglang(Faults::default());
        let report_dir = tempfile::tempdir().unwrap();
        let report = report_dir.path().join("report.md");
        std::fs::write(&report, "old report\n").unwrap();
        let (url, out) = (emu.url(), disk.path().display().to_string());
        let mut args = vec![
            "--url",
            &url,
            "--output-dir",
            &out,
            "--output",
            report.to_str().unwrap(),
        ];
        args.extend(QUICK);
        let ran = run(&args);
        assert_refused(&ran, 5, &["No space left on device"]);
        assert_no_report(report_dir.path());
        assert!(!emu.profiling());
    }
}
