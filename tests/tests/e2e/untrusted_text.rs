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
