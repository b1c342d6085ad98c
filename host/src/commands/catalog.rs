//! `llm-triage catalog list|show|validate`: the merged fusion catalog of the loaded
//! plugins and the host (`--catalog DIR` overrides), and the text a catalog author reads
//! about it. The loaders in `catalog` never format for a terminal.

use crate::catalog::{self, Catalog, Evidence, FusionCatalog};
use crate::cli::{CatalogCommand, CatalogFormat, GlobalArgs};
use crate::error::{Result, TriageError};
use crate::output::print_stdout;
use crate::report::escape;
use crate::triage::load_plugins;
use std::fmt::Write as _;

pub fn exec(command: &CatalogCommand, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    let text = match command {
        CatalogCommand::List {
            format,
            catalog: dir,
        } => {
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            list_rows(&rows, *format == CatalogFormat::Json)
        }
        CatalogCommand::Show {
            id,
            format,
            catalog: dir,
        } => {
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            show_row(&rows, id, *format == CatalogFormat::Json)?
        }
        CatalogCommand::Validate { catalog: dir } => {
            // The same loader a triage uses: a catalog validate passes cannot fail a triage.
            validation_summary(&Catalog::load(dir.as_deref(), &plugin_set)?)
        }
    };
    print_stdout(&text)
}

/// `catalog list`: one line per row (`id  origin  status  label`), or with `json` an
/// array of rows (every field, patterns as written).
fn list_rows(catalog: &FusionCatalog, json: bool) -> String {
    if json {
        let mut text =
            serde_json::to_string_pretty(&catalog.rules).unwrap_or_else(|_| "[]".to_string());
        text.push('\n');
        return text;
    }
    // Cells are escaped and cut (`escape::cell`): a `--catalog DIR` or a plugin supplies
    // them, and a column wider than 65,535 characters would panic the padding.
    let cells: Vec<[String; 4]> = catalog
        .rules
        .iter()
        .map(|rule| [&rule.id, &rule.origin, rule.status.label(), &rule.label].map(escape::cell))
        .collect();
    let width = cells
        .iter()
        .map(|[id, ..]| id.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for [id, origin, status, label] in &cells {
        let _ = writeln!(out, "{id:width$}  {origin:10}  {status:9}  {label}");
    }
    let _ = writeln!(out, "{}", count_line(catalog));
    out
}

/// `catalog show ID`: every field of one row, or the row as JSON.
fn show_row(catalog: &FusionCatalog, id: &str, json: bool) -> Result<String, TriageError> {
    let rule = catalog.find(id).ok_or_else(|| {
        TriageError::Usage(format!(
            "no fusion row {id:?}; `llm-triage catalog list` shows the ids"
        ))
    })?;
    if json {
        let mut text = serde_json::to_string_pretty(rule).unwrap_or_default();
        text.push('\n');
        return Ok(text);
    }
    let list = |items: &[String]| {
        if items.is_empty() {
            "-".to_string()
        } else {
            items.join(", ")
        }
    };
    let patterns = |e: &Evidence| {
        let mut parts = Vec::new();
        for (field, ps) in [
            ("kernel", &e.kernel),
            ("cpu_op", &e.cpu_op),
            ("location", &e.location),
        ] {
            if !ps.is_empty() {
                let texts: Vec<&str> = ps.iter().map(|p| p.text.as_str()).collect();
                parts.push(format!("{field}: {}", texts.join(" | ")));
            }
        }
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join("; ")
        }
    };
    let mut lines = vec![
        format!("id: {}", rule.id),
        format!("label: {}", rule.label),
        format!("origin: {}", rule.origin),
        format!(
            "status: {}{}",
            rule.status.label(),
            rule.pr.map(|n| format!(" (PR #{n})")).unwrap_or_default()
        ),
        format!("priority: {}", rule.priority),
        format!(
            "min_share: {}%, likely_share: {}%",
            rule.min_share, rule.likely_share
        ),
        format!("subsumes: {}", list(&rule.subsumes)),
        format!("active: {}", patterns(&rule.active)),
    ];
    for group in &rule.split {
        let same_site = group
            .same_site_as
            .as_ref()
            .map(|a| format!(" (same site as {a})"))
            .unwrap_or_default();
        lines.push(format!(
            "split {}{same_site}: {}",
            group.name,
            patterns(&group.evidence)
        ));
    }
    lines.push(format!(
        "gate: models {}{}, min_tp {}{}",
        list(&rule.gate.models_include),
        if rule.gate.models_exclude.is_empty() {
            String::new()
        } else {
            format!(" (not {})", rule.gate.models_exclude.join(", "))
        },
        rule.gate.min_tp,
        if rule.gate.devices.is_empty() {
            String::new()
        } else {
            format!(", devices {}", rule.gate.devices.join(", "))
        }
    ));
    lines.push(format!("candidate_paths: {}", list(&rule.candidate_paths)));
    lines.push(format!("rationale: {}", rule.rationale));
    lines.push(format!("checked_against: {}", list(&rule.checked_against)));
    lines.push(format!("source: {}", rule.source));
    // Catalog text from `--catalog DIR` or a plugin: one line per field, escaped.
    let lines: Vec<String> = lines.iter().map(|l| escape::plain(l)).collect();
    Ok(lines.join("\n") + "\n")
}

/// `catalog validate`: the one-line verdict once every file loaded (the overlap paths
/// are checked, not counted, so the line reads as it always has).
fn validation_summary(catalog: &Catalog) -> String {
    format!(
        "catalog OK: {} kernel-family rules; {}; sources: {}\n",
        catalog.families.rules.len(),
        count_line(&catalog.fusions),
        catalog.fusions.sources.join(", ")
    )
}

/// `60 fusion rows (sglang 14, vllm 18, ...)`.
fn count_line(catalog: &FusionCatalog) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for rule in &catalog.rules {
        match counts.iter_mut().find(|(o, _)| *o == rule.origin) {
            Some((_, n)) => *n += 1,
            None => counts.push((rule.origin.clone(), 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(o, n)| format!("{o} {n}")).collect();
    format!("{} fusion rows ({})", catalog.rules.len(), parts.join(", "))
}
