//! `llm-triage bundle`: saved triage reports of many models and engines in one markdown
//! document (what the predecessor's `render_triage_markdown_bundle.py` did).
//!
//! Reports are found under `--analysis-root` (every `analysis_*.txt|md|json`, any depth)
//! and named with `--analysis-file [LABEL=]PATH`. They are grouped by model id, one
//! section per model, one sub-section per report, engines in a fixed order. Saved text
//! and markdown reports (ours or the predecessor's) are kept as they are, with the table
//! titles turned into headings; our JSON reports are rendered as markdown.
//!
//! Fixed against the predecessor: the model id of a file under the root is
//! the first directory below the root, not the file's parent directory name (so
//! `<model>/vllm_formal/analysis_vllm_live.txt` stays with its model); the glob is
//! `analysis_*`, as documented; contents links use GitHub's anchor rules, duplicates
//! included.
//!
//! The root may be a shared directory others write to, so the scan never leaves it and
//! never reads what is not a saved report: every path is resolved (symlinks included) and
//! must stay inside the resolved root; only plain files are opened (FIFOs, devices and
//! `/proc` links are not), through their resolved path with `O_NOFOLLOW`; each file is
//! read up to [`MAX_REPORT_BYTES`]. Whatever is left out is listed, with why, in the
//! bundle's "Skipped files" section and counted on stderr; it never fails the bundle.

mod html;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::dates::utc_text;
use crate::error::{Result, TriageError};
use crate::report::{self, escape, Format, Report, SCHEMA_VERSION};
use crate::untrusted_file::{read_capped, size_text, Links, Refusal};

/// The most a saved report may hold. Our reports of the largest traces are a few hundred
/// KiB; anything near this is not a report.
pub(crate) const MAX_REPORT_BYTES: u64 = 32 << 20;

/// The document title when `--title` is not given (the predecessor's).
pub(crate) const DEFAULT_TITLE: &str = "Unified LLM Torch Profiler Triage Bundle";

/// The report extensions a root scan picks up.
const REPORT_EXTENSIONS: &[&str] = &["txt", "md", "json"];

/// Replaces a report with nothing in it.
const EMPTY_REPORT: &str = "_Empty analysis output._";

/// Report lines that become level-4 headings.
const SECTION_TITLES: &[&str] = &[
    "Triage View",
    "Kernel Table",
    "Overlap Opportunity Table",
    "Fuse Opportunity Table",
];

/// Engines in the order their reports appear within a model; anything else follows.
const ENGINE_ORDER: &[&str] = &["SGLang", "vLLM", "TensorRT-LLM", "TokenSpeed"];

/// What to bundle, and how.
#[derive(Clone, Debug)]
pub(crate) struct BundleRequest {
    /// Scanned recursively for `analysis_*.{txt,md,json}`.
    pub analysis_root: Option<PathBuf>,
    /// `PATH` or `LABEL=PATH`, in the order given.
    pub analysis_files: Vec<String>,
    pub title: String,
    pub include_toc: bool,
    /// Seconds since the Unix epoch, for the `Generated on` line
    /// ([`crate::dates::now_secs`]).
    pub generated_at: u64,
    /// One HTML page (`--format html`, `report::html::bundle_page`) instead of markdown.
    pub html: bool,
}

/// A report file and the model id it is filed under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub label: String,
    /// As found (under the root) or given: the path the bundle names.
    pub path: PathBuf,
    /// What is opened: for a file under the root, its resolved path inside the root.
    pub source: PathBuf,
    /// A file under the root was resolved already, so a link now means it changed.
    pub links: Links,
}

/// A file under `--analysis-root` that was not bundled, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The bundle document (markdown, or HTML) and what it left out (listed in it too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bundle {
    pub document: String,
    pub skipped: Vec<Skipped>,
}

/// One report, read and normalised.
#[derive(Clone, Debug, PartialEq)]
struct Section {
    label: String,
    path: PathBuf,
    engine: String,
    model: Option<String>,
    body: String,
    /// A saved `--format json` file: its parsed report and its text (the HTML page draws
    /// the report whole and embeds the text, which a parse and re-render would not keep
    /// to the last digit: serde_json's float parsing is not exact).
    report: Option<(Report, String)>,
}

