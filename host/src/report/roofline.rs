//! The roofline's part of the view, shared by markdown and text: per stage, a
//! "Roofline" table of the top kernel rows by GPU time (bound, % of peak, achieved
//! TFLOP/s and TB/s, intensity, shape source) and the stage's speed-of-light line with
//! where the rest of the time goes. No block at all when no stage has a kernel row with
//! roofline facts (a trace without shapes or launch geometry reads as before); a stage
//! whose rows have facts but no figure (geometry that fills the GPU, no shape: all
//! `unknown`) is one line saying so instead of a table of dashes.

use super::escape::trace;
use super::model::{KernelRow, Report, StageSol};
use super::view::{
    display_kernel_name, display_kernel_names, gpu_time_text, Align, Block, Row, Section, Table,
};

pub(super) const ROOFLINE_HEADER: &[&str] = &[
    "Kernel",
    "GPU Time",
    "Bound",
    "% of peak",
    "TFLOP/s",
    "TB/s",
    "FLOP/B",
    "Shapes from",
];
const ROOFLINE_ALIGN: &[Align] = &[
    Align::Left,
    Align::Right,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
];

/// Kernel rows the table shows per stage (all are in the JSON).
const ROWS_SHOWN: usize = 10;

/// The "Roofline" block, or none.
pub(super) fn roofline_blocks(report: &Report) -> Vec<Block> {
    let sections: Vec<Section> = report
        .stages
        .iter()
        .filter_map(|stage| {
            let shown: Vec<&KernelRow> = stage
                .kernels
                .iter()
                .filter(|k| k.roofline.is_some())
                .take(ROWS_SHOWN)
                .collect();
            // Names as the table shows them, no two alike (two template instances that
            // collapse to one short name keep the part that differs).
            let names = display_kernel_names(shown.iter().map(|k| k.name.as_str()));
            let rows: Vec<Row> = shown
                .iter()
                .zip(names)
                .map(|(row, name)| roofline_row(row, &name))
                .collect();
            if rows.is_empty() {
                return None;
            }
            if !shown.iter().any(|k| has_figure(k)) {
                // A table of `unknown` and dashes is noise: one line says why instead.
                return Some(Section {
                    label: stage.stage.clone(),
                    table: Table {
                        rows: Vec::new(),
                        ..super::view::placeholder_table(ROOFLINE_HEADER, ROOFLINE_ALIGN, 0, "")
                    },
                    summary: None,
                    notes: vec![NO_FIGURES.to_string()],
                });
            }
            Some(Section {
                label: stage.stage.clone(),
                table: Table {
                    header: ROOFLINE_HEADER,
                    align: ROOFLINE_ALIGN,
                    share_column: None,
                    rows,
                },
                summary: Some(match &stage.sol {
                    Some(sol) => sol_line(sol),
                    None => NO_SOL.to_string(),
                }),
                notes: stage.sol.as_ref().map(gap_line).into_iter().collect(),
            })
        })
        .collect();
    if sections.is_empty() {
        return Vec::new();
    }
    vec![Block {
        title: "Roofline",
        sections,
        placeholder: super::view::placeholder_table(ROOFLINE_HEADER, ROOFLINE_ALIGN, 0, "-"),
    }]
}

/// The line of a stage none of whose rows has a figure.
const NO_FIGURES: &str = "no roofline figures: no launch has a known shape (Input Dims, a step \
     annotation's attention sums, a model config, a copy's bytes) and none is under-filled or \
     latency-bound";

/// Whether a row says anything: a number, or a bound other than `unknown`.
fn has_figure(row: &KernelRow) -> bool {
    row.roofline.as_ref().is_some_and(|r| {
        r.bound != "unknown"
            || [
                r.flops,
                r.bytes,
                r.tflops_per_s,
                r.tb_per_s,
                r.pct_of_peak,
                r.intensity,
            ]
            .iter()
            .any(Option::is_some)
    })
}

/// The summary of a stage without a speed of light.
const NO_SOL: &str =
    "Speed of light: unknown (no device roof for this GPU, or no kernel of known shape)";

fn dash_or(value: Option<f64>, text: impl Fn(f64) -> String) -> String {
    value.map_or_else(|| "-".to_string(), text)
}

fn roofline_row(row: &KernelRow, shown_name: &str) -> Row {
    let Some(r) = &row.roofline else {
        return Row {
            cells: Vec::new(),
            share_pct: None,
        };
    };
    Row {
        cells: vec![
            vec![trace(shown_name)],
            vec![gpu_time_text(row.gpu_time_us)],
            vec![r.bound.clone()],
            vec![dash_or(r.pct_of_peak, |p| format!("{p:.1}%"))],
            vec![dash_or(r.tflops_per_s, |t| format!("{t:.1}"))],
            vec![dash_or(r.tb_per_s, |t| format!("{t:.2}"))],
            vec![dash_or(r.intensity, |i| format!("{i:.1}"))],
            vec![r.shape_source.clone().unwrap_or_else(|| "-".to_string())],
        ],
        share_pct: None,
    }
}

/// `Speed of light 12.34 ms of 20.00 ms measured (61.7%), over 93.2% of the stage's GPU time`.
fn sol_line(sol: &StageSol) -> String {
    format!(
        "Speed of light {} of {} measured ({:.1}%), over {:.1}% of the stage's GPU time",
        gpu_time_text(sol.sol_us),
        gpu_time_text(sol.measured_us),
        sol.sol_pct,
        sol.covered_pct
    )
}

