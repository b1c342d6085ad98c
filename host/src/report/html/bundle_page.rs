//! `bundle --format html`: many saved reports on one page, grouped by model as the
//! markdown bundle groups them. A report saved as `--format json` becomes a whole
//! article (its figures, charts and tables, its JSON embedded as `report-N`); a saved
//! text or markdown report is shown as it was written, in a `<pre>` block.

use std::fmt::Write as _;

use super::{article, page};
use crate::report::escape::html;
use crate::report::json::script_safe;
use crate::report::{Report, DEFAULT_MIN_SHARE_PCT};

/// What the bundle page shows, already grouped and ordered (`crate::bundle`).
pub(crate) struct BundleDoc<'a> {
    pub title: &'a str,
    /// The `Generated on` date, as text.
    pub generated: String,
    pub include_toc: bool,
    pub models: Vec<BundleModel<'a>>,
    /// Files of the root left out, with why.
    pub skipped: Vec<(String, String)>,
}

/// One model's reports.
pub(crate) struct BundleModel<'a> {
    /// The model's display name (a report's `Model:`, else the label).
    pub name: String,
    pub label: &'a str,
    pub reports: Vec<BundleReport<'a>>,
}

/// One saved report.
pub(crate) struct BundleReport<'a> {
    pub engine: &'a str,
    pub file: String,
    pub source: String,
    pub body: BundleBody<'a>,
}

/// A saved JSON report (parsed, and its text), or the text of a saved text/markdown
/// report.
pub(crate) enum BundleBody<'a> {
    Report(&'a Report, &'a str),
    Text(&'a str),
}

/// The whole bundle page.
pub(crate) fn bundle_page(doc: &BundleDoc<'_>) -> String {
    let mut out = format!(
        "<header>\n<h1>{}</h1>\n<p><em>Generated on {}</em></p>\n",
        html(doc.title),
        html(&doc.generated)
    );
    if doc.include_toc {
        out.push_str("<nav class=\"contents\"><h2>Contents</h2>\n<ul>\n");
        for (m, model) in doc.models.iter().enumerate() {
            let _ = writeln!(
                out,
                "<li><a href=\"#model-{m}\">{}</a></li>",
                html(&model.name)
            );
        }
        out.push_str("</ul>\n</nav>\n");
    }
    out.push_str("</header>\n");
    let mut next_id = 0;
    for (m, model) in doc.models.iter().enumerate() {
        let _ = writeln!(
            out,
            "<section class=\"model\" id=\"model-{m}\">\n<h2>{}</h2>\n<p>Model id: <code>{}</code></p>",
            html(&model.name),
            html(model.label)
        );
        for report in &model.reports {
            let _ = writeln!(
                out,
                "<h3>{} · {}</h3>\n<p>Source: <code>{}</code></p>",
                html(report.engine),
                html(&report.file),
                html(&report.source)
            );
            match report.body {
                BundleBody::Report(parsed, saved) => {
                    next_id += 1;
                    let id = format!("report-{next_id}");
                    // The saved text itself; one from an older version may hold `</`.
                    let json = script_safe(saved.to_string());
                    out.push_str(&article::article(parsed, DEFAULT_MIN_SHARE_PCT, &id, &json));
                }
                BundleBody::Text(text) => {
                    let _ = writeln!(out, "<pre class=\"saved\">{}</pre>", saved_text(text));
                }
            }
        }
        out.push_str("</section>\n");
    }
    if !doc.skipped.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Skipped files</h2>\n<p>{} file{} under the analysis root not bundled:</p>\n<ul>",
            doc.skipped.len(),
            if doc.skipped.len() == 1 { "" } else { "s" }
        );
        for (path, reason) in &doc.skipped {
            let _ = writeln!(
                out,
                "<li><code>{}</code>: {}</li>",
                html(path),
                html(reason)
            );
        }
        out.push_str("</ul>\n");
    }
    page(doc.title, &out)
}

/// A saved report's text, line by line through [`html`] (which keeps each line on one
/// line and escapes markup), so its layout survives and nothing in it becomes markup.
fn saved_text(text: &str) -> String {
    text.lines().map(html).collect::<Vec<_>>().join("\n")
}