/// The whole bundle as markdown, ending in exactly one newline, and the files of the
/// root it left out.
pub(crate) fn bundle(request: &BundleRequest) -> Result<Bundle> {
    let (entries, mut skipped) = entries(request)?;
    let mut sections = Vec::new();
    for entry in &entries {
        match read_section(entry)? {
            Ok(section) => sections.push(section),
            Err(why) => skipped.push(why),
        }
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    if sections.is_empty() {
        return Err(nothing_to_bundle(request, &skipped));
    }
    if request.html {
        let document = html::html_page(request, &sections, &skipped);
        return Ok(Bundle { document, skipped });
    }
    let mut document = render(
        &request.title,
        request.include_toc,
        request.generated_at,
        &sections,
    );
    document.push_str(&skipped_section(&skipped));
    Ok(Bundle { document, skipped })
}

/// "No analysis files found", saying how many were found and left out.
fn nothing_to_bundle(request: &BundleRequest, skipped: &[Skipped]) -> TriageError {
    let root = request.analysis_root.as_deref().unwrap_or(Path::new("."));
    let mut message = "No analysis files found (looked for analysis_*.txt, analysis_*.md, \
                       analysis_*.json)"
        .to_string();
    if let Some(first) = skipped.first() {
        message = format!(
            "{message}; {} skipped, e.g. {}: {}",
            skipped.len(),
            first.path.display(),
            first.reason
        );
    }
    TriageError::input(root, message)
}

/// The closing "Skipped files" section; empty when nothing was skipped.
fn skipped_section(skipped: &[Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        String::new(),
        "## Skipped files".to_string(),
        String::new(),
        format!(
            "{} file{} under the analysis root not bundled:",
            skipped.len(),
            if skipped.len() == 1 { "" } else { "s" }
        ),
        String::new(),
    ];
    lines.extend(
        skipped
            .iter()
            .map(|s| format!("- `{}`: {}", s.path.display(), s.reason)),
    );
    lines.join("\n") + "\n"
}

/// Every report to bundle: the root's, then the explicit ones, and the files of the root
/// left out. Missing explicit files are one error.
pub(crate) fn entries(request: &BundleRequest) -> Result<(Vec<Entry>, Vec<Skipped>)> {
    if request.analysis_root.is_none() && request.analysis_files.is_empty() {
        return Err(TriageError::Usage(
            "Provide at least one of --analysis-root or --analysis-file.".to_string(),
        ));
    }
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    if let Some(root) = &request.analysis_root {
        let (found, left_out) = root_entries(root)?;
        entries.extend(found);
        skipped.extend(left_out);
    }
    let explicit: Vec<Entry> = request
        .analysis_files
        .iter()
        .map(|spec| explicit_entry(spec))
        .collect();
    let missing: Vec<&Entry> = explicit.iter().filter(|e| !e.path.is_file()).collect();
    if let Some(first) = missing.first() {
        let others: Vec<String> = missing[1..]
            .iter()
            .map(|e| e.path.display().to_string())
            .collect();
        let message = if others.is_empty() {
            "missing analysis file".to_string()
        } else {
            format!(
                "missing analysis file (also missing: {})",
                others.join(", ")
            )
        };
        return Err(TriageError::input(&first.path, message));
    }
    entries.extend(explicit);
    if entries.is_empty() {
        return Err(nothing_to_bundle(request, &skipped));
    }
    Ok((entries, skipped))
}

/// `LABEL=PATH` or `PATH`. A whole argument that names an existing file is a path even
/// if it holds `=`. Without a label, the file's parent directory names the model.
pub(crate) fn explicit_entry(spec: &str) -> Entry {
    let as_path = PathBuf::from(spec);
    let (label, path) = match spec.split_once('=') {
        Some((label, path)) if !label.is_empty() && !as_path.is_file() => {
            (Some(label.to_string()), PathBuf::from(path))
        }
        _ => (None, as_path),
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    let label = label.unwrap_or_else(|| {
        path.parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "analysis".to_string())
    });
    Entry {
        label,
        source: path.clone(),
        path,
        links: Links::Follow,
    }
}

/// Every `analysis_*` report under `root`, in path order, labelled by the first directory
/// below the root (files directly in the root: the root's own name), and the entries left
/// out: links that resolve outside the root, links to directories, special files.
pub(crate) fn root_entries(root: &Path) -> Result<(Vec<Entry>, Vec<Skipped>)> {
    if !root.is_dir() {
        return Err(TriageError::input(
            root,
            "--analysis-root is not a directory",
        ));
    }
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let resolved_root = std::fs::canonicalize(&root)
        .map_err(|e| TriageError::input(&root, format!("cannot resolve: {e}")))?;
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    walk(&root, &resolved_root, &mut found, &mut skipped)?;
    found.sort();
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let root_name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "analysis".to_string());
    let entries = found
        .into_iter()
        .map(|(path, source)| {
            let relative = path.strip_prefix(&root).unwrap_or(&path);
            let mut components = relative.components();
            let first = components.next();
            let label = match (first, components.next()) {
                (Some(dir), Some(_)) => dir.as_os_str().to_string_lossy().into_owned(),
                _ => root_name.clone(),
            };
            Entry {
                label,
                path,
                source,
                links: Links::Refuse,
            }
        })
        .collect();
    Ok((entries, skipped))
}

