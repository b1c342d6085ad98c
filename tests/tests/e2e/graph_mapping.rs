//! Mapping+formal mode on generated graph-off/graph-on pairs (issue 17, source c): every
//! graph-replayed kernel whose eager counterpart exists (exact, another tile of its
//! family, fused or split) gets that counterpart's launch site and CPU op, as the eager
//! trace's own report shows them; a node only the graph has stays at the graph launch,
//! and the notes count those nodes and their exact GPU time. Also that
//! `make-fixtures --graph-pairs DIR` writes every pair with its ground truth.

use std::collections::BTreeMap;
use std::path::Path;

use llm_triage_tests::graph_pairs::{write_graph_pairs, PairTruth};
use serde_json::Value;

use crate::util::triage_json;

/// Kernel name -> (locations, CPU ops) of the decode stage of a report.
fn rows(report: &Value) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let stage = report["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["stage"] == "decode"))
        .expect("a decode stage");
    let strings = |v: &Value, key: Option<&str>| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| match key {
                Some(k) => x[k].as_str().map(str::to_string),
                None => x.as_str().map(str::to_string),
            })
            .collect()
    };
    stage["kernels"]
        .as_array()
        .expect("kernel rows")
        .iter()
        .map(|row| {
            let name = row["name"].as_str().expect("row name").to_string();
            let locations = strings(&row["python_locations"], Some("location"));
            let cpu_ops = strings(&row["cpu_ops"], None);
            (name, (locations, cpu_ops))
        })
        .collect()
}

/// Kernel name -> the row's (`matched_by`, `mapping_confidence`) in the decode stage,
/// `None` for a row no mapping pair resolved.
fn mapping_confidence(report: &Value) -> BTreeMap<String, Option<(String, f64)>> {
    let stage = report["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["stage"] == "decode"))
        .expect("a decode stage");
    stage["kernels"]
        .as_array()
        .expect("kernel rows")
        .iter()
        .map(|row| {
            let pair = row["matched_by"].as_str().map(|by| {
                (
                    by.to_string(),
                    row["mapping_confidence"].as_f64().expect("a confidence"),
                )
            });
            (row["name"].as_str().expect("row name").to_string(), pair)
        })
        .collect()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn check_pair(truth: &PairTruth) {
    let eager = rows(&triage_json(&[
        "--framework",
        "sglang",
        "--input",
        path(&truth.mapping),
        "--min-share",
        "0",
    ]));
    let alone = rows(&triage_json(&[
        "--framework",
        "sglang",
        "--input",
        path(&truth.formal),
        "--min-share",
        "0",
    ]));
    let report = triage_json(&[
        "--framework",
        "sglang",
        "--formal-input",
        path(&truth.formal),
        "--mapping-input",
        path(&truth.mapping),
        "--min-share",
        "0",
    ]);
    let mapped = rows(&report);
    // Each row says how its kernel was paired, as the truth knows it.
    let confidence = mapping_confidence(&report);
    for node in &truth.nodes {
        let want = match node.kind.as_str() {
            "exact" => Some(("exact", 1.0)),
            "family" => Some(("family", 0.5)),
            "fused" => Some(("fused-split", 0.4)),
            _ => None,
        };
        assert_eq!(
            confidence[&node.kernel],
            want.map(|(by, c)| (by.to_string(), c)),
            "{}: {} ({})",
            truth.name,
            node.kernel,
            node.kind
        );
    }
    for node in &truth.nodes {
        let (locations, cpu_ops) = &mapped[&node.kernel];
        let want = match &node.counterpart {
            Some(counterpart) => &eager[counterpart],
            // Only the graph has it: the graph launch's site, as without a mapping trace.
            None => &alone[&node.kernel],
        };
        assert_eq!(
            (locations, cpu_ops),
            (&want.0, &want.1),
            "{}: graph node {} ({}, counterpart {:?})",
            truth.name,
            node.kernel,
            node.kind,
            node.counterpart
        );
        assert_eq!(
            locations.len(),
            1,
            "{}: {} has one site",
            truth.name,
            node.kernel
        );
    }
    // Every resolved row's site differs from the graph launch's.
    let graph_launch = &alone[&truth.nodes[0].kernel].0;
    for node in truth.nodes.iter().filter(|n| n.counterpart.is_some()) {
        assert_ne!(&mapped[&node.kernel].0, graph_launch, "{}", node.kernel);
    }
    let (unmatched_ops, unmatched_ns) = truth.unmatched();
    let replayed = truth.nodes.len() as u64 * truth.replays;
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let note = notes
        .iter()
        .find(|n| n.starts_with("CUDA/HIP graph replays aligned to the mapping trace"))
        .unwrap_or_else(|| panic!("{}: no mapping note in {notes:?}", truth.name));
    let resolved = replayed - unmatched_ops;
    assert!(
        note.contains(&format!(": {resolved} of {replayed} replayed GPU ops")),
        "{note}"
    );
    assert!(
        note.contains(&format!(
            "; {unmatched_ops} had no counterpart and stay at the graph launch ({:.1} µs",
            unmatched_ns as f64 / 1000.0
        )),
        "{note}"
    );
    assert!(
        note.contains(&format!(
            "{} replays of {} graphs",
            truth.replays * truth.graphs,
            truth.graphs
        )),
        "{note}"
    );
    // The kernel table's note counts only the replays left at the graph launch.
    let stage_notes = report["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["stage"] == "decode"))
        .map(|s| s["notes"].to_string())
        .unwrap_or_default();
    assert!(
        stage_notes.contains(&format!(
            "{unmatched_ops} GPU ops replayed from CUDA/HIP graphs: their location is the graph launch"
        )),
        "{stage_notes}"
    );
}

#[test]
fn every_graph_node_with_an_eager_counterpart_gets_its_launch_site() {
    let dir = tempfile::tempdir().expect("tempdir");
    let truths = write_graph_pairs(dir.path()).expect("pairs written");
    assert_eq!(truths.len(), 3);
    for truth in &truths {
        // The truth covers every kind of node.
        for kind in ["exact", "family", "fused", "extra"] {
            assert!(truth.nodes.iter().any(|n| n.kind == kind), "{kind}");
        }
        check_pair(truth);
    }
}

#[test]
fn make_fixtures_writes_the_graph_pairs_with_their_ground_truth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_make-fixtures"))
        .arg("--graph-pairs")
        .arg(dir.path())
        .output()
        .expect("make-fixtures runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for pair in [
        "cuda-fused-in-graph",
        "hip-split-in-graph",
        "cuda-piecewise",
    ] {
        let root = dir.path().join(pair);
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("ground_truth.json")).expect("truth"),
        )
        .expect("truth is JSON");
        assert!(truth["nodes"].as_array().is_some_and(|n| !n.is_empty()));
        for side in ["graph-off", "graph-on"] {
            assert_eq!(std::fs::read_dir(root.join(side)).expect(side).count(), 1);
        }
    }
}

#[test]
fn make_fixtures_refuses_a_flag_where_the_out_dir_goes_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [&["--graph-pairs", "--help"][..], &["--matrix"][..]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_make-fixtures"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("make-fixtures runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("usage: make-fixtures"));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?}"
        );
    }
}
