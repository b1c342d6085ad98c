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
//!
//! Logs are read as files someone else may control ([`crate::untrusted_file`]): only the
//! first [`SCAN_BYTES`] of each are scanned (the engines print the backend choice while
//! loading the model, at start-up), and a FIFO or device is never read. A `--run-log` that
//! is not a plain file is a usage error (exit 2); a `*.log` beside the traces that is not
//! one, or cannot be read, is skipped and named in the notes, as is a log longer than the
//! part scanned.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use llm_triage_plugin_api::scan::has_dir_run;

use crate::error::{Result, TriageError};
use crate::trace::event::Trace;
use crate::trace::evidence::python_file;
use crate::untrusted_file::{open_regular, size_text, Links, Refusal};

/// Log lines that mean the run used the diffusers backend, exactly as the engines print them.
pub(crate) const PHRASES: [&str; 3] = [
    "Falling back to diffusers backend",
    "Using diffusers backend",
    "Loaded diffusers pipeline",
];

/// How much of each log is scanned: the start of a run, where the engines say which
/// backend they load (SGLang logs its diffusers fallback while loading the model). A
/// bound, so an 8 GB log or `/dev/zero` costs at most this much reading and memory.
pub(crate) const SCAN_BYTES: u64 = 16 << 20;

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

/// The logs to scan for a triage: every `--run-log`, then every `*.log` entry in the
/// directories given (the traces' directories and the input directory), each once, and
/// whether it was named explicitly. Entries are not judged here: a FIFO named `x.log`
/// is skipped, and noted, by [`check_logs`].
pub(crate) fn logs_to_scan(explicit: &[PathBuf], dirs: &[PathBuf]) -> Vec<(PathBuf, bool)> {
    let mut logs: Vec<(PathBuf, bool)> = explicit.iter().map(|l| (l.clone(), true)).collect();
    let unique_dirs: BTreeSet<&PathBuf> = dirs.iter().collect();
    for dir in unique_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .filter(|p| !std::fs::metadata(p).is_ok_and(|m| m.is_dir()))
            .collect();
        found.sort();
        for log in found {
            if !logs.iter().any(|(l, _)| *l == log) {
                logs.push((log, false));
            }
        }
    }
    logs
}

/// What one log scan found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scanned {
    pub hit: Option<LogHit>,
    /// The log's length when it is longer than the part scanned ([`SCAN_BYTES`]).
    pub cut_at_length: Option<u64>,
}

/// The first phrase in the first [`SCAN_BYTES`] of `log`, if any. Lines are read as bytes
/// (logs are not always UTF-8); a line is at most the part scanned, so memory is bounded.
pub(crate) fn scan_log(log: &Path) -> Result<Scanned, Refusal> {
    let file = open_regular(log, Links::Follow)?;
    let length = file.metadata().map_err(Refusal::Io)?.len();
    let mut reader = std::io::BufReader::new(file.take(SCAN_BYTES));
    let finders: Vec<(memchr::memmem::Finder<'_>, &'static str)> = PHRASES
        .iter()
        .map(|p| (memchr::memmem::Finder::new(p.as_bytes()), *p))
        .collect();
    let cut_at_length = (length > SCAN_BYTES).then_some(length);
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(Refusal::Io)?;
        if read == 0 {
            return Ok(Scanned {
                hit: None,
                cut_at_length,
            });
        }
        number += 1;
        if let Some((_, phrase)) = finders.iter().find(|(f, _)| f.find(&line).is_some()) {
            return Ok(Scanned {
                hit: Some(LogHit {
                    log: log.to_path_buf(),
                    line: number,
                    phrase,
                }),
                cut_at_length: None,
            });
        }
    }
}

/// Scans every log; the first hit stops the triage (exit 3). A `--run-log` that is not a
/// plain file is a usage error (exit 2), one that cannot be read an input error (exit 3):
/// the user asked for it. A log found beside the traces that is not a plain file or cannot
/// be read is skipped. Returns the notes: logs skipped, logs scanned only in part.
pub(crate) fn check_logs(explicit: &[PathBuf], dirs: &[PathBuf]) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for (log, named) in logs_to_scan(explicit, dirs) {
        let scanned = match scan_log(&log) {
            Ok(scanned) => scanned,
            Err(Refusal::NotRegular(what)) if named => {
                return Err(TriageError::Usage(format!(
                    "--run-log {}: not a regular file ({what}); pass the log file itself",
                    log.display()
                )))
            }
            Err(Refusal::Io(e)) if named => {
                return Err(TriageError::input(
                    &log,
                    format!("cannot read run log: {e}"),
                ))
            }
            Err(why) => {
                notes.push(format!("run log skipped: {} ({why})", log.display()));
                continue;
            }
        };
        if let Some(hit) = scanned.hit {
            return Err(TriageError::input(
                &hit.log,
                format!(
                    "line {} says \"{}\": the run used the diffusers backend; {ADVICE}",
                    hit.line, hit.phrase
                ),
            ));
        }
        if let Some(length) = scanned.cut_at_length {
            notes.push(format!(
                "run log scanned in part: {} (its first {} of {length} bytes were checked for \
                 the diffusers fallback)",
                log.display(),
                size_text(SCAN_BYTES)
            ));
        }
    }
    Ok(notes)
}

/// Python frames of `trace` under `diffusers/pipelines/`, and the most frequent such file.
pub(crate) fn diffusers_frames(trace: &Trace) -> Option<(u64, String)> {
    let mut files: HashMap<&str, u64> = HashMap::new();
    for (name, count) in trace.frame_names() {
        if let Some(file) = python_file(name) {
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
            let hit = scan_log(&log).unwrap().hit.unwrap();
            assert_eq!((hit.line, hit.phrase), (3, *phrase));
        }
        let clean = dir.path().join("clean.txt");
        std::fs::write(&clean, "Using sglang backend\nLoaded pipeline\n").unwrap();
        assert_eq!(scan_log(&clean).unwrap().hit, None);
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
                (PathBuf::from("/elsewhere/server.txt"), true),
                (dir.path().join("a.log"), false),
                (dir.path().join("b.log"), false),
            ]
        );
        let err = check_logs(&explicit, &[]).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::INPUT);
    }
}