/// Collects `(path as found, resolved path)` of every report-named plain file below
/// `dir`. Real directories are walked; symlinked ones never (no loops, no way out of the
/// root); a report-named link is kept only when it resolves to a plain file inside the
/// root.
fn walk(
    dir: &Path,
    root: &Path,
    found: &mut Vec<(PathBuf, PathBuf)>,
    skipped: &mut Vec<Skipped>,
) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| TriageError::input(dir, format!("cannot list directory: {e}")))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| TriageError::input(dir, format!("cannot list directory: {e}")))?;
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, root, found, skipped)?;
            continue;
        }
        let skip = |reason: &str| Skipped {
            path: path.clone(),
            reason: reason.to_string(),
        };
        let resolved = match std::fs::canonicalize(&path) {
            Ok(resolved) => resolved,
            Err(_) if is_report_name(&path) => {
                skipped.push(skip("a broken symbolic link"));
                continue;
            }
            Err(_) => continue,
        };
        let target_is_dir = std::fs::symlink_metadata(&resolved).is_ok_and(|m| m.is_dir());
        if !resolved.starts_with(root) {
            if is_report_name(&path) || target_is_dir {
                skipped.push(skip("a symbolic link that leads outside the analysis root"));
            }
        } else if target_is_dir {
            skipped.push(skip("a symbolic link to a directory (not followed)"));
        } else if is_report_name(&path) {
            found.push((path, resolved));
        }
    }
    Ok(())
}

/// `analysis_<anything>.txt|md|json`.
pub(crate) fn is_report_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let extension_ok = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| REPORT_EXTENSIONS.contains(&e.to_lowercase().as_str()));
    name.starts_with("analysis_") && extension_ok
}

/// The engine a file name names (lower-cased, first match), as the predecessor read it.
pub(crate) fn engine_from_file_name(path: &Path) -> Option<&'static str> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.contains("sglang") {
        Some("SGLang")
    } else if name.contains("vllm") {
        Some("vLLM")
    } else if name.contains("trtllm") || name.contains("tensorrt") {
        Some("TensorRT-LLM")
    } else if name.contains("tokenspeed") || name.contains("token-speed") {
        Some("TokenSpeed")
    } else {
        None
    }
}

/// One report, read and normalised; `Ok(Err(..))` for a file under the root that is not
/// a plain file or is over [`MAX_REPORT_BYTES`] (left out and listed). A file named with
/// `--analysis-file` that cannot be bundled is an error: the user asked for it.
fn read_section(entry: &Entry) -> Result<std::result::Result<Section, Skipped>> {
    let bytes = match read_capped(&entry.source, MAX_REPORT_BYTES, entry.links) {
        Ok(bytes) => bytes,
        Err(Refusal::Io(e)) => {
            return Err(TriageError::input(&entry.path, format!("cannot read: {e}")))
        }
        Err(why) => {
            let reason = match why {
                Refusal::TooLarge { cap } => format!("larger than {}", size_text(cap)),
                other => other.to_string(),
            };
            if entry.links == Links::Follow {
                return Err(TriageError::input(&entry.path, reason));
            }
            return Ok(Err(Skipped {
                path: entry.path.clone(),
                reason,
            }));
        }
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| TriageError::input(&entry.path, "report is not UTF-8 text"))?;
    let is_json_file = entry
        .path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let looks_like_json = text.trim_start().starts_with('{') && text.contains("\"schema_version\"");
    let from_name = engine_from_file_name(&entry.path);
    if is_json_file || looks_like_json {
        match json_report(&text) {
            Ok(report) => {
                let body = normalize(
                    &report::render(&report, Format::Markdown, false),
                    &file_name(&entry.path),
                );
                return Ok(Ok(Section {
                    label: entry.label.clone(),
                    path: entry.path.clone(),
                    engine: report.framework.display_name.clone(),
                    model: report.model.clone(),
                    body,
                    report: Some((report, text)),
                }));
            }
            Err(reason) if is_json_file => return Err(TriageError::input(&entry.path, reason)),
            Err(_) => {} // A text report that happens to start with `{`.
        }
    }
    let engine = from_name
        .map(str::to_string)
        .or_else(|| line_value(&text, "Framework: "))
        .unwrap_or_else(|| "other".to_string());
    Ok(Ok(Section {
        label: entry.label.clone(),
        path: entry.path.clone(),
        engine,
        // A report since issue 15 shows the model id as a code span.
        model: line_value(&text, "Model: ").map(|m| escape::code_span_text(&m)),
        body: normalize(&text, &file_name(&entry.path)),
        report: None,
    }))
}

