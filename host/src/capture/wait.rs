//! Waiting for a capture's trace files: only files that are new since the snapshot taken
//! before the profiler started (or rewritten since), and only once each is complete: its
//! size unchanged across two polls and its gzip stream or JSON document closed. A
//! timeout is an error naming the directory and what was seen; a partial or an old
//! file is never handed on.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use llm_triage_plugin_api::TraceFiles;

use crate::error::TriageError;

/// How often the directory is listed.
pub(crate) const POLL: Duration = Duration::from_millis(200);

/// Names that are never traces even with a trace-like suffix.
const RESERVED: [&str; 3] = ["server_args.json", "metadata.json", "config.json"];

/// A file's identity for "has it changed": size and modification time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub len: u64,
    pub modified: SystemTime,
}

/// Trace files under a directory before the capture, by path.
pub(crate) type Snapshot = HashMap<PathBuf, Stamp>;

/// Every trace-named file below `dir` (recursively, skipping `skip`), with its stamp.
pub(crate) fn snapshot(dir: &Path, traces: &TraceFiles, skip: Option<&Path>) -> Snapshot {
    let mut out = Snapshot::new();
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                if depth < 6 && skip != Some(path.as_path()) {
                    pending.push((path, depth + 1));
                }
            } else if meta.is_file() && is_trace_name(&path, traces) {
                out.insert(
                    path,
                    Stamp {
                        len: meta.len(),
                        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    },
                );
            }
        }
    }
    out
}

/// A file name with one of the plan's suffixes and prefix, not a reserved name.
pub(crate) fn is_trace_name(path: &Path, traces: &TraceFiles) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    !RESERVED.contains(&lower.as_str())
        && !name.starts_with('.')
        && name.starts_with(traces.name_prefix.as_str())
        && traces.suffixes.iter().any(|s| lower.ends_with(s.as_str()))
}

/// Files of `now` that were not in `before`, or changed since.
pub(crate) fn new_files(before: &Snapshot, now: &Snapshot) -> BTreeMap<PathBuf, Stamp> {
    now.iter()
        .filter(|(path, stamp)| before.get(*path) != Some(*stamp))
        .map(|(p, s)| (p.clone(), *s))
        .collect()
}

/// Why a file is not (yet) a complete trace; `None` when it is.
pub(crate) fn incomplete(path: &Path) -> Option<String> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot open: {e}")),
    };
    let mut head = [0u8; 2];
    let gz = file.read_exact(&mut head).is_ok() && head == [0x1f, 0x8b];
    let Ok(file) = std::fs::File::open(path) else {
        return Some("cannot reopen".to_string());
    };
    if gz {
        // Decompress everything: flate2 checks the trailer (CRC and length) at the end,
        // so a stream cut anywhere fails here.
        let mut decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
        let mut tail = TailSink::default();
        if let Err(e) = std::io::copy(&mut decoder, &mut tail) {
            return Some(format!("gzip stream not closed ({e})"));
        }
        tail.closes_document()
    } else {
        let mut tail = TailSink::default();
        if let Err(e) = std::io::copy(&mut std::io::BufReader::new(file), &mut tail) {
            return Some(format!("unreadable ({e})"));
        }
        tail.closes_document()
    }
}

/// Keeps the first and last non-whitespace bytes of a stream.
#[derive(Default)]
struct TailSink {
    first: Option<u8>,
    last: Option<u8>,
}

impl std::io::Write for TailSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(&b) = buf.iter().find(|b| !b.is_ascii_whitespace()) {
            self.first.get_or_insert(b);
        }
        if let Some(&b) = buf.iter().rev().find(|b| !b.is_ascii_whitespace()) {
            self.last = Some(b);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl TailSink {
    fn closes_document(&self) -> Option<String> {
        match (self.first, self.last) {
            (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']')) => None,
            (None, _) => Some("empty".to_string()),
            _ => Some("JSON document not closed".to_string()),
        }
    }
}

/// What the wait saw of one file at the end.
#[derive(Clone, Debug)]
struct Seen {
    stamp: Stamp,
    /// Polls in a row with the same stamp.
    stable: u32,
    /// The completeness verdict for `stamp` (checked once the size is stable).
    verdict: Option<Option<String>>,
}

/// Waits until at least one new trace file exists under `dir` and every new file is
/// complete, then returns them sorted by path. `skip` is a directory not to look in.
pub(crate) fn wait_for_traces(
    dir: &Path,
    traces: &TraceFiles,
    before: &Snapshot,
    skip: Option<&Path>,
    limit: Duration,
    hint: &str,
) -> Result<Vec<PathBuf>, TriageError> {
    let deadline = Instant::now() + limit;
    let mut seen: BTreeMap<PathBuf, Seen> = BTreeMap::new();
    loop {
        let now = snapshot(dir, traces, skip);
        let fresh = new_files(before, &now);
        seen.retain(|p, _| fresh.contains_key(p));
        for (path, stamp) in &fresh {
            let entry = seen.entry(path.clone()).or_insert(Seen {
                stamp: *stamp,
                stable: 0,
                verdict: None,
            });
            if entry.stamp == *stamp {
                entry.stable += 1;
            } else {
                *entry = Seen {
                    stamp: *stamp,
                    stable: 1,
                    verdict: None,
                };
            }
            if entry.stable >= 2 && entry.verdict.is_none() {
                entry.verdict = Some(incomplete(path));
            }
        }
        let done = !seen.is_empty()
            && seen
                .values()
                .all(|s| s.stable >= 2 && matches!(s.verdict, Some(None)));
        if done {
            return Ok(seen.into_keys().collect());
        }
        if Instant::now() >= deadline {
            return Err(timeout_error(dir, &seen, before.len(), limit, hint));
        }
        std::thread::sleep(POLL);
    }
}

