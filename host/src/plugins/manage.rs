//! `plugins list`, `plugins info NAME` and `plugins doctor`: text for the terminal.
//!
//! Each plugin names the upstream commit it was checked against; `list` shows how old
//! that commit is and `doctor` warns past [`STALE_UPSTREAM_DAYS`], because an engine's
//! paths and annotations drift and a stale plugin misreads new traces quietly.

use std::fmt::Write as _;
use std::path::PathBuf;

use llm_triage_plugin_api::{capability, Support, PLUGIN_API_VERSION};

use super::load::{candidate_files, is_library, load_all, PluginSet, FILE_MARKER};
use super::select::known_names;
use super::Engine;
use crate::error::TriageError;
use crate::report::escape;

/// A tracked upstream commit older than this many days earns a `doctor` warning.
pub(crate) const STALE_UPSTREAM_DAYS: i64 = 90;

/// Every loaded plugin with its version, API version, upstream (and its age) and file,
/// then the capability matrix built from their manifests.
pub fn list(dirs: &[PathBuf]) -> Result<String, TriageError> {
    list_on(dirs, crate::dates::today())
}

/// [`list`] with today's date (days since the Unix epoch) passed in.
pub(crate) fn list_on(dirs: &[PathBuf], today: i64) -> Result<String, TriageError> {
    let set = load_all(dirs);
    if set.engines.is_empty() {
        return Ok(format!(
            "No engine plugins found.\nSearched: {}\n{}",
            join_dirs(dirs),
            rejected_hint(&set)
        ));
    }
    let header = ["NAME", "VERSION", "API", "UPSTREAM", "FILE"]
        .map(String::from)
        .to_vec();
    let rows: Vec<Vec<String>> = set
        .engines
        .iter()
        .map(|e| {
            let m = &e.manifest;
            vec![
                m.name.clone(),
                m.plugin_version.clone(),
                m.api_version.clone(),
                format!(
                    "{}@{} ({})",
                    m.upstream.repo,
                    short_commit(&m.upstream.commit),
                    upstream_age(&m.upstream.date, today)
                ),
                e.path.display().to_string(),
            ]
        })
        .collect();
    let mut text =
        String::from("Engine plugins (search order; the first file with a name wins):\n");
    text.push_str(&table(&header, &rows));
    text.push_str("\nCapability matrix:\n");
    text.push_str(&capability_matrix(&set.engines));
    text.push_str(&rejected_hint(&set));
    Ok(text)
}

/// One plugin in detail.
pub fn info(dirs: &[PathBuf], name: &str) -> Result<String, TriageError> {
    let set = load_all(dirs);
    let engine = set.find(name).ok_or_else(|| {
        TriageError::Usage(format!(
            "no plugin named {:?}; known: {}",
            name.trim(),
            known_names(&set)
        ))
    })?;
    let m = &engine.manifest;
    let attribution = engine.attribution()?;
    let mut lines = vec![
        format!("{} ({}) {}", m.name, m.display_name, m.plugin_version),
        format!(
            "  aliases:        {}",
            if m.aliases.is_empty() {
                "none".to_string()
            } else {
                m.aliases.join(", ")
            }
        ),
        format!(
            "  plugin API:     {} (this host: {PLUGIN_API_VERSION})",
            m.api_version
        ),
        format!(
            "  upstream:       {} @ {} ({})",
            m.upstream.repo, m.upstream.commit, m.upstream.date
        ),
        format!("  file:           {}", engine.path.display()),
        "  capabilities:".to_string(),
    ];
    for (key, label) in capability_rows(std::slice::from_ref(engine)) {
        let cell = m.capabilities.iter().find(|c| c.key == key);
        let text = match cell {
            Some(c) if c.note.is_empty() => support_word(c.support).to_string(),
            Some(c) => format!("{}: {}", support_word(c.support), c.note),
            None => "not declared".to_string(),
        };
        lines.push(format!("    {label}: {text}"));
    }
    lines.push(format!(
        "  source roots:   {}",
        attribution.source_roots.join(", ")
    ));
    let tools = engine.tools()?;
    lines.push(format!(
        "  tools:          {}",
        if tools.is_empty() {
            "none".to_string()
        } else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            format!("{} (llm-triage tool {} TOOL)", names.join(", "), m.name)
        }
    ));
    lines.push("  wrapper frames:".to_string());
    for w in &attribution.wrapper_frames {
        let function = if w.function.is_empty() {
            "any function"
        } else {
            &w.function
        };
        lines.push(format!("    {} ({function})", w.path_contains));
    }
    // Every line holds plugin strings: one line each, nothing a terminal acts on.
    let lines: Vec<String> = lines.iter().map(|l| escape::plain(l)).collect();
    Ok(lines.join("\n") + "\n")
}