/// Our `--format json` report, or why the text is not one.
pub(crate) fn json_report(text: &str) -> std::result::Result<Report, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    match version {
        Some(v) if v == SCHEMA_VERSION as u64 => {}
        Some(v) => {
            return Err(format!(
                "JSON report has schema_version {v}; this llm-triage reads schema_version {SCHEMA_VERSION}"
            ))
        }
        None => {
            return Err(
                "JSON without schema_version is not an llm-triage report (--format json)"
                    .to_string(),
            )
        }
    }
    serde_json::from_value(value).map_err(|e| format!("not an llm-triage JSON report: {e}"))
}

/// The rest of the first line that starts with `prefix`, trimmed; `None` when absent or empty.
fn line_value(text: &str, prefix: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim_end_matches('\r').strip_prefix(prefix))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A report as bundle text: line ends, colour codes and outer blank lines gone, the table
/// titles as level-4 headings and the stages as level-5 ones, each followed by `tag` (the
/// report's file name), so two reports of one model never share a heading; the aligned
/// tables of `--format text` fenced so they stay aligned.
pub(crate) fn normalize(text: &str, tag: &str) -> String {
    let tagged = |heading: &str| {
        if tag.is_empty() {
            heading.to_string()
        } else {
            format!("{heading} · {tag}")
        }
    };
    let text = strip_ansi(&text.replace("\r\n", "\n"));
    let text = text.trim();
    if text.is_empty() {
        return EMPTY_REPORT.to_string();
    }
    let markdown = text.lines().any(is_markdown_rule);
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end();
        if fenced && line.is_empty() {
            out.push("```".to_string());
            fenced = false;
        }
        if SECTION_TITLES.contains(&line) {
            out.push(format!("#### {}", tagged(line)));
            continue;
        }
        // Our markdown reports: `#`/`##` titles and sections, `###` stages (the
        // predecessor's stages were `#####`).
        if let Some((level, heading)) = heading_level(line) {
            let level = if level <= 2 { 4 } else { 5 };
            out.push(format!("{} {}", "#".repeat(level), tagged(heading)));
            continue;
        }
        if !markdown && !fenced {
            if let Some(stage) = text_stage_heading(line) {
                out.push(format!("##### {}", tagged(stage)));
                continue;
            }
            // A text table: a header (one line, or a few when a header wraps inside its
            // column) followed by its dashed rule.
            if starts_text_table(&lines, i) {
                out.push("```text".to_string());
                fenced = true;
            }
        }
        out.push(line.to_string());
    }
    if fenced {
        out.push("```".to_string());
    }
    out.join("\n")
}

