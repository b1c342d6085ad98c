//! The report as tables and lines, before any layout: what each cell says is decided
//! here once, so markdown and text show the same facts and differ only in layout.

use serde_json::Value;

use super::model::{KernelRow, Report, StageReport};

/// The everyday server args worth one header line, in this order. The rest stay in the
/// JSON output (`server_args`). SGLang spells parallelism `tp_size`, vLLM
/// `tensor_parallel_size`; both are listed so either engine's file shows up.
pub const KEY_SERVER_ARGS: &[&str] = &[
    "tp_size",
    "tensor_parallel_size",
    "dp_size",
    "data_parallel_size",
    "pp_size",
    "pipeline_parallel_size",
    "ep_size",
    "attention_backend",
    "quantization",
    "dtype",
    "kv_cache_dtype",
    "disable_cuda_graph",
    "enforce_eager",
    "speculative_algorithm",
];

/// Python sites and CPU ops shown per kernel row; the rest are in the JSON output.
const SITES_SHOWN: usize = 2;

pub const KERNEL_HEADER: &[&str] = &[
    "Kernel",
    "Category",
    "GPU time",
    "Share",
    "Launches",
    "Python location (site share)",
    "CPU op",
];
const KERNEL_ALIGN: &[Align] = &[
    Align::Left,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Left,
];

pub const OVERLAP_HEADER: &[&str] = &[
    "Priority",
    "Verdict",
    "Kernel",
    "Python scope",
    "Formal signal",
    "Dep risk",
    "Recommendation",
];
/// The keys an overlap row (a JSON object in `StageReport.overlap`) is read by, one per
/// column of `OVERLAP_HEADER`.
pub const OVERLAP_KEYS: &[&str] = &[
    "priority",
    "verdict",
    "kernel",
    "python_scope",
    "formal_signal",
    "dep_risk",
    "recommendation",
];

pub const FUSE_HEADER: &[&str] = &[
    "Pattern",
    "Confidence",
    "Related GPU time",
    "Share",
    "Evidence kernels",
    "Current kernel Python location",
    "Candidate fused Python path",
    "Rationale",
];
/// The keys a fuse row (a JSON object in `StageReport.fusions`) is read by, one per
/// column of `FUSE_HEADER`. `related_gpu_time_us` and `share_pct` are numbers.
pub const FUSE_KEYS: &[&str] = &[
    "pattern",
    "confidence",
    "related_gpu_time_us",
    "share_pct",
    "evidence_kernels",
    "current_locations",
    "candidate_paths",
    "rationale",
];
const FUSE_ALIGN: &[Align] = &[
    Align::Left,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Left,
    Align::Left,
    Align::Left,
];

pub const OVERLAP_NOT_COMPUTED: &str =
    "not computed yet (overlap analysis lands in a later release)";
pub const FUSE_NOT_COMPUTED: &str = "not computed yet (fuse analysis lands in a later release)";

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One table cell: one or more lines (markdown joins them with `<br>`).
pub type Cell = Vec<String>;

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub cells: Vec<Cell>,
    /// The row's share of its stage, for colouring the share column.
    pub share_pct: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub header: &'static [&'static str],
    pub align: &'static [Align],
    /// Column holding the row's share, if any.
    pub share_column: Option<usize>,
    pub rows: Vec<Row>,
}

/// One stage's part of a table block, with the lines that follow its table.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub label: String,
    pub table: Table,
    /// The stage summary, first, then its notes.
    pub summary: Option<String>,
    pub notes: Vec<String>,
}

/// A titled table block: stage sections, or (none at all) one placeholder table.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub title: &'static str,
    pub sections: Vec<Section>,
    pub placeholder: Table,
}