fn timeout_error(
    dir: &Path,
    seen: &BTreeMap<PathBuf, Seen>,
    older: usize,
    limit: Duration,
    hint: &str,
) -> TriageError {
    let what = if seen.is_empty() {
        let older = match older {
            0 => String::new(),
            n => format!(
                " ({n} older trace file{} ignored)",
                if n == 1 { "" } else { "s" }
            ),
        };
        format!("no new trace file appeared{older}")
    } else {
        let parts: Vec<String> = seen
            .iter()
            .map(|(path, s)| {
                let name = path.strip_prefix(dir).unwrap_or(path).display();
                let state = match &s.verdict {
                    Some(Some(why)) => why.clone(),
                    Some(None) => "complete".to_string(),
                    None => "still growing".to_string(),
                };
                format!("{name} ({} bytes, {state})", s.stamp.len)
            })
            .collect();
        format!("saw {}", parts.join(", "))
    };
    let hint = if hint.is_empty() {
        String::new()
    } else {
        format!("; {hint}")
    };
    TriageError::Capture(format!(
        "no complete trace in {} after {} (--flush-timeout): {what}{hint}",
        dir.display(),
        super::http::seconds(limit)
    ))
}

/// Moves `files` into `to` (a rename, or copy and delete across file systems), keeping
/// names; a clash gets a numbered name. Returns the new paths.
pub(crate) fn move_into(files: &[PathBuf], to: &Path) -> Result<Vec<PathBuf>, TriageError> {
    std::fs::create_dir_all(to)
        .map_err(|e| TriageError::Capture(format!("cannot create {}: {e}", to.display())))?;
    let mut moved = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let mut target = to.join(&name);
        let mut n = 1;
        while target.exists() {
            target = to.join(format!("{n}-{}", name.to_string_lossy()));
            n += 1;
        }
        if std::fs::rename(file, &target).is_err() {
            std::fs::copy(file, &target)
                .and_then(|_| std::fs::remove_file(file))
                .map_err(|e| {
                    TriageError::Capture(format!(
                        "cannot move {} into {}: {e}",
                        file.display(),
                        to.display()
                    ))
                })?;
        }
        moved.push(target);
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn plan() -> TraceFiles {
        TraceFiles {
            server_owned_dir: false,
            suffixes: llm_triage_plugin_api::rstrings([".trace.json.gz", ".trace.json"]),
            name_prefix: "p-".into(),
            flush_timeout_ms: 1000,
        }
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn completeness_needs_a_closed_stream_and_document() {
        let dir = tempfile::tempdir().unwrap();
        let doc = br#"{"traceEvents": []}"#;
        let full = gz(doc);
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        assert_eq!(incomplete(&write("a.trace.json.gz", &full)), None);
        let cut = incomplete(&write("b.trace.json.gz", &full[..full.len() - 6])).unwrap();
        assert!(cut.starts_with("gzip stream not closed"), "{cut}");
        let open_doc = incomplete(&write("c.trace.json.gz", &gz(br#"{"traceEvents": ["#))).unwrap();
        assert_eq!(open_doc, "JSON document not closed");
        assert_eq!(incomplete(&write("d.trace.json", b"[{}]\n")), None);
        assert_eq!(incomplete(&write("e.trace.json", b"  ")).unwrap(), "empty");
    }

    #[test]
    fn only_new_or_rewritten_files_with_the_plan_names_count() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("p-old.trace.json");
        std::fs::write(&old, b"{}").unwrap();
        std::fs::write(dir.path().join("server_args.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("other.trace.json"), b"{}").unwrap();
        let before = snapshot(dir.path(), &plan(), None);
        assert_eq!(before.len(), 1);
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let fresh = dir.path().join("sub/p-new.trace.json");
        std::fs::write(&fresh, b"{}").unwrap();
        std::fs::write(&old, b"{ }").unwrap();
        let now = snapshot(dir.path(), &plan(), None);
        let new: Vec<_> = new_files(&before, &now).into_keys().collect();
        assert_eq!(new, vec![old, fresh]);
    }

    #[test]
    fn a_timeout_names_the_dir_and_what_it_saw() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p-old.trace.json"), b"{}").unwrap();
        let before = snapshot(dir.path(), &plan(), None);
        std::fs::write(dir.path().join("p-x.trace.json.gz"), b"\x1f\x8b\x08").unwrap();
        let err = wait_for_traces(
            dir.path(),
            &plan(),
            &before,
            None,
            Duration::from_millis(700),
            "hint",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(
            err.contains("p-x.trace.json.gz (3 bytes, gzip stream not closed"),
            "{err}"
        );
        assert!(err.ends_with("; hint"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let err = wait_for_traces(
            empty.path(),
            &plan(),
            &Snapshot::new(),
            None,
            Duration::from_millis(300),
            "",
        )
        .unwrap_err()
        .to_string();
        assert!(err.ends_with("no new trace file appeared"), "{err}");
    }
}
