//! EP imbalance (issue 19 point 6) against the generated `ep4-imbalanced` run
//! (`make-fixtures --ranks`): 4 ranks whose MoE dispatches send 4x the tokens to expert
//! rank 2 and whose combines send them back, one dispatch with a garbage `In split size`
//! and one receiver whose `Out split size` entry disagrees with its sender. With
//! `--all-ranks` every rank's per-peer sums per phase (dispatch, combine, and the
//! combine whose dispatch was skipped as a plain all-to-all), its hot peer, each group
//! row's hot rank and its max/mean equal the ground truth (whose phases sum to a recount
//! of the raw `record_param_comms` events); the garbage op is skipped and counted; the
//! cross-check compares every sender/receiver pair and finds exactly the injected
//! disagreement and its mirror in the combine. One rank alone shows its own sends and
//! receives.
//! A run without split sizes, and the HTA trace whose lists are all `"[]"`, have no
//! section.

use llm_triage_tests::ranks::{write_ep_runs, write_rank_runs, RankTruth};
use serde_json::Value;

use crate::util::{llm_triage, raw_events, shared_trace, triage_json};

fn ep_run(dir: &std::path::Path) -> RankTruth {
    let mut runs = write_ep_runs(dir).unwrap();
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

fn counts(v: &Value) -> Vec<u64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|c| c.as_u64().expect("count"))
        .collect()
}

/// Largest over mean, and the first index holding the largest.
fn max_over_mean(counts: &[u64]) -> (f64, u64) {
    let max = *counts.iter().max().unwrap();
    let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    let at = counts.iter().position(|&c| c == max).unwrap();
    (max as f64 / mean, at as u64)
}

/// Per-peer sums of one rank's `record_param_comms` split lists, read from its raw
/// events independently of the tool (ops whose lists do not parse left out), and how
/// many were left out.
fn recount(path: &std::path::Path) -> (Vec<u64>, Vec<u64>, usize, usize) {
    let parse = |v: &Value| -> Option<Vec<u64>> {
        let text = v.as_str()?.trim().strip_prefix('[')?.strip_suffix(']')?;
        text.split(',').map(|p| p.trim().parse().ok()).collect()
    };
    let (mut sent, mut received) = (vec![0u64; 4], vec![0u64; 4]);
    let (mut read, mut bad) = (0, 0);
    for e in raw_events(path) {
        if e["cat"] != "cpu_op" || e["name"] != "record_param_comms" {
            continue;
        }
        match (
            parse(&e["args"]["In split size"]),
            parse(&e["args"]["Out split size"]),
        ) {
            (Some(s), Some(r)) => {
                read += 1;
                for p in 0..4 {
                    sent[p] += s[p];
                    received[p] += r[p];
                }
            }
            _ => bad += 1,
        }
    }
    (sent, received, read, bad)
}

/// The phases in section order.
const PHASES: [&str; 3] = ["dispatch", "combine", "all-to-all"];

