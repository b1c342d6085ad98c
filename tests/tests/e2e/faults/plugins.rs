//! Plugin failures during real triage runs of the binary: a panicking
//! entry point is exit 6 naming the plugin and leaves no report behind; broken, foreign
//! and duplicate plugin files are noted in the report and never stop a run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::hostile::support::*;
use crate::util::{binary_copy_in, euid, names_in, target_dir, workspace_root};

/// `target/<profile>/`, with the test-only plugins built too (not default members).
fn test_plugins_dir() -> &'static Path {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "llm-triage-test-plugin-panicky",
                "-p",
                "llm-triage-test-plugin-api2",
            ])
            .current_dir(workspace_root())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the test plugins failed");
    });
    target_dir()
}

const PANICKY_SOURCE: &str = "tests/plugins/panicky/src/lib.rs";

fn so(name: &str) -> String {
    format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// Copies the built library `lib_name` into `dir` as `file_name`.
fn install(dir: &Path, lib_name: &str, file_name: &str) -> PathBuf {
    let to = dir.join(file_name);
    std::fs::copy(test_plugins_dir().join(so(lib_name)), &to).expect("copy plugin");
    to
}

fn valid_trace(dir: &Path) -> PathBuf {
    let path = dir.join("ok.trace.json");
    std::fs::write(&path, trace_text(&valid_events())).unwrap();
    path
}

/// A panic inside a plugin must reach the user as the host's one line (the plugin's std
/// report is silenced by `guarded`), and that line says where in the plugin it happened.
fn host_line_only(ran: Ran, plugin_source: &str) -> Ran {
    let lines: Vec<&str> = ran.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {:?}", ran.stderr);
    assert!(
        lines[0].contains(&format!("(at {plugin_source}:")),
        "the line names the panic's place: {:?}",
        ran.stderr
    );
    ran
}

#[test]
fn a_panicking_plugin_is_exit_6_naming_it_and_no_report_is_written() {
    let plugins = tempfile::tempdir().unwrap();
    install(
        plugins.path(),
        "triage_test_panicky",
        &so("llm_triage_plugin_panicky"),
    );
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let out = work.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let kept = out.join("kept.md");
    std::fs::write(&kept, "the previous report\n").unwrap();
    let fresh = out.join("fresh.md");
    let (plugin_dir, trace) = (plugins.path().to_str().unwrap(), trace.to_str().unwrap());

    // Chosen by name: its stage_of panics on the file path.
    for output in [&kept, &fresh] {
        let ran = run(&[
            "--plugin-dir",
            plugin_dir,
            "--framework",
            "panicky",
            "--input",
            trace,
            "--output",
            output.to_str().unwrap(),
        ]);
        assert_refused(
            &host_line_only(ran, PANICKY_SOURCE),
            6,
            &[&format!(
                "plugin panicky: plugin panicked in stage_of: boom in stage_of for {trace}"
            )],
        );
    }
    // Auto-detection asks every plugin; the panicking one fails the run, not a guess.
    let ran = run(&[
        "--plugin-dir",
        plugin_dir,
        "--input",
        trace,
        "--output",
        fresh.to_str().unwrap(),
    ]);
    assert_refused(
        &host_line_only(ran, PANICKY_SOURCE),
        6,
        &["plugin panicky: plugin panicked in detect: boom in detect"],
    );
    // Nothing half-done: the old report as it was, no new one, no temporary file.
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        "the previous report\n"
    );
    assert_eq!(names_in(&out), ["kept.md"]);
}

