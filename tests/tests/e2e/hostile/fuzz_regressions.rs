//! Replays the saved fuzz seeds (`fuzz/regressions/`) through the real binary, so CI
//! keeps what the fuzzers and the hostile suite found without running a fuzzer:
//!
//! * `read/*`: trace bytes, read as a trace file;
//! * `discover/*`: the `discover_tree` target's bytes (rank byte, then tree steps),
//!   built into a directory with the fuzz crate's own tree builder;
//! * `catalog/*`: the `catalog` target's bytes (loader byte, then the text), put in a
//!   `--catalog` directory.
//!
//! Every run must end within the limit with exit 0, or exit 3 and one line; never a panic.

#[path = "../../../../fuzz/src/tree.rs"]
mod tree;

use std::path::{Path, PathBuf};

use super::support::*;

fn seeds(kind: &str) -> Vec<PathBuf> {
    let dir = crate::util::workspace_root()
        .join("fuzz/regressions")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    files
}

/// Exit 0, or exit 3 with one line; returns the code.
fn assert_handled(ran: &Ran, seed: &Path) -> i32 {
    assert!(
        !ran.stderr.contains("panicked at"),
        "{}: {}",
        seed.display(),
        ran.stderr
    );
    match ran.code {
        0 => {}
        3 => {
            assert_refused(ran, 3, &[]);
        }
        other => panic!("{}: exit {other}: {}", seed.display(), ran.stderr),
    }
    ran.code
}

fn valid_trace(dir: &Path) -> PathBuf {
    let path = dir.join("ok.trace.json");
    std::fs::write(&path, trace_text(&valid_events())).unwrap();
    path
}

#[test]
fn read_seeds() {
    // What the named seeds must give.
    let expected = [
        ("all-events-malformed.json", 3),
        ("end-past-i64.json", 0),
        ("name-over-64k.json", 0),
        ("nineteen-digit-stream.json", 0),
        ("no-events.json", 3),
        ("sum-past-i64.json", 0),
        ("two-gpu-pids-invalid-utf8-name.json", 0),
    ];
    let dir = tempfile::tempdir().unwrap();
    for seed in seeds("read") {
        let path = dir.path().join("seed.trace.json");
        std::fs::copy(&seed, &path).unwrap();
        let ran = run(&[
            "--framework",
            "sglang",
            "--format",
            "json",
            "--input",
            path.to_str().unwrap(),
        ]);
        let code = assert_handled(&ran, &seed);
        let name = seed.file_name().unwrap().to_str().unwrap();
        if let Some((_, want)) = expected.iter().find(|(n, _)| *n == name) {
            assert_eq!(code, *want, "{name}: {}", ran.stderr);
        }
        if name == "name-over-64k.json" {
            let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
            assert_eq!(
                notes(&report),
                ["seed.trace.json: skipped 1 events (0 malformed, 0 with a missing, negative or NaN time, 0 GPU events of zero duration, 1 with a value over the reader's 64 KiB limit (name 1))"]
            );
        }
    }
}

#[test]
fn discover_seeds() {
    for seed in seeds("discover") {
        let bytes = std::fs::read(&seed).unwrap();
        let Some((&rank, steps)) = bytes.split_first() else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tree");
        std::fs::create_dir(&root).unwrap();
        tree::build(&root, steps);
        let rank = rank.to_string();
        let mut args = vec!["--framework", "sglang", "--input", root.to_str().unwrap()];
        if rank.parse::<u8>().unwrap() < 4 {
            args.extend(["--rank", &rank]);
        }
        assert_handled(&run(&args), &seed);
    }
}

#[test]
fn catalog_seeds() {
    let work = tempfile::tempdir().unwrap();
    let trace = valid_trace(work.path());
    for seed in seeds("catalog") {
        let bytes = std::fs::read(&seed).unwrap();
        let Some((&which, body)) = bytes.split_first() else {
            continue;
        };
        let catalog = tempfile::tempdir().unwrap();
        let file = match which % 3 {
            0 => catalog.path().join("kernel-families.toml"),
            1 => {
                std::fs::create_dir(catalog.path().join("fusions")).unwrap();
                catalog.path().join("fusions/sglang.toml")
            }
            _ => catalog.path().join("overlap.toml"),
        };
        std::fs::write(&file, body).unwrap();
        let ran = run(&[
            "--framework",
            "sglang",
            "--catalog",
            catalog.path().to_str().unwrap(),
            "--input",
            trace.to_str().unwrap(),
        ]);
        assert_handled(&ran, &seed);
    }
}
