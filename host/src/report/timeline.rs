//! The timeline's part of the view, shared by markdown and text: per stage, a "Timeline"
//! section (span, busy, idle and its causes, the gap histogram, the longest gaps) and a
//! "Steps" section (every step's wall time split, and the step statistics). Kept apart
//! from `view.rs` so the tables of the predecessor's contract stay as they were.

use std::fmt::Write as _;

use super::escape::trace;
use super::model::{Gap, Report, StageTimeline, Step, StepStats};
use super::view::{gpu_time_text, placeholder_table, Align, Block, Cell, Row, Section, Table};

pub(super) const GAP_HEADER: &[&str] = &[
    "Gap",
    "Starts at (from the span's start)",
    "Length",
    "Cause",
    "Before",
    "After",
    "Host activity (share of the gap)",
];
const GAP_ALIGN: &[Align] = &[
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Left,
    Align::Left,
    Align::Left,
];

pub(super) const STEP_HEADER: &[&str] = &[
    "Step",
    "Label",
    "Wall",
    "Compute",
    "Exposed comm",
    "Memcpy",
    "Launch idle",
    "Sync idle",
    "Graph gap",
    "Host gap",
];
const STEP_ALIGN: &[Align] = &[
    Align::Right,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
];

/// Steps a table shows (the first ones, then every outlier); all are in the JSON.
const STEPS_SHOWN: usize = 20;
/// Host activity entries a gap row shows; all are in the JSON.
const ACTIVITY_SHOWN: usize = 3;

/// The "no GPU work" placeholder of both blocks.
pub(super) const TIMELINE_NO_GPU_WORK: &str = "No GPU work on the timeline.";

/// The two blocks: "Timeline" and "Steps"; none for a report saved before timelines
/// existed (its stages have none), rather than a placeholder that would say "no GPU work".
pub(super) fn timeline_blocks(report: &Report) -> Vec<Block> {
    let timelines: Vec<(&str, &StageTimeline)> = report
        .stages
        .iter()
        .filter_map(|s| Some((s.stage.as_str(), s.timeline.as_ref()?)))
        .collect();
    if timelines.is_empty() && !report.stages.is_empty() {
        return Vec::new();
    }
    let gaps = timelines
        .iter()
        .map(|&(label, t)| Section {
            label: label.to_string(),
            table: Table {
                header: GAP_HEADER,
                align: GAP_ALIGN,
                share_column: None,
                rows: t.top_gaps.iter().enumerate().map(gap_row).collect(),
            },
            summary: Some(span_line(t)),
            notes: vec![idle_split_line(t), histogram_line(t)]
                .into_iter()
                .chain(t.notes.iter().cloned())
                .collect(),
        })
        .collect();
    let steps = timelines
        .iter()
        .map(|&(label, t)| Section {
            label: label.to_string(),
            table: Table {
                header: STEP_HEADER,
                align: STEP_ALIGN,
                share_column: None,
                rows: shown_steps(t).map(step_row).collect(),
            },
            summary: Some(step_stats_line(t)),
            notes: outlier_lines(&t.step_stats),
        })
        .collect();
    vec![
        Block {
            title: "Timeline",
            sections: gaps,
            placeholder: placeholder_table(GAP_HEADER, GAP_ALIGN, 3, TIMELINE_NO_GPU_WORK),
        },
        Block {
            title: "Steps",
            sections: steps,
            placeholder: placeholder_table(STEP_HEADER, STEP_ALIGN, 1, TIMELINE_NO_GPU_WORK),
        },
    ]
}

/// `x.xxx ms`: gaps and step parts are often well under 0.01 ms.
fn ms(us: f64) -> String {
    format!("{:.3} ms", us / 1000.0)
}

/// `Span 84.49 ms: GPU busy 11.60 ms, idle 72.89 ms (86.3%): launch 72.89 ms`.
fn span_line(t: &StageTimeline) -> String {
    let c = &t.idle_by_cause;
    let causes: Vec<String> = [
        ("launch", c.launch_us),
        ("sync", c.sync_us),
        ("graph", c.graph_us),
        ("host", c.host_us),
    ]
    .iter()
    .filter(|(_, us)| *us > 0.0)
    .map(|(name, us)| format!("{name} {}", ms(*us)))
    .collect();
    let mut line = format!(
        "Span {}: GPU busy {}, idle {} ({:.1}%)",
        gpu_time_text(t.span_us),
        gpu_time_text(t.busy_us),
        gpu_time_text(t.idle_us),
        t.idle_pct
    );
    if !causes.is_empty() {
        line.push_str(": ");
        line.push_str(&causes.join(", "));
    }
    line
}

fn idle_split_line(t: &StageTimeline) -> String {
    format!(
        "Idle inside steps {}, outside steps {}",
        ms(t.idle_inside_steps_us),
        ms(t.idle_outside_steps_us)
    )
}