impl Block {
    /// Sub-headings are dropped when the only section is `all` (nothing to tell apart).
    pub fn needs_headings(&self) -> bool {
        !(self.sections.len() == 1 && self.sections[0].label == "all")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub title: &'static str,
    pub header: Vec<String>,
    pub blocks: Vec<Block>,
    /// Heuristic similarity notes, kept apart from the deterministic tables.
    pub similarity: Vec<String>,
    pub notes: Vec<String>,
}

/// Everything a layout shows, read from `report`.
pub fn view(report: &Report, min_share_pct: f64) -> View {
    View {
        title: "Triage View",
        header: header_lines(report),
        blocks: vec![
            kernel_block(report, min_share_pct),
            overlap_block(report),
            fuse_block(report),
        ],
        similarity: similarity_lines(report),
        notes: note_lines(report),
    }
}

fn header_lines(report: &Report) -> Vec<String> {
    let mut lines = vec![
        format!("Mode: {}", report.mode),
        format!("Framework: {}", report.framework.display_name),
    ];
    if !report.framework.decided_by.is_empty() {
        lines.push(format!(
            "Decided by: {}",
            report.framework.decided_by.join("; ")
        ));
    }
    let paths: Vec<&str> = report.inputs.iter().map(|i| i.path.as_str()).collect();
    lines.push(format!("Input traces: {}", paths.join(", ")));
    if let Some(model) = &report.model {
        lines.push(format!("Model: {model}"));
    }
    let args: Vec<String> = KEY_SERVER_ARGS
        .iter()
        .filter_map(|key| {
            let value = report.server_args.get(*key)?;
            let text = match value {
                Value::Null => return None,
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(format!("{key}={text}"))
        })
        .collect();
    if !args.is_empty() {
        lines.push(format!("Server args: {}", args.join(", ")));
    }
    lines
}

fn kernel_block(report: &Report, min_share_pct: f64) -> Block {
    let sections = report
        .stages
        .iter()
        .filter(|stage| !stage.kernels.is_empty())
        .map(|stage| Section {
            label: stage.stage.clone(),
            table: kernel_table(&stage.kernels),
            summary: Some(stage.summary.clone()).filter(|s| !s.trim().is_empty()),
            notes: stage.notes.clone(),
        })
        .collect();
    let placeholder = format!(
        "No kernel rows at or above {}% share.",
        pct_bar_text(min_share_pct)
    );
    Block {
        title: "Kernel Table",
        sections,
        placeholder: placeholder_table(KERNEL_HEADER, KERNEL_ALIGN, 0, &placeholder),
    }
}

fn kernel_table(rows: &[KernelRow]) -> Table {
    Table {
        header: KERNEL_HEADER,
        align: KERNEL_ALIGN,
        share_column: Some(3),
        rows: rows.iter().map(kernel_row).collect(),
    }
}

fn kernel_row(row: &KernelRow) -> Row {
    Row {
        cells: vec![
            vec![display_kernel_name(&row.name)],
            vec![row.family.clone()],
            vec![gpu_time_text(row.gpu_time_us)],
            vec![share_text(row.share_pct)],
            vec![row.launches.to_string()],
            location_lines(row),
            cpu_op_lines(row),
        ],
        share_pct: Some(row.share_pct),
    }
}

/// The kernel name as a table shows it: nested template arguments collapsed (the
/// analysis owns the rule). JSON keeps the whole name.
fn display_kernel_name(name: &str) -> String {
    use crate::analyze::names::{short_name, SHORT_ARGS_MAX};
    short_name(name, SHORT_ARGS_MAX)
}

/// The first sites; each with its site share only when there is more than one to tell
/// apart. No site at all reads `unresolved`.
pub fn location_lines(row: &KernelRow) -> Cell {
    let shown = &row.python_locations[..row.python_locations.len().min(SITES_SHOWN)];
    match shown {
        [] => vec!["unresolved".to_string()],
        [only] => vec![only.location.clone()],
        several => several
            .iter()
            .map(|site| format!("{} (site share {:.0}%)", site.location, site.share_pct))
            .collect(),
    }
}

pub fn cpu_op_lines(row: &KernelRow) -> Cell {
    if row.cpu_ops.is_empty() {
        return vec!["-".to_string()];
    }
    row.cpu_ops.iter().take(SITES_SHOWN).cloned().collect()
}

/// `x.xx ms` from microseconds.
pub fn gpu_time_text(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

pub fn share_text(pct: f64) -> String {
    format!("{pct:.1}%")
}

/// The share bar as typed: `1.0`, `0.5`, `0.25` (never `1` nor a rounded `0.2`).
fn pct_bar_text(pct: f64) -> String {
    let text = format!("{pct}");
    if text.contains('.') || !pct.is_finite() {
        text
    } else {
        format!("{text}.0")
    }
}

fn overlap_block(report: &Report) -> Block {
    json_block(
        report,
        "Overlap Opportunity Table",
        |stage| &stage.overlap,
        |rows| Table {
            header: OVERLAP_HEADER,
            align: &[Align::Left; 7],
            share_column: None,
            rows: rows
                .iter()
                .map(|v| json_row(v, OVERLAP_KEYS, None))
                .collect(),
        },
        placeholder_table(OVERLAP_HEADER, &[Align::Left; 7], 2, OVERLAP_NOT_COMPUTED),
    )
}

fn fuse_block(report: &Report) -> Block {
    json_block(
        report,
        "Fuse Opportunity Table",
        |stage| &stage.fusions,
        |rows| Table {
            header: FUSE_HEADER,
            align: FUSE_ALIGN,
            share_column: Some(3),
            rows: rows
                .iter()
                .map(|v| json_row(v, FUSE_KEYS, Some(3)))
                .collect(),
        },
        placeholder_table(FUSE_HEADER, FUSE_ALIGN, 0, FUSE_NOT_COMPUTED),
    )
}

/// A block whose rows are JSON objects (overlap, fuse): one section per stage with rows.
fn json_block(
    report: &Report,
    title: &'static str,
    rows_of: impl Fn(&StageReport) -> &Vec<Value>,
    table_of: impl Fn(&[Value]) -> Table,
    placeholder: Table,
) -> Block {
    let sections = report
        .stages
        .iter()
        .filter(|stage| !rows_of(stage).is_empty())
        .map(|stage| Section {
            label: stage.stage.clone(),
            table: table_of(rows_of(stage)),
            summary: None,
            notes: Vec::new(),
        })
        .collect();
    Block {
        title,
        sections,
        placeholder,
    }
}

/// A table row from a JSON object, one key per column; a missing key reads `-`.
fn json_row(value: &Value, keys: &[&str], share_column: Option<usize>) -> Row {
    let cells = keys
        .iter()
        .map(|key| json_cell(key, value.get(*key)))
        .collect();
    let share_pct = share_column.and_then(|c| value.get(keys[c])?.as_f64());
    Row { cells, share_pct }
}

fn json_cell(key: &str, value: Option<&Value>) -> Cell {
    match value {
        None | Some(Value::Null) => vec!["-".to_string()],
        Some(Value::Number(n)) if key.ends_with("_us") => {
            vec![gpu_time_text(n.as_f64().unwrap_or(f64::NAN))]
        }
        Some(Value::Number(n)) if key.ends_with("_pct") => {
            vec![share_text(n.as_f64().unwrap_or(f64::NAN))]
        }
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if items.is_empty() => vec!["-".to_string()],
        Some(Value::Array(items)) => items.iter().map(plain_text).collect(),
        Some(other) => vec![other.to_string()],
    }
}

fn plain_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A table with one row: `message` in column `at`, `-` everywhere else.
fn placeholder_table(
    header: &'static [&'static str],
    align: &'static [Align],
    at: usize,
    message: &str,
) -> Table {
    let cells = (0..header.len())
        .map(|i| {
            vec![if i == at {
                message.to_string()
            } else {
                "-".to_string()
            }]
        })
        .collect();
    Table {
        header,
        align,
        share_column: None,
        rows: vec![Row {
            cells,
            share_pct: None,
        }],
    }
}

fn similarity_lines(report: &Report) -> Vec<String> {
    report
        .stages
        .iter()
        .flat_map(|stage| {
            stage
                .similarity
                .iter()
                .map(move |note| format!("{}: {}", stage.stage, plain_text(note)))
        })
        .collect()
}

/// Run notes, then the summary and notes of stages that have no kernel section (they
/// would otherwise vanish with their table).
fn note_lines(report: &Report) -> Vec<String> {
    let mut lines = report.notes.clone();
    for stage in report.stages.iter().filter(|s| s.kernels.is_empty()) {
        if !stage.summary.trim().is_empty() {
            lines.push(format!("{}: {}", stage.stage, stage.summary));
        }
        lines.extend(stage.notes.iter().map(|n| format!("{}: {n}", stage.stage)));
    }
    lines
}
