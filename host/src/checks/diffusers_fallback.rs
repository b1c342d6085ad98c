//! The diffusers-fallback check: a run that fell back to the `diffusers` backend
//! profiled the wrong code, so its kernels say nothing about the engine being triaged.
//!
//! Two signals stop the triage with exit 3 and a line saying it is a backend-selection
//! problem, not kernel evidence:
//! * a run log (`--run-log FILE`, repeatable, and every `*.log` beside the traces)
//!   holding one of [`PHRASES`];
//! * Python frames of the trace inside a `diffusers/pipelines/` source tree.
//!
//! The predecessor only told the agent to check this (no script did); here it is enforced.

use std::collections::{BTreeSet, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use llm_triage_plugin_api::scan::has_dir_run;

use crate::error::{Result, TriageError};
use crate::trace::event::Trace;
use crate::trace::evidence::python_file;

/// Log lines that mean the run used the diffusers backend, exactly as the engines print them.
pub(crate) const PHRASES: [&str; 3] = [
    "Falling back to diffusers backend",
    "Using diffusers backend",
    "Loaded diffusers pipeline",
];

/// The directory run of the diffusers pipelines' own source files.
const DIFFUSERS_PIPELINES: &[&str] = &["diffusers", "pipelines"];

/// The advice every refusal ends with.
const ADVICE: &str = "this is a backend-selection problem, not kernel evidence: make the \
                      engine run its native backend and profile again";

/// One phrase found in one log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogHit {
    pub log: PathBuf,
    /// 1-based.
    pub line: usize,
    pub phrase: &'static str,
}

/// The directories whose `*.log` files belong to a triage: the input directory (or the
/// input file's directory) and every trace file's directory.
pub(crate) fn log_dirs(input: &Path, trace_files: &[&Path]) -> Vec<PathBuf> {
    let input_dir = if input.is_dir() {
        Some(input.to_path_buf())
    } else {
        input.parent().map(Path::to_path_buf)
    };
    let mut dirs: Vec<PathBuf> = input_dir.into_iter().collect();
    for file in trace_files {
        if let Some(dir) = file.parent() {
            if !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_path_buf());
            }
        }
    }
    // `Path::parent` of a bare file name is "": that is the current directory.
    dirs.into_iter()
        .map(|d| {
            if d.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                d
            }
        })
        .collect()
}

/// The logs to scan for a triage: every `--run-log`, then every `*.log` file in the
/// directories given (the traces' directories and the input directory), each once.
pub(crate) fn logs_to_scan(explicit: &[PathBuf], dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = explicit.to_vec();
    let unique_dirs: BTreeSet<&PathBuf> = dirs.iter().collect();
    for dir in unique_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "log"))
            .collect();
        found.sort();
        for log in found {
            if !logs.contains(&log) {
                logs.push(log);
            }
        }
    }
    logs
}

/// The first phrase in `log`, if any. Lines are read as bytes (logs are not always UTF-8).
pub(crate) fn scan_log(log: &Path) -> Result<Option<LogHit>> {
    let file = std::fs::File::open(log)
        .map_err(|e| TriageError::input(log, format!("cannot read run log: {e}")))?;
    let mut reader = std::io::BufReader::new(file);
    let finders: Vec<(memchr::memmem::Finder<'_>, &'static str)> = PHRASES
        .iter()
        .map(|p| (memchr::memmem::Finder::new(p.as_bytes()), *p))
        .collect();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| TriageError::input(log, format!("cannot read run log: {e}")))?;
        if read == 0 {
            return Ok(None);
        }
        number += 1;
        if let Some((_, phrase)) = finders.iter().find(|(f, _)| f.find(&line).is_some()) {
            return Ok(Some(LogHit {
                log: log.to_path_buf(),
                line: number,
                phrase,
            }));
        }
    }
}

/// Scans every log; the first hit stops the triage (exit 3). A `--run-log` that cannot be
/// read is an input error too: the user asked for it.
pub(crate) fn check_logs(explicit: &[PathBuf], dirs: &[PathBuf]) -> Result<()> {
    for log in logs_to_scan(explicit, dirs) {
        if let Some(hit) = scan_log(&log)? {
            return Err(TriageError::input(
                &hit.log,
                format!(
                    "line {} says \"{}\": the run used the diffusers backend; {ADVICE}",
                    hit.line, hit.phrase
                ),
            ));
        }
    }
    Ok(())
}

/// Python frames of `trace` under `diffusers/pipelines/`, and the most frequent such file.
pub(crate) fn diffusers_frames(trace: &Trace) -> Option<(u64, String)> {
    let mut per_name: HashMap<_, u64> = HashMap::new();
    for frame in &trace.py_frames {
        *per_name.entry(frame.name).or_default() += 1;
    }
    let mut files: HashMap<&str, u64> = HashMap::new();
    for (sym, count) in per_name {
        if let Some(file) = python_file(trace.name(sym)) {
            if has_dir_run(file, DIFFUSERS_PIPELINES) {
                *files.entry(file).or_default() += count;
            }
        }
    }
    let total = files.values().sum();
    let top = files
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))?;
    Some((total, top.0.to_string()))
}

/// Refuses a trace whose Python frames run inside a diffusers pipeline (exit 3).
pub(crate) fn check_frames(traces: &[Trace]) -> Result<()> {
    for trace in traces {
        if let Some((count, file)) = diffusers_frames(trace) {
            return Err(TriageError::input(
                &trace.path,
                format!(
                    "{count} python frame{} run inside a diffusers pipeline (e.g. {file}): the run \
                     used the diffusers backend; {ADVICE}",
                    if count == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phrase_is_found_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        for (i, phrase) in PHRASES.iter().enumerate() {
            let log = dir.path().join(format!("run{i}.log"));
            let text = format!("INFO start\nWARN x\n[2026-08-01 10:00:00] {phrase} for Wan2.2\n");
            std::fs::write(&log, text).unwrap();
            let hit = scan_log(&log).unwrap().unwrap();
            assert_eq!((hit.line, hit.phrase), (3, *phrase));
        }
        let clean = dir.path().join("clean.txt");
        std::fs::write(&clean, "Using sglang backend\nLoaded pipeline\n").unwrap();
        assert_eq!(scan_log(&clean).unwrap(), None);
    }

    #[test]
    fn logs_beside_the_traces_and_explicit_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.log"), "").unwrap();
        std::fs::write(dir.path().join("a.log"), "").unwrap();
        std::fs::write(dir.path().join("trace.json"), "").unwrap();
        let explicit = vec![PathBuf::from("/elsewhere/server.txt")];
        let logs = logs_to_scan(
            &explicit,
            &[dir.path().to_path_buf(), dir.path().to_path_buf()],
        );
        assert_eq!(
            logs,
            vec![
                PathBuf::from("/elsewhere/server.txt"),
                dir.path().join("a.log"),
                dir.path().join("b.log"),
            ]
        );
        let err = check_logs(&explicit, &[]).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::INPUT);
    }
}
