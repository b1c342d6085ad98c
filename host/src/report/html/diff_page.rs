//! `diff --format html`: the comparison of two runs on one page. Per stage: the step
//! time of both sides, the waterfall chart of its change (the script draws it from the
//! embedded `{"diff": ...}` JSON: base step, each row's delta, new step) and the
//! waterfall as a table whose number cells name their JSON fields; then every table of
//! the text formats' diff view.

use std::fmt::Write as _;

use super::figures::num_cell;
use super::{article::list, data_script, page, tables, REPORT_ID};
use crate::report::diff::diff_view;
use crate::report::escape::{html, html_inline, trace};
use crate::report::model::{DiffReport, DiffStage};

/// The whole diff page; `json` is `diff --format json`'s text of `diff`.
pub(crate) fn diff_page(diff: &DiffReport, json: &str) -> String {
    let shown = diff_view(diff);
    let mut out = format!(
        "<article class=\"report\" data-report=\"{REPORT_ID}\">\n<header>\n<h1>{}</h1>\n<ul class=\"facts\">\n",
        shown.title
    );
    for line in &shown.header {
        let _ = writeln!(out, "<li>{}</li>", html_inline(line));
    }
    out.push_str("</ul>\n</header>\n");
    for (index, stage) in diff.stages.iter().enumerate() {
        out.push_str(&stage_section(stage, index));
    }
    out.push_str(&tables::view_tables(&shown));
    if !shown.notes.is_empty() {
        out.push_str("<h2>Notes</h2>\n");
        out.push_str(&list(&shown.notes));
    }
    out.push_str(&data_script(REPORT_ID, json));
    out.push_str("</article>\n");
    page("llm-triage diff", &out)
}

fn stage_section(stage: &DiffStage, index: usize) -> String {
    let base = format!("/diff/stages/{index}");
    let mut out = format!(
        "<section class=\"stage\" id=\"{REPORT_ID}-stage-{index}\">\n<h2>Stage {}</h2>\n<table class=\"figures\">\n<tbody>\n",
        html_inline(&trace(&stage.stage))
    );
    let delta_pct = stage.delta_pct.unwrap_or(f64::NAN);
    for (label, cell) in [
        (
            "Base step (µs)",
            num_cell(&format!("{base}/base_step_us"), stage.base_step_us, 3),
        ),
        (
            "New step (µs)",
            num_cell(&format!("{base}/new_step_us"), stage.new_step_us, 3),
        ),
        (
            "Delta (µs)",
            num_cell(&format!("{base}/delta_us"), stage.delta_us, 3),
        ),
        (
            "Delta (%)",
            num_cell(&format!("{base}/delta_pct"), delta_pct, 2),
        ),
    ] {
        let _ = writeln!(out, "<tr><th>{label}</th>{cell}</tr>");
    }
    let _ = writeln!(
        out,
        "<tr><th>Status</th><td>{}</td></tr>",
        html(&stage.status)
    );
    out.push_str("</tbody>\n</table>\n");
    if !stage.rows.is_empty() {
        let _ = writeln!(
            out,
            "<figure><figcaption>Waterfall: from the base step to the new step, row by row (per step)</figcaption><div class=\"chart\" data-chart=\"diffwaterfall\" data-stage=\"{index}\"></div></figure>"
        );
        let _ = writeln!(
            out,
            "<table class=\"sortable\">\n<thead><tr><th>Row</th><th class=\"num\">Base (µs)</th><th class=\"num\">New (µs)</th><th class=\"num\">Delta (µs)</th><th>Status</th><th>Matched by</th></tr></thead>\n<tbody>"
        );
        for (r, row) in stage.rows.iter().enumerate() {
            let path = format!("{base}/rows/{r}");
            let _ = writeln!(
                out,
                "<tr><td class=\"name\" title=\"{}\"><code>{}</code></td>{}{}{}<td>{}</td><td>{}</td></tr>",
                html(&row.key),
                html(&crate::report::view::display_kernel_name(&row.key)),
                num_cell(&format!("{path}/base_us"), row.base_us, 3),
                num_cell(&format!("{path}/new_us"), row.new_us, 3),
                num_cell(&format!("{path}/delta_us"), row.delta_us, 3),
                html(&row.status),
                html(&row.matched_by)
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    out.push_str("</section>\n");
    out
}
