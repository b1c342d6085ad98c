//! The all-ranks part of the view, shared by markdown and text: "Ranks" (per stage, a
//! row per rank: clock offset, busy, idle, exposed communication, collective time and
//! its wait, step wall times, steps late, the events its reader skipped in all its
//! files, which the run's notes detail), "Collective wait" (per stage and collective
//! family: transfer vs wait and start skew) and "Stragglers" (per step the last rank to
//! arrive, how late, why). No block at all without `--all-ranks`, so other reports read
//! as before.

use super::escape::trace;
use super::model::{CollectiveRow, RankRow, RankStage, Report, StragglerRow};
use super::view::{placeholder_table, Align, Block, Row, Section, Table};

const RANK_HEADER: &[&str] = &[
    "Rank",
    "Clock offset",
    "GPU busy",
    "GPU idle",
    "Exposed comm",
    "Collectives",
    "Of which wait",
    "Exposed wait",
    "Step p50",
    "Step p90",
    "Steps late",
    "Events skipped",
];
const RANK_ALIGN: &[Align] = &[
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
];

const COLLECTIVE_HEADER: &[&str] = &[
    "Family",
    "Matched",
    "Transfer",
    "Wait",
    "Wait share",
    "Skew p50",
    "Skew p90",
    "Skew max",
];
const COLLECTIVE_ALIGN: &[Align] = &[
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
];

const STRAGGLER_HEADER: &[&str] = &[
    "Step",
    "Rank",
    "Late by",
    "At",
    "Others waited",
    "Cause",
    "Detail",
];
const STRAGGLER_ALIGN: &[Align] = &[
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Right,
    Align::Left,
    Align::Left,
];

/// Stragglers a table lists per stage; all are in the JSON.
const STRAGGLERS_SHOWN: usize = 20;

const NO_RANKS: &str = "No rank was compared.";

/// The three blocks, or none without `--all-ranks`.
pub(super) fn rank_blocks(report: &Report) -> Vec<Block> {
    if report.ranks.is_empty() {
        return Vec::new();
    }
    let stages = stage_labels(report);
    let rank_sections = stages
        .iter()
        .map(|&stage| Section {
            label: stage.to_string(),
            table: Table {
                header: RANK_HEADER,
                align: RANK_ALIGN,
                share_column: None,
                rows: report
                    .ranks
                    .iter()
                    .filter_map(|r| Some(rank_row(r, r.stages.iter().find(|s| s.stage == stage)?)))
                    .collect(),
            },
            summary: None,
            notes: Vec::new(),
        })
        .collect();
    let collective_sections = stages
        .iter()
        .map(|&stage| Section {
            label: stage.to_string(),
            table: Table {
                header: COLLECTIVE_HEADER,
                align: COLLECTIVE_ALIGN,
                share_column: None,
                rows: report
                    .collectives
                    .iter()
                    .filter(|c| c.stage == stage)
                    .map(collective_row)
                    .collect(),
            },
            summary: None,
            notes: Vec::new(),
        })
        .collect();
    let straggler_sections = stages
        .iter()
        .map(|&stage| {
            let rows: Vec<&StragglerRow> = report
                .stragglers
                .iter()
                .filter(|s| s.stage == stage)
                .collect();
            Section {
                label: stage.to_string(),
                table: Table {
                    header: STRAGGLER_HEADER,
                    align: STRAGGLER_ALIGN,
                    share_column: None,
                    rows: rows
                        .iter()
                        .copied()
                        .take(STRAGGLERS_SHOWN)
                        .map(straggler_row)
                        .collect(),
                },
                summary: Some(late_summary(report, stage, rows.len())),
                notes: Vec::new(),
            }
        })
        .collect();
    vec![
        Block {
            title: "Ranks",
            sections: rank_sections,
            placeholder: placeholder_table(RANK_HEADER, RANK_ALIGN, 0, NO_RANKS),
        },
        Block {
            title: "Collective wait",
            sections: collective_sections,
            placeholder: placeholder_table(COLLECTIVE_HEADER, COLLECTIVE_ALIGN, 0, NO_RANKS),
        },
        Block {
            title: "Stragglers",
            sections: straggler_sections,
            placeholder: placeholder_table(STRAGGLER_HEADER, STRAGGLER_ALIGN, 0, NO_RANKS),
        },
    ]
}

/// The stages any rank has, in the reference rank's order.
fn stage_labels(report: &Report) -> Vec<&str> {
    let mut labels: Vec<&str> = Vec::new();
    for stage in report.ranks.iter().flat_map(|r| &r.stages) {
        if !labels.contains(&stage.stage.as_str()) {
            labels.push(&stage.stage);
        }
    }
    labels
}

/// `0.123 ms`.
fn ms(us: f64) -> String {
    format!("{:.3} ms", us / 1000.0)
}

/// `+1234.567 µs`: offsets keep the µs, which is what alignment is good to.
fn offset(us: f64) -> String {
    format!("{us:+.3} µs")
}

fn rank_row(rank: &RankRow, stage: &RankStage) -> Row {
    Row {
        cells: vec![
            vec![rank.rank.to_string()],
            vec![offset(rank.clock_offset_us)],
            vec![ms(stage.busy_us)],
            vec![ms(stage.idle_us)],
            vec![ms(stage.exposed_comm_us)],
            vec![ms(stage.comm_us)],
            vec![ms(stage.wait_us)],
            vec![ms(stage.exposed_wait_us)],
            vec![ms(stage.step_p50_us)],
            vec![ms(stage.step_p90_us)],
            vec![stage.late_steps.to_string()],
            vec![rank.skipped.to_string()],
        ],
        share_pct: None,
    }
}

fn collective_row(c: &CollectiveRow) -> Row {
    Row {
        cells: vec![
            vec![c.family.clone()],
            vec![c.count.to_string()],
            vec![ms(c.transfer_us)],
            vec![ms(c.wait_us)],
            vec![format!("{:.1}%", c.wait_share_pct)],
            vec![format!("{:.1} µs", c.skew_p50_us)],
            vec![format!("{:.1} µs", c.skew_p90_us)],
            vec![format!("{:.1} µs", c.skew_max_us)],
        ],
        share_pct: None,
    }
}

fn straggler_row(s: &StragglerRow) -> Row {
    Row {
        cells: vec![
            vec![s.step.to_string()],
            vec![s.rank.to_string()],
            vec![format!("{:.1} µs", s.late_us)],
            vec![format!("{} #{}", s.family, s.collective)],
            vec![format!("{:.1} µs", s.others_wait_us)],
            vec![s.cause.clone()],
            vec![trace(&s.detail)],
        ],
        share_pct: None,
    }
}

/// `Ranks late most often: rank 2 (3 steps), rank 0 (1 step); 4 steps with a straggler`.
fn late_summary(report: &Report, stage: &str, count: usize) -> String {
    if count == 0 {
        return "No step had a rank at least 5 µs late.".to_string();
    }
    let mut late: Vec<(u32, usize)> = report
        .ranks
        .iter()
        .filter_map(|r| {
            let s = r.stages.iter().find(|s| s.stage == stage)?;
            (s.late_steps > 0).then_some((r.rank, s.late_steps))
        })
        .collect();
    late.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let named: Vec<String> = late
        .iter()
        .map(|(rank, n)| format!("rank {rank} ({n} step{})", if *n == 1 { "" } else { "s" }))
        .collect();
    format!(
        "Ranks late most often: {}; {count} step{} with a straggler",
        named.join(", "),
        if count == 1 { "" } else { "s" }
    )
}
