//! The diff pairs' ground truth against single triages of each side (the real binary and
//! plugin): kernel table, roles, every step's wall-time parts and the fuse table agree
//! with it exactly, so a diff that disagrees with the truth is wrong about the change, not
//! about one side. Also that `make-fixtures --diff-pairs DIR` writes every pair.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use llm_triage_tests::diff_pairs::{pairs, SideTruth, FILE_NAME, STAGE};
use llm_triage_tests::names::canonical_name;
use serde_json::Value;

use super::support::{decimal_ns, pair};
use crate::util::triage_json;

fn ns(v: &Value) -> i64 {
    decimal_ns(&v.to_string())
}

/// Every way the triage of `side` disagrees with its truth.
fn disagreements(side: &SideTruth) -> (Vec<String>, BTreeSet<String>) {
    let report = triage_json(&["--input", side.trace.to_str().unwrap(), "--min-share", "0"]);
    let what = side.trace.display().to_string();
    let stages = report["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1, "{what}: one stage");
    let stage = &stages[0];
    assert_eq!(stage["stage"], STAGE, "{what}");
    let mut wrong = Vec::new();

    let mut kernels = BTreeMap::new();
    for row in stage["kernels"].as_array().unwrap() {
        let raw = row["raw_names"][0].as_str().unwrap();
        let key = canonical_name(raw);
        if !key.starts_with("_Z") && row["name"] != key.as_str() {
            wrong.push(format!(
                "{what}: kernel row named {} for {key}",
                row["name"]
            ));
        }
        kernels.insert(
            key,
            (ns(&row["gpu_time_us"]), row["launches"].as_i64().unwrap()),
        );
    }
    let expected: BTreeMap<String, (i64, i64)> = side
        .kernels
        .iter()
        .map(|(k, t)| (k.clone(), (t.ns as i64, t.count as i64)))
        .collect();
    if kernels != expected {
        wrong.push(format!("{what}: kernels {kernels:#?}, truth {expected:#?}"));
    }

    let roles: BTreeMap<String, (i64, i64)> = stage["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["role"].as_str().unwrap().to_string(),
                (ns(&r["gpu_time_us"]), r["launches"].as_i64().unwrap()),
            )
        })
        .collect();
    let expected: BTreeMap<String, (i64, i64)> = side
        .roles
        .iter()
        .map(|(k, t)| (k.clone(), (t.0 as i64, t.1 as i64)))
        .collect();
    if roles != expected {
        wrong.push(format!("{what}: roles {roles:?}, truth {expected:?}"));
    }

    let steps = stage["timeline"]["steps"].as_array().unwrap();
    if steps.len() != side.steps.len() {
        wrong.push(format!(
            "{what}: {} steps, truth {}",
            steps.len(),
            side.steps.len()
        ));
    }
    let label = format!(
        "step[EXTEND bs={} toks={}]",
        side.batch_size, side.tokens_per_step
    );
    for (i, (step, truth)) in steps.iter().zip(&side.steps).enumerate() {
        let got = [
            ns(&step["wall_us"]),
            ns(&step["compute_us"]),
            ns(&step["exposed_comm_us"]),
            ns(&step["memcpy_us"]),
            ns(&step["launch_idle_us"]),
            ns(&step["host_gap_us"]),
            ns(&step["sync_idle_us"]) + ns(&step["graph_gap_us"]),
        ];
        let want = [
            truth.wall_ns,
            truth.compute_ns,
            truth.exposed_comm_ns,
            truth.memcpy_ns,
            truth.launch_idle_ns,
            truth.host_gap_ns,
            0,
        ]
        .map(|v| v as i64);
        if got != want {
            wrong.push(format!("{what}: step {i} [wall compute comm memcpy launch host sync+graph] {got:?}, truth {want:?}"));
        }
        if step["label"] != label.as_str() {
            wrong.push(format!("{what}: step {i} label {}", step["label"]));
        }
    }
    let fusions = stage["fusions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    (wrong, fusions)
}

#[test]
fn each_sides_triage_agrees_with_the_pairs_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for spec in pairs() {
        let truth = pair(dir.path(), spec.name);
        let (mut base_wrong, base_fusions) = disagreements(&truth.base);
        let (mut new_wrong, new_fusions) = disagreements(&truth.new);
        wrong.append(&mut base_wrong);
        wrong.append(&mut new_wrong);
        let started: Vec<&String> = new_fusions.difference(&base_fusions).collect();
        let stopped: Vec<&String> = base_fusions.difference(&new_fusions).collect();
        if started.iter().copied().ne(&truth.fusions_started)
            || stopped.iter().copied().ne(&truth.fusions_stopped)
        {
            wrong.push(format!(
                "{}: fusions started {started:?} stopped {stopped:?}, truth {:?} {:?}",
                truth.name, truth.fusions_started, truth.fusions_stopped
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn make_fixtures_diff_pairs_writes_every_pair_with_its_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_make-fixtures"))
        .arg("--diff-pairs")
        .arg(dir.path())
        .output()
        .expect("make-fixtures runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for spec in pairs() {
        let root = dir.path().join(spec.name);
        let truth: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(FILE_NAME)).unwrap()).unwrap();
        assert_eq!(truth["pair"], spec.name);
        for side in ["base", "new"] {
            let trace = root.join(truth[side]["trace"].as_str().unwrap());
            assert!(trace.is_file(), "{}", trace.display());
            assert!(Path::new(&root.join(side).join("server_args.json")).is_file());
        }
    }
}
