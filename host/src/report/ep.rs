//! The "EP imbalance" block, shared by markdown, text and HTML: per stage, a row per
//! process group, phase (dispatch, combine, other all-to-all) and rank (all-to-alls, elements sent and received, the hottest peer
//! and how far above the mean it is, the sends per peer), each group's hot rank as the
//! summary, and what was skipped or failed the cross-check as notes. No block at all
//! when no op carried split sizes, so other reports read as before.

use std::fmt::Write as _;

use super::escape::trace;
use super::model::{EpGroupRow, EpImbalance, EpRankRow, Report};
use super::view::{placeholder_table, Align, Block, Row, Section, Table};

const HEADER: &[&str] = &[
    "Group",
    "Phase",
    "Rank",
    "All-to-alls",
    "Sent",
    "Received",
    "Hot peer",
    "Max/mean",
    "Sent per peer",
];
const ALIGN: &[Align] = &[
    Align::Left,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
];

/// Peers a row's "Sent per peer" cell lists; all are in the JSON.
const PEERS_SHOWN: usize = 16;

/// The block, or none when the report has no EP imbalance.
pub(super) fn ep_blocks(report: &Report) -> Vec<Block> {
    let Some(ep) = &report.ep_imbalance else {
        return Vec::new();
    };
    let mut stages: Vec<&str> = Vec::new();
    for row in &ep.ranks {
        if !stages.contains(&row.stage.as_str()) {
            stages.push(&row.stage);
        }
    }
    let sections = stages
        .iter()
        .enumerate()
        .map(|(i, &stage)| Section {
            label: stage.to_string(),
            table: Table {
                header: HEADER,
                align: ALIGN,
                share_column: None,
                rows: ep
                    .ranks
                    .iter()
                    .filter(|r| r.stage == stage)
                    .map(rank_row)
                    .collect(),
            },
            summary: group_summary(ep.groups.iter().filter(|g| g.stage == stage)),
            notes: if i == 0 { run_notes(ep) } else { Vec::new() },
        })
        .collect();
    let placeholder = placeholder_table(HEADER, ALIGN, 0, &no_rows(ep));
    vec![Block {
        title: "EP imbalance",
        sections,
        placeholder,
    }]
}

fn rank_row(r: &EpRankRow) -> Row {
    let mut peers: Vec<String> = r
        .peers
        .iter()
        .take(PEERS_SHOWN)
        .map(|p| format!("{}: {}", p.peer, p.sent))
        .collect();
    if r.peers.len() > PEERS_SHOWN {
        peers.push(format!("… {} more", r.peers.len() - PEERS_SHOWN));
    }
    Row {
        cells: vec![
            vec![trace(&r.group)],
            vec![r.phase.clone()],
            vec![r.rank.map_or("?".to_string(), |r| r.to_string())],
            vec![r.count.to_string()],
            vec![r.sent.to_string()],
            vec![r.received.to_string()],
            vec![r.hot_peer.map_or("-".to_string(), |p| p.to_string())],
            vec![format!("{:.2}x", r.max_over_mean)],
            vec![peers.join(", ")],
        ],
        share_pct: None,
    }
}

/// `Group `2` (`ep_group`) dispatch: hot rank 2 received 2.41x the mean of its 4
/// members (from ranks 0, 1, 2, 3)`, one clause per group and phase.
fn group_summary<'a>(groups: impl Iterator<Item = &'a EpGroupRow>) -> Option<String> {
    let clauses: Vec<String> = groups
        .filter_map(|g| {
            let hot = g.hot_rank?;
            let who = if g.members_are_ranks {
                "rank"
            } else {
                "group index"
            };
            let description = g
                .description
                .as_ref()
                .map(|d| format!(" ({})", trace(d)))
                .unwrap_or_default();
            let senders: Vec<String> = g.senders.iter().map(u32::to_string).collect();
            let from = match senders.len() {
                0 => String::new(),
                1 => format!(" (sent by rank {} only)", senders[0]),
                _ => format!(" (from ranks {})", senders.join(", ")),
            };
            Some(format!(
                "Group {}{description} {}: hot {who} {hot} received {:.2}x the mean of its {} members{from}",
                trace(&g.group),
                g.phase,
                g.max_over_mean,
                g.members.len()
            ))
        })
        .collect();
    (!clauses.is_empty()).then(|| clauses.join("; "))
}

/// The unit, the skipped ops and the cross-check.
fn run_notes(ep: &EpImbalance) -> Vec<String> {
    let mut notes = vec![format!(
        "counts are {} from the ops' split sizes (a token row is hidden-size elements; the trace does not give the hidden size); sent = In split size, received = Out split size, per peer in group order; dispatch and combine are a rank's consecutive all-to-alls whose split lists mirror each other (the combine sends back what the dispatch received), other ops are all-to-all",
        ep.unit
    )];
    let skipped = ep.skipped_malformed + ep.skipped_truncated + ep.skipped_one_sided;
    if skipped > 0 {
        notes.push(format!(
            "{skipped} all-to-all op(s) skipped: {} malformed split list(s), {} truncated by the profiler, {} with one side an empty list",
            ep.skipped_malformed, ep.skipped_truncated, ep.skipped_one_sided
        ));
    }
    if ep.cross_checked > 0 {
        let mut note = format!(
            "cross-check: {} of {} sender/receiver pairs disagree (a sender's In split entry against the receiver's Out split entry for it)",
            ep.mismatches, ep.cross_checked
        );
        if let Some(m) = ep.mismatch_examples.first() {
            let _ = write!(
                note,
                "; first: group {} #{}, rank {} sent {} to rank {}, which received {}",
                trace(&m.group),
                m.seq,
                m.from,
                m.sent,
                m.to,
                m.received
            );
        }
        notes.push(note);
    }
    notes
}

fn no_rows(ep: &EpImbalance) -> String {
    format!(
        "No all-to-all split sizes could be read ({} skipped).",
        ep.skipped_malformed + ep.skipped_truncated + ep.skipped_one_sided
    )
}
