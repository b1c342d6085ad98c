//! `bundle` on hand-built report trees: grouping, ordering, anchors, escaping, and the
//! files of a shared root it leaves out.

use super::*;

#[test]
fn slugs_follow_github() {
    let mut s = Slugger::default();
    assert_eq!(s.slug("Qwen/Qwen3-8B"), "qwenqwen3-8b");
    assert_eq!(
        s.slug("deepseek-ai/DeepSeek-V3.2"),
        "deepseek-aideepseek-v32"
    );
    assert_eq!(s.slug("Kernel Table"), "kernel-table");
    assert_eq!(s.slug("Kernel Table"), "kernel-table-1");
    assert_eq!(s.slug("Kernel Table"), "kernel-table-2");
    assert_eq!(s.slug("kernel-table-1"), "kernel-table-1-1");
    assert_eq!(s.slug("A  b"), "a--b");
    assert_eq!(s.slug("extend/prefill"), "extendprefill");
}

#[test]
fn engines_from_names() {
    let name = |n: &str| engine_from_file_name(Path::new(n));
    assert_eq!(name("analysis_sglang.txt"), Some("SGLang"));
    assert_eq!(name("analysis_vllm_live.txt"), Some("vLLM"));
    assert_eq!(name("analysis_TensorRT.txt"), Some("TensorRT-LLM"));
    assert_eq!(name("analysis_token-speed.md"), Some("TokenSpeed"));
    assert_eq!(name("analysis_lmdeploy.txt"), None);
    assert!(is_report_name(Path::new("/x/analysis_vllm.json")));
    assert!(!is_report_name(Path::new("/x/analysis.txt")));
    assert!(!is_report_name(Path::new("/x/analysis_vllm.log")));
}

#[test]
fn normalising_markdown_and_text_reports() {
    assert_eq!(normalize(" \r\n \n", "r.md"), EMPTY_REPORT);
    let md = "Triage View\r\nMode: single-trace\r\n\r\nKernel Table\r\n##### decode\r\n| a | b |\r\n| --- | ---: |\r\n| x | 1 |\r\n";
    assert_eq!(
        normalize(md, ""),
        "#### Triage View\nMode: single-trace\n\n#### Kernel Table\n##### decode\n| a | b |\n| --- | ---: |\n| x | 1 |"
    );
    let text = "\x1b[1mKernel Table\x1b[0m\n[decode]\nKernel  Share\n------  -----\nk1      50.0%\n\nsummary line";
    assert_eq!(
        normalize(text, "a.txt"),
        "#### Kernel Table · a.txt\n##### decode · a.txt\n```text\nKernel  Share\n------  -----\nk1      50.0%\n```\n\nsummary line"
    );
}

#[test]
fn a_wrapped_text_header_is_fenced_from_its_first_line() {
    let text = "Kernel Table\n[decode]\nKernel  Python location (site\n        share)\n------  -------------\nk1      a.py:1 f\n";
    assert_eq!(
        normalize(text, ""),
        "#### Kernel Table\n##### decode\n```text\nKernel  Python location (site\n        share)\n------  -------------\nk1      a.py:1 f\n```"
    );
}

/// Issue 14 point 12: two reports of one model keep their headings apart.
#[test]
fn bundled_headings_carry_the_report_file() {
    let md =
        "# Triage View\nMode: single-trace\n\n## Kernel Table\n### decode\n| a |\n| --- |\n| x |\n";
    assert_eq!(
        normalize(md, "decode.md"),
        "#### Triage View · decode.md\nMode: single-trace\n\n#### Kernel Table · decode.md\n##### decode · decode.md\n| a |\n| --- |\n| x |"
    );
    assert_ne!(normalize(md, "a.md"), normalize(md, "b.md"));
}

