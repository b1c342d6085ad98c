//! The diff's view (`llm-triage diff`), shared by markdown and text: a header naming both
//! sides, then per stage the step time ("Step Time"), the waterfall of its change
//! ("Waterfall", with what changed in meaning after it) and, with a gate, what crossed
//! it ("Regressions"). JSON is the `DiffDocument` as-is (`json::render_diff`).

use std::collections::HashMap;

use super::escape::trace;
use super::model::{DiffReport, DiffRow, DiffSide, DiffStage, Regression, Workload};
use super::view::{
    display_kernel_names, placeholder_table, Align, Block, Row, Section, Table, View,
};

pub(super) const STEP_HEADER: &[&str] = &[
    "Base step",
    "New step",
    "Delta",
    "Delta %",
    "Status",
    "Steps (base / new)",
    "Batch (base / new)",
    "Tokens per step (base / new)",
];
const STEP_ALIGN: &[Align] = &[
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
];

pub(super) const WATERFALL_HEADER: &[&str] = &[
    "Row",
    "Base",
    "New",
    "Delta",
    "Delta %",
    "Status",
    "Matched by",
];
const WATERFALL_ALIGN: &[Align] = &[
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Left,
];

pub(super) const REGRESSION_HEADER: &[&str] =
    &["Row", "Base", "New", "Delta", "Delta %", "Threshold"];
const REGRESSION_ALIGN: &[Align] = &[
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
];

const NO_STAGES: &str = "Neither side has a stage to compare.";
const NO_REGRESSION: &str = "No step or row regressed beyond the gate.";

/// Everything the diff's text and markdown show.
pub(super) fn diff_view(diff: &DiffReport) -> View {
    let mut header = vec![
        format!("Base: {}", side_text(&diff.base)),
        format!("New: {}", side_text(&diff.new)),
        format!(
            "Noise: {}% (rows that changed by at most this share of their base are same); times per step",
            diff.noise_pct
        ),
    ];
    if diff.fail_on_regression_pct.is_some() || diff.fail_on_regression_ms.is_some() {
        let mut gate = Vec::new();
        if let Some(p) = diff.fail_on_regression_pct {
            gate.push(format!("{p}%"));
        }
        if let Some(ms) = diff.fail_on_regression_ms {
            gate.push(format!("{ms} ms per step"));
        }
        header.push(format!(
            "Gate: fail on a regression beyond {}: {}",
            gate.join(" or "),
            if diff.regressions.is_empty() {
                "passed".to_string()
            } else {
                format!("{} regression(s)", diff.regressions.len())
            }
        ));
    }
    let mut blocks = vec![
        Block {
            title: "Step Time",
            sections: diff.stages.iter().map(step_section).collect(),
            placeholder: placeholder_table(STEP_HEADER, STEP_ALIGN, 0, NO_STAGES),
        },
        Block {
            title: "Waterfall",
            sections: diff.stages.iter().map(waterfall_section).collect(),
            placeholder: placeholder_table(WATERFALL_HEADER, WATERFALL_ALIGN, 0, NO_STAGES),
        },
    ];
    if diff.fail_on_regression_pct.is_some() || diff.fail_on_regression_ms.is_some() {
        blocks.push(Block {
            title: "Regressions",
            sections: regression_sections(&diff.regressions),
            placeholder: placeholder_table(REGRESSION_HEADER, REGRESSION_ALIGN, 0, NO_REGRESSION),
        });
    }
    View {
        title: "Diff View",
        header,
        blocks,
        similarity: Vec::new(),
        notes: diff.notes.clone(),
    }
}

/// `path (trace, SGLang, model Qwen/Qwen3-8B, H100 SXM)`.
fn side_text(side: &DiffSide) -> String {
    let mut parts = vec![side.kind.clone(), trace(&side.framework)];
    if let Some(model) = &side.model {
        parts.push(format!("model {}", trace(model)));
    }
    if let Some(device) = &side.device {
        parts.push(trace(device));
    }
    format!("{} ({})", trace(&side.path), parts.join(", "))
}

fn step_section(stage: &DiffStage) -> Section {
    let pair = |b: String, n: String| vec![format!("{b} / {n}")];
    let mean = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let load = |w: &Workload, f: fn(&Workload) -> Option<f64>| mean(f(w));
    let row = Row {
        cells: vec![
            vec![time_text(stage.base_step_us)],
            vec![time_text(stage.new_step_us)],
            vec![signed_time_text(stage.delta_us)],
            vec![pct_text(stage.delta_pct)],
            vec![stage.status.clone()],
            pair(stage.base_steps.to_string(), stage.new_steps.to_string()),
            pair(
                load(&stage.base_workload, |w| w.batch_mean),
                load(&stage.new_workload, |w| w.batch_mean),
            ),
            pair(
                load(&stage.base_workload, |w| w.tokens_mean),
                load(&stage.new_workload, |w| w.tokens_mean),
            ),
        ],
        share_pct: None,
    };
    let summary = stage.per_token.as_ref().map(|t| {
        format!(
            "Per token: {:.3} µs -> {:.3} µs ({:+.1}%).",
            t.base_us_per_token, t.new_us_per_token, t.delta_pct
        )
    });
    Section {
        label: stage.stage.clone(),
        table: Table {
            header: STEP_HEADER,
            align: STEP_ALIGN,
            share_column: None,
            rows: vec![row],
        },
        summary,
        notes: stage.notes.clone(),
    }
}

