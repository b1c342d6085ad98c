//! Capture traces: the engines' traces of their CUDA/HIP graphs being recorded, kept
//! apart from the run's own traces (they are neither ranks nor stages of it).
//!
//! * SGLang, `--enable-profile-cuda-graph`: `capture_traces/bs_<bs>_rank<r>.json.gz`
//!   under the profile directory (`python/sglang/srt/model_executor/cuda_graph_runner.py`).
//! * vLLM, the profiler config's `capture_torch_profiler`: `<torch_profiler_dir>/
//!   capture_traces/graph_capture_rank_<r>[_<subsystem>].<ts>.pt.trace.json.gz` (its
//!   graph-capture profiler names the worker `graph_capture_rank_<local_rank>`).
//!
//! A file is a capture trace by its name or its `capture_traces/` directory; its content
//! is judged when it is read (`analyze::graph::capture`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex_lite::Regex;

use crate::error::TriageError;

/// The directory both engines write capture traces into.
pub const CAPTURE_DIR: &str = "capture_traces";

static CAPTURE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:bs_[0-9]+_rank_?([0-9]+)|graph_capture_rank_?([0-9]+))[_.].*json(?:\.gz)?$",
    )
    .expect("static capture-name pattern is valid")
});

/// Whether `path` names a capture trace: in a `capture_traces/` directory, or named
/// `bs_<bs>_rank<r>.json[.gz]` / `graph_capture_rank_<r>….json[.gz]`.
pub fn is_capture_file(path: &Path) -> bool {
    let in_capture_dir = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == CAPTURE_DIR);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let json = name.to_ascii_lowercase();
    (in_capture_dir && (json.ends_with(".json") || json.ends_with(".json.gz")))
        || CAPTURE_NAME.is_match(&name)
}

/// The rank a capture trace's name carries (`bs_32_rank0`, `graph_capture_rank_1`).
pub fn capture_rank(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy();
    let caps = CAPTURE_NAME.captures(&name)?;
    caps.get(1).or(caps.get(2))?.as_str().parse().ok()
}

/// Capture traces beside a trace in `dir`: in `dir/capture_traces/`, and capture-named
/// files in `dir` itself; in name order.
pub fn capture_files_beside(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = json_files(&dir.join(CAPTURE_DIR));
    found.extend(json_files(dir).into_iter().filter(|p| is_capture_file(p)));
    found.sort();
    found
}

/// The capture traces one `--capture-input` names: the file, or every `*.json[.gz]` in
/// the directory and in its `capture_traces/`, in name order.
pub fn capture_files_of(input: &Path) -> Result<Vec<PathBuf>, TriageError> {
    let meta = fs::metadata(input).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TriageError::input(input, "no such file or directory"),
        _ => TriageError::input(input, format!("cannot access: {e}")),
    })?;
    if !meta.is_dir() {
        return Ok(vec![input.to_path_buf()]);
    }
    let mut files = json_files(input);
    files.extend(json_files(&input.join(CAPTURE_DIR)));
    files.sort();
    if files.is_empty() {
        return Err(TriageError::input(
            input,
            "no capture traces (*.json, *.json.gz) found in the --capture-input directory",
        ));
    }
    Ok(files)
}

/// The regular `*.json[.gz]` files directly in `dir` (none when it is unreadable).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase());
            name.is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
                && fs::metadata(p).is_ok_and(|m| m.is_file())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_capture_names_and_their_ranks() {
        for (path, rank) in [
            ("/p/capture_traces/bs_32_rank0.json.gz", Some(0)),
            ("/p/bs_8_rank3.json.gz", Some(3)),
            (
                "/p/capture_traces/graph_capture_rank_1.1761.pt.trace.json.gz",
                Some(1),
            ),
            (
                "/p/graph_capture_rank_0_encoder.17.pt.trace.json.gz",
                Some(0),
            ),
            ("/p/capture_traces/anything.json", None),
        ] {
            assert!(is_capture_file(Path::new(path)), "{path}");
            assert_eq!(capture_rank(Path::new(path)), rank, "{path}");
        }
        for path in [
            "/p/1761-TP-0-DECODE.trace.json.gz",
            "/p/rank0.pt.trace.json.gz",
            "/shared/AMD-AGI__TraceLens__bs_32_rank0.json.gz",
            "/p/capture_traces/notes.txt",
        ] {
            assert!(!is_capture_file(Path::new(path)), "{path}");
        }
    }
}