/// `Gaps: < 5 µs 12 (0.021 ms), 5-20 µs 3 (0.030 ms), ...`.
fn histogram_line(t: &StageTimeline) -> String {
    let bins: Vec<String> = t
        .histogram
        .iter()
        .map(|bin| {
            let range = match bin.hi_us {
                _ if bin.lo_us == 0.0 => format!("< {}", us_bound(bin.hi_us.unwrap_or(0.0))),
                Some(hi) => bin_range(bin.lo_us, hi),
                None => format!("> {}", us_bound(bin.lo_us)),
            };
            format!("{range} {} ({})", bin.count, ms(bin.total_us))
        })
        .collect();
    format!("Gaps: {}", bins.join(", "))
}

/// `5-20 µs`, `100 µs-1 ms`, `1-10 ms`: the unit once when both bounds share it.
fn bin_range(lo_us: f64, hi_us: f64) -> String {
    let (lo, hi) = (us_bound(lo_us), us_bound(hi_us));
    match (lo.split_once(' '), hi.split_once(' ')) {
        (Some((lo_n, lo_unit)), Some((_, hi_unit))) if lo_unit == hi_unit => {
            format!("{lo_n}-{hi}")
        }
        _ => format!("{lo}-{hi}"),
    }
}

/// A bin bound: `5 µs`, `100 µs`, `1 ms`.
fn us_bound(us: f64) -> String {
    if us >= 1000.0 {
        format!("{} ms", us / 1000.0)
    } else {
        format!("{us} µs")
    }
}

fn gap_row((i, gap): (usize, &Gap)) -> Row {
    let activity: Cell = if gap.host_activity.is_empty() {
        vec!["-".to_string()]
    } else {
        gap.host_activity
            .iter()
            .take(ACTIVITY_SHOWN)
            .map(|a| format!("{} ({:.0}%)", trace(&a.location), a.share_pct))
            .collect()
    };
    Row {
        cells: vec![
            vec![(i + 1).to_string()],
            vec![format!("+{}", ms(gap.offset_us))],
            vec![ms(gap.dur_us)],
            vec![gap.cause.clone()],
            vec![trace(&super::view::display_kernel_name(&gap.before))],
            vec![trace(&super::view::display_kernel_name(&gap.after))],
            activity,
        ],
        share_pct: None,
    }
}

/// The first steps, then every outlier past them, in index order.
fn shown_steps(t: &StageTimeline) -> impl Iterator<Item = &Step> {
    t.steps.iter().filter(|s| {
        s.index < STEPS_SHOWN || t.step_stats.outliers.iter().any(|o| o.index == s.index)
    })
}

fn step_row(step: &Step) -> Row {
    Row {
        cells: vec![
            vec![step.index.to_string()],
            vec![trace(&step.label)],
            vec![ms(step.wall_us)],
            vec![ms(step.compute_us)],
            vec![ms(step.exposed_comm_us)],
            vec![ms(step.memcpy_us)],
            vec![ms(step.launch_idle_us)],
            vec![ms(step.sync_idle_us)],
            vec![ms(step.graph_gap_us)],
            vec![ms(step.host_gap_us)],
        ],
        share_pct: None,
    }
}

/// `12 steps (step[...] annotations): median 9.812 ms, p90 ..., max ...; steady state
/// steps 2-11`.
fn step_stats_line(t: &StageTimeline) -> String {
    let s = &t.step_stats;
    let mut line = format!(
        "{} steps ({}): wall median {}, p90 {}, max {}",
        s.count,
        t.step_source,
        ms(s.median_wall_us),
        ms(s.p90_wall_us),
        ms(s.max_wall_us)
    );
    if let (Some(first), Some(last)) = (s.steady_first, s.steady_last) {
        let _ = write!(line, "; steady state steps {first}-{last}");
    }
    if t.steps.len() > STEPS_SHOWN {
        let _ = write!(
            line,
            "; the table shows the first {STEPS_SHOWN} and the outliers, the JSON all"
        );
    }
    line
}

