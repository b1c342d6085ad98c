//! One report as an `<article>`: its header lines, one section per stage (its figures
//! and the interactive kernel table, `figures.rs`), the rank comparison with
//! `--all-ranks`, every other table of the text formats (`tables.rs`), the similarity
//! notes and the run notes, then its JSON. A bundle page holds several of these.

use std::fmt::Write as _;

use super::{data_script, figures, tables};
use crate::report::escape::{html, html_inline};
use crate::report::view::view;
use crate::report::Report;

/// The article of `report`, whose JSON text (`--format json`) is `json`; `id` names its
/// embedded JSON and prefixes its element ids, so several articles share one page.
pub(crate) fn article(report: &Report, min_share_pct: f64, id: &str, json: &str) -> String {
    let shown = view(report, min_share_pct);
    let mut out = format!("<article class=\"report\" data-report=\"{}\">\n", html(id));
    let _ = writeln!(
        out,
        "<header>\n<h1>{}</h1>\n<ul class=\"facts\">",
        shown.title
    );
    for line in &shown.header {
        let _ = writeln!(out, "<li>{}</li>", html_inline(line));
    }
    out.push_str("</ul>\n");
    out.push_str(&stage_nav(report, id));
    out.push_str("</header>\n");
    for (index, stage) in report.stages.iter().enumerate() {
        out.push_str(&figures::stage_section(report, stage, index, id));
    }
    out.push_str(&figures::ranks_section(report));
    out.push_str(&tables::view_tables(&shown));
    if !shown.similarity.is_empty() {
        out.push_str("<h2>Similarity notes (heuristic, not part of the tables)</h2>\n");
        out.push_str(&list(&shown.similarity));
    }
    if !shown.notes.is_empty() {
        out.push_str("<h2>Notes</h2>\n");
        out.push_str(&list(&shown.notes));
    }
    out.push_str(&data_script(id, json));
    out.push_str("</article>\n");
    out
}

/// Links to the stage sections, when there is more than one.
fn stage_nav(report: &Report, id: &str) -> String {
    if report.stages.len() < 2 {
        return String::new();
    }
    let links: Vec<String> = report
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "<a href=\"#{}\">{}</a>",
                figures::stage_anchor(id, i),
                html(&s.stage)
            )
        })
        .collect();
    format!("<nav>{}</nav>\n", links.join(""))
}

/// View lines as a list of notes.
pub(super) fn list(lines: &[String]) -> String {
    let mut out = "<ul class=\"notes\">\n".to_string();
    for line in lines {
        let _ = writeln!(out, "<li>{}</li>", html_inline(line));
    }
    out.push_str("</ul>\n");
    out
}
