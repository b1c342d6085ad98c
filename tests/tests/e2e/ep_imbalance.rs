//! EP imbalance (issue 19 point 6) against the generated `ep4-imbalanced` run
//! (`make-fixtures --ranks`): 4 ranks whose all-to-all-v split sizes send 4x the tokens
//! to expert rank 2, one op with a garbage `In split size` and one receiver whose `Out
//! split size` entry disagrees with its sender. With `--all-ranks` every rank's per-peer
//! sums, its hot peer, the group's hot rank and its max/mean equal the ground truth
//! (itself recounted here from the raw `record_param_comms` events); the garbage op is
//! skipped and counted; the cross-check compares every sender/receiver pair and finds
//! exactly the injected disagreement. One rank alone shows its own sends and receives.
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

#[test]
fn all_ranks_per_peer_counts_hot_rank_and_cross_check_equal_the_injected_split_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let truth = ep_run(dir.path());
    let want = &truth.ep;
    // The ground truth is what the traces hold.
    let mut bad_total = 0;
    for (r, file) in truth.files.iter().enumerate() {
        let (sent, received, read, bad) = recount(file);
        let rank = &want["ranks"][r];
        assert_eq!(sent, counts(&rank["sent"]), "rank {r} sent");
        assert_eq!(received, counts(&rank["received"]), "rank {r} received");
        assert_eq!(read as u64, rank["count"].as_u64().unwrap());
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
    assert_eq!(rows.len(), 4, "{rows:?}");
    let mut ops = 0;
    for (r, row) in rows.iter().enumerate() {
        let rank = &want["ranks"][r];
        let sent = counts(&rank["sent"]);
        let received = counts(&rank["received"]);
        assert_eq!(row["stage"], "decode");
        assert_eq!(row["group"], want["group"]);
        assert_eq!(row["rank"], r as u64);
        assert_eq!(row["count"], rank["count"]);
        ops += row["count"].as_u64().unwrap();
        assert_eq!(row["sent"], sent.iter().sum::<u64>());
        assert_eq!(row["received"], received.iter().sum::<u64>());
        let peers = row["peers"].as_array().unwrap();
        assert_eq!(peers.len(), 4);
        for (p, peer) in peers.iter().enumerate() {
            assert_eq!(peer["peer"], p as u64);
            assert_eq!(peer["sent"], sent[p], "rank {r} to {p}");
            assert_eq!(peer["received"], received[p], "rank {r} from {p}");
        }
        let (ratio, hot) = max_over_mean(&sent);
        assert_eq!(
            hot,
            want["hot_rank"].as_u64().unwrap(),
            "every rank's hot peer"
        );
        assert_eq!(row["hot_peer"], hot);
        assert!((row["max_over_mean"].as_f64().unwrap() - ratio).abs() < 1e-9);
    }
    assert_eq!(ep["ops"], ops);
    let groups = ep["groups"].as_array().expect("groups[]");
    assert_eq!(groups.len(), 1);
    let group = &groups[0];
    assert_eq!(group["group"], want["group"]);
    assert_eq!(group["description"], want["description"]);
    assert_eq!(group["members_are_ranks"], true);
    assert_eq!(counts(&group["members"]), vec![0, 1, 2, 3]);
    assert_eq!(counts(&group["senders"]), vec![0, 1, 2, 3]);
    let member_received = counts(&want["member_received"]);
    assert_eq!(counts(&group["received"]), member_received);
    let (ratio, hot) = max_over_mean(&member_received);
    assert_eq!(group["hot_rank"], want["hot_rank"]);
    assert_eq!(hot, 2);
    assert!((group["max_over_mean"].as_f64().unwrap() - ratio).abs() < 1e-9);
    assert!(ratio > 2.0, "the skew is visible: {ratio}");
    // Every pair of the 15 collectives (4 ranks: 12 pairs; 3 where the garbage op is).
    assert_eq!(ep["cross_checked"], want["cross_checked"]);
    assert_eq!(ep["cross_checked"], 14 * 12 + 6);
    assert_eq!(ep["mismatches"], 1);
    let m = &ep["mismatch_examples"][0];
    for key in ["seq", "from", "to", "sent", "received"] {
        assert_eq!(m[key], want["mismatch"][key], "{key}");
    }
    assert_eq!(m["group"], want["group"]);

    // The section in the text formats: the hot rank and the cross-check.
    for format in ["markdown", "text", "html"] {
        let out = llm_triage()
            .args(["--input", &input, "--all-ranks", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("EP imbalance"), "{format}");
        assert!(text.contains("hot rank 2 received"), "{format}");
        assert!(
            text.contains("1 of 174 sender/receiver pairs disagree"),
            "{format}"
        );
        assert!(text.contains("1 malformed split list"), "{format}");
    }
}

#[test]
fn one_rank_alone_shows_its_own_sends_and_receives() {
    let dir = tempfile::tempdir().unwrap();
    let truth = ep_run(dir.path());
    let want = &truth.ep["ranks"][0];
    let report = triage_json(&["--input", &truth.dir.display().to_string()]);
    let ep = &report["ep_imbalance"];
    let rows = ep["ranks"].as_array().expect("ranks[]");
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["rank"], 0);
    assert_eq!(row["count"], want["count"]);
    let peers = row["peers"].as_array().unwrap();
    let sent: Vec<u64> = peers.iter().map(|p| p["sent"].as_u64().unwrap()).collect();
    let received: Vec<u64> = peers
        .iter()
        .map(|p| p["received"].as_u64().unwrap())
        .collect();
    assert_eq!(sent, counts(&want["sent"]));
    assert_eq!(received, counts(&want["received"]));
    // The group as rank 0's own sends reached its members.
    let group = &ep["groups"][0];
    assert_eq!(counts(&group["senders"]), vec![0]);
    assert_eq!(counts(&group["received"]), sent);
    assert_eq!(group["hot_rank"], 2);
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