fn outlier_lines(stats: &StepStats) -> Vec<String> {
    stats
        .outliers
        .iter()
        .map(|o| {
            format!(
                "Outlier: step {} took {}, {} grew most (+{} over its median)",
                o.index,
                ms(o.wall_us),
                o.part,
                ms(o.grew_us)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::markdown::Markdown;
    use super::super::model::{GapBin, HostShare, IdleByCause};
    use super::super::text::Text;
    use super::super::{sample, Renderer};
    use super::*;

    /// A decode stage idle 98% of its span, mostly one sync gap.
    fn idle_report() -> Report {
        let mut stage = sample::stage(
            "decode",
            9772.9,
            vec![sample::row("k", "gemm", 9772.9, 9772.9, 1)],
        );
        stage.timeline = Some(StageTimeline {
            span_us: 473_749.943,
            busy_us: 9_772.926,
            idle_us: 463_977.017,
            idle_pct: 97.937,
            idle_inside_steps_us: 463_744.865,
            idle_outside_steps_us: 232.152,
            idle_by_cause: IdleByCause {
                launch_us: 653.767,
                sync_us: 463_034.952,
                graph_us: 288.298,
                host_us: 0.0,
            },
            histogram: vec![
                GapBin {
                    lo_us: 0.0,
                    hi_us: Some(5.0),
                    count: 7,
                    total_us: 12.5,
                },
                GapBin {
                    lo_us: 10_000.0,
                    hi_us: None,
                    count: 1,
                    total_us: 463_295.405,
                },
            ],
            top_gaps: vec![Gap {
                start_us: 4_909_914_216_289.47,
                offset_us: 232.0,
                dur_us: 463_295.405,
                before: "arange_kernel".to_string(),
                after: "resolve_future_token_ids_kernel".to_string(),
                cause: "sync".to_string(),
                host_activity: vec![
                    HostShare {
                        location: "hipMemcpyWithStream".to_string(),
                        share_pct: 99.94,
                    },
                    HostShare {
                        location: "aten::copy_".to_string(),
                        share_pct: 99.94,
                    },
                ],
            }],
            step_source: "step[...] annotations".to_string(),
            steps: vec![Step {
                index: 0,
                label: "step[DECODE bs=32]".to_string(),
                start_us: 4_909_914_216_512.886,
                wall_us: 473_451.054,
                compute_us: 9_701.663,
                exposed_comm_us: 0.0,
                memcpy_us: 4.526,
                launch_idle_us: 421.615,
                sync_idle_us: 463_034.952,
                graph_gap_us: 288.298,
                host_gap_us: 0.0,
            }],
            step_stats: StepStats {
                count: 1,
                median_wall_us: 473_451.054,
                p90_wall_us: 473_451.054,
                max_wall_us: 473_451.054,
                steady_first: Some(0),
                steady_last: Some(0),
                outliers: Vec::new(),
            },
            notes: vec!["7 GPU ops were launched outside every step marker".to_string()],
            representative_step: None,
        });
        sample::report(vec![stage])
    }

    #[test]
    fn markdown_prints_idle_the_causes_the_gap_and_the_step_split() {
        let text = Markdown::default().render(&idle_report());
        for expected in [
            "## Timeline",
            "Span 473.75 ms: GPU busy 9.77 ms, idle 463.98 ms (97.9%): launch 0.654 ms, sync 463.035 ms, graph 0.288 ms",
            "- Idle inside steps 463.745 ms, outside steps 0.232 ms",
            "- Gaps: \\< 5 µs 7 (0.013 ms), \\> 10 ms 1 (463.295 ms)",
            "| 1 | +0.232 ms | 463.295 ms | sync | `arange_kernel` | `resolve_future_token_ids_kernel` | `hipMemcpyWithStream` (100%)<br>`aten::copy_` (100%) |",
            "## Steps",
            "| 0 | `step[DECODE bs=32]` | 473.451 ms | 9.702 ms | 0.000 ms | 0.005 ms | 0.422 ms | 463.035 ms | 0.288 ms | 0.000 ms |",
            "1 steps (step\\[...] annotations): wall median 473.451 ms, p90 473.451 ms, max 473.451 ms; steady state steps 0-0",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }

    #[test]
    fn text_carries_the_same_timeline_facts() {
        let text = Text::default().render(&idle_report());
        for expected in [
            "Timeline",
            "idle 463.98 ms (97.9%)",
            "sync 463.035 ms",
            "463.295 ms",
            "hipMemcpyWithStream (100%)",
            "step[DECODE bs=32]",
            "473.451 ms",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }

    #[test]
    fn a_report_saved_before_timelines_shows_no_timeline_block() {
        let text = Markdown::default().render(&sample::qwen3());
        assert!(!text.contains("## Timeline"), "{text}");
        assert!(!text.contains(TIMELINE_NO_GPU_WORK), "{text}");
    }

    #[test]
    fn histogram_bins_read_as_the_issue_names_them() {
        let bounds = [0.0, 5.0, 20.0, 100.0, 1000.0, 10_000.0];
        let histogram = bounds
            .iter()
            .enumerate()
            .map(|(i, &lo)| GapBin {
                lo_us: lo,
                hi_us: bounds.get(i + 1).copied(),
                count: 0,
                total_us: 0.0,
            })
            .collect();
        let line = histogram_line(&StageTimeline {
            histogram,
            ..StageTimeline::default()
        });
        assert_eq!(
            line,
            "Gaps: < 5 µs 0 (0.000 ms), 5-20 µs 0 (0.000 ms), 20-100 µs 0 (0.000 ms), 100 µs-1 ms 0 (0.000 ms), 1-10 ms 0 (0.000 ms), > 10 ms 0 (0.000 ms)"
        );
    }
}