fn waterfall_section(stage: &DiffStage) -> Section {
    let names = shown_names(&stage.rows);
    let rows = stage
        .rows
        .iter()
        .map(|r| waterfall_row(r, &names))
        .collect();
    let mut notes = Vec::new();
    for f in &stage.meaning.fusions {
        notes.push(format!(
            "Fusion {} ({}): {} ({} -> {}).",
            trace(&f.label),
            trace(&f.id),
            f.change,
            f.base.as_deref().unwrap_or("not in the table"),
            f.new.as_deref().unwrap_or("not in the table")
        ));
    }
    if let (Some(b), Some(n), Some(change)) = (
        stage.meaning.base_overlapped_us,
        stage.meaning.new_overlapped_us,
        &stage.meaning.overlap,
    ) {
        if change != "same" {
            notes.push(format!(
                "Overlap {change}: streams ran together {} -> {} per step.",
                time_text(b),
                time_text(n)
            ));
        }
    }
    if let (Some(b), Some(n)) = (stage.meaning.base_sol_pct, stage.meaning.new_sol_pct) {
        notes.push(format!(
            "Speed of light: {b:.1}% -> {n:.1}% of the roofline."
        ));
    }
    Section {
        label: stage.stage.clone(),
        table: Table {
            header: WATERFALL_HEADER,
            align: WATERFALL_ALIGN,
            share_column: None,
            rows,
        },
        summary: Some(format!(
            "Rows sum to the step time change: {} -> {} ({}).",
            time_text(stage.base_step_us),
            time_text(stage.new_step_us),
            signed_time_text(stage.delta_us)
        )),
        notes,
    }
}

