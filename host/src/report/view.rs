//! The report as tables and lines, before any layout: what each cell says is decided
//! here once, so markdown and text show the same facts and differ only in layout.
//! Text that came from a trace, a server or a plugin (kernel names, Python locations,
//! CPU ops, paths, the model id, server arg values) is marked with [`escape::trace`]:
//! markdown shows it as a code span, text as plain escaped characters.

use serde_json::Value;
use std::fmt::Write as _;

use super::escape::trace;
use super::model::{
    FusionEvidence, FusionRow, KernelRow, OverlapRow, OverlapStage, Report, SimilarityNote,
    SiteShare,
};

/// The everyday server args worth one header line, in this order. The rest stay in the
/// JSON output (`server_args`). SGLang spells parallelism `tp_size`, vLLM
/// `tensor_parallel_size`; both are listed so either engine's file shows up.
pub(super) const KEY_SERVER_ARGS: &[&str] = &[
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

pub(super) const KERNEL_HEADER: &[&str] = &[
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

pub(super) const OVERLAP_HEADER: &[&str] = &[
    "Priority",
    "Verdict",
    "Kernel",
    "Python scope",
    "Formal signal",
    "Dep risk",
    "Recommendation",
];
const OVERLAP_ALIGN: &[Align] = &[Align::Left; 7];

pub(super) const FUSE_HEADER: &[&str] = &[
    "Pattern",
    "Confidence",
    "Related GPU time",
    "Share",
    "Evidence kernels",
    "Current kernel Python location",
    "Candidate fused Python path",
    "Rationale",
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

/// The overlap placeholder row when no stage had GPU work at all.
pub(super) const OVERLAP_NO_GPU_WORK: &str = "No GPU work to sweep for overlap.";
/// The fuse placeholder row when no stage matched a catalog row.
pub(super) const FUSE_NO_MATCH: &str = "No source-backed fusion pattern matched this trace.";
/// Evidence kernels a fuse row shows (all are in the JSON row), and the share they need.
const EVIDENCE_SHOWN: usize = 3;
/// Locations shown per fuse row in the tables (all of them are in the JSON row).
const LOCATIONS_SHOWN: usize = 4;
const EVIDENCE_MIN_SHARE_PCT: f64 = 1.0;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Align {
    Left,
    Right,
}

/// One table cell: one or more lines (markdown joins them with `<br>`).
pub(super) type Cell = Vec<String>;

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Row {
    pub cells: Vec<Cell>,
    /// The row's share of its stage, for colouring the share column.
    pub share_pct: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Table {
    pub header: &'static [&'static str],
    pub align: &'static [Align],
    /// Column holding the row's share, if any.
    pub share_column: Option<usize>,
    pub rows: Vec<Row>,
}

/// One stage's part of a table block, with the lines that follow its table.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Section {
    pub label: String,
    pub table: Table,
    /// The stage summary, first, then its notes.
    pub summary: Option<String>,
    pub notes: Vec<String>,
}

/// A titled table block: stage sections, or (none at all) one placeholder table.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Block {
    pub title: &'static str,
    pub sections: Vec<Section>,
    pub placeholder: Table,
}

impl Block {
    /// Sub-headings are dropped when the only section is `all` (nothing to tell apart).
    pub(super) fn needs_headings(&self) -> bool {
        !(self.sections.len() == 1 && self.sections[0].label == "all")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct View {
    pub title: &'static str,
    pub header: Vec<String>,
    pub blocks: Vec<Block>,
    /// Heuristic similarity notes, kept apart from the deterministic tables.
    pub similarity: Vec<String>,
    pub notes: Vec<String>,
}

/// Everything a layout shows, read from `report`.
pub(super) fn view(report: &Report, min_share_pct: f64) -> View {
    // A graph capture ran nothing: its header line replaces the tables, whose empty
    // placeholders would read as "this run had no GPU work".
    let only_captures =
        !report.inputs.is_empty() && report.inputs.iter().all(|i| i.graph_capture.is_some());
    let blocks = if only_captures {
        Vec::new()
    } else {
        let mut blocks = vec![
            kernel_block(report, min_share_pct),
            overlap_block(report, min_share_pct),
            fuse_block(report),
        ];
        blocks.extend(super::timeline::timeline_blocks(report));
        blocks.extend(super::ranks::rank_blocks(report));
        blocks.extend(super::ep::ep_blocks(report));
        blocks.extend(super::roofline::roofline_blocks(report));
        blocks.extend(super::layers::layer_blocks(report));
        blocks
    };
    View {
        title: "Triage View",
        header: header_lines(report),
        blocks,
        similarity: similarity_lines(report),
        notes: note_lines(report),
    }
}

fn header_lines(report: &Report) -> Vec<String> {
    let mut lines = vec![format!("Mode: {}", report.mode)];
    let paths = |inputs: &[super::model::InputInfo]| {
        inputs
            .iter()
            .map(|i| trace(&i.path))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &report.mapping_framework {
        // Mapping+formal: one framework line when both sides agree, else a mapping and a
        // formal line (the predecessor's header).
        Some(mapping) => {
            if mapping.name == report.framework.name {
                lines.push(format!("Framework: {}", report.framework.display_name));
            } else {
                lines.push(format!("Mapping framework: {}", mapping.display_name));
                lines.push(format!(
                    "Formal framework: {}",
                    report.framework.display_name
                ));
            }
            if !report.framework.decided_by.is_empty() {
                lines.push(format!(
                    "Decided by: {}",
                    report.framework.decided_by.join("; ")
                ));
            }
            lines.push(format!("Mapping traces: {}", paths(&report.mapping_inputs)));
            lines.push(format!("Formal traces: {}", paths(&report.inputs)));
        }
        None => {
            lines.push(format!("Framework: {}", report.framework.display_name));
            if !report.framework.decided_by.is_empty() {
                lines.push(format!(
                    "Decided by: {}",
                    report.framework.decided_by.join("; ")
                ));
            }
            lines.push(format!("Input traces: {}", paths(&report.inputs)));
        }
    }
    if let Some(model) = &report.model {
        lines.push(format!("Model: {}", trace(model)));
    }
    if let Some(class) = &report.model_class {
        lines.push(format!(
            "Model class: {} (from the trace's nn.Module frames)",
            trace(class)
        ));
    }
    lines.extend(super::device::device_line(report));
    for input in &report.inputs {
        if let Some(capture) = &input.graph_capture {
            lines.push(graph_capture_line(&input.path, capture));
        }
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
            Some(trace(&format!("{key}={text}")))
        })
        .collect();
    if !args.is_empty() {
        lines.push(format!("Server args: {}", args.join(", ")));
    }
    // Which file the model and args come from, so a reader can judge whose it is.
    if let Some(path) = &report.server_args_path {
        lines.push(format!("Server args file: {path}"));
    }
    lines
}

/// One line for a trace that captured a graph: what it is, that nothing ran, what to
/// profile instead.
fn graph_capture_line(path: &str, capture: &super::model::GraphCaptureInfo) -> String {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let named = if capture.annotations.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = capture.annotations.iter().map(|a| trace(a)).collect();
        format!(" ({})", names.join(", "))
    };
    format!(
        "Graph capture: {name} recorded a CUDA/HIP graph being captured{named}: {} kernel launches went into the graph and only {} kernels executed, so there is no kernel table; to see where GPU time goes, profile serving steps that replay the graph (after warm-up)",
        capture.launches, capture.kernels_executed,
        name = trace(name)
    )
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
        rows: rows
            .iter()
            .zip(display_kernel_names(rows.iter().map(|r| r.name.as_str())))
            .map(|(row, name)| kernel_row(row, name))
            .collect(),
    }
}

fn kernel_row(row: &KernelRow, name: String) -> Row {
    Row {
        cells: vec![
            vec![trace(&name)],
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
/// leaf `trace::names` owns the rule). JSON keeps the whole name.
pub(super) fn display_kernel_name(name: &str) -> String {
    use crate::trace::names::{short_name, SHORT_ARGS_MAX};
    short_name(name, SHORT_ARGS_MAX)
}

/// The names of one table's rows as it shows them: each as [`display_kernel_name`], and
/// no two alike (rows that would collide keep the first part that differs).
pub(super) fn display_kernel_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    use crate::trace::names::{distinct_short_names, SHORT_ARGS_MAX};
    let names: Vec<&str> = names.collect();
    distinct_short_names(&names, SHORT_ARGS_MAX)
}

/// What `report::model` puts for a site without a Python frame: the tool's word, not
/// trace text.
const UNRESOLVED: &str = "unresolved";

/// A Python location as trace text, except [`UNRESOLVED`].
fn location_text(location: &str) -> String {
    if location == UNRESOLVED {
        UNRESOLVED.to_string()
    } else {
        trace(location)
    }
}

/// The first sites; each with its calling module, its site share only when there is
/// more than one to tell apart, and where it came from when that was not the launch
/// itself ([`resolved_source`]; a mapping site with the row's pair kind and confidence),
/// in parentheses after the location. No site at all
/// reads `unresolved`.
pub(super) fn location_lines(row: &KernelRow) -> Cell {
    let shown = &row.python_locations[..row.python_locations.len().min(SITES_SHOWN)];
    let several = shown.len() > 1;
    if shown.is_empty() {
        return vec![UNRESOLVED.to_string()];
    }
    shown
        .iter()
        .map(|site| {
            let share = several.then(|| format!("site share {:.0}%", site.share_pct));
            let notes: Vec<String> = site
                .module
                .as_deref()
                .map(trace)
                .into_iter()
                .chain(resolved_source(site).map(|source| match (source, row) {
                    (
                        "mapping",
                        KernelRow {
                            matched_by: Some(by),
                            mapping_confidence: Some(confidence),
                            ..
                        },
                    ) if ["exact", "family", "fused-split"].contains(&by.as_str()) => {
                        // The tool's own words (a saved report's other text is not shown).
                        format!("mapping by {by} {confidence:.2}")
                    }
                    _ => source.to_string(),
                }))
                .chain(share)
                .collect();
            if notes.is_empty() {
                location_text(&site.location)
            } else {
                format!("{} ({})", location_text(&site.location), notes.join(", "))
            }
        })
        .collect()
}

/// The source a site's location was resolved from, when it was not its own launch:
/// `capture`, `mapping` or `graph-node`. `eager` says nothing, and `graph-launch` the
/// stage note says already (every replayed kernel charged to its graph launch).
fn resolved_source(site: &SiteShare) -> Option<&'static str> {
    match site.launch_site_source.as_str() {
        "capture" => Some("capture"),
        "mapping" => Some("mapping"),
        "graph-node" => Some("graph-node"),
        _ => None,
    }
}

pub(super) fn cpu_op_lines(row: &KernelRow) -> Cell {
    if row.cpu_ops.is_empty() {
        return vec!["-".to_string()];
    }
    row.cpu_ops
        .iter()
        .take(SITES_SHOWN)
        .map(|op| trace(op))
        .collect()
}

/// `x.xx ms` from microseconds.
pub(super) fn gpu_time_text(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

pub(super) fn share_text(pct: f64) -> String {
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

/// One section per stage the overlap sweep covered: its rows (or the predecessor's
/// "no rows cleared the bar" row), then the sweep's busy/overlapped/idle line and its
/// notes. A stage with one busy stream has no table, only its one-line note.
fn overlap_block(report: &Report, min_share_pct: f64) -> Block {
    let sections = report
        .overlap_stages
        .iter()
        .map(|measured| {
            let rows: &[OverlapRow] = report
                .stages
                .iter()
                .find(|s| s.stage == measured.stage)
                .map_or(&[], |s| s.overlap.as_slice());
            let table = if !rows.is_empty() {
                Table {
                    header: OVERLAP_HEADER,
                    align: OVERLAP_ALIGN,
                    share_column: None,
                    rows: rows
                        .iter()
                        .zip(display_kernel_names(rows.iter().map(|r| r.kernel.as_str())))
                        .map(|(r, name)| overlap_row(r, name, measured.busy_us))
                        .collect(),
                }
            } else if measured.streams >= 2 && !measured.effectively_one_stream {
                let message = format!(
                    "No rows cleared the {}% reporting bar.",
                    pct_bar_text(min_share_pct)
                );
                placeholder_table(OVERLAP_HEADER, OVERLAP_ALIGN, 2, &message)
            } else {
                Table {
                    rows: Vec::new(),
                    ..placeholder_table(OVERLAP_HEADER, OVERLAP_ALIGN, 2, "")
                }
            };
            Section {
                label: measured.stage.clone(),
                table,
                summary: (measured.streams >= 2 && !measured.effectively_one_stream)
                    .then(|| sweep_line(measured)),
                notes: measured.notes.clone(),
            }
        })
        .collect();
    Block {
        title: "Overlap Opportunity Table",
        sections,
        placeholder: placeholder_table(OVERLAP_HEADER, OVERLAP_ALIGN, 2, OVERLAP_NO_GPU_WORK),
    }
}

fn overlap_row(row: &OverlapRow, name: String, busy_us: f64) -> Row {
    let mut recommendation = vec![row.recommendation.clone()];
    if let Some(id) = &row.known_path {
        recommendation.push(format!("known path: {id}"));
    }
    Row {
        cells: vec![
            vec![row.priority.clone()],
            vec![row.verdict.clone()],
            vec![trace(&name)],
            vec![row
                .python_scope
                .as_deref()
                .map_or_else(|| "unmapped".to_string(), trace)],
            vec![formal_signal(row, busy_us)],
            vec![dep_risk_text(row)],
            recommendation,
        ],
        share_pct: None,
    }
}

/// The Dep risk cell: the predecessor's label, then why (`high (next op on the same
/// stream (gemm, 0.3 us gap): producer/consumer by category)`).
pub(super) fn dep_risk_text(row: &OverlapRow) -> String {
    if row.dep_reason.is_empty() {
        row.dep_risk.clone()
    } else {
        format!("{} ({})", row.dep_risk, row.dep_reason)
    }
}

/// The predecessor's Formal signal cell: `27452.8 us, share 38.9%, excl 100.0% / hid 0.0%`,
/// the share being of the stage's busy time (the union over streams).
pub(super) fn formal_signal(row: &OverlapRow, busy_us: f64) -> String {
    let ratio = |part: f64| {
        if row.total_us > 0.0 {
            100.0 * part / row.total_us
        } else {
            0.0
        }
    };
    let share = if busy_us > 0.0 {
        100.0 * row.total_us / busy_us
    } else {
        0.0
    };
    format!(
        "{:.1} us, share {:.1}%, excl {:.1}% / hid {:.1}%",
        row.total_us,
        share,
        ratio(row.exclusive_us),
        ratio(row.hidden_us)
    )
}

/// `GPU busy 4.06 ms on 2 streams: 0.61 ms overlapped, 0.02 ms idle`.
fn sweep_line(measured: &OverlapStage) -> String {
    let mut line = format!(
        "GPU busy {} on {} streams: {} overlapped, {} idle",
        gpu_time_text(measured.busy_us),
        measured.streams,
        gpu_time_text(measured.overlapped_us),
        gpu_time_text(measured.idle_us)
    );
    if measured.same_stream_overlap_us > 0.0 {
        let _ = write!(
            line,
            ", {} same-stream overlap",
            gpu_time_text(measured.same_stream_overlap_us)
        );
    }
    line
}

fn fuse_block(report: &Report) -> Block {
    let sections = report
        .stages
        .iter()
        .filter(|stage| !stage.fusions.is_empty())
        .map(|stage| Section {
            label: stage.stage.clone(),
            table: Table {
                header: FUSE_HEADER,
                align: FUSE_ALIGN,
                share_column: Some(3),
                rows: stage.fusions.iter().map(fuse_row).collect(),
            },
            summary: None,
            notes: Vec::new(),
        })
        .collect();
    Block {
        title: "Fuse Opportunity Table",
        sections,
        placeholder: placeholder_table(FUSE_HEADER, FUSE_ALIGN, 0, FUSE_NO_MATCH),
    }
}

fn fuse_row(row: &FusionRow) -> Row {
    let dash_if_empty = |cell: Cell| {
        if cell.is_empty() {
            vec!["-".to_string()]
        } else {
            cell
        }
    };
    Row {
        cells: vec![
            vec![row.label.clone()],
            vec![row.confidence.clone()],
            vec![gpu_time_text(row.related_gpu_time_us)],
            vec![share_text(row.share_pct)],
            dash_if_empty(evidence_lines(row)),
            dash_if_empty(
                row.python_locations
                    .iter()
                    .take(LOCATIONS_SHOWN)
                    .map(|l| location_text(&location_cell(l)))
                    .collect(),
            ),
            dash_if_empty(row.candidate_paths.clone()),
            vec![row.rationale.clone()],
        ],
        share_pct: Some(row.share_pct),
    }
}

/// `func @ path:line` from `path:line func`; other shapes unchanged.
fn location_cell(location: &str) -> String {
    match location.split_once(' ') {
        Some((path, func)) if path.contains(':') && !func.trim().is_empty() => {
            format!("{} @ {path}", func.trim())
        }
        _ => location.to_string(),
    }
}

/// The related kernels at or above 1% share, in evidence order, at most 3; the first
/// one when none reaches 1%.
fn evidence_lines(row: &FusionRow) -> Cell {
    let text = |e: &FusionEvidence| {
        format!(
            "{} ({})",
            trace(&display_kernel_name(&e.kernel)),
            share_text(e.share_pct)
        )
    };
    let big: Cell = row
        .evidence
        .iter()
        .filter(|e| e.share_pct >= EVIDENCE_MIN_SHARE_PCT)
        .take(EVIDENCE_SHOWN)
        .map(text)
        .collect();
    if big.is_empty() {
        row.evidence.iter().take(1).map(text).collect()
    } else {
        big
    }
}

/// A table with one row: `message` in column `at`, `-` everywhere else.
pub(super) fn placeholder_table(
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
                .map(move |note| format!("{}: {}", stage.stage, similarity_text(note)))
        })
        .collect()
}

/// `Similarity (medium): <family> (<id>): <reason>`.
pub(super) fn similarity_text(note: &SimilarityNote) -> String {
    format!(
        "Similarity ({}): {} ({}): {}",
        note.level, note.family, note.family_id, note.reason
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fuse_location_cell_puts_the_function_first() {
        assert_eq!(
            location_cell("models/utils.py:9 apply_qk_norm"),
            "apply_qk_norm @ models/utils.py:9"
        );
    }

    /// The calling module leads a site's parentheses, as trace text; a site without one
    /// reads as before.
    #[test]
    fn sites_name_their_calling_module_first() {
        use crate::report::sample::{row, site};
        let mut kernel = row("k", "gemm", 10.0, 10.0, 1);
        kernel.python_locations = vec![
            site("models/qwen3.py:263 forward", 60.0),
            site("layers/sampler.py:83 forward", 40.0),
        ];
        kernel.python_locations[0].module = Some("RowParallelLinear".into());
        kernel.python_locations[0].launch_site_source = "capture".into();
        assert_eq!(
            location_lines(&kernel),
            [
                format!(
                    "{} ({}, capture, site share 60%)",
                    trace("models/qwen3.py:263 forward"),
                    trace("RowParallelLinear")
                ),
                format!("{} (site share 40%)", trace("layers/sampler.py:83 forward")),
            ]
        );
        kernel.python_locations.truncate(1);
        kernel.python_locations[0].launch_site_source = "eager".into();
        assert_eq!(
            location_lines(&kernel),
            [format!(
                "{} ({})",
                trace("models/qwen3.py:263 forward"),
                trace("RowParallelLinear")
            )]
        );
    }

    /// A site resolved from the mapping trace says how its kernel was paired and how sure
    /// the pair is (the row's `matched_by`, `mapping_confidence`).
    #[test]
    fn mapping_sites_say_how_they_were_paired() {
        use crate::report::sample::{row, site};
        let mut kernel = row("k", "gemm", 10.0, 10.0, 1);
        kernel.python_locations = vec![site("models/qwen3.py:90 forward", 100.0)];
        kernel.python_locations[0].launch_site_source = "mapping".into();
        kernel.matched_by = Some("family".into());
        kernel.mapping_confidence = Some(0.5);
        assert_eq!(
            location_lines(&kernel),
            [format!(
                "{} (mapping by family 0.50)",
                trace("models/qwen3.py:90 forward")
            )]
        );
    }

    /// A site resolved from a capture says so; eager and graph-launch sites read as before.
    #[test]
    fn resolved_sites_name_their_source() {
        use crate::report::sample::{row, site};
        let mut kernel = row("k", "gemm", 10.0, 10.0, 1);
        kernel.python_locations = vec![site("models/qwen3.py:263 forward", 100.0)];
        kernel.python_locations[0].launch_site_source = "capture".into();
        assert_eq!(
            location_lines(&kernel),
            [format!(
                "{} (capture)",
                trace("models/qwen3.py:263 forward")
            )]
        );
        kernel
            .python_locations
            .push(site("runner.py:3194 _forward_raw", 40.0));
        kernel.python_locations[0].share_pct = 60.0;
        kernel.python_locations[1].launch_site_source = "graph-launch".into();
        assert_eq!(
            location_lines(&kernel),
            [
                format!(
                    "{} (capture, site share 60%)",
                    trace("models/qwen3.py:263 forward")
                ),
                format!("{} (site share 40%)", trace("runner.py:3194 _forward_raw")),
            ]
        );
    }
}
