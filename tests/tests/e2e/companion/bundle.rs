//! `llm-triage bundle` over saved reports: our markdown, text and JSON reports of the
//! bundled example capture, a predecessor-style text report, and an empty one.

use std::path::{Path, PathBuf};

use crate::util::{llm_triage, workspace_root};

/// 2026-09-01 00:00:00 UTC.
const EPOCH: &str = "1788220800";

fn run(args: &[&str]) -> std::process::Output {
    llm_triage().args(args).output().unwrap()
}

/// The example capture triaged in `format`.
fn example_report(format: &str) -> String {
    let input = workspace_root().join("examples/sglang-qwen3");
    let out = llm_triage()
        .arg("--input")
        .arg(&input)
        .args(["--format", format])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

const PREDECESSOR_VLLM: &str = "Triage View\r\nMode: single-trace\r\nFramework: vLLM\r\n\
Input traces: /runs/qwen3/vllm_formal/trace.json.gz\r\nModel: Qwen/Qwen3-8B-FP8\r\n\r\n\
Kernel Table\r\n| Kernel | GPU time | Share |\r\n| --- | ---: | ---: |\r\n\
| fused_moe_kernel | 1.00 ms | 60.0% |\r\n\r\nOverlap Opportunity Table\r\n| none |\r\n\r\n\
Fuse Opportunity Table\r\n| none |\r\n";

/// root/qwen3/{analysis_sglang.txt (markdown), vllm_formal/analysis_vllm_live.txt},
/// root/llama/{analysis_sglang.txt (text), analysis_trtllm.json, notes.txt},
/// elsewhere/analysis_tokenspeed.md (empty).
fn layout(root: &Path, elsewhere: &Path) -> (String, String) {
    let markdown = example_report("markdown");
    let json = example_report("json");
    let text = example_report("text");
    std::fs::create_dir_all(root.join("qwen3/vllm_formal")).unwrap();
    std::fs::create_dir_all(root.join("llama")).unwrap();
    std::fs::write(root.join("qwen3/analysis_sglang.txt"), &markdown).unwrap();
    std::fs::write(
        root.join("qwen3/vllm_formal/analysis_vllm_live.txt"),
        PREDECESSOR_VLLM,
    )
    .unwrap();
    std::fs::write(root.join("llama/analysis_sglang.txt"), &text).unwrap();
    std::fs::write(root.join("llama/analysis_trtllm.json"), &json).unwrap();
    std::fs::write(root.join("llama/notes.txt"), "not a report").unwrap();
    std::fs::write(elsewhere.join("analysis_tokenspeed.md"), " \n\n").unwrap();
    (markdown, text)
}

/// Our markdown report as the bundle shows it: its title and section headings at level
/// 4, its stage headings at level 5, each naming the report's file.
fn as_bundled(markdown: &str, file: &str) -> String {
    markdown
        .trim()
        .lines()
        .map(|l| {
            if let Some(h) = l.strip_prefix("### ") {
                format!("##### {h} · {file}")
            } else if let Some(h) = l.strip_prefix("## ").or_else(|| l.strip_prefix("# ")) {
                format!("#### {h} · {file}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text between `### <engine>` + `Source: ` line for `file` and the next section.
fn section<'a>(doc: &'a str, file: &Path) -> &'a str {
    let source = format!("Source: `{}`\n\n", file.display());
    let start = doc
        .find(&source)
        .unwrap_or_else(|| panic!("{source} in\n{doc}"))
        + source.len();
    let rest = &doc[start..];
    let end = ["\n\n### ", "\n\n## "]
        .iter()
        .filter_map(|h| rest.find(h))
        .min()
        .unwrap_or(rest.len());
    rest[..end].trim_end()
}

#[test]
fn bundle_groups_by_model_and_keeps_every_report() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (markdown, _text) = layout(root.path(), elsewhere.path());
    let empty = elsewhere.path().join("analysis_tokenspeed.md");
    let out = llm_triage()
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(["bundle", "--title", "Matrix run", "--analysis-root"])
        .arg(root.path())
        .arg("--analysis-file")
        .arg(format!("custom={}", empty.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = String::from_utf8(out.stdout).unwrap();
    let r = |p: &str| root.path().join(p);

    // Contents: models by display name; the nested vllm_formal report stays with qwen3
    // (the predecessor filed it under a model named "vllm_formal").
    let head = format!(
        "# Matrix run\n\n_Generated on 2026-09-01 00:00:00 UTC_\n\n## Contents\n\n\
         - [custom](#custom)\n- [Qwen/Qwen3-8B](#qwenqwen3-8b)\n\
         - [Qwen/Qwen3-8B-FP8](#qwenqwen3-8b-fp8)\n\n\
         ## custom\n\nModel id: `custom`\n\n### TokenSpeed · analysis_tokenspeed.md\n\nSource: `{}`\n\n\
         _Empty analysis output._\n\n## Qwen/Qwen3-8B\n\nModel id: `llama`\n\n### SGLang · analysis_sglang.txt\n\n\
         Source: `{}`\n\n",
        empty.display(),
        r("llama/analysis_sglang.txt").display()
    );
    assert!(doc.starts_with(&head), "{doc}");
    assert!(doc.ends_with("|\n") && !doc.ends_with("\n\n"));
    assert!(!doc.contains("not a report"));

    // Headings in document order: engines SGLang before vLLM within a model.
    let headings: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("## ") || l.starts_with("### "))
        .collect();
    assert_eq!(
        headings,
        [
            "## Contents",
            "## custom",
            "### TokenSpeed · analysis_tokenspeed.md",
            "## Qwen/Qwen3-8B",
            "### SGLang · analysis_sglang.txt",
            "### SGLang · analysis_trtllm.json",
            "## Qwen/Qwen3-8B-FP8",
            "### SGLang · analysis_sglang.txt",
            "### vLLM · analysis_vllm_live.txt",
        ]
    );
    // The JSON report (named trtllm, holding an SGLang triage) renders as the markdown
    // report of the same triage.
    assert_eq!(
        section(&doc, &r("llama/analysis_trtllm.json")),
        as_bundled(&markdown, "analysis_trtllm.json")
    );
    assert_eq!(
        section(&doc, &r("qwen3/analysis_sglang.txt")),
        as_bundled(&markdown, "analysis_sglang.txt")
    );
    // The predecessor's CRLF text: line ends fixed, titles as headings.
    assert_eq!(
        section(&doc, &r("qwen3/vllm_formal/analysis_vllm_live.txt")),
        PREDECESSOR_VLLM
            .replace("\r\n", "\n")
            .trim()
            .replace(
                "Triage View\n",
                "#### Triage View · analysis_vllm_live.txt\n"
            )
            .replace(
                "\nKernel Table\n",
                "\n#### Kernel Table · analysis_vllm_live.txt\n"
            )
            .replace(
                "\nOverlap Opportunity Table\n",
                "\n#### Overlap Opportunity Table · analysis_vllm_live.txt\n"
            )
            .replace(
                "\nFuse Opportunity Table\n",
                "\n#### Fuse Opportunity Table · analysis_vllm_live.txt\n"
            )
    );
    // The --format text report keeps its aligned columns inside fences.
    let text = section(&doc, &r("llama/analysis_sglang.txt"));
    assert!(
        text.contains(
            "#### Kernel Table · analysis_sglang.txt\n##### extend/prefill · analysis_sglang.txt\n```text\nKernel "
        ),
        "{text}"
    );
    assert_eq!(text.matches("```").count() % 2, 0);
    assert!(text.matches("```text").count() >= 4, "{text}");
}

#[test]
fn bundle_writes_files_and_leaves_out_the_contents_on_request() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    layout(root.path(), elsewhere.path());
    let target = root.path().join("out/deeper/bundle.md");
    let out = llm_triage()
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(["bundle", "--no-include-toc", "--analysis-root"])
        .arg(root.path().join("qwen3"))
        .arg("--output")
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let doc = std::fs::read_to_string(&target).unwrap();
    // Under the qwen3 root, reports directly in it carry the root's name, the nested one
    // its first directory.
    assert!(doc.starts_with(
        "# Unified LLM Torch Profiler Triage Bundle\n\n_Generated on 2026-09-01 00:00:00 UTC_\n\n## Qwen/Qwen3-8B\n\nModel id: `qwen3`\n\n### SGLang · analysis_sglang.txt\n"
    ), "{doc}");
    assert!(doc.contains(
        "## Qwen/Qwen3-8B-FP8\n\nModel id: `vllm_formal`\n\n### vLLM · analysis_vllm_live.txt\n"
    ));
    assert!(!doc.contains("## Contents"));
}

#[test]
fn bundle_errors_name_the_problem() {
    let none = run(&["bundle"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr)
        .contains("Provide at least one of --analysis-root or --analysis-file."));

    let dir = tempfile::tempdir().unwrap();
    let empty = run(&["bundle", "--analysis-root", dir.path().to_str().unwrap()]);
    assert_eq!(empty.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("No analysis files found"));

    let missing: PathBuf = dir.path().join("m/analysis_vllm.txt");
    let out = run(&[
        "bundle",
        "--analysis-file",
        missing.to_str().unwrap(),
        "--analysis-file",
        "x=/nowhere/analysis_sglang.txt",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "llm-triage: error: {}: missing analysis file (also missing: /nowhere/analysis_sglang.txt)\n",
            missing.display()
        )
    );

    let json = dir.path().join("analysis_vllm.json");
    std::fs::write(&json, "{\"schema_version\": 99}").unwrap();
    let out = run(&["bundle", "--analysis-file", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("JSON report has schema_version 99; this llm-triage reads schema_version 1"));
    std::fs::write(&json, "{ not json").unwrap();
    let out = run(&["bundle", "--analysis-file", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
}
