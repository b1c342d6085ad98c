//! `llm-triage tool trtllm py-executor-override` on fixtures of both TensorRT-LLM layouts
//! (written for these tests; the expected outputs were made by plain string replacement,
//! independently of the tool), on its own output (idempotent), and on input it must
//! refuse without writing anything.

use std::path::{Path, PathBuf};

use crate::util::{llm_triage, workspace_root};

fn data(name: &str) -> PathBuf {
    workspace_root()
        .join("tests/tests/e2e/companion/data")
        .join(name)
}

/// `python3` on this machine's PATH, if any (the tool's check uses the same lookup).
fn python() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
}

fn override_tool(source: &Path, output: &Path) -> std::process::Output {
    llm_triage()
        .args(["tool", "trtllm", "py-executor-override", "--source"])
        .arg(source)
        .arg("--output")
        .arg(output)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn both_layouts_get_with_stack_and_the_rank_0_guard() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "py_executor_method.py",
            "py_executor_method.expected.py",
            "with_stack=True set in torch.profiler.profile(...) at line 30 (the PyExecutor._profiler(self) method layout)",
            "rank-0 guard added to enable_torch_trace at line 24 (self.dist.rank == 0)",
        ),
        (
            "py_executor_generator.py",
            "py_executor_generator.expected.py",
            "with_stack=True set in torch.profiler.profile(...) at line 21 (the profiled_steps(ctx, ...) generator layout)",
            "rank-0 guard added to enable_torch_trace at line 19 (ctx.svc.dist.rank == 0)",
        ),
    ];
    for (source, expected, stack_note, guard_note) in cases {
        // The output directory does not exist yet: it is created.
        let output = dir.path().join("new").join(source);
        let out = override_tool(&data(source), &output);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            std::fs::read_to_string(&output).unwrap(),
            std::fs::read_to_string(data(expected)).unwrap()
        );
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], format!("wrote {}", output.display()));
        assert_eq!(lines[1], format!("  {stack_note}"));
        assert_eq!(lines[2], format!("  {guard_note}"));
        let check = if python().is_some() {
            "-m py_compile passed"
        } else {
            "not checked: no python3"
        };
        assert!(lines[3].contains(check), "{stdout}");

        // Idempotent: the output run again is unchanged.
        let again = dir.path().join("again.py");
        let out = override_tool(&output, &again);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&output).unwrap()
        );
        assert!(text(&out.stdout).contains("  already patched: the output equals the source\n"));
    }
}

#[test]
fn the_result_compiles_as_python() {
    let Some(python) = python() else {
        // Without Python the tool says so; `not_checked_without_python` covers that path.
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for source in ["py_executor_method.py", "py_executor_generator.py"] {
        let output = dir.path().join(source);
        assert!(override_tool(&data(source), &output).status.success());
        let status = std::process::Command::new(&python)
            .args(["-m", "py_compile"])
            .arg(&output)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "{source} does not compile after the override"
        );
    }
}

#[test]
fn unrecognised_or_broken_input_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let method = std::fs::read_to_string(data("py_executor_method.py")).unwrap();
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        (
            "no_call.py",
            b"import torch\nprint('torch.profiler.profile(')\n".to_vec(),
            "no `torch_profiler = torch.profiler.profile(` call in the code".to_string(),
        ),
        (
            "unclosed.py",
            method
                .replace("with_modules=True)", "with_modules=True")
                .into_bytes(),
            "is never closed".to_string(),
        ),
        (
            "other_guard.py",
            method
                .replace(
                    "bool(torch_trace_path and profile_start_stop)",
                    "torch_trace_path is not None",
                )
                .into_bytes(),
            "is `torch_trace_path is not None`, not `bool(torch_trace_path and profile_start_stop)`"
                .to_string(),
        ),
        (
            "latin1.py",
            vec![b'#', b' ', 0xe9, b'\n'],
            "not UTF-8 text".to_string(),
        ),
    ];
    for (name, bytes, reason) in cases {
        let source = dir.path().join(name);
        std::fs::write(&source, bytes).unwrap();
        let output = dir.path().join(format!("out_{name}"));
        let out = override_tool(&source, &output);
        assert_eq!(out.status.code(), Some(3), "{name}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with(&format!("llm-triage: error: {}: ", source.display()))
                && stderr.contains(&reason),
            "{name}: {stderr}"
        );
        assert!(!output.exists(), "{name}: an output was written");
    }

    // Recognised, but the file is broken elsewhere: py_compile refuses it.
    if python().is_some() {
        let source = dir.path().join("broken_elsewhere.py");
        std::fs::write(&source, format!("{method}\ndef broken(:\n    pass\n")).unwrap();
        let output = dir.path().join("out_broken.py");
        let out = override_tool(&source, &output);
        assert_eq!(out.status.code(), Some(3));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "the result for {} does not compile at line 47",
                output.display()
            )) && stderr.contains("nothing written"),
            "{stderr}"
        );
        assert!(!output.exists());
    }

    let missing = override_tool(&dir.path().join("nope.py"), &dir.path().join("o.py"));
    assert_eq!(missing.status.code(), Some(3));
}

#[test]
fn not_checked_without_python() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("py_executor.py");
    let out = llm_triage()
        .env("PATH", dir.path()) // no python3 here
        .args(["tool", "trtllm", "py-executor-override", "--source"])
        .arg(data("py_executor_generator.py"))
        .arg(format!("--output={}", output.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout)
        .ends_with("  not checked: no python3 (or python) on PATH to run py_compile\n"));
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        std::fs::read_to_string(data("py_executor_generator.expected.py")).unwrap()
    );
}

#[test]
fn tool_listing_and_usage_errors() {
    let list = llm_triage().arg("tool").output().unwrap();
    assert!(list.status.success());
    assert!(text(&list.stdout).starts_with(
        "llm-triage tool trtllm py-executor-override --source FILE --output FILE\n    Copy TensorRT-LLM's py_executor.py"
    ));
    // Aliases find the plugin.
    let alias = llm_triage()
        .args(["tool", "tensorrt-llm"])
        .output()
        .unwrap();
    assert_eq!(alias.stdout, list.stdout);

    let usage = |args: &[&str], message: &str| {
        let out = llm_triage().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(message), "{}", text(&out.stderr));
    };
    usage(
        &["tool", "trtllm", "py-executor-override", "--source", "x.py"],
        "--output FILE is required; usage: llm-triage tool trtllm py-executor-override --source FILE --output FILE",
    );
    usage(
        &["tool", "trtllm", "py-executor-override", "--input", "x.py"],
        "unknown flag --input",
    );
    usage(
        &["tool", "trtllm", "nope"],
        "plugin trtllm has no tool \"nope\" (its tools: py-executor-override)",
    );
    usage(
        &["tool", "sglang", "x"],
        "plugin sglang has no tool \"x\" (its tools: none)",
    );
    usage(&["tool", "nosuch"], "no plugin named \"nosuch\"");
}