/// `| --- | ---: |`: the rule under a markdown table header.
fn is_markdown_rule(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('|')
        && line.contains("---")
        && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// Whether line `i` is the first line of a `--format text` table header: non-empty, and
/// its dashed rule follows within three lines with no blank or rule line between.
fn starts_text_table(lines: &[&str], i: usize) -> bool {
    /// Most lines a wrapped header takes before its rule.
    const MAX_HEADER_LINES: usize = 3;
    if lines[i].trim().is_empty() || is_text_rule(lines[i]) {
        return false;
    }
    for next in lines.iter().skip(i + 1).take(MAX_HEADER_LINES) {
        if is_text_rule(next) {
            return true;
        }
        if next.trim().is_empty() {
            return false;
        }
    }
    false
}

/// `-----  ---`: the rule under a `--format text` table header.
fn is_text_rule(line: &str) -> bool {
    let line = line.trim_end();
    line.starts_with("---") && line.chars().all(|c| c == '-' || c == ' ')
}

/// `[extend/prefill]` (a `--format text` stage line) -> `extend/prefill`.
fn text_stage_heading(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?;
    matches!(inner, "extend/prefill" | "decode" | "all").then_some(inner)
}

/// Removes ANSI escape sequences (`ESC [ ... letter`), for reports saved from a terminal.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The model's heading: the longest `Model:` any of its reports names, else the label.
fn display_name(label: &str, sections: &[&Section]) -> String {
    let mut best: Option<&str> = None;
    for model in sections.iter().filter_map(|s| s.model.as_deref()) {
        if best.is_none_or(|b| model.chars().count() > b.chars().count()) {
            best = Some(model);
        }
    }
    best.unwrap_or(label).to_string()
}

fn engine_rank(engine: &str) -> usize {
    if engine == "other" {
        return ENGINE_ORDER.len() + 1;
    }
    ENGINE_ORDER
        .iter()
        .position(|e| *e == engine)
        .unwrap_or(ENGINE_ORDER.len())
}

/// The reports grouped by model: (display name, label, its reports in engine order),
/// models by display name. The markdown and the HTML bundle share this order.
fn grouped(sections: &[Section]) -> Vec<(String, &str, Vec<&Section>)> {
    let mut labels: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<&Section>> = HashMap::new();
    for s in sections {
        if !groups.contains_key(s.label.as_str()) {
            labels.push(&s.label);
        }
        groups.entry(&s.label).or_default().push(s);
    }
    let mut models: Vec<(String, &str)> = labels
        .iter()
        .map(|l| (display_name(l, &groups[l]), *l))
        .collect();
    models.sort_by(|a, b| {
        (a.0.to_lowercase(), a.1.to_lowercase()).cmp(&(b.0.to_lowercase(), b.1.to_lowercase()))
    });
    models
        .into_iter()
        .map(|(display, label)| {
            let mut reports = groups[label].clone();
            reports.sort_by(|a, b| {
                (engine_rank(&a.engine), file_name(&a.path), &a.path).cmp(&(
                    engine_rank(&b.engine),
                    file_name(&b.path),
                    &b.path,
                ))
            });
            (display, label, reports)
        })
        .collect()
}

/// The document: title, date, contents, then one section per model.
fn render(title: &str, include_toc: bool, generated_at: u64, sections: &[Section]) -> String {
    let models = grouped(sections);

    let mut slugger = Slugger::default();
    slugger.slug(title);
    if include_toc {
        slugger.slug("Contents");
    }
    let mut toc = Vec::new();
    let mut body = Vec::new();
    for (display, label, reports) in models {
        // The display name and label come from reports and the command line: escaped.
        let shown = escape::markdown_inline(&display);
        toc.push(format!("- [{shown}](#{})", slugger.slug(&display)));
        body.push(format!("## {shown}"));
        body.push(String::new());
        body.push(format!("Model id: {}", escape::code_span(label)));
        body.push(String::new());
        for report in reports {
            slugger.slug(&format!("{} · {}", report.engine, file_name(&report.path)));
            body.push(format!(
                "### {} · {}",
                escape::markdown_inline(&report.engine),
                escape::markdown_inline(&file_name(&report.path))
            ));
            body.push(String::new());
            body.push(format!(
                "Source: {}",
                escape::code_span(&report.path.display().to_string())
            ));
            body.push(String::new());
            for line in report.body.lines() {
                if let Some(text) = heading_text(line) {
                    slugger.slug(text);
                }
            }
            body.push(report.body.clone());
            body.push(String::new());
        }
    }
    let mut doc = vec![
        format!("# {title}"),
        String::new(),
        format!("_Generated on {}_", utc_text(generated_at)),
        String::new(),
    ];
    if include_toc {
        doc.push("## Contents".to_string());
        doc.push(String::new());
        doc.extend(toc);
        doc.push(String::new());
    }
    doc.extend(body);
    doc.join("\n").trim_end().to_string() + "\n"
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The text of an ATX heading line (`#` to `######`, then a space); fenced code is not
/// tracked because the bodies fence only tables, which hold no `#` lines at the start.
fn heading_text(line: &str) -> Option<&str> {
    heading_level(line).map(|(_, text)| text)
}

/// The level and text of an ATX heading line.
fn heading_level(line: &str) -> Option<(usize, &str)> {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    line[hashes..]
        .strip_prefix(' ')
        .map(|text| (hashes, text.trim()))
}

/// GitHub's heading anchors: lower case; every character that is not a letter, digit,
/// space, `-` or `_` dropped; each space a `-`; the n-th repeat of an anchor gets `-n`.
#[derive(Default)]
pub(crate) struct Slugger {
    seen: HashMap<String, usize>,
}

impl Slugger {
    pub(crate) fn slug(&mut self, heading: &str) -> String {
        let base: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut slug = base.clone();
        while self.seen.contains_key(&slug) {
            let count = self.seen.entry(base.clone()).or_insert(0);
            *count += 1;
            slug = format!("{base}-{count}");
        }
        self.seen.insert(slug.clone(), 0);
        slug
    }
}

#[cfg(test)]
mod tests;