/// Issue 15 point 4: nothing outside the root and no special file is ever read; each
/// file left out is listed with why, and the rest is bundled.
#[test]
fn the_root_scan_stays_inside_the_root_and_lists_what_it_left_out() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("analysis_secret.txt");
    std::fs::write(&secret, "Model: SECRET-TOKEN-1234\n").unwrap();
    std::fs::create_dir(outside.path().join("model")).unwrap();
    std::fs::write(
        outside.path().join("model/analysis_sglang.txt"),
        "SECRET-IN-DIR\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("qwen")).unwrap();
    std::fs::write(
        root.join("qwen/analysis_sglang.txt"),
        "Model: Qwen/Qwen3-8B\n",
    )
    .unwrap();
    let link = |target: &Path, name: &str| {
        let path = root.join(name);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    };
    let to_secret = link(&secret, "qwen/analysis_vllm.txt");
    let to_dir = link(&outside.path().join("model"), "leak");
    let to_environ = link(Path::new("/proc/self/environ"), "analysis_env.txt");
    let to_zero = link(Path::new("/dev/zero"), "analysis_zero.md");
    let inside = link(&root.join("qwen/analysis_sglang.txt"), "analysis_again.txt");
    let pipe = root.join("qwen/analysis_trtllm.txt");
    let status = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(status.success());
    let big = root.join("qwen/analysis_tokenspeed.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_REPORT_BYTES + 1)
        .unwrap();
    let request = BundleRequest {
        analysis_root: Some(root.clone()),
        analysis_files: Vec::new(),
        title: DEFAULT_TITLE.to_string(),
        include_toc: false,
        generated_at: 0,
        html: false,
    };
    let bundle = bundle(&request).unwrap();
    assert!(!bundle.document.contains("SECRET"), "{}", bundle.document);
    assert!(bundle.document.contains("Qwen/Qwen3-8B"));
    let skipped: Vec<(PathBuf, &str)> = bundle
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.reason.as_str()))
        .collect();
    let out = "a symbolic link that leads outside the analysis root";
    assert_eq!(
        skipped,
        [
            (to_environ, out),
            (to_zero, out),
            (to_dir, out),
            (big, "larger than 32 MiB"),
            (pipe, "not a regular file: a named pipe"),
            (to_secret, out),
        ]
    );
    // A link to a report inside the root is bundled under the name it was found by.
    assert!(bundle
        .document
        .contains(&format!("Source: `{}`", inside.display())));
    assert!(bundle
        .document
        .contains("## Skipped files\n\n6 files under the analysis root not bundled:\n"));
}

#[test]
fn explicit_entries_take_label_or_parent() {
    let e = explicit_entry("my-model=/no/such/dir/analysis_sglang.txt");
    assert_eq!(e.label, "my-model");
    assert_eq!(e.path, PathBuf::from("/no/such/dir/analysis_sglang.txt"));
    let e = explicit_entry("/runs/qwen3/analysis_vllm.txt");
    assert_eq!(e.label, "qwen3");
}

#[test]
fn display_name_prefers_the_longest_model() {
    let section = |model: Option<&str>| Section {
        label: "m".into(),
        path: PathBuf::from("/m/analysis_sglang.txt"),
        engine: "SGLang".into(),
        model: model.map(String::from),
        body: String::new(),
        report: None,
    };
    let a = section(Some("Qwen3-8B"));
    let b = section(Some("Qwen/Qwen3-8B"));
    let c = section(None);
    assert_eq!(display_name("m", &[&a, &b, &c]), "Qwen/Qwen3-8B");
    assert_eq!(display_name("m", &[&c]), "m");
}

#[test]
fn hostile_labels_models_and_paths_reach_the_bundle_escaped() {
    let section = Section {
        label: "m`x\u{1b}[31m".into(),
        path: PathBuf::from("/r/a`b|c/analysis_1.md"),
        engine: "SGLang".into(),
        model: Some("<img src=x onerror=alert(1)>".into()),
        body: "body".into(),
        report: None,
    };
    let doc = render("T", true, 0, &[section]);
    assert!(!doc.contains('\u{1b}'), "{doc}");
    assert!(doc.contains("Model id: ``m`x\\u{1b}[31m``"), "{doc}");
    assert!(
        doc.contains("Source: ``/r/a`b\\|c/analysis_1.md``"),
        "{doc}"
    );
    assert!(doc.contains("## \\<img src=x onerror=alert(1)\\>"), "{doc}");
    assert!(
        doc.contains("- [\\<img src=x onerror=alert(1)\\>](#"),
        "{doc}"
    );
}