/// `Beyond it: below roof 7.66 ms (A 3.20 ms at 45.0%, ...), idle 1.20 ms, exposed
/// communication 0.00 ms, no shape 0.40 ms`.
fn gap_line(sol: &StageSol) -> String {
    let g = &sol.gap;
    let top: Vec<String> = g
        .below_roof_top
        .iter()
        .map(|l| {
            format!(
                "{} {} at {:.1}%",
                trace(&display_kernel_name(&l.kernel)),
                gpu_time_text(l.lost_us),
                l.pct_of_peak
            )
        })
        .collect();
    let below = if top.is_empty() {
        gpu_time_text(g.below_roof_us)
    } else {
        format!("{} ({})", gpu_time_text(g.below_roof_us), top.join(", "))
    };
    format!(
        "Beyond it: below roof {below}, idle {}, exposed communication {}, no shape {}",
        gpu_time_text(g.idle_us),
        gpu_time_text(g.exposed_comm_us),
        gpu_time_text(g.unshaped_us)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::{KernelRoofline, SolGap, SolLoss};
    use crate::report::sample::{report, row as kernel, stage};

    fn roofline(bound: &str, pct: Option<f64>) -> KernelRoofline {
        KernelRoofline {
            flops: Some(3.09e12),
            bytes: Some(1.08e9),
            intensity: Some(2861.0),
            tflops_per_s: Some(456.9),
            tb_per_s: Some(0.16),
            pct_of_peak: pct,
            bound: bound.to_string(),
            shape_source: Some("input-dims".to_string()),
            dtype: Some("bf16".to_string()),
            shaped_launches: 36,
            under_filled_launches: 0,
        }
    }

    #[test]
    fn no_block_without_roofline_rows() {
        let r = report(vec![stage(
            "decode",
            100.0,
            vec![kernel("k", "gemm", 10.0, 100.0, 1)],
        )]);
        assert!(roofline_blocks(&r).is_empty());
    }

    #[test]
    fn a_stage_shows_its_rows_its_sol_line_and_where_the_gap_goes() {
        let mut gemm = kernel("Cijk_gemm", "gemm", 243_643.0, 300_000.0, 36);
        gemm.roofline = Some(roofline("compute", Some(35.1)));
        let mut unknown = kernel("copy", "other", 1000.0, 300_000.0, 2);
        unknown.roofline = Some(KernelRoofline {
            bound: "under-filled".to_string(),
            ..KernelRoofline::default()
        });
        let mut s = stage("extend/prefill", 300_000.0, vec![gemm, unknown]);
        s.sol = Some(StageSol {
            sol_us: 85_000.0,
            measured_us: 243_643.0,
            sol_pct: 34.9,
            covered_pct: 81.2,
            gap: SolGap {
                idle_us: 1200.0,
                below_roof_us: 158_643.0,
                below_roof_top: vec![SolLoss {
                    kernel: "Cijk_gemm".to_string(),
                    lost_us: 158_643.0,
                    pct_of_peak: 35.1,
                }],
                exposed_comm_us: 0.0,
                unshaped_us: 56_357.0,
            },
        });
        let blocks = roofline_blocks(&report(vec![s]));
        assert_eq!(blocks.len(), 1);
        let section = &blocks[0].sections[0];
        let cells: Vec<String> = section.table.rows[0]
            .cells
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(
            cells[1..],
            [
                "243.64 ms",
                "compute",
                "35.1%",
                "456.9",
                "0.16",
                "2861.0",
                "input-dims"
            ]
        );
        let second: Vec<String> = section.table.rows[1]
            .cells
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(second[2..], ["under-filled", "-", "-", "-", "-", "-"]);
        assert_eq!(
            section.summary.as_deref(),
            Some("Speed of light 85.00 ms of 243.64 ms measured (34.9%), over 81.2% of the stage's GPU time")
        );
        assert!(
            section.notes[0].starts_with("Beyond it: below roof 158.64 ms ("),
            "{}",
            section.notes[0]
        );
        assert!(section.notes[0].ends_with("158.64 ms at 35.1%), idle 1.20 ms, exposed communication 0.00 ms, no shape 56.36 ms"), "{}", section.notes[0]);
    }

    #[test]
    fn a_stage_whose_rows_have_no_figure_keeps_one_line_and_no_table() {
        // Launch geometry but no shape, filling the GPU: `unknown`, every figure empty.
        let figureless = |name: &str| {
            let mut k = kernel(name, "gemm", 340.0, 1000.0, 4);
            k.roofline = Some(KernelRoofline {
                bound: "unknown".to_string(),
                ..KernelRoofline::default()
            });
            k
        };
        let mut under = figureless("small");
        if let Some(r) = under.roofline.as_mut() {
            r.bound = "under-filled".to_string();
        }
        let blocks = roofline_blocks(&report(vec![
            stage(
                "extend/prefill",
                1000.0,
                vec![figureless("a"), figureless("b")],
            ),
            stage("decode", 1000.0, vec![figureless("c"), under]),
        ]));
        let sections = &blocks[0].sections;
        assert_eq!(sections.len(), 2);
        assert!(sections[0].table.rows.is_empty());
        assert_eq!(sections[0].summary, None);
        assert_eq!(sections[0].notes, [NO_FIGURES]);
        // A bound the geometry decided is a figure: that stage keeps its table.
        assert_eq!(sections[1].table.rows.len(), 2);
        assert_eq!(sections[1].summary.as_deref(), Some(NO_SOL));
    }

    #[test]
    fn an_unknown_device_leaves_the_percentages_empty_and_says_so() {
        let mut gemm = kernel("Cijk_gemm", "gemm", 243_643.0, 300_000.0, 36);
        gemm.roofline = Some(roofline("unknown", None));
        let blocks = roofline_blocks(&report(vec![stage("all", 300_000.0, vec![gemm])]));
        let section = &blocks[0].sections[0];
        assert_eq!(section.table.rows[0].cells[3], vec!["-".to_string()]);
        assert_eq!(section.summary.as_deref(), Some(NO_SOL));
    }
}
