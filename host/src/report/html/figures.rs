//! One stage's section: its headline figures, the charts the script draws (family
//! split, step waterfall, idle-gap histogram, representative step, layer x role heatmap,
//! roofline), each only where the stage has data for it, and the kernel table (sortable,
//! filterable, the full name on hover). Every number cell names its JSON field
//! (`data-path`), shown with a fixed number of decimals.

use std::fmt::Write as _;

use crate::report::escape::{html, html_inline, trace};
use crate::report::model::{KernelRow, Report, StageReport};
use crate::report::view::{cpu_op_lines, display_kernel_names, location_lines};

/// The id of stage `index`'s section in article `id`.
pub(super) fn stage_anchor(id: &str, index: usize) -> String {
    format!("{}-stage-{index}", html(id))
}

/// A number cell showing JSON field `path` with `decimals` decimals; a non-finite value
/// (null in the JSON) is `-` and names no field.
pub(super) fn num_cell(path: &str, value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return "<td class=\"num\">-</td>".to_string();
    }
    format!(
        "<td class=\"num\" data-path=\"{}\">{value:.decimals$}</td>",
        html(path)
    )
}

/// A count cell showing JSON field `path`.
pub(super) fn count_cell(path: &str, value: u64) -> String {
    format!(
        "<td class=\"num\" data-path=\"{}\">{value}</td>",
        html(path)
    )
}

/// A chart the script draws into: `kind` for stage `stage` of the article.
fn chart(kind: &str, caption: &str, stage: usize) -> String {
    format!(
        "<figure><figcaption>{caption}</figcaption><div class=\"chart\" data-chart=\"{kind}\" data-stage=\"{stage}\"></div></figure>\n"
    )
}

/// Stage `index` of `report`: figures, then charts and tables where it has data.
pub(super) fn stage_section(
    report: &Report,
    stage: &StageReport,
    index: usize,
    id: &str,
) -> String {
    let base = format!("/stages/{index}");
    let mut out = format!(
        "<section class=\"stage\" id=\"{}\">\n<h2>Stage {}</h2>\n",
        stage_anchor(id, index),
        html_inline(&trace(&stage.stage))
    );
    if !stage.summary.trim().is_empty() {
        let _ = writeln!(out, "<p class=\"summary\">{}</p>", html(&stage.summary));
    }
    out.push_str(&figures_table(stage, &base));
    if !stage.kernels.is_empty() {
        out.push_str(&chart("families", "GPU time by kernel family", index));
    }
    if let Some(timeline) = &stage.timeline {
        if !timeline.steps.is_empty() {
            out.push_str(&chart(
                "waterfall",
                "Step waterfall: each step's wall time, split by where it went",
                index,
            ));
        }
        if timeline.histogram.iter().any(|b| b.count > 0) {
            out.push_str(&chart("histogram", "Idle gaps by length", index));
            out.push_str(&histogram_table(stage, &base));
        }
    }
    if !stage.roles.is_empty() {
        out.push_str(&chart("roles", "GPU time by role", index));
    }
    if let Some(rep) = stage
        .timeline
        .as_ref()
        .and_then(|t| t.representative_step.as_ref())
    {
        if !rep.lanes.is_empty() {
            out.push_str(&chart(
                "steptimeline",
                "Representative step (median wall time): a lane per stream, idle gaps coloured by cause",
                index,
            ));
        }
    }
    let heat = stage
        .layers
        .as_ref()
        .is_some_and(|l| l.rows.iter().any(|r| !r.roles.is_empty()));
    if heat {
        out.push_str(&chart(
            "heatmap",
            "Layer x role: each layer's GPU time by role",
            index,
        ));
    }
    if has_roofline_points(stage) {
        let roofs = if report
            .device
            .as_ref()
            .and_then(|d| d.hbm_tb_per_s)
            .is_some()
        {
            " with the device's compute and bandwidth roofs"
        } else {
            " (no device roofs: the device is unknown)"
        };
        out.push_str(&chart(
            "roofline",
            &format!("Roofline: achieved TFLOP/s against FLOP per byte, log-log{roofs}; under-filled kernels as rings"),
            index,
        ));
    }
    if !stage.kernels.is_empty() {
        out.push_str(&kernel_table(stage, index, id));
    }
    out.push_str("</section>\n");
    out
}

/// Whether any kernel row has both an intensity and an achieved rate to plot.
fn has_roofline_points(stage: &StageReport) -> bool {
    stage.kernels.iter().any(|k| {
        k.roofline.as_ref().is_some_and(|r| {
            r.intensity.is_some_and(|v| v > 0.0) && r.tflops_per_s.is_some_and(|v| v > 0.0)
        })
    })
}