/// Every search directory (present or not) and every library file in it: loaded, rejected
/// (with the reason) or ignored (name without the plugin marker).
pub fn doctor(dirs: &[PathBuf]) -> Result<String, TriageError> {
    doctor_on(dirs, crate::dates::today())
}

/// [`doctor`] with today's date (days since the Unix epoch) passed in.
pub(crate) fn doctor_on(dirs: &[PathBuf], today: i64) -> Result<String, TriageError> {
    let set = load_all(dirs);
    let mut lines = vec![
        format!("Host plugin API: {PLUGIN_API_VERSION}"),
        "Search path, in order (the first file with a plugin name wins):".to_string(),
    ];
    for (i, dir) in dirs.iter().enumerate() {
        let state = match std::fs::read_dir(dir) {
            Ok(_) => {
                let n = candidate_files(dir).map(|f| f.len()).unwrap_or(0);
                format!(
                    "exists, {n} candidate file{}",
                    if n == 1 { "" } else { "s" }
                )
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "missing".to_string(),
            Err(e) => format!("unreadable: {e}"),
        };
        lines.push(format!("  {}. {} ({state})", i + 1, dir.display()));
    }
    lines.push("Files:".to_string());
    let mut any_file = false;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut libraries: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && is_library(p))
            .collect();
        libraries.sort();
        for path in libraries {
            any_file = true;
            lines.push(describe_file(&set, &path));
        }
    }
    if !any_file {
        lines.push("  (no library files in any search directory)".to_string());
    }
    let mut warnings = 0;
    if !set.engines.is_empty() {
        lines.push("Upstream each plugin tracks:".to_string());
    }
    for e in &set.engines {
        let u = &e.manifest.upstream;
        lines.push(format!(
            "  {}  {}@{} ({})",
            e.manifest.name,
            u.repo,
            short_commit(&u.commit),
            upstream_age(&u.date, today)
        ));
        if let Some(days) = age_days(&u.date, today).filter(|d| *d > STALE_UPSTREAM_DAYS) {
            warnings += 1;
            lines.push(format!(
                "  warning: {} was checked against {} as of {} ({days} days ago, more than \
                 {STALE_UPSTREAM_DAYS}); re-check its paths and markers against upstream and \
                 install an updated plugin",
                e.manifest.name, u.repo, u.date
            ));
        }
    }
    for warning in &set.warnings {
        lines.push(format!("  warning: {warning}"));
    }
    lines.push(format!(
        "Summary: {} loaded, {} rejected.",
        set.engines.len(),
        set.rejected.len()
    ));
    if warnings > 0 {
        lines.push(format!(
            "{warnings} plugin{} older than {STALE_UPSTREAM_DAYS} days against upstream.",
            if warnings == 1 { "" } else { "s" }
        ));
    }
    // Plugin names, upstream repos, rejection reasons and paths are others' text.
    let lines: Vec<String> = lines.iter().map(|l| escape::plain(l)).collect();
    Ok(lines.join("\n") + "\n")
}

fn describe_file(set: &PluginSet, path: &PathBuf) -> String {
    if let Some(e) = set.engines.iter().find(|e| &e.path == path) {
        let m = &e.manifest;
        return format!(
            "  loaded    {} ({} {}, plugin API {})",
            path.display(),
            m.name,
            m.plugin_version,
            m.api_version
        );
    }
    if let Some(r) = set.rejected.iter().find(|r| &r.path == path) {
        return format!("  rejected  {}: {}", path.display(), r.reason);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if name.contains(FILE_MARKER) {
        format!(
            "  skipped   {} (the same file was already reached via another path)",
            path.display()
        )
    } else {
        format!(
            "  ignored   {} (name does not contain {FILE_MARKER})",
            path.display()
        )
    }
}

/// Rows of the matrix: the standard rows, then any extra keys plugins declare.
fn capability_rows(engines: &[Engine]) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = capability::ROWS
        .iter()
        .map(|(k, l)| (k.to_string(), l.to_string()))
        .collect();
    for e in engines {
        for c in &e.manifest.capabilities {
            if !rows.iter().any(|(k, _)| *k == c.key) {
                rows.push((c.key.clone(), c.key.clone()));
            }
        }
    }
    rows
}

