//! `--format html`: one self-contained page that opens from a file, offline. The tables
//! are plain HTML written here (readable with the script off); the report's exact
//! `--format json` text is embedded once (`<script type="application/json"
//! id="report">`) and the page's own small script (`report.js`) draws the charts from
//! it and adds sorting, filtering and hover text. Nothing is fetched: the page carries
//! its CSS and script inline and a Content-Security-Policy of `default-src 'none'`, so
//! the browser refuses any request a future edit might add.
//!
//! Every number a table shows comes from the same `Report` value the JSON is; the cells
//! that show a JSON field name it (`data-path`, a JSON pointer), so a test can compare
//! the page with the JSON and the script can sort by the exact value.

mod article;
pub(crate) mod bundle_page;
pub(crate) mod diff_page;
mod figures;
mod tables;

use super::{json::Json, Renderer, Report};
use crate::report::escape;

/// The page around the content (placeholders `{{name}}`).
const PAGE: &str = include_str!("page.html");
const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("report.js");

/// The id of a single report's embedded JSON (and its `article`'s `data-report`).
pub(crate) const REPORT_ID: &str = "report";

pub(crate) struct Html {
    /// The kernel-table share bar, named in the empty-table row.
    pub min_share_pct: f64,
}

impl Renderer for Html {
    fn render(&self, report: &Report) -> String {
        let json = Json.render(report);
        let content = article::article(report, self.min_share_pct, REPORT_ID, &json);
        page("llm-triage report", &content)
    }
}

/// A whole page: the template with the title, the style, `content` (HTML) and the script.
pub(crate) fn page(title: &str, content: &str) -> String {
    fill(
        PAGE,
        &[
            ("version", &escape::html(env!("CARGO_PKG_VERSION"))),
            ("title", &escape::html(title)),
            ("style", STYLE),
            ("content", content),
            ("script", SCRIPT),
        ],
    )
}

/// `template` with each `{{name}}` replaced by its value. The template is scanned once,
/// so a value that itself holds `{{…}}` (a kernel name) is never expanded.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = &after[..end];
        match values.iter().find(|(name, _)| *name == key) {
            Some((_, value)) => out.push_str(value),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The `<script>` element that carries one report's JSON text as it is. `--format json`
/// never writes `</` or `<!--` (`json.rs`), so the text cannot end the element early.
pub(crate) fn data_script(id: &str, json: &str) -> String {
    format!(
        "<script type=\"application/json\" id=\"{}\" class=\"report-data\">{json}</script>\n",
        escape::html(id)
    )
}

#[cfg(test)]
mod tests;