/// The stage's headline figures, each naming its JSON field.
fn figures_table(stage: &StageReport, base: &str) -> String {
    let mut rows = vec![(
        "Total GPU time (µs, streams add up)",
        num_cell(
            &format!("{base}/total_gpu_time_us"),
            stage.total_gpu_time_us,
            3,
        ),
    )];
    if let Some(t) = &stage.timeline {
        let tl = format!("{base}/timeline");
        rows.extend([
            (
                "Span (µs)",
                num_cell(&format!("{tl}/span_us"), t.span_us, 3),
            ),
            (
                "GPU busy (µs)",
                num_cell(&format!("{tl}/busy_us"), t.busy_us, 3),
            ),
            (
                "GPU idle (µs)",
                num_cell(&format!("{tl}/idle_us"), t.idle_us, 3),
            ),
            (
                "GPU idle (% of span)",
                num_cell(&format!("{tl}/idle_pct"), t.idle_pct, 2),
            ),
            (
                "Idle, launch (µs)",
                num_cell(
                    &format!("{tl}/idle_by_cause/launch_us"),
                    t.idle_by_cause.launch_us,
                    3,
                ),
            ),
            (
                "Idle, sync (µs)",
                num_cell(
                    &format!("{tl}/idle_by_cause/sync_us"),
                    t.idle_by_cause.sync_us,
                    3,
                ),
            ),
            (
                "Idle, graph (µs)",
                num_cell(
                    &format!("{tl}/idle_by_cause/graph_us"),
                    t.idle_by_cause.graph_us,
                    3,
                ),
            ),
            (
                "Idle, host (µs)",
                num_cell(
                    &format!("{tl}/idle_by_cause/host_us"),
                    t.idle_by_cause.host_us,
                    3,
                ),
            ),
            (
                "Steps",
                count_cell(&format!("{tl}/step_stats/count"), t.step_stats.count as u64),
            ),
        ]);
        if t.step_stats.count > 0 {
            rows.extend([
                (
                    "Step wall, median (µs)",
                    num_cell(
                        &format!("{tl}/step_stats/median_wall_us"),
                        t.step_stats.median_wall_us,
                        3,
                    ),
                ),
                (
                    "Step wall, p90 (µs)",
                    num_cell(
                        &format!("{tl}/step_stats/p90_wall_us"),
                        t.step_stats.p90_wall_us,
                        3,
                    ),
                ),
            ]);
        }
    }
    if let Some(sol) = &stage.sol {
        rows.push((
            "Speed of light (% of measured, shaped kernels)",
            num_cell(&format!("{base}/sol/sol_pct"), sol.sol_pct, 2),
        ));
    }
    let mut out = "<table class=\"figures\">\n<tbody>\n".to_string();
    for (label, cell) in rows {
        let _ = writeln!(out, "<tr><th>{label}</th>{cell}</tr>");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// The idle-gap histogram's bins as a table.
fn histogram_table(stage: &StageReport, base: &str) -> String {
    let Some(t) = &stage.timeline else {
        return String::new();
    };
    let mut out = "<table class=\"sortable\">\n<thead><tr><th>Gap length</th><th class=\"num\">Gaps</th><th class=\"num\">Total (µs)</th></tr></thead>\n<tbody>\n".to_string();
    for (i, bin) in t.histogram.iter().enumerate() {
        let path = format!("{base}/timeline/histogram/{i}");
        // report.js binLabel draws the chart's bars with the same labels.
        let label = match bin.hi_us {
            Some(hi) => format!("{} – {} µs", bin.lo_us, hi),
            None => format!("≥ {} µs", bin.lo_us),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td>{}{}</tr>",
            html(&label),
            count_cell(&format!("{path}/count"), bin.count),
            num_cell(&format!("{path}/total_us"), bin.total_us, 3)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// The kernel table: every row of the JSON, the shortened name shown and the full one
/// (with every raw trace name) on hover, numbers with their JSON fields.
fn kernel_table(stage: &StageReport, index: usize, id: &str) -> String {
    let table_id = format!("{}-kernels-{index}", html(id));
    let mut out = format!(
        "<h3>Kernels</h3>\n<input type=\"search\" class=\"filter\" data-table=\"{table_id}\" placeholder=\"Filter kernels by name, family, location\" aria-label=\"Filter kernels\"><span class=\"filter-count\"></span>\n<table class=\"sortable kernels\" id=\"{table_id}\">\n<thead><tr><th>Kernel</th><th>Family</th><th class=\"num\">GPU time (µs)</th><th class=\"num\">Share (%)</th><th class=\"num\">Launches</th><th>Python location (site share)</th><th>CPU op</th></tr></thead>\n<tbody>\n"
    );
    let names = display_kernel_names(stage.kernels.iter().map(|k| k.name.as_str()));
    for (row_index, (row, name)) in stage.kernels.iter().zip(names).enumerate() {
        out.push_str(&kernel_row(
            row,
            &name,
            &format!("/stages/{index}/kernels/{row_index}"),
        ));
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

fn kernel_row(row: &KernelRow, shown: &str, path: &str) -> String {
    let mut hover = vec![html(&row.name)];
    hover.extend(
        row.raw_names
            .iter()
            .filter(|r| **r != row.name)
            .map(|r| html(r)),
    );
    let lines = |cell: Vec<String>| {
        cell.iter()
            .map(|l| html_inline(l))
            .collect::<Vec<_>>()
            .join("<br>")
    };
    format!(
        "<tr><td class=\"name\" title=\"{}\"><code>{}</code></td><td>{}</td>{}{}{}<td>{}</td><td>{}</td></tr>\n",
        hover.join("&#10;"),
        html(shown),
        html(&row.family),
        num_cell(&format!("{path}/gpu_time_us"), row.gpu_time_us, 3),
        num_cell(&format!("{path}/share_pct"), row.share_pct, 2),
        count_cell(&format!("{path}/launches"), row.launches),
        lines(location_lines(row)),
        lines(cpu_op_lines(row)),
    )
}

/// With `--all-ranks`: the rank skew strip (the script draws it from `ranks` and
/// `stragglers`); the rank and collective wait tables follow with the other tables.
pub(super) fn ranks_section(report: &Report) -> String {
    if report.ranks.is_empty() {
        return String::new();
    }
    let mut out = "<section class=\"ranks\">\n<h2>Ranks</h2>\n".to_string();
    out.push_str("<figure><figcaption>Rank skew: per rank and stage, collective wait (bar) and the steps it arrived last (dots, by lateness)</figcaption><div class=\"chart\" data-chart=\"ranks\"></div></figure>\n");
    out.push_str("</section>\n");
    out
}