/// The capability matrix: one column per engine, `conditional [n]` cells footnoted.
pub(crate) fn capability_matrix(engines: &[Engine]) -> String {
    let mut header = vec![String::new()];
    header.extend(engines.iter().map(|e| e.manifest.display_name.clone()));
    let mut notes: Vec<String> = Vec::new();
    let rows: Vec<Vec<String>> = capability_rows(engines)
        .into_iter()
        .map(|(key, label)| {
            let mut row = vec![label.clone()];
            for e in engines {
                let cell = e.manifest.capabilities.iter().find(|c| c.key == key);
                row.push(match cell {
                    None => "-".to_string(),
                    Some(c) if c.note.is_empty() => support_word(c.support).to_string(),
                    Some(c) => {
                        notes.push(format!(
                            "{} — {}: {}",
                            e.manifest.display_name, label, c.note
                        ));
                        format!("{} [{}]", support_word(c.support), notes.len())
                    }
                });
            }
            row
        })
        .collect();
    let mut text = table(&header, &rows);
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(text, "  [{}] {}", i + 1, escape::plain(note));
    }
    text
}

fn support_word(support: Support) -> &'static str {
    match support {
        Support::Yes => "yes",
        Support::No => "no",
        Support::Conditional => "conditional",
        Support::Ignored => "ignored",
    }
}

/// Left-aligned columns separated by two spaces. Every cell is plugin text: escaped and
/// cut ([`escape::cell`]), so no control character reaches the terminal and no column
/// is wider than a format width can pad (65,535 characters panicked).
fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let safe =
        |cells: &[String]| -> Vec<String> { cells.iter().map(|c| escape::cell(c)).collect() };
    let header: &[String] = &safe(header);
    let rows: &[Vec<String>] = &rows.iter().map(|r| safe(r)).collect::<Vec<_>>();
    let columns = header.len();
    let width = |i: usize| {
        std::iter::once(header)
            .chain(rows.iter().map(Vec::as_slice))
            .map(|r| r.get(i).map(|c| c.chars().count()).unwrap_or(0))
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns).map(width).collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut text = line(header);
    for row in rows {
        text.push_str(&line(row));
    }
    text
}

/// Whole days from an ISO `date` to `today`; `None` when the date does not parse.
pub(crate) fn age_days(date: &str, today: i64) -> Option<i64> {
    crate::dates::days_from_iso(date).map(|d| today - d)
}

/// `2026-08-22, 99 days old` (or the raw date when it does not parse).
fn upstream_age(date: &str, today: i64) -> String {
    match age_days(date, today) {
        Some(1) => format!("{date}, 1 day old"),
        Some(days) if days >= 0 => format!("{date}, {days} days old"),
        Some(_) => format!("{date}, in the future"),
        None if date.trim().is_empty() => "date unknown".to_string(),
        None => format!("{date}, age unknown"),
    }
}

fn short_commit(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn join_dirs(dirs: &[PathBuf]) -> String {
    let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    shown.join(", ")
}

fn rejected_hint(set: &PluginSet) -> String {
    match set.rejected.len() {
        0 => String::new(),
        n => format!(
            "{n} plugin file{} could not be loaded; run `llm-triage plugins doctor` for details.\n",
            if n == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_ages() {
        let today = crate::dates::days_from_iso("2026-11-29").unwrap();
        assert_eq!(age_days("2026-08-22", today), Some(99));
        assert_eq!(upstream_age("2026-08-22", today), "2026-08-22, 99 days old");
        assert_eq!(upstream_age("2026-11-28", today), "2026-11-28, 1 day old");
        assert_eq!(
            upstream_age("2026-12-01", today),
            "2026-12-01, in the future"
        );
        assert_eq!(upstream_age("", today), "date unknown");
        assert_eq!(upstream_age("soon", today), "soon, age unknown");
    }

    #[test]
    fn doctor_shows_a_hostile_file_name_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let name = "libllm_triage_plugin_x\u{1b}[2J\u{1b}]0;owned\u{7}.so";
        std::fs::write(dir.path().join(name), b"not an ELF file").unwrap();
        let text = doctor_on(&[dir.path().to_path_buf()], 0).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(text.contains("plugin_x\\u{1b}[2J"), "{text}");
    }

    #[test]
    fn tables_align() {
        let header = vec!["A".to_string(), "LONG".to_string()];
        let rows = vec![vec!["xyz".to_string(), "1".to_string()]];
        assert_eq!(table(&header, &rows), "A    LONG\nxyz  1\n");
    }

    #[test]
    fn a_cell_wider_than_a_format_width_is_cut_not_a_panic() {
        let header = vec!["NAME".to_string(), "FILE".to_string()];
        let huge = "d".repeat(70_000);
        let rows = vec![vec![huge, "x\u{1b}[31m.so".to_string()]];
        let text = table(&header, &rows);
        let row = text.lines().nth(1).unwrap();
        assert!(
            row.chars().count() < 3000,
            "{} characters",
            row.chars().count()
        );
        assert!(
            row.contains('…') && row.ends_with("x\\u{1b}[31m.so"),
            "{row}"
        );
    }
}