#[test]
fn two_plugins_claiming_one_name_the_first_wins_and_the_other_is_noted() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let original = install(
        first.path(),
        "llm_triage_plugin_sglang",
        &so("llm_triage_plugin_sglang"),
    );
    let copy = install(
        second.path(),
        "llm_triage_plugin_sglang",
        &so("llm_triage_plugin_sglang_fork"),
    );
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let ran = run(&[
        "--plugin-dir",
        first.path().to_str().unwrap(),
        "--plugin-dir",
        second.path().to_str().unwrap(),
        "--framework",
        "sglang",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(report["framework"]["name"], "sglang");
    let notes = notes(&report);
    let clash = |path: &Path| {
        format!(
            "plugin {} not loaded: duplicate plugin name sglang, already loaded from {}",
            path.display(),
            original.display()
        )
    };
    assert!(notes.contains(&clash(&copy)), "{notes:?}");
    // The copy beside the binary lost to the --plugin-dir one too.
    let beside = target_dir().join(so("llm_triage_plugin_sglang"));
    assert!(notes.contains(&clash(&beside)), "{notes:?}");
}

#[test]
fn files_that_are_not_plugins_are_noted_and_the_run_goes_on() {
    let plugins = tempfile::tempdir().unwrap();
    let dir = plugins.path();
    let text = dir.join(so("llm_triage_plugin_script"));
    std::fs::write(&text, "#!/bin/sh\necho not a library\n").unwrap();
    let empty = dir.join(so("llm_triage_plugin_empty"));
    std::fs::write(&empty, b"").unwrap();
    let foreign = install(dir, "triage_test_api2", &so("llm_triage_plugin_api2"));
    // Not regular files: never opened (a named pipe would block), never noted.
    std::fs::create_dir(dir.join(so("llm_triage_plugin_dir"))).unwrap();
    std::os::unix::fs::symlink("/nonexistent", dir.join(so("llm_triage_plugin_dead"))).unwrap();
    let fifo = dir.join(so("llm_triage_plugin_pipe"));
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());

    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let ran = run(&[
        "--plugin-dir",
        dir.to_str().unwrap(),
        "--framework",
        "sglang",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(kernel_rows(&report), valid_rows());
    let notes: Vec<String> = notes(&report)
        .into_iter()
        .filter(|n| n.starts_with("plugin "))
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    let expect = |path: &Path, reason: &str| {
        let prefix = format!("plugin {} not loaded: {reason}", path.display());
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(&prefix) && !n.contains('\n')),
            "{prefix:?} in {notes:?}"
        );
    };
    // Sorted by file name: api2, empty, script.
    expect(
        &foreign,
        "built for plugin API 2.0.0, but this host speaks plugin API ",
    );
    expect(&empty, "not a loadable plugin library: ");
    expect(&text, "not a loadable plugin library: ");
}

