//! What `--output` does with the file already at its path (issue 15, points 1 and 3): a
//! FIFO or a character device is written through and stays what it was, a socket or a
//! block device is refused, a full device is an error, an existing report keeps its
//! mode, and `--output` naming the input trace (by any path) is refused before anything
//! is written.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::hostile::support::*;
use crate::util::{empty_xdg_data_home, target_dir};

/// A small valid trace in `dir`; returns its path.
fn small_trace(dir: &Path) -> PathBuf {
    let path = dir.join("ok.trace.json");
    std::fs::write(&path, trace_text(&valid_events())).unwrap();
    path
}

/// `llm-triage --framework sglang --format json --input TRACE [EXTRA...]`.
fn triage(trace: &Path, extra: &[&str]) -> Ran {
    let mut args = vec![
        "--framework",
        "sglang",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The report the run prints on stdout, to compare with what reached a special file.
fn report_on_stdout(trace: &Path) -> String {
    let ran = triage(trace, &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    ran.stdout
}

/// A private copy of the character device `major:minor` at `dir/name`, where this user
/// may make device nodes (root in most containers); `None` elsewhere.
fn private_char_device(dir: &Path, name: &str, major: u32, minor: u32) -> Option<PathBuf> {
    let path = dir.join(name);
    let made = Command::new("mknod")
        .arg(&path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .stderr(Stdio::null())
        .status()
        .ok()?
        .success();
    made.then_some(path)
}

#[test]
fn output_to_a_fifo_is_written_through_to_its_reader_and_stays_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let fifo = dir.path().join("report.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (sender, received) = mpsc::channel();
    let reading = fifo.clone();
    // The reader opens first (opening a FIFO waits for the other end), like `cat fifo &`.
    std::thread::spawn(move || {
        let _ = sender.send(std::fs::read_to_string(&reading));
    });
    let ran = triage(&trace, &["--output", fifo.to_str().unwrap()]);
    assert_eq!((ran.code, ran.stderr.as_str()), (0, ""));
    // A FIFO replaced by a file is never opened for writing, so its reader waits for
    // ever: a bounded wait turns that into a failure.
    let got = received
        .recv_timeout(Duration::from_secs(20))
        .expect("the FIFO's reader got the report (the FIFO was not replaced)")
        .unwrap();
    assert_eq!(got, report_on_stdout(&trace));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "still a FIFO: {kind:?}");
}

#[test]
fn output_to_a_null_device_is_written_through_and_it_stays_a_character_device() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    // A private copy of /dev/null proves the old bug (a rename over it) without risking
    // the system's; /dev/null itself is checked too, which write-through never replaces.
    let mut devices = vec![PathBuf::from("/dev/null")];
    match private_char_device(dir.path(), "null", 1, 3) {
        Some(private) => devices.insert(0, private),
        None => eprintln!("mknod not permitted: only /dev/null itself checked"),
    }
    for device in &devices {
        let ran = triage(&trace, &["--output", device.to_str().unwrap()]);
        assert_eq!((ran.code, ran.stderr.as_str()), (0, ""), "{device:?}");
        assert_eq!(ran.stdout, "", "{device:?}");
        let kind = std::fs::symlink_metadata(device).unwrap().file_type();
        assert!(kind.is_char_device(), "{device:?} is now {kind:?}");
    }
}

#[test]
fn output_to_a_full_device_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let mut devices = vec![PathBuf::from("/dev/full")];
    match private_char_device(dir.path(), "full", 1, 7) {
        Some(private) => devices.insert(0, private),
        None => eprintln!("mknod not permitted: only /dev/full itself checked"),
    }
    for device in &devices {
        let ran = triage(&trace, &["--output", device.to_str().unwrap()]);
        assert_refused(
            &ran,
            3,
            &[&format!("{}: No space left on device", device.display())],
        );
        let kind = std::fs::symlink_metadata(device).unwrap().file_type();
        assert!(kind.is_char_device(), "{device:?} is now {kind:?}");
    }
}

#[test]
fn output_to_dev_stdout_prints_the_report_on_stdout_whatever_stdout_is() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let expected = report_on_stdout(&trace);
    // Stdout a pipe (the test reads it) ...
    let ran = triage(&trace, &["--output", "/dev/stdout"]);
    assert_eq!((ran.code, ran.stderr.as_str()), (0, ""));
    assert_eq!(ran.stdout, expected);
    // ... and stdout a regular file, appended to (`>> log`): the report lands after what
    // the file held, and /dev/stdout stays the system's link.
    let log = dir.path().join("log");
    std::fs::write(&log, "before\n").unwrap();
    let append = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let status = Command::new(target_dir().join("llm-triage"))
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .args(["--framework", "sglang", "--format", "json", "--input"])
        .arg(&trace)
        .args(["--output", "/dev/stdout"])
        .stdout(append)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("before\n{expected}")
    );
    let link = std::fs::symlink_metadata("/dev/stdout")
        .unwrap()
        .file_type();
    assert!(link.is_symlink(), "/dev/stdout is now {link:?}");
}

