//! The diff pairs' ground truth against a recount of the written files, and each pair's
//! change against its base: only what the pair says changed differs.

use std::collections::BTreeMap;

use serde_json::Value;

use super::*;
use crate::recount::{canonical_name, load};

fn ns(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1000.0).round() as u64
}

/// Per canonical GPU-op name: (ns, count), recounted from the file alone.
fn recount(trace: &Value) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" && (e["cat"] == "kernel" || e["cat"] == "gpu_memcpy") {
            let total = out
                .entry(canonical_name(e["name"].as_str().unwrap()))
                .or_default();
            total.0 += ns(&e["dur"]);
            total.1 += 1;
        }
    }
    out
}

fn written() -> (tempfile::TempDir, Vec<PairTruth>) {
    let dir = tempfile::tempdir().unwrap();
    let truths = write_diff_pairs(dir.path()).unwrap();
    (dir, truths)
}

#[test]
fn every_side_recounts_to_its_ground_truth() {
    let (_dir, truths) = written();
    assert_eq!(truths.len(), pairs().len());
    for truth in &truths {
        for side in [&truth.base, &truth.new] {
            let trace = load(&side.trace);
            let kernels: BTreeMap<String, (u64, u64)> = side
                .kernels
                .iter()
                .map(|(k, t)| (k.clone(), (t.ns, t.count)))
                .collect();
            assert_eq!(recount(&trace), kernels, "{}", side.trace.display());
            let markers = trace["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["cat"] == "user_annotation")
                .filter(|e| {
                    e["name"].as_str().unwrap()
                        == format!(
                            "step[EXTEND bs={} toks={}]",
                            side.batch_size, side.tokens_per_step
                        )
                })
                .count();
            assert_eq!(markers, STEPS);
            assert_eq!(side.steps.len(), STEPS);
            let roles: u64 = side.roles.values().map(|r| r.0).sum();
            let busy: u64 = side
                .steps
                .iter()
                .map(|s| s.compute_ns + s.exposed_comm_ns + s.memcpy_ns)
                .sum();
            assert_eq!(roles, busy);
            assert_eq!(side.kernels.values().map(|k| k.ns).sum::<u64>(), busy);
        }
    }
}

fn truth_of<'a>(truths: &'a [PairTruth], name: &str) -> &'a PairTruth {
    truths.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn the_slower_gemms_are_the_only_change_and_exactly_five_percent() {
    let (_dir, truths) = written();
    let t = truth_of(&truths, "gemm-5pct-slower");
    let kernels = t.changed_kernels();
    assert_eq!(kernels.len(), 3, "{kernels:?}");
    for row in &kernels {
        assert!(row.key.starts_with("nvjet_"), "{}", row.key);
        assert_eq!(t.base.kernels[&row.key].family.as_deref(), Some("gemm"));
        assert_eq!(row.new_ns * 100, row.base_ns * 105);
        assert_eq!(row.status(), "slower");
    }
    let roles: Vec<String> = t.changed_roles().into_iter().map(|r| r.key).collect();
    assert_eq!(roles, ["down", "gate_up", "o_proj", "qkv"]);
    let parts = t.changed_parts();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert_eq!(parts[0].key, "compute");
    let gemm_delta: i64 = kernels.iter().map(ChangedRow::delta_ns).sum();
    assert_eq!(parts[0].delta_ns(), gemm_delta);
    assert_eq!(
        t.new.wall_ns() as i64 - t.base.wall_ns() as i64,
        gemm_delta,
        "the wall time grows by the GEMMs' ns exactly"
    );
}

#[test]
fn the_unfused_norm_replaces_one_fused_launch_per_layer_by_seven_kernels() {
    let (_dir, truths) = written();
    let t = truth_of(&truths, "norm-unfused");
    let fused = "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>";
    let (base, new) = (&t.base.kernels[fused], &t.new.kernels[fused]);
    assert_eq!(
        (base.count, new.count),
        (2 * (LAYERS * STEPS) as u64, (LAYERS * STEPS) as u64)
    );
    let kernels = t.changed_kernels();
    let fresh: Vec<&ChangedRow> = kernels.iter().filter(|r| r.status() == "new").collect();
    assert_eq!(fresh.len(), 7, "{kernels:?}");
    assert_eq!(kernels.len(), 8);
    let roles = t.changed_roles();
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0].key, "norm");
    assert_eq!(roles[0].status(), "slower");
    let delta: i64 = kernels.iter().map(ChangedRow::delta_ns).sum();
    assert_eq!(roles[0].delta_ns(), delta);
    assert_eq!(t.new.wall_ns() as i64 - t.base.wall_ns() as i64, delta);
}

#[test]
fn the_host_gap_grows_by_exactly_the_added_ns_on_every_later_step() {
    let (_dir, truths) = written();
    let t = truth_of(&truths, "host-gap");
    assert!(t.changed_kernels().is_empty());
    let parts = t.changed_parts();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert_eq!(parts[0].key, "host_gap");
    assert_eq!(parts[0].delta_ns(), 200_000 * (STEPS as i64 - 1));
    for (b, n) in t.base.steps.iter().zip(&t.new.steps).skip(1) {
        assert_eq!(n.host_gap_ns - b.host_gap_ns, 200_000);
        assert_eq!(n.wall_ns - b.wall_ns, 200_000);
    }
    assert_eq!(t.base.steps[0], t.new.steps[0]);
}

#[test]
fn the_batch_and_vendor_pairs_change_no_time_only_the_workload_or_the_names() {
    let (_dir, truths) = written();
    let t = truth_of(&truths, "batch-16");
    assert!(t.changed_kernels().is_empty() && t.changed_parts().is_empty());
    assert_eq!((t.base.batch_size, t.new.batch_size), (8, 16));
    assert_eq!(
        (t.base.tokens_per_step, t.new.tokens_per_step),
        (1024, 2048)
    );
    let t = truth_of(&truths, "cuda-vs-rocm");
    assert!(t.changed_roles().is_empty() && t.changed_parts().is_empty());
    assert!(t.base.kernels.keys().any(|k| k.starts_with("nvjet_")));
    assert!(t.new.kernels.keys().any(|k| k.starts_with("Cijk_")));
    assert!(t
        .new
        .kernels
        .keys()
        .all(|k| !t.base.kernels.contains_key(k) || k.starts_with("Memcpy")));
}

#[test]
fn ground_truth_json_names_the_sides_relative_to_the_pair() {
    let (dir, truths) = written();
    let t = &truths[0];
    let text = std::fs::read_to_string(dir.path().join(t.name.as_str()).join(FILE_NAME)).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["pair"], "gemm-5pct-slower");
    assert!(json["base"]["trace"].as_str().unwrap().starts_with("base/"));
    assert_eq!(json["changed_kernels"].as_array().unwrap().len(), 3);
    assert_eq!(json["steps"], STEPS as u64);
}
