//! End-to-end: every subcommand's output goes through the host's one stdout writer and
//! its one atomic file writer. A closed stdout pipe (`| head -c1`) ends quietly with exit
//! 0 whatever the subcommand, and a file write that fails part way (disk full) leaves no
//! temporary file beside its target.

use std::process::{Command, Stdio};

use crate::hostile::support::{assert_refused, run, FullDisk};
use crate::util::{names_in, target_dir, workspace_root};

/// A pipe whose reading end is already closed: `true` held it and has exited, so every
/// write into it fails with EPIPE (as `| head -c1` does once head has its byte). Made
/// this way the reader is gone before the writer starts, whatever the output's size.
fn closed_pipe() -> Stdio {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("`true` runs");
    let write_end = reader.stdin.take().expect("a piped stdin");
    reader.wait().expect("`true` ends");
    Stdio::from(write_end)
}

/// Runs `llm-triage ARGS` with stdout a pipe nobody reads; returns the exit code and
/// stderr. Only the built plugins are visible, as in `crate::util::llm_triage`.
fn into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let empty_home = std::env::temp_dir().join("llm-triage-tests-empty-xdg");
    let out = Command::new(target_dir().join("llm-triage"))
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", &empty_home)
        .env("NO_COLOR", "1")
        .args(args)
        .stdin(Stdio::null())
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("the binary starts");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_subcommand_ends_quietly_with_exit_0_on_a_closed_stdout_pipe() {
    let example = workspace_root().join("examples/sglang-qwen3");
    let example = example.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["catalog", "list"],
        &["catalog", "list", "--format", "json"],
        &["catalog", "show", "vllm.allreduce-rmsnorm"],
        &[
            "catalog",
            "show",
            "vllm.allreduce-rmsnorm",
            "--format",
            "json",
        ],
        &["catalog", "validate"],
        &["plugins", "list"],
        &["plugins", "info", "sglang"],
        &["plugins", "doctor"],
        &["completions", "bash"],
        &["completions", "zsh"],
        &["completions", "fish"],
        &["completions", "elvish"],
        &["completions", "powershell"],
        &["man"],
        &["tool"],
        &["tool", "trtllm"],
        &["--input", example],
        &["triage", "--input", example, "--format", "json"],
        &["--help"],
        &[],
    ];
    // Every case is run before judging, so one failure lists every path that is wrong.
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|args| {
            let (code, stderr) = into_closed_pipe(args);
            (code != Some(0) || !stderr.is_empty())
                .then(|| format!("{args:?}: exit {code:?}, stderr {stderr:?}"))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn a_tool_output_on_a_full_disk_leaves_no_temporary_file() {
    // Where this machine lets the test mount a small tmpfs.
    let Some(disk) = FullDisk::mount(64) else {
        eprintln!("mount not permitted: full-disk case not run");
        return;
    };
    let source = workspace_root().join("tests/tests/e2e/companion/data/py_executor_method.py");
    let output = disk.path().join("py_executor.py");
    let ran = run(&[
        "tool",
        "trtllm",
        "py-executor-override",
        "--source",
        source.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
    ]);
    assert_refused(
        &ran,
        3,
        &[&format!("{}: No space left on device", output.display())],
    );
    assert_eq!(names_in(disk.path()), ["filler"], "no temporary file left");
}

#[test]
fn a_bundle_on_a_full_disk_leaves_the_old_bundle_and_no_temporary_file() {
    let Some(disk) = FullDisk::mount(64) else {
        eprintln!("mount not permitted: full-disk case not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("qwen").join("analysis_sglang.md");
    std::fs::create_dir_all(report.parent().unwrap()).unwrap();
    // A report long enough that its bundle cannot fit in what is left of the disk.
    std::fs::write(&report, "# Triage\n\n".to_string() + &"x ".repeat(64 << 10)).unwrap();
    let bundle = disk.with_old_file("bundle.md", "old bundle\n");
    let ran = run(&[
        "bundle",
        "--analysis-file",
        report.to_str().unwrap(),
        "--output",
        bundle.to_str().unwrap(),
    ]);
    assert_refused(
        &ran,
        3,
        &[&format!("{}: No space left on device", bundle.display())],
    );
    assert_eq!(std::fs::read_to_string(&bundle).unwrap(), "old bundle\n");
    assert_eq!(names_in(disk.path()), ["bundle.md", "filler"]);
}