#[test]
fn output_onto_a_socket_is_refused_with_exit_2_and_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let socket = dir.path().join("report.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let ran = triage(&trace, &["--output", socket.to_str().unwrap()]);
    assert_refused(&ran, 2, &[socket.to_str().unwrap(), "socket"]);
    let kind = std::fs::symlink_metadata(&socket).unwrap().file_type();
    assert!(kind.is_socket(), "still a socket: {kind:?}");
}

#[test]
fn an_existing_report_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    for mode in [0o600, 0o640, 0o604] {
        let report = dir.path().join(format!("report-{mode:o}.json"));
        std::fs::write(&report, "old\n").unwrap();
        std::fs::set_permissions(&report, std::fs::Permissions::from_mode(mode)).unwrap();
        let ran = triage(&trace, &["--output", report.to_str().unwrap()]);
        assert_eq!((ran.code, ran.stderr.as_str()), (0, ""));
        assert_ne!(std::fs::read_to_string(&report).unwrap(), "old\n");
        let now = std::fs::metadata(&report).unwrap().permissions().mode() & 0o7777;
        assert_eq!(now, mode, "{report:?}: {now:o}");
    }
}

#[test]
fn a_new_report_gets_the_mode_any_new_file_gets() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    // The child inherits this process's umask: a file made here shows what it allows.
    let probe = dir.path().join("probe");
    std::fs::write(&probe, "").unwrap();
    let usual = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o7777;
    let report = dir.path().join("new-report.json");
    let ran = triage(&trace, &["--output", report.to_str().unwrap()]);
    assert_eq!((ran.code, ran.stderr.as_str()), (0, ""));
    let mode = std::fs::metadata(&report).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, usual, "{mode:o} vs {usual:o}");
}

#[test]
fn output_naming_the_input_by_any_path_is_refused_and_the_trace_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let original = std::fs::read(&trace).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    let dotted = dir.path().join(".").join("ok.trace.json");
    for output in [trace.clone(), link, dotted] {
        let ran = triage(&trace, &["--output", output.to_str().unwrap()]);
        assert_refused(&ran, 2, &[output.to_str().unwrap(), "is the input"]);
        assert_eq!(std::fs::read(&trace).unwrap(), original, "{output:?}");
    }
    // A relative `./` spelling, from the trace's directory.
    let out = Command::new(target_dir().join("llm-triage"))
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .current_dir(dir.path())
        .args(["--framework", "sglang", "--input", "ok.trace.json"])
        .args(["--output", "./ok.trace.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&trace).unwrap(), original);
}

/// A symlink planted by another user that leads to a device (as root, `report.md ->
/// /dev/mem`) is refused, not written through; the caller's own link still is.
#[test]
fn a_symlink_another_user_owns_leading_to_a_device_is_refused() {
    if crate::util::euid() != 0 {
        eprintln!("not root: cannot give a symlink to another user; case not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let Some(device) = private_char_device(dir.path(), "null", 1, 3) else {
        eprintln!("mknod not permitted: case not run");
        return;
    };
    let planted = dir.path().join("planted.md");
    std::os::unix::fs::symlink(&device, &planted).unwrap();
    std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
    let ran = triage(&trace, &["--output", planted.to_str().unwrap()]);
    assert_refused(&ran, 2, &[planted.to_str().unwrap(), "another user"]);
    assert!(std::fs::symlink_metadata(&planted)
        .unwrap()
        .file_type()
        .is_symlink());

    let own = dir.path().join("own.md");
    std::os::unix::fs::symlink(&device, &own).unwrap();
    let ran = triage(&trace, &["--output", own.to_str().unwrap()]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let kind = std::fs::metadata(&device).unwrap().file_type();
    assert!(kind.is_char_device(), "still a device: {kind:?}");
}