#[test]
fn all_ranks_per_peer_counts_hot_rank_and_cross_check_equal_the_injected_split_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let truth = ep_run(dir.path());
    let want = &truth.ep;
    let phase = |p: &str| &want["phases"][p];
    // The ground truth is what the traces hold: per rank, its phases sum to its raw ops.
    let mut bad_total = 0;
    for (r, file) in truth.files.iter().enumerate() {
        let (sent, received, read, bad) = recount(file);
        let sum = |key: &str| -> Vec<u64> {
            (0..4)
                .map(|p| {
                    PHASES
                        .iter()
                        .map(|ph| counts(&phase(ph)["ranks"][r][key])[p])
                        .sum()
                })
                .collect()
        };
        assert_eq!(sent, sum("sent"), "rank {r} sent");
        assert_eq!(received, sum("received"), "rank {r} received");
        let ops: u64 = PHASES
            .iter()
            .map(|ph| phase(ph)["ranks"][r]["count"].as_u64().unwrap())
            .sum();
        assert_eq!(read as u64, ops);
        bad_total += bad;
    }
    assert_eq!(bad_total, 1);

    let input = truth.dir.display().to_string();
    let report = triage_json(&["--input", &input, "--all-ranks"]);
    let ep = &report["ep_imbalance"];
    assert_eq!(ep["unit"], want["unit"]);
    assert_eq!(ep["skipped_malformed"], 1);
    assert_eq!(ep["skipped_truncated"], 0);
    assert_eq!(ep["skipped_one_sided"], 0);
    let rows = ep["ranks"].as_array().expect("ranks[]");
    // Every rank's dispatches and combines; rank 3's combine whose dispatch was skipped
    // is a plain all-to-all.
    let keys: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["phase"].as_str().unwrap().to_string(),
                r["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut expected_keys: Vec<(String, u64)> = Vec::new();
    for ph in PHASES {
        for r in 0..4u64 {
            if phase(ph)["ranks"][r as usize]["count"].as_u64().unwrap() > 0 {
                expected_keys.push((ph.to_string(), r));
            }
        }
    }
    assert_eq!(keys, expected_keys);
    assert_eq!(rows.len(), 9, "{keys:?}");
    let mut ops = 0;
    for row in rows {
        let (ph, r) = (
            row["phase"].as_str().unwrap(),
            row["rank"].as_u64().unwrap(),
        );
        let rank = &phase(ph)["ranks"][r as usize];
        let sent = counts(&rank["sent"]);
        let received = counts(&rank["received"]);
        assert_eq!(row["stage"], "decode");
        assert_eq!(row["group"], want["group"]);
        assert_eq!(row["count"], rank["count"], "{ph} rank {r}");
        ops += row["count"].as_u64().unwrap();
        assert_eq!(row["sent"], sent.iter().sum::<u64>());
        assert_eq!(row["received"], received.iter().sum::<u64>());
        let peers = row["peers"].as_array().unwrap();
        assert_eq!(peers.len(), 4);
        for (p, peer) in peers.iter().enumerate() {
            assert_eq!(peer["peer"], p as u64);
            assert_eq!(peer["sent"], sent[p], "{ph}: rank {r} to {p}");
            assert_eq!(peer["received"], received[p], "{ph}: rank {r} from {p}");
        }
        let (ratio, hot) = max_over_mean(&sent);
        if ph == "dispatch" {
            assert_eq!(
                hot,
                want["hot_rank"].as_u64().unwrap(),
                "every rank's hot peer"
            );
        }
        assert_eq!(row["hot_peer"], hot);
        assert!((row["max_over_mean"].as_f64().unwrap() - ratio).abs() < 1e-9);
    }
    assert_eq!(ep["ops"], ops);
    let groups = ep["groups"].as_array().expect("groups[]");
    let phases: Vec<&str> = groups
        .iter()
        .map(|g| g["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, PHASES);
    let mut ratios = Vec::new();
    for group in groups {
        let ph = group["phase"].as_str().unwrap();
        assert_eq!(group["group"], want["group"]);
        assert_eq!(group["description"], want["description"]);
        assert_eq!(group["members_are_ranks"], true);
        assert_eq!(counts(&group["members"]), vec![0, 1, 2, 3]);
        let senders = if ph == "all-to-all" {
            vec![3]
        } else {
            vec![0, 1, 2, 3]
        };
        assert_eq!(counts(&group["senders"]), senders, "{ph}");
        let member_received = counts(&phase(ph)["member_received"]);
        assert_eq!(counts(&group["received"]), member_received, "{ph}");
        let (ratio, hot) = max_over_mean(&member_received);
        assert_eq!(group["hot_rank"], hot, "{ph}");
        assert!((group["max_over_mean"].as_f64().unwrap() - ratio).abs() < 1e-9);
        ratios.push(ratio);
    }
    // The dispatch shows the hot expert rank; the combine carries the traffic home,
    // where every rank gets back about what it sent.
    assert_eq!(groups[0]["hot_rank"], want["hot_rank"]);
    assert!(ratios[0] > 2.0, "the skew is visible: {ratios:?}");
    assert!(ratios[1] < 1.25, "the combine is about even: {ratios:?}");
    // Every pair of the 20 collectives (4 ranks: 12 pairs; 3 where the garbage op is).
    assert_eq!(ep["cross_checked"], want["cross_checked"]);
    assert_eq!(ep["cross_checked"], 19 * 12 + 6);
    assert_eq!(ep["mismatches"], 2);
    let examples = ep["mismatch_examples"].as_array().unwrap();
    assert_eq!(examples.len(), 2);
    for (m, w) in examples.iter().zip(want["mismatches"].as_array().unwrap()) {
        for key in ["seq", "from", "to", "sent", "received"] {
            assert_eq!(m[key], w[key], "{key}");
        }
        assert_eq!(m["group"], want["group"]);
    }

    // The section in the text formats: the phase, the hot rank and the cross-check.
    for format in ["markdown", "text", "html"] {
        let out = llm_triage()
            .args(["--input", &input, "--all-ranks", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("EP imbalance"), "{format}");
        assert!(text.contains("dispatch: hot rank 2 received"), "{format}");
        assert!(text.contains("combine: hot rank"), "{format}");
        assert!(
            text.contains("2 of 234 sender/receiver pairs disagree"),
            "{format}"
        );
        assert!(text.contains("1 malformed split list"), "{format}");
    }
}

#[test]
fn one_rank_alone_shows_its_own_sends_and_receives() {
    let dir = tempfile::tempdir().unwrap();
    let truth = ep_run(dir.path());
    let report = triage_json(&["--input", &truth.dir.display().to_string()]);
    let ep = &report["ep_imbalance"];
    let rows = ep["ranks"].as_array().expect("ranks[]");
    // Rank 0 read every op: its dispatches and their combines.
    let phases: Vec<&str> = rows.iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["dispatch", "combine"]);
    for (row, ph) in rows.iter().zip(phases) {
        let want = &truth.ep["phases"][ph]["ranks"][0];
        assert_eq!(row["rank"], 0);
        assert_eq!(row["count"], want["count"]);
        let peers = row["peers"].as_array().unwrap();
        let sent: Vec<u64> = peers.iter().map(|p| p["sent"].as_u64().unwrap()).collect();
        let received: Vec<u64> = peers
            .iter()
            .map(|p| p["received"].as_u64().unwrap())
            .collect();
        assert_eq!(sent, counts(&want["sent"]), "{ph}");
        assert_eq!(received, counts(&want["received"]), "{ph}");
        // The group as rank 0's own sends reached its members.
        let group = ep["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["phase"] == ph)
            .unwrap();
        assert_eq!(counts(&group["senders"]), vec![0]);
        assert_eq!(counts(&group["received"]), sent);
        if ph == "dispatch" {
            assert_eq!(group["hot_rank"], 2);
        }
    }
    // No other rank: nothing to cross-check, nothing skipped on rank 0.
    assert_eq!(ep["cross_checked"], 0);
    assert_eq!(ep["skipped_malformed"], 0);
}

#[test]
fn runs_without_split_sizes_have_no_section() {
    let dir = tempfile::tempdir().unwrap();
    let tp = write_rank_runs(dir.path()).unwrap().remove(0);
    let input = tp.dir.display().to_string();
    for args in [
        vec!["--input", input.as_str()],
        vec!["--input", &input, "--all-ranks"],
    ] {
        let report = triage_json(&args);
        assert!(report.get("ep_imbalance").is_none(), "{args:?}");
        let out = llm_triage().args(&args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains("EP imbalance"), "{args:?}");
    }
    // PyTorch's own record_param_comms ops, every split list "[]".
    let hta = shared_trace("facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz");
    let report = triage_json(&["--input", &hta.display().to_string(), "--framework", "vllm"]);
    assert!(report.get("ep_imbalance").is_none());
}
