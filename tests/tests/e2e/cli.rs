//! End-to-end: the command line surface of the real binary.

use crate::util::*;

#[test]
fn no_arguments_prints_help_and_succeeds() {
    let out = llm_triage().output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--input"), "{help}");
}

#[test]
fn help_documents_the_exit_codes() {
    let out = llm_triage().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for line in [
        "3  input unreadable",
        "4  framework refused",
        "6  plugin error",
    ] {
        assert!(help.contains(line), "missing {line:?} in help");
    }
}

/// Issue 14 point 11: every report label is named in --help, with where it is defined.
#[test]
fn help_names_every_report_label() {
    let out = llm_triage().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for label in [
        "P1 (act first) .. P5 (skip)",
        "headroom",
        "low-roi-hidden",
        "dep risk low, high or unclear",
        "try overlap, try fusion, check deps or skip",
        "Confirmed or Candidate",
        "Similarity high, medium or low",
        "docs/report-labels.md",
    ] {
        assert!(help.contains(label), "missing {label:?} in help: {help}");
    }
}

#[test]
fn leading_triage_word_is_accepted_and_equals_the_plain_form() {
    let example = workspace_root().join("examples/sglang-qwen3");
    let plain = llm_triage()
        .args(["--input", example.to_str().unwrap()])
        .output()
        .unwrap();
    let worded = llm_triage()
        .args(["triage", "--input", example.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(plain.status.success() && worded.status.success());
    assert_eq!(plain.stdout, worded.stdout);
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(
        text.starts_with("# Triage View\nMode: single-trace\nFramework: SGLang\n"),
        "{text}"
    );
    assert!(text.contains("\n## Kernel Table\n### extend/prefill\n| Kernel | Category | GPU time | Share | Launches | Python location (site share) | CPU op |\n"));
}

#[test]
fn output_file_holds_the_same_report_as_stdout() {
    let example = workspace_root().join("examples/sglang-qwen3");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.json");
    let to_file = llm_triage()
        .args([
            "--input",
            example.to_str().unwrap(),
            "--format",
            "json",
            "--output",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(to_file.status.success());
    assert!(to_file.stdout.is_empty(), "nothing on stdout with --output");
    let stdout = llm_triage()
        .args(["--input", example.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), stdout.stdout);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("report.json")]);
}

#[test]
fn text_format_is_aligned_and_plain_without_a_terminal() {
    let example = workspace_root().join("examples/sglang-qwen3");
    let out = llm_triage()
        .args(["--input", example.to_str().unwrap(), "--format", "text"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}'),
        "no colour codes when stdout is not a terminal"
    );
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Kernel ") && l.contains("Category"))
        .unwrap();
    // A header may wrap inside its column (LINE_WIDTH); the dashed rule ends it.
    let header = lines[at];
    let rule = lines[at + 1..]
        .iter()
        .find(|l| l.starts_with("---"))
        .copied()
        .unwrap();
    // Every column starts where its rule segment starts.
    let starts = |l: &str| -> Vec<usize> {
        l.char_indices()
            .filter(|&(i, c)| c != ' ' && (i == 0 || l.as_bytes()[i - 1] == b' '))
            .map(|(i, _)| i)
            .collect()
    };
    assert_eq!(starts(rule).len(), 7, "{rule}");
    for s in starts(rule) {
        assert_ne!(
            header.as_bytes()[s],
            b' ',
            "column at {s} misaligned:\n{header}\n{rule}"
        );
    }
}

#[test]
fn min_share_hides_rows_and_says_how_much() {
    let example = workspace_root().join("examples/sglang-qwen3");
    let all = triage_json(&["--input", example.to_str().unwrap(), "--min-share", "0"]);
    let cut = triage_json(&["--input", example.to_str().unwrap(), "--min-share", "10"]);
    let rows = |r: &serde_json::Value| r["stages"][0]["kernels"].as_array().unwrap().len();
    let expected = all["stages"][0]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["share_pct"].as_f64().unwrap() >= 10.0)
        .count();
    assert_eq!(rows(&cut), expected);
    assert!(rows(&all) > rows(&cut));
    let notes = cut["stages"][0]["notes"].to_string();
    assert!(notes.contains("below 10"), "{notes}");
}

#[test]
fn plugins_list_shows_the_four_engines_and_the_matrix() {
    let out = llm_triage().args(["plugins", "list"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "sglang",
        "vllm",
        "trtllm",
        "tokenspeed",
        "Capability matrix",
        "Existing-trace triage",
    ] {
        assert!(
            text.contains(name),
            "{name} missing from plugins list:\n{text}"
        );
    }
}

#[test]
fn no_plugins_is_exit_6_naming_the_search_path() {
    // A copy of the binary alone in a directory sees no plugins beside it.
    let dir = tempfile::tempdir().unwrap();
    let lonely = binary_copy_in(dir.path());
    let example = workspace_root().join("examples/sglang-qwen3");
    let out = assert_cmd::Command::new(&lonely)
        .env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", dir.path().join("xdg"))
        .args(["--input", example.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plugins doctor"), "{err}");
}

#[test]
fn completions_are_generated() {
    let out = llm_triage().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--min-share"));
}

#[test]
fn global_plugin_dir_goes_before_a_subcommand_but_triage_flags_do_not() {
    let dir = target_dir();
    let out = llm_triage()
        .arg("--plugin-dir")
        .arg(dir)
        .args(["plugins", "list"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let example = workspace_root().join("examples/sglang-qwen3");
    let out = llm_triage()
        .args(["--input", example.to_str().unwrap(), "plugins", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("go with triage"));
}
