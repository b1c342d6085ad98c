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

/// The most address space a capture run may take in the tests below: far above what
/// one needs (a few hundred MB), far below what buffering an endless answer reaches.
const MEMORY_LIMIT_KIB: u64 = 1 << 20;

/// `llm-triage ARGS` under `ulimit -v` [`MEMORY_LIMIT_KIB`], with `TMPDIR` set when
/// given: running out of memory is an abort (a signal), never a slow swap.
fn run_limited(args: &[&str], tmpdir: Option<&Path>) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = assert_cmd::Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_LIMIT_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(crate::util::target_dir().join("llm-triage"))
        .args(args)
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", crate::util::empty_xdg_data_home())
        .env("NO_COLOR", "1");
    if let Some(dir) = tmpdir {
        cmd.env("TMPDIR", dir);
    }
    let out = cmd
        .timeout(crate::hostile::support::LIMIT)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{args:?} ended by signal {:?} under a {MEMORY_LIMIT_KIB} KiB limit: {stderr}",
            out.status.signal()
        )
    });
    Ran {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// [`capture`]'s arguments, for [`run_limited`].
fn capture_args(emu: &Emulator, out: &Path, extra: &[&str]) -> Vec<String> {
    let report = out.join("report.md");
    std::fs::write(&report, "old report\n").unwrap();
    let mut args: Vec<String> = vec![
        "--url".into(),
        emu.url(),
        "--output-dir".into(),
        out.display().to_string(),
        "--output".into(),
        report.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(QUICK.iter().map(|a| a.to_string()));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn an_endless_probe_answer_is_cut_at_1_mib_and_the_capture_goes_on() {
    let emu = sglang(Faults {
        endless_body: Some("/server_info".into()),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let ran = run_limited(&strs(&capture_args(&emu, dir.path(), &[])), None);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let note = format!(
        "GET {}/server_info: HTTP 200, an answer larger than 1 MiB; read no further, taken as no answer",
        emu.url()
    );
    assert!(report.contains(&note), "{note:?} in the report:\n{report}");
    assert_stopped_once(&emu);
}

#[test]
fn an_endless_generation_answer_while_profiling_is_exit_5_and_the_profiler_is_stopped() {
    let emu = sglang(Faults {
        endless_while_profiling: Some("/generate".into()),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let ran = run_limited(&strs(&capture_args(&emu, dir.path(), &[])), None);
    assert_refused(
        &ran,
        5,
        &[&format!(
            "POST {}/generate (prefill capture request 1/2): HTTP 200, an answer larger than 64 MiB; read no further (the profiler was stopped)",
            emu.url()
        )],
    );
    assert_stopped_once(&emu);
    assert_no_report(dir.path());
}

#[test]
fn a_redirect_to_another_server_is_not_followed() {
    // The server at the given URL redirects every GET to a vLLM server elsewhere; the
    // probes must not let that server's answers pick the engine.
    let elsewhere_dir = tempfile::tempdir().unwrap();
    let elsewhere = Emulator::start(Config {
        server_dir: Some(elsewhere_dir.path().to_path_buf()),
        ..Config::new(Engine::Vllm)
    });
    let emu = sglang(Faults {
        redirect_to: Some(elsewhere.url()),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let ran = capture(&emu, dir.path(), &[]);
    let url = emu.url();
    assert_refused(
        &ran,
        4,
        &[
            &format!("cannot determine the framework of {url}"),
            &format!(
                "GET {url}/server_info: HTTP 302, a redirect to {}/server_info (not followed) (+4 more)",
                elsewhere.url()
            ),
        ],
    );
    assert_eq!(elsewhere.arrived(), Vec::<String>::new(), "never contacted");
    assert_no_report(dir.path());
}

#[test]
fn the_default_capture_directory_is_created_fresh_never_reused() {
    use std::os::unix::fs::PermissionsExt;
    // Another user plants the directory names a millisecond clock would give for the next
    // minute, as symlinks to a directory of theirs.
    let tmp = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    for ms in now - 1_000..now + 60_000 {
        std::os::unix::fs::symlink(
            victim.path(),
            tmp.path().join(format!("llm-triage-capture-{ms}")),
        )
        .unwrap();
    }
    let emu = sglang(Faults::default());
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("report.md");
    let mut args = vec![
        "--url".to_string(),
        emu.url(),
        "--output".to_string(),
        report.display().to_string(),
    ];
    args.extend(QUICK.iter().map(|a| a.to_string()));
    let ran = run_limited(&strs(&args), Some(tmp.path()));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(
        crate::util::names_in(victim.path()),
        Vec::<String>::new(),
        "nothing written through a planted link"
    );
    // The one new entry is a real directory, private to the user.
    let fresh: Vec<std::path::PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.is_symlink())
        .collect();
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    let name = fresh[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("llm-triage-capture-"), "{name}");
    let mode = std::fs::metadata(&fresh[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{name} has mode {mode:o}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(&fresh[0].display().to_string()),
        "the report names the capture dir"
    );
}

#[test]
fn an_output_dir_that_is_a_symlink_or_another_users_is_refused() {
    let emu = sglang(Faults::default());
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let ran = capture(&emu, &link, &[]);
    assert_refused(
        &ran,
        2,
        &[&format!(
            "--output-dir {} is a symbolic link; pass the directory it points to",
            link.display()
        )],
    );
    assert_eq!(
        crate::util::names_in(&real),
        ["report.md"],
        "nothing captured"
    );

    if crate::util::euid() != 0 {
        eprintln!(
            "not root: cannot make a directory owned by another user; that case is not checked"
        );
        return;
    }
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
    let ran = capture(&emu, &theirs, &[]);
    assert_refused(
        &ran,
        2,
        &[&format!(
            "--output-dir {} is owned by user 65534, not by you (user 0)",
            theirs.display()
        )],
    );
    assert!(
        emu.arrived().iter().all(|r| !r.ends_with("/start_profile")),
        "refused before profiling"
    );
}
