//! The two sides of a diff: what each path is (a trace file, a profile directory or a
//! saved `--format json` report) and the saved report's `Report` value. Traces and
//! directories are triaged by the caller; a saved report is read here, so both kinds end
//! as one `Report` and the comparison never asks where a side came from.

use std::io::Read;
use std::path::Path;

use crate::bundle::json_report;
use crate::error::{Result, TriageError};
use crate::report::Report;
use crate::untrusted_file::{open_regular, read_capped, Links};

/// What a side's path holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum SideKind {
    Trace,
    Directory,
    Report,
}

impl SideKind {
    /// The `DiffSide::kind` spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SideKind::Trace => "trace",
            SideKind::Directory => "directory",
            SideKind::Report => "report",
        }
    }
}

/// Bytes of a `.json` file looked at to tell a saved report from a trace.
const HEAD_BYTES: u64 = 4096;

/// The members of a saved report (`report::Report`), any of which may come first: our
/// renderer writes `schema_version` first, a tool that rewrote the file may sort them.
/// Kineto's traces begin with members of their own (`schemaVersion`, `deviceProperties`,
/// `traceEvents`, ...), none of these.
const REPORT_MEMBERS: &[&str] = &[
    "schema_version",
    "tool_version",
    "mode",
    "framework",
    "inputs",
    "model",
    "model_class",
    "server_args",
    "server_args_path",
    "stages",
    "notes",
    "mapping_framework",
    "mapping_inputs",
    "overlap_stages",
    "ranks",
    "collectives",
    "stragglers",
    "device",
];

/// What `path` is. A missing path, or a special file, is an input error naming it; a
/// `.json` file whose first member is one of a saved report's is a saved report, any
/// other file a trace (the triage then says if it is none).
pub(crate) fn side_kind(path: &Path) -> Result<SideKind> {
    let meta = std::fs::metadata(path)
        .map_err(|e| TriageError::input(path, format!("not a trace, report or directory: {e}")))?;
    if meta.is_dir() {
        return Ok(SideKind::Directory);
    }
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if !is_json {
        return Ok(SideKind::Trace);
    }
    let file =
        open_regular(path, Links::Follow).map_err(|e| TriageError::input(path, e.to_string()))?;
    let mut head = Vec::new();
    file.take(HEAD_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| TriageError::input(path, format!("cannot read: {e}")))?;
    Ok(if starts_like_a_report(&head) {
        SideKind::Report
    } else {
        SideKind::Trace
    })
}

/// `{` then, after white space, a member a saved report has.
fn starts_like_a_report(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let Some(rest) = text.trim_start().strip_prefix('{') else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix('"') else {
        return false;
    };
    rest.split_once('"')
        .is_some_and(|(member, _)| REPORT_MEMBERS.contains(&member))
}

/// The largest saved report read: a `--min-share 0` report of a large trace lists every
/// kernel row with its raw names, well beyond the bundle's 32 MiB for printed reports.
const MAX_SAVED_REPORT_BYTES: u64 = 256 << 20;

/// A saved `--format json` report, or one line saying why not.
pub(crate) fn read_saved_report(path: &Path) -> Result<Report> {
    let bytes = read_capped(path, MAX_SAVED_REPORT_BYTES, Links::Follow)
        .map_err(|e| TriageError::input(path, e.to_string()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| TriageError::input(path, "report is not UTF-8 text"))?;
    json_report(&text).map_err(|reason| TriageError::input(path, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_starts_with_schema_version_and_a_trace_does_not() {
        assert!(starts_like_a_report(b"{\n  \"schema_version\": 1,"));
        assert!(starts_like_a_report(b" {\"schema_version\":1}"));
        // Members sorted by a tool that rewrote the file.
        assert!(starts_like_a_report(b"{\"device\":null,\"framework\":{}}"));
        assert!(!starts_like_a_report(
            b"{\"schemaVersion\": 1, \"traceEvents\": []}"
        ));
        assert!(!starts_like_a_report(b"[{\"schema_version\": 1}]"));
        assert!(!starts_like_a_report(b""));
    }

    #[test]
    fn kinds_of_paths() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("analysis.json");
        std::fs::write(&report, "{\n  \"schema_version\": 1}").unwrap();
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, "{\"traceEvents\": []}").unwrap();
        let gz = dir.path().join("t.json.gz");
        std::fs::write(&gz, b"\x1f\x8b").unwrap();
        assert_eq!(side_kind(dir.path()).unwrap(), SideKind::Directory);
        assert_eq!(side_kind(&report).unwrap(), SideKind::Report);
        assert_eq!(side_kind(&trace).unwrap(), SideKind::Trace);
        assert_eq!(side_kind(&gz).unwrap(), SideKind::Trace);
        let missing = dir.path().join("missing.json");
        let err = side_kind(&missing).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::INPUT);
        assert!(
            err.one_line().contains("missing.json"),
            "{}",
            err.one_line()
        );
    }

    #[test]
    fn a_broken_saved_report_is_one_input_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("base.json");
        std::fs::write(&report, "{\"schema_version\": 1, \"stages\": 3}").unwrap();
        let err = read_saved_report(&report).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::INPUT);
        assert!(err.one_line().starts_with(&report.display().to_string()));
        assert!(!err.one_line().contains('\n'));
    }
}
