//! Drop-in compatibility with the predecessor: its two script names (shims run through
//! python3), its flag spellings, `--pid-substring`; and the man page and completions
//! generated from the same clap definition.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{
    empty_xdg_data_home, gpu_events, llm_triage, raw_events, target_dir, workspace_root,
};

/// The real python3 executable (not a version-manager shim, which needs its own PATH).
fn python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_file()).then_some(path)
}

fn example() -> PathBuf {
    workspace_root().join("examples/sglang-qwen3")
}

/// `python3 <shim> args...` with `path` as PATH.
fn shim(
    python: &Path,
    script: &Path,
    args: &[&str],
    path: &std::ffi::OsStr,
) -> std::process::Output {
    Command::new(python)
        .arg(script)
        .args(args)
        .env("PATH", path)
        .env_remove("LLM_TRIAGE")
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn the_predecessor_script_names_run_llm_triage_with_the_same_arguments() {
    let Some(python) = python() else {
        return; // The shims are Python; nothing to run them with here.
    };
    let bin_dir = target_dir();
    let path_with_bin = std::env::join_paths(
        std::iter::once(bin_dir.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let input = example();
    let direct = llm_triage()
        .arg("--input")
        .arg(&input)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(direct.status.success());

    for (script, lead) in [
        ("analyze_sglang_torch_profile.py", None),
        ("analyze_llm_torch_profile.py", Some("triage")),
    ] {
        let script = workspace_root().join("compat").join(script);
        let mut args: Vec<&str> = lead.into_iter().collect();
        let input_text = input.to_str().unwrap();
        args.extend(["--input", input_text, "--format", "json"]);
        let out = shim(&python, &script, &args, &path_with_bin);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, direct.stdout, "{}", script.display());

        // Exit codes pass through (exec): a missing input is exit 3.
        let missing = shim(
            &python,
            &script,
            &["--input", "/no/such/trace"],
            &path_with_bin,
        );
        assert_eq!(missing.status.code(), Some(3));
        // No arguments: the help, exit 0, as the predecessor did.
        let help = shim(&python, &script, &[], &path_with_bin);
        assert_eq!(help.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: llm-triage"));
    }

    // Beside the binary (no llm-triage on PATH): found there.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("analyze_llm_torch_profile.py");
    std::fs::copy(
        workspace_root().join("compat/analyze_llm_torch_profile.py"),
        &copy,
    )
    .unwrap();
    let python_dir = python.parent().unwrap().as_os_str().to_owned();
    let alone = shim(&python, &copy, &["--version"], &python_dir);
    assert_eq!(alone.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&alone.stderr)
        .contains("llm-triage not found beside this script or on PATH"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(bin_dir.join("llm-triage"), dir.path().join("llm-triage")).unwrap();
    #[cfg(unix)]
    {
        let beside = shim(&python, &copy, &["--version"], &python_dir);
        assert!(
            beside.status.success(),
            "{}",
            String::from_utf8_lossy(&beside.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&beside.stdout),
            format!("llm-triage {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn predecessor_flag_spellings_are_accepted() {
    let input = example();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = llm_triage()
            .args(args)
            .arg("--input")
            .arg(&input)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // argparse-style unambiguous prefixes.
    let short = json(&["--kernel-table-lim", "1"]);
    for stage in short["stages"].as_array().unwrap() {
        assert_eq!(stage["kernels"].as_array().unwrap().len(), 1);
    }
    // The predecessor's framework spellings and its --no-merge-profiles.
    assert_eq!(
        json(&["--framework", "tensorrt-llm"])["framework"]["name"],
        "trtllm"
    );
    assert_eq!(
        json(&["--framework", "tllm"])["framework"]["name"],
        "trtllm"
    );
    assert_eq!(
        json(&["--framework", "token-speed"])["framework"]["name"],
        "tokenspeed"
    );
    assert_eq!(
        json(&["--framework", "ts"])["framework"]["name"],
        "tokenspeed"
    );
    assert_eq!(
        json(&["--no-merge-profiles"])["framework"]["name"],
        "sglang"
    );
    // An ambiguous prefix is a usage error, as in argparse.
    let ambiguous = llm_triage().args(["--form", "json"]).output().unwrap();
    assert_eq!(ambiguous.status.code(), Some(2));
}

#[test]
fn pid_substring_keeps_only_matching_gpu_work() {
    let input = example();
    let out = llm_triage()
        .arg("--input")
        .arg(&input)
        .args(["--pid-substring", "0", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let prefill = input.join("prefill/1761000011.0011/1761000011.0011-TP-0-EXTEND.trace.json.gz");
    let events = raw_events(&prefill);
    let gpu = gpu_events(&events);
    // Every GPU event of the example sits on device pid 0 (recounted here).
    assert!(gpu.iter().all(|e| e["pid"].to_string().contains('0')));
    let note = format!(
        "1761000011.0011-TP-0-EXTEND.trace.json.gz: --pid-substring \"0\" kept {0} of {0} GPU ops",
        gpu.len()
    );
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == &serde_json::Value::from(note.clone())),
        "{note} in {}",
        report["notes"]
    );

    let none = llm_triage()
        .arg("--input")
        .arg(&prefill)
        .args(["--pid-substring", "rank7"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&none.stderr),
        format!(
            "llm-triage: error: {}: --pid-substring \"rank7\" matches no GPU op (GPU pids in this trace: 0)\n",
            prefill.display()
        )
    );
}

#[test]
fn man_pages_and_completions_come_from_the_clap_definition() {
    let man = llm_triage().arg("man").output().unwrap();
    assert!(man.status.success());
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(page.contains(".TH llm-triage 1"), "{page}");
    for flag in ["\\-\\-run\\-log", "\\-\\-pid\\-substring", "\\-\\-input"] {
        assert!(page.contains(flag), "{flag} missing from the man page");
    }
    assert!(
        page.contains("llm\\-triage\\-bundle(1)"),
        "subcommands are listed"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = llm_triage()
        .args(["man", "--output-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    for name in [
        "llm-triage.1",
        "llm-triage-bundle.1",
        "llm-triage-tool.1",
        "llm-triage-plugins-doctor.1",
    ] {
        let path = dir.path().join(name);
        assert!(path.is_file(), "{name} not written");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("wrote {}\n", path.display()))
        );
    }
    let bundle_page = std::fs::read_to_string(dir.path().join("llm-triage-bundle.1")).unwrap();
    assert!(bundle_page.contains("\\-\\-analysis\\-root"));

    for shell in ["bash", "zsh", "fish"] {
        let out = llm_triage().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let script = String::from_utf8(out.stdout).unwrap();
        for word in ["bundle", "run-log", "analysis-root", "pid-substring"] {
            assert!(script.contains(word), "{shell}: {word}");
        }
    }
}
