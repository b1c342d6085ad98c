//! Text an attacker controls (issue 15, points 18 and 19) leaves the tool inert: kernel
//! names, annotations and a model id holding terminal escapes, HTML, backticks, pipes and
//! newlines reach no report raw, and a field far wider than any terminal (a 70,000
//! character fusion id) is refused by `catalog validate` instead of panicking a table.

use std::path::Path;

use crate::util::{llm_triage, workspace_root};

/// A copy of the repository's `catalog/`, with one more vLLM row: a copy of the file's
/// last row under the id `id`.
fn catalog_with_extra_row(id: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(workspace_root().join("catalog/."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let file = dir.path().join("fusions/vllm.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let last = &text[text.rfind("[[fusion]]").unwrap()..];
    let old_id = last
        .lines()
        .find_map(|l| l.strip_prefix("id = "))
        .unwrap()
        .trim_matches('"');
    let copy = last.replacen(&format!("id = \"{old_id}\""), &format!("id = \"{id}\""), 1);
    std::fs::write(&file, format!("{text}\n{copy}")).unwrap();
    dir
}

fn catalog_command(words: &[&str], dir: &Path) -> std::process::Output {
    llm_triage()
        .args(["catalog"])
        .args(words)
        .args(["--catalog", dir.to_str().unwrap()])
        .output()
        .unwrap()
}

#[test]
fn a_fusion_id_of_70000_characters_is_refused_with_exit_3_and_one_short_line() {
    let id = format!("vllm.{}", "a".repeat(70_000));
    let dir = catalog_with_extra_row(&id);
    for words in [&["validate"][..], &["list"][..]] {
        let out = catalog_command(words, dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{words:?}: {:.300}", err);
        assert!(!err.contains("panicked"), "{words:?}: {:.300}", err);
        assert_eq!(err.trim_end().lines().count(), 1, "{words:?}");
        assert!(
            err.len() < 600,
            "{words:?}: a short line, not {} bytes",
            err.len()
        );
        assert!(err.contains("at most 128"), "{words:?}: {err}");
        assert!(out.stdout.is_empty(), "{words:?}");
    }
    // 128 characters is still a valid id, listed whole.
    let id = format!("vllm.{}", "b".repeat(123));
    let dir = catalog_with_extra_row(&id);
    let out = catalog_command(&["list"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
}

/// Names a hostile trace (or server) can carry: an escape sequence, HTML, backticks, a
/// pipe, a newline, a template.
const HOSTILE: &[&str] = &[
    "red\u{1b}[31m_kernel",
    "<img src=x onerror=alert(1)>",
    "tick`tock``kernel",
    "left|right_kernel",
    "line\nbreak_kernel",
    "void f<int>(int)",
];

/// A profile directory: a trace whose kernels, CPU ops and annotation carry
/// [`HOSTILE`] names, and a `server_args.json` whose model id is hostile too.
fn hostile_profile(dir: &Path) -> std::path::PathBuf {
    use crate::hostile::support::{kernel, launch, trace_text};
    use serde_json::json;
    let mut events = Vec::new();
    for (i, name) in HOSTILE.iter().enumerate() {
        let i = i as u64;
        for step in 0..3u64 {
            let correlation = 1 + i * 10 + step;
            let ts = 1000 + (i * 3 + step) * 100;
            events.push(
                json!({"ph": "X", "cat": "cpu_op", "name": format!("aten::{name}"),
                "pid": 100, "tid": 100, "ts": ts, "dur": 8}),
            );
            events.push(launch(ts + 1, correlation));
            events.push(kernel(name, ts + 5, 20 + i, correlation));
        }
    }
    events.push(
        json!({"ph": "X", "cat": "user_annotation", "name": "step\u{1b}]0;owned\u{7}<script>",
        "pid": 100, "tid": 100, "ts": 900, "dur": 5000}),
    );
    let profile = dir.join("profile");
    std::fs::create_dir(&profile).unwrap();
    std::fs::write(profile.join("run.trace.json"), trace_text(&events)).unwrap();
    std::fs::write(
        profile.join("server_args.json"),
        json!({"model_path": "evil\u{1b}[2J<img src=x onerror=alert(2)>|`m`", "tp_size": 1})
            .to_string(),
    )
    .unwrap();
    profile
}

fn report(profile: &Path, format: &str) -> String {
    let out = llm_triage()
        .args([
            "--framework",
            "sglang",
            "--min-share",
            "0",
            "--format",
            format,
        ])
        .arg("--input")
        .arg(profile)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The characters of `line` outside its code spans (CommonMark: a span opens with a run
/// of backticks and closes at the next run of the same length), with their byte offsets;
/// a backslash-escaped character is left out.
fn outside_code_spans(line: &str) -> Vec<(usize, char)> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut outside = Vec::new();
    let mut fence: Option<usize> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if c == '`' {
            let run = chars[i..].iter().take_while(|(_, c)| *c == '`').count();
            fence = match fence {
                None => Some(run),
                Some(open) if open == run => None,
                still => still,
            };
            i += run;
            continue;
        }
        if fence.is_none() {
            if c == '\\' {
                i += 2;
                continue;
            }
            outside.push(chars[i]);
        }
        i += 1;
    }
    outside
}

/// The cells of one markdown table row: split at pipes no backslash escapes.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        if c == '|' && !escaped {
            cells.push(String::new());
        } else {
            cells.last_mut().unwrap().push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

#[test]
fn hostile_names_reach_no_report_raw_and_sit_in_code_spans_in_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let profile = hostile_profile(dir.path());
    let markdown = report(&profile, "markdown");
    let text = report(&profile, "text");
    for (format, out) in [("markdown", &markdown), ("text", &text)] {
        assert!(!out.contains('\u{1b}'), "{format}: a raw ESC byte\n{out}");
        assert!(!out.contains('\u{7}'), "{format}: a raw BEL byte");
        assert!(
            out.contains("red\\u{1b}[31m_kernel"),
            "{format}: shown escaped\n{out}"
        );
    }
    // Every table keeps its column count, and every kernel cell is one code span.
    let mut header_cells = 0;
    let mut kernel_cells = Vec::new();
    for line in markdown.lines().filter(|l| l.starts_with('|')) {
        let row = cells(line);
        if [
            "| Kernel |",
            "| Priority |",
            "| Pattern |",
            "| Gap |",
            "| Step |",
        ]
        .iter()
        .any(|h| line.starts_with(h))
        {
            header_cells = row.len();
        } else if !line.starts_with("| ---") {
            assert_eq!(row.len(), header_cells, "{line}");
            if markdown[..markdown.find(line).unwrap()].contains("## Kernel Table")
                && !markdown[..markdown.find(line).unwrap()].contains("## Overlap")
            {
                kernel_cells.push(row[0].clone());
                assert!(
                    row[5].starts_with('`') || row[5] == "unresolved",
                    "location cell {:?}",
                    row[5]
                );
                assert!(row[6].starts_with('`'), "CPU op cell {:?}", row[6]);
            }
        }
    }
    assert_eq!(kernel_cells.len(), HOSTILE.len(), "{markdown}");
    for cell in &kernel_cells {
        assert!(
            cell.starts_with('`') && cell.ends_with('`'),
            "kernel cell {cell:?} is a code span"
        );
    }
    assert!(kernel_cells.contains(&"`<img src=x onerror=alert(1)>`".to_string()));
    // Two backticks inside: a fence of three.
    assert!(
        kernel_cells.contains(&"```tick`tock``kernel```".to_string()),
        "{kernel_cells:?}"
    );
    assert!(
        kernel_cells.contains(&"`left\\|right_kernel`".to_string()),
        "{kernel_cells:?}"
    );
    // The display name folds whitespace (the JSON keeps the name whole); either way no
    // newline reaches the row.
    assert!(
        kernel_cells.contains(&"`line break_kernel`".to_string())
            || kernel_cells.contains(&"`line\\nbreak_kernel`".to_string()),
        "{kernel_cells:?}"
    );
    // Outside a code span no `<` is left for a viewer to read as HTML (the table's own
    // `<br>` aside).
    for line in markdown.lines() {
        for (at, c) in outside_code_spans(line) {
            if c == '<' {
                assert!(line[at..].starts_with("<br>"), "raw < in {line}");
            }
        }
    }
    // The model id, a header line, is a code span too.
    let model = markdown.lines().find(|l| l.starts_with("Model: ")).unwrap();
    assert!(model.starts_with("Model: `"), "{model}");
}
