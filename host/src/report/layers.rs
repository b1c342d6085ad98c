//! The layers' part of the view, shared by markdown and text: per stage, a compact
//! "Layers" section (the first layer, the middle ones as one range, the last, then every
//! outlier; a line on the period, the prologue and epilogue) and a "Roles" table (GPU
//! time by role in the model). Stages without layers or roles have no section, and a
//! report with neither has no block, so reports without the data read as before.

use std::fmt::Write as _;

use super::escape::trace;
use super::model::{LayerRow, Report, RoleRow, StageLayers};
use super::view::{gpu_time_text, share_text, Align, Block, Row, Section, Table};

const LAYER_HEADER: &[&str] = &["Layers", "Kind", "GPU time", "Share", "Per layer"];
const LAYER_ALIGN: &[Align] = &[
    Align::Left,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
];

const ROLE_HEADER: &[&str] = &["Role", "GPU time", "Share", "Launches"];
const ROLE_ALIGN: &[Align] = &[Align::Left, Align::Right, Align::Right, Align::Right];

/// The "Layers" and "Roles" blocks, each only when some stage has its data.
pub(super) fn layer_blocks(report: &Report) -> Vec<Block> {
    let layers: Vec<Section> = report
        .stages
        .iter()
        .filter_map(|s| Some(layer_section(&s.stage, s.layers.as_ref()?)))
        .collect();
    let roles: Vec<Section> = report
        .stages
        .iter()
        .filter(|s| !s.roles.is_empty())
        .map(|s| role_section(&s.stage, &s.roles))
        .collect();
    let mut blocks = Vec::new();
    if !layers.is_empty() {
        blocks.push(Block {
            title: "Layers",
            sections: layers,
            placeholder: empty(LAYER_HEADER, LAYER_ALIGN),
        });
    }
    if !roles.is_empty() {
        blocks.push(Block {
            title: "Roles",
            sections: roles,
            placeholder: empty(ROLE_HEADER, ROLE_ALIGN),
        });
    }
    blocks
}

/// Never shown: a block exists only with sections.
fn empty(header: &'static [&'static str], align: &'static [Align]) -> Table {
    Table {
        header,
        align,
        share_column: None,
        rows: Vec::new(),
    }
}

fn layer_section(stage: &str, layers: &StageLayers) -> Section {
    let rows = &layers.rows;
    let mut shown: Vec<Row> = Vec::new();
    if let Some(first) = rows.first() {
        shown.push(one_layer(first));
    }
    if rows.len() > 2 {
        shown.push(layer_range(&rows[1..rows.len() - 1]));
    }
    if rows.len() > 1 {
        if let Some(last) = rows.last() {
            shown.push(one_layer(last));
        }
    }
    let mut notes: Vec<String> = rows
        .iter()
        .filter(|r| r.outlier)
        .map(|r| {
            format!(
                "Outlier: layer {} {} ({:+.0}% from the median layer)",
                r.index,
                gpu_time_text(r.gpu_time_us),
                100.0 * (r.gpu_time_us - layers.median_layer_us) / layers.median_layer_us
            )
        })
        .collect();
    notes.extend(layers.notes.iter().cloned());
    Section {
        label: stage.to_string(),
        table: Table {
            header: LAYER_HEADER,
            align: LAYER_ALIGN,
            share_column: Some(3),
            rows: shown,
        },
        summary: Some(summary_line(layers)),
        notes,
    }
}

/// `36 layers of 14 kernels per step (1 step; model config: 36); prologue 13 kernels
/// 0.12 ms, epilogue 10 kernels 0.61 ms; total 120.34 ms (graph replays 0.00 ms)`.
fn summary_line(l: &StageLayers) -> String {
    let expected = match (&l.expected_count, &l.expected_source) {
        (Some(n), Some(source)) => format!("; the model config says {n} ({})", trace(source)),
        _ => String::new(),
    };
    let steps = if l.steps == 1 { "step" } else { "steps" };
    let mut line = format!(
        "{} layers of {} kernels per step, summed over {} {steps}{expected}. Prologue {} kernels {}, epilogue {} kernels {}; layers + prologue + epilogue = {} of kernel time",
        l.count,
        l.period_kernels,
        l.steps,
        l.prologue_kernels,
        gpu_time_text(l.prologue_us),
        l.epilogue_kernels,
        gpu_time_text(l.epilogue_us),
        gpu_time_text(l.total_us),
    );
    if l.graph_replay_us > 0.0 {
        let _ = write!(
            line,
            " ({} replayed from graphs)",
            gpu_time_text(l.graph_replay_us)
        );
    }
    line
}

fn one_layer(row: &LayerRow) -> Row {
    Row {
        cells: vec![
            vec![format!("{} ({})", row.index, row.position)],
            vec![row.kind.clone()],
            vec![gpu_time_text(row.gpu_time_us)],
            vec![share_text(row.share_pct)],
            vec![gpu_time_text(row.gpu_time_us)],
        ],
        share_pct: Some(row.share_pct),
    }
}

/// The middle layers as one row: their sum, and the range per layer.
fn layer_range(rows: &[LayerRow]) -> Row {
    let (first, last) = (rows[0].index, rows[rows.len() - 1].index);
    let time: f64 = rows.iter().map(|r| r.gpu_time_us).sum();
    let share: f64 = rows.iter().map(|r| r.share_pct).sum();
    let min = rows
        .iter()
        .map(|r| r.gpu_time_us)
        .fold(f64::INFINITY, f64::min);
    let max = rows.iter().map(|r| r.gpu_time_us).fold(0.0, f64::max);
    let moe = rows.iter().filter(|r| r.kind == "moe").count();
    let kind = match moe {
        0 => "dense".to_string(),
        n if n == rows.len() => "moe".to_string(),
        n => format!("{n} moe, {} dense", rows.len() - n),
    };
    Row {
        cells: vec![
            vec![format!("{first}-{last} (middle)")],
            vec![kind],
            vec![gpu_time_text(time)],
            vec![share_text(share)],
            vec![format!("{}-{}", gpu_time_text(min), gpu_time_text(max))],
        ],
        share_pct: Some(share),
    }
}

fn role_section(stage: &str, roles: &[RoleRow]) -> Section {
    Section {
        label: stage.to_string(),
        table: Table {
            header: ROLE_HEADER,
            align: ROLE_ALIGN,
            share_column: Some(2),
            rows: roles
                .iter()
                .map(|r| Row {
                    cells: vec![
                        vec![r.role.clone()],
                        vec![gpu_time_text(r.gpu_time_us)],
                        vec![share_text(r.share_pct)],
                        vec![r.launches.to_string()],
                    ],
                    share_pct: Some(r.share_pct),
                })
                .collect(),
        },
        summary: None,
        notes: Vec::new(),
    }
}
