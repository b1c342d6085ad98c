//! A directory tree from fuzz bytes, for input discovery. Plain std, so the CI test
//! that replays saved seeds (`tests/tests/e2e/hostile/fuzz_regressions.rs`) builds the same
//! tree without the fuzzer.

use std::path::{Path, PathBuf};

/// Names engines and users give to capture directories and files, and some odd ones.
const NAMES: &[&str] = &[
    "prefill",
    "decode",
    "1761000011.0011",
    "1761000012.0012",
    "x-TP-0.trace.json.gz",
    "x-TP-1.trace.json.gz",
    "x-TP-0-EXTEND.trace.json.gz",
    "x-TP-0-DECODE.trace.json.gz",
    "id-DP0-TP1-DECODE.trace.json.gz",
    "rank0.1.pt.trace.json.gz",
    "host_12.1761000000000.pt.trace.json",
    "trace-prefill-rank-0.json",
    "trace-decode.json",
    "server_args.json",
    "config.json",
    ".hidden.trace.json",
    "a b.trace.json",
    "\u{e9}t\u{e9}.trace.json",
    "TP-0",
    "..",
];

/// What one entry is.
enum Kind {
    File,
    Dir,
    Symlink,
    Fifo,
}

/// Builds the tree under `root` (which must exist and be empty): each 4-byte step makes
/// one entry: kind, name, parent (an earlier directory), and a content/target choice.
pub fn build(root: &Path, bytes: &[u8]) {
    let mut dirs: Vec<PathBuf> = vec![root.to_path_buf()];
    let mut all: Vec<PathBuf> = vec![root.to_path_buf()];
    for step in bytes.chunks_exact(4).take(64) {
        let kind = match step[0] % 8 {
            0..=3 => Kind::File,
            4 | 5 => Kind::Dir,
            6 => Kind::Symlink,
            _ => Kind::Fifo,
        };
        let name = NAMES[step[1] as usize % NAMES.len()];
        let parent = &dirs[step[2] as usize % dirs.len()];
        let path = parent.join(name);
        if name == ".." || path.symlink_metadata().is_ok() {
            continue;
        }
        match kind {
            Kind::File => {
                let _ = std::fs::write(&path, content(step[3], name));
            }
            Kind::Dir => {
                if std::fs::create_dir(&path).is_ok() {
                    dirs.push(path.clone());
                }
            }
            Kind::Symlink => {
                let target = &all[step[3] as usize % all.len()];
                let _ = std::os::unix::fs::symlink(target, &path);
                // A link to a directory is walked like one.
                if target.is_dir() {
                    dirs.push(path.clone());
                }
            }
            Kind::Fifo => {
                let _ = std::process::Command::new("mkfifo").arg(&path).status();
            }
        }
        all.push(path);
    }
}

/// Small file bodies: a minimal trace, a gzip one, server args, junk, nothing.
fn content(choice: u8, name: &str) -> Vec<u8> {
    const TRACE: &str = r#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7, "correlation": 1}}]}"#;
    if name == "server_args.json" {
        return match choice % 3 {
            0 => br#"{"model_path": "Qwen/Qwen3-8B", "tp_size": 2}"#.to_vec(),
            1 => b"[1, 2".to_vec(),
            _ => b"{}".to_vec(),
        };
    }
    match choice % 5 {
        0 | 1 => TRACE.as_bytes().to_vec(),
        2 => vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0],
        3 => b"not json".to_vec(),
        _ => Vec::new(),
    }
}
