//! `catalog validate --catalog DIR` checks every catalog file a triage with the same DIR
//! reads, so a catalog it passes cannot fail the next triage. Before `Catalog::load` it
//! checked only kernel-families.toml and fusions/, and said `catalog OK` (exit 0) over an
//! overlap.toml that a triage then refused with exit 3.

use std::path::Path;

use crate::util::{llm_triage, workspace_root};

/// A copy of the repository's `catalog/` directory (every file the loaders read).
fn copy_of_the_catalog() -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&workspace_root().join("catalog"), copy.path());
    copy
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            std::fs::create_dir(&target).unwrap();
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

fn validate(dir: &Path) -> std::process::Output {
    llm_triage()
        .args(["catalog", "validate", "--catalog", dir.to_str().unwrap()])
        .output()
        .unwrap()
}

/// Validates a copy of the catalog with the first `from` in its file `file` (a path
/// inside the catalog) replaced by `to` (`present` says why the file has one): the run
/// fails with exit 3 and one line on stderr naming the file, and prints nothing on
/// stdout. Returns that line.
fn validate_broken(file: &[&str], from: &str, to: &str, present: &str) -> String {
    let dir = copy_of_the_catalog();
    let path = file
        .iter()
        .fold(dir.path().to_path_buf(), |p, part| p.join(part));
    let good = std::fs::read_to_string(&path).unwrap();
    let bad = good.replacen(from, to, 1);
    assert_ne!(good, bad, "{present}");
    std::fs::write(&path, bad).unwrap();

    let out = validate(dir.path());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

#[test]
fn an_unknown_key_in_overlap_toml_fails_validate_with_exit_3_naming_the_file() {
    let err = validate_broken(
        &["overlap.toml"],
        "[[path]]\nid = ",
        "[[path]]\nweight = 2\nid = ",
        "the first [[path]] starts with its id",
    );
    assert!(err.contains("unknown field `weight`"), "{err}");
}

#[test]
fn an_unbroken_copy_of_the_catalog_still_validates() {
    let dir = copy_of_the_catalog();
    let out = validate(dir.path());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("catalog OK: "), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

#[test]
fn a_forward_call_with_an_absolute_file_fails_validate_with_exit_3_naming_the_file() {
    // vLLM's forward call lives with its plugin's rows (plugin API 1.4, `step_catalog`);
    // `--catalog DIR/steps/vllm.toml` replaces them.
    let err = validate_broken(
        &["steps", "vllm.toml"],
        "file = \"vllm/v1/worker/gpu_model_runner.py\"",
        "file = \"/tmp/gpu_model_runner.py\"",
        "the vLLM row names its file",
    );
    assert!(err.contains("vllm.execute-model"), "{err}");
}

#[test]
fn a_role_rule_naming_an_unknown_role_fails_validate_with_exit_3_naming_the_file() {
    let err = validate_broken(
        &["roles.toml"],
        "role = \"qkv\"",
        "role = \"qkvz\"",
        "roles.toml has a qkv rule",
    );
    assert!(err.contains("unknown role \"qkvz\""), "{err}");
}