#[test]
fn a_plugin_directory_anyone_may_write_to_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let plugins = tempfile::tempdir().unwrap();
    install(
        plugins.path(),
        "llm_triage_plugin_vllm",
        &so("llm_triage_plugin_vllm"),
    );
    std::fs::set_permissions(plugins.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let dir = plugins.path().to_str().unwrap();
    let warning = format!(
        "plugin directory {dir} is writable by every user: anyone can put a library there that llm-triage then runs as you; `chmod o-w` it"
    );
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let ran = run(&[
        "--plugin-dir",
        dir,
        "--framework",
        "sglang",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(kernel_rows(&report), valid_rows(), "the plugins still load");
    assert!(notes(&report).contains(&warning), "{:?}", notes(&report));

    let doctor = run(&["plugins", "doctor", "--plugin-dir", dir]);
    assert_eq!(doctor.code, 0, "{}", doctor.stderr);
    assert!(
        doctor.stdout.contains(&format!("  warning: {warning}\n")),
        "{}",
        doctor.stdout
    );

    // Not world-writable: no warning.
    std::fs::set_permissions(plugins.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let doctor = run(&["plugins", "doctor", "--plugin-dir", dir]);
    assert!(
        !doctor.stdout.contains("writable by every user"),
        "{}",
        doctor.stdout
    );
}

#[test]
fn no_usable_plugin_at_all_is_exit_6() {
    // A copy of the binary alone in a directory, with only a broken plugin to find.
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = binary_copy_in(bin_dir.path());
    let plugins = tempfile::tempdir().unwrap();
    std::fs::write(plugins.path().join(so("llm_triage_plugin_x")), "junk").unwrap();
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let out = assert_cmd::Command::new(&bin)
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", work.path())
        .args(["--plugin-dir", plugins.path().to_str().unwrap()])
        .args(["--input", trace.to_str().unwrap()])
        .timeout(LIMIT)
        .output()
        .unwrap();
    let ran = Ran {
        code: out.status.code().expect("ended"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_refused(
        &ran,
        6,
        &[
            "plugin (none): no engine plugins could be loaded from ",
            plugins.path().to_str().unwrap(),
            "run `llm-triage plugins doctor`",
        ],
    );
}

/// Runs `llm-triage ARGS` like [`run`], with `XDG_DATA_HOME` set to `data` (so the user
/// plugin dir is `data/llm-triage/plugins`).
fn run_with_data_home(data: &Path, args: &[&str]) -> Ran {
    let out = crate::util::llm_triage()
        .env("XDG_DATA_HOME", data)
        .args(args)
        .timeout(LIMIT)
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or_else(|| {
            panic!(
                "{args:?} ended by a signal ({:?}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        }),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_truncated_plugin_library_is_skipped_and_doctor_and_remove_still_work() {
    // A real plugin cut to a sixteenth of its size, inside its code segment: dlopen would
    // map pages past the end of the file, and the first touch of one is a SIGBUS.
    let data = tempfile::tempdir().unwrap();
    let user_dir = data.path().join("llm-triage").join("plugins");
    std::fs::create_dir_all(&user_dir).unwrap();
    let whole = std::fs::read(target_dir().join(so("llm_triage_plugin_vllm"))).unwrap();
    let cut = user_dir.join(so("llm_triage_plugin_cut"));
    let kept = whole.len() / 16;
    std::fs::write(&cut, &whole[..kept]).unwrap();
    let reason = format!(
        "plugin {} not loaded: not a loadable plugin library: ",
        cut.display()
    );

    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let ran = run_with_data_home(
        data.path(),
        &[
            "--framework",
            "sglang",
            "--format",
            "json",
            "--input",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(kernel_rows(&report), valid_rows());
    let note = notes(&report)
        .into_iter()
        .find(|n| n.starts_with(&reason))
        .unwrap_or_else(|| panic!("{reason:?} in {:?}", notes(&report)));
    assert!(
        note.contains("loadable segment") && note.contains(&format!("({kept} bytes)")),
        "the note says why: {note}"
    );

    let doctor = run_with_data_home(data.path(), &["plugins", "doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stderr);
    assert!(
        doctor.stdout.contains(&format!(
            "  rejected  {}: not a loadable plugin library: ",
            cut.display()
        )),
        "{}",
        doctor.stdout
    );

    let removed = run_with_data_home(data.path(), &["plugins", "remove", "cut"]);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(removed.stdout, format!("removed {}\n", cut.display()));
    assert!(!cut.exists());
}

/// Each warning once on stderr as `llm-triage: warning: …`, and in the report's notes.
fn assert_warned(ran: &Ran, warnings: &[String]) {
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let notes = notes(&report);
    for warning in warnings {
        let line = format!("llm-triage: warning: {warning}");
        assert_eq!(
            ran.stderr.lines().filter(|l| *l == line).count(),
            1,
            "{line:?} once in {:?}",
            ran.stderr
        );
        assert!(notes.contains(warning), "{warning:?} in {notes:?}");
    }
}

#[test]
fn loose_permissions_on_plugin_files_and_their_directories_are_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let top = tempfile::tempdir().unwrap();
    // A parent any user may write to, without the sticky bit /tmp has: anyone may rename
    // the plugin directory away and put their own in its place.
    let parent = top.path().join("shared");
    std::fs::create_dir(&parent).unwrap();
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o777)).unwrap();
    let dir = parent.join("plugins");
    std::fs::create_dir(&dir).unwrap();
    let lib = install(
        &dir,
        "llm_triage_plugin_vllm",
        &so("llm_triage_plugin_vllm"),
    );
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut warnings = vec![
        format!(
            "plugin file {} is writable by every user: anyone can change the code llm-triage runs as you; `chmod o-w` it",
            lib.display()
        ),
        format!(
            "plugin directory {} is inside {}, which every user may write to and which has no sticky bit: anyone can put another directory in its place; `chmod o-w` or `chmod +t` that directory",
            dir.display(),
            parent.display()
        ),
    ];
    let me = euid();
    if me == 0 {
        std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        warnings.push(format!(
            "plugin directory {} is owned by user 65534, not by you (user 0) or root: that user can put a library there that llm-triage then runs as you",
            dir.display()
        ));
    } else {
        eprintln!(
            "not root (uid {me}): cannot make a directory owned by another user, so the ownership warning is not checked"
        );
    }
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let ran = run(&[
        "--plugin-dir",
        dir.to_str().unwrap(),
        "--framework",
        "vllm",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ]);
    assert_warned(&ran, &warnings);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        report["framework"]["name"], "vllm",
        "warned about, the plugin still loads"
    );
    if me != 0 {
        assert!(!ran.stderr.contains("owned by user"), "{}", ran.stderr);
    }

    // Tightened: no warning at all.
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    if me == 0 {
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
    }
    let ran = run(&[
        "--plugin-dir",
        dir.to_str().unwrap(),
        "--framework",
        "vllm",
        "--format",
        "json",
        "--input",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("warning"), "{}", ran.stderr);
}

#[test]
fn install_never_copies_a_world_writable_mode() {
    use std::os::unix::fs::PermissionsExt;
    let source_dir = tempfile::tempdir().unwrap();
    let source = install(
        source_dir.path(),
        "llm_triage_plugin_vllm",
        &so("llm_triage_plugin_vllm"),
    );
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o777)).unwrap();
    let data = tempfile::tempdir().unwrap();
    let ran = run_with_data_home(
        data.path(),
        &["plugins", "install", source.to_str().unwrap()],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let installed = data
        .path()
        .join("llm-triage/plugins")
        .join(so("llm_triage_plugin_vllm"));
    let mode = std::fs::metadata(&installed).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755, "installed as {mode:o}");
}

/// Variables to set, variables to remove, and the warning that must follow.
type EnvCase = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    String,
);

#[test]
fn relative_plugin_paths_and_a_relative_home_never_load_from_the_current_directory() {
    // The current directory holds a plugin under both relative spellings.
    let cwd = tempfile::tempdir().unwrap();
    for dir in ["relative/dir", ".local/share/llm-triage/plugins"] {
        std::fs::create_dir_all(cwd.path().join(dir)).unwrap();
        install(
            &cwd.path().join(dir),
            "triage_test_panicky",
            &so("llm_triage_plugin_panicky"),
        );
    }
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    let cases: [EnvCase; 3] = [
        (
            &[("LLM_TRIAGE_PLUGIN_PATH", "relative/dir")],
            &["XDG_DATA_HOME"],
            "ignored the relative entry \"relative/dir\" of LLM_TRIAGE_PLUGIN_PATH: plugin directories must be absolute paths, or plugins would load from the current directory".to_string(),
        ),
        (
            &[("HOME", ".")],
            &["XDG_DATA_HOME"],
            "ignored HOME=\".\" for the user plugin directory: not an absolute path, so plugins would load from the current directory".to_string(),
        ),
        (
            &[("XDG_DATA_HOME", ".local/share"), ("HOME", ".")],
            &[],
            "ignored XDG_DATA_HOME=\".local/share\" for the user plugin directory: not an absolute path, so plugins would load from the current directory".to_string(),
        ),
    ];
    for (set, removed, warning) in cases {
        let ran_with = |args: &[&std::ffi::OsStr]| {
            let mut cmd = crate::util::llm_triage();
            cmd.current_dir(cwd.path());
            for name in removed {
                cmd.env_remove(name);
            }
            for (name, value) in set {
                cmd.env(name, value);
            }
            let out = cmd.args(args).timeout(LIMIT).output().unwrap();
            Ran {
                code: out.status.code().expect("ended"),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        };
        let triage = ran_with(&[
            "--framework".as_ref(),
            "sglang".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            "--input".as_ref(),
            trace.as_os_str(),
        ]);
        assert_warned(&triage, std::slice::from_ref(&warning));
        let list = ran_with(&["plugins".as_ref(), "list".as_ref()]);
        assert_eq!(list.code, 0, "{}", list.stderr);
        assert!(
            !list.stdout.contains("panicky"),
            "{set:?}: nothing loaded from the current directory: {}",
            list.stdout
        );
        assert!(
            list.stderr
                .contains(&format!("llm-triage: warning: {warning}")),
            "{}",
            list.stderr
        );
    }
}