/// Every kernel name of a stage's rows and how the table shows it: short, and no two
/// alike (as the kernel table shows its names).
fn shown_names(rows: &[DiffRow]) -> HashMap<&str, String> {
    let mut names: Vec<&str> = Vec::new();
    for row in rows {
        for name in [&row.base_kernel, &row.new_kernel].into_iter().flatten() {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let shown = display_kernel_names(names.iter().copied());
    names.into_iter().zip(shown).collect()
}

fn waterfall_row(row: &DiffRow, names: &HashMap<&str, String>) -> Row {
    let shown = |name: &str| trace(names.get(name).map_or(name, String::as_str));
    let key = match (row.base_kernel.as_deref(), row.new_kernel.as_deref()) {
        // A role match names its role, then the two kernels it paired.
        (Some(b), Some(n)) if row.matched_by == "role" => {
            vec![
                format!("{}:", row.key),
                format!("{} -> {}", shown(b), shown(n)),
            ]
        }
        (Some(b), Some(n)) if b != n => vec![format!("{} ->", shown(b)), shown(n)],
        _ if row.kind == "kernel" => vec![shown(&row.key)],
        // Fixed rows are the tool's own words.
        _ => vec![row.key.clone()],
    };
    Row {
        cells: vec![
            key,
            vec![time_text(row.base_us)],
            vec![time_text(row.new_us)],
            vec![signed_time_text(row.delta_us)],
            vec![pct_text(row.delta_pct)],
            vec![row.status.clone()],
            vec![if row.kind == "kernel" {
                row.matched_by.clone()
            } else {
                "-".to_string()
            }],
        ],
        share_pct: None,
    }
}

fn regression_sections(regressions: &[Regression]) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    for r in regressions {
        let row = Row {
            cells: vec![
                vec![trace(&r.key)],
                vec![time_text(r.base_us)],
                vec![time_text(r.new_us)],
                vec![signed_time_text(r.delta_us)],
                vec![pct_text(r.delta_pct)],
                vec![r.threshold.clone()],
            ],
            share_pct: None,
        };
        match sections.iter_mut().find(|s| s.label == r.stage) {
            Some(section) => section.table.rows.push(row),
            None => sections.push(Section {
                label: r.stage.clone(),
                table: Table {
                    header: REGRESSION_HEADER,
                    align: REGRESSION_ALIGN,
                    share_column: None,
                    rows: vec![row],
                },
                summary: None,
                notes: Vec::new(),
            }),
        }
    }
    sections
}

/// `12.345 µs`: the exact nanoseconds, three decimals.
fn time_text(us: f64) -> String {
    format!("{us:.3} µs")
}

fn signed_time_text(us: f64) -> String {
    format!("{us:+.3} µs")
}

fn pct_text(pct: Option<f64>) -> String {
    pct.map_or("-".to_string(), |p| format!("{p:+.1}%"))
}

/// The one-line reason `diff` exits 7: the first regression and how many more.
pub(crate) fn regression_line(diff: &DiffReport) -> Option<String> {
    let first = diff.regressions.first()?;
    let more = diff.regressions.len() - 1;
    Some(format!(
        "regression: {} {} {} ({} -> {}) beyond --fail-on-regression{}{}",
        first.stage,
        super::escape::plain(&first.key),
        pct_text(first.delta_pct),
        time_text(first.base_us),
        time_text(first.new_us),
        if first.threshold == "ms" { "-ms" } else { "" },
        if more > 0 {
            format!("; {more} more (see Regressions)")
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{render_diff, DiffDocument, Format};

    fn sample() -> DiffReport {
        let row = |key: &str, kind: &str, b: i64, n: i64, status: &str| DiffRow {
            key: key.to_string(),
            kind: kind.to_string(),
            base_us: b as f64 / 1000.0,
            new_us: n as f64 / 1000.0,
            delta_us: (n - b) as f64 / 1000.0,
            delta_pct: Some(100.0 * (n - b) as f64 / b as f64),
            base_ns: b,
            new_ns: n,
            delta_ns: n - b,
            status: status.to_string(),
            matched_by: "name".to_string(),
            base_kernel: (kind == "kernel").then(|| key.to_string()),
            new_kernel: (kind == "kernel").then(|| key.to_string()),
            family: None,
        };
        DiffReport {
            base: DiffSide {
                path: "base`|.json".to_string(),
                kind: "report".to_string(),
                framework: "SGLang".to_string(),
                ..DiffSide::default()
            },
            new: DiffSide {
                path: "new\u{1b}[31m.json.gz".to_string(),
                kind: "trace".to_string(),
                framework: "SGLang".to_string(),
                ..DiffSide::default()
            },
            noise_pct: 1.0,
            fail_on_regression_pct: Some(3.0),
            stages: vec![DiffStage {
                stage: "decode".to_string(),
                base_step_us: 100.0,
                new_step_us: 105.0,
                delta_us: 5.0,
                base_step_ns: 100_000,
                new_step_ns: 105_000,
                delta_ns: 5000,
                status: "slower".to_string(),
                rows: vec![
                    row("gemm<|x|>", "kernel", 60_000, 65_000, "slower"),
                    row("launch idle", "fixed", 40_000, 40_000, "same"),
                ],
                ..DiffStage::default()
            }],
            regressions: vec![Regression {
                stage: "decode".to_string(),
                key: "gemm<|x|>".to_string(),
                base_us: 60.0,
                new_us: 65.0,
                delta_us: 5.0,
                delta_pct: Some(8.333),
                threshold: "pct".to_string(),
            }],
            ..DiffReport::default()
        }
    }

    #[test]
    fn markdown_text_and_json_show_the_same_rows_and_escape_trace_text() {
        let diff = sample();
        let md = render_diff(&diff, Format::Markdown, false);
        assert!(md.starts_with("# Diff View\n"));
        for heading in [
            "## Step Time",
            "## Waterfall",
            "## Regressions",
            "### decode",
        ] {
            assert!(md.contains(heading), "{heading}\n{md}");
        }
        // Kernel names are code spans with their pipes escaped, so they cannot break the table.
        assert!(
            md.contains(
                "| `gemm<\\|x\\|>` | 60.000 µs | 65.000 µs | +5.000 µs | +8.3% | slower | name |"
            ),
            "{md}"
        );
        assert!(md.contains("| launch idle | 40.000 µs |"), "{md}");
        assert!(!md.contains('\u{1b}'));
        let text = render_diff(&diff, Format::Text, false);
        assert!(text.contains("[decode]") && text.contains("Waterfall"));
        assert!(text.contains("new\\u{1b}[31m.json.gz"), "{text}");
        assert!(!text.contains('\u{1b}'));
        let json = render_diff(&diff, Format::Json, false);
        let back: DiffDocument = serde_json::from_str(&json).unwrap();
        assert_eq!(back.diff, diff);
        assert!(json.starts_with("{\n  \"diff\": {"));
    }

    #[test]
    fn the_exit_line_names_the_first_regression_and_counts_the_rest() {
        let mut diff = sample();
        assert_eq!(
            regression_line(&diff).unwrap(),
            "regression: decode gemm<|x|> +8.3% (60.000 µs -> 65.000 µs) beyond --fail-on-regression"
        );
        diff.regressions.push(diff.regressions[0].clone());
        assert!(regression_line(&diff)
            .unwrap()
            .ends_with("; 1 more (see Regressions)"));
        diff.regressions.clear();
        assert_eq!(regression_line(&diff), None);
    }
}
