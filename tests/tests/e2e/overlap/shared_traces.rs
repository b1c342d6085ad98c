//! The overlap sweep on real traces from `../shared/traces`, pinned to an independent
//! recount (a plain per-segment sweep in Python over the raw events, times parsed as
//! exact decimals).

use crate::util::*;
use serde_json::Value;

fn only_overlap_stage(report: &Value) -> &Value {
    let stages = report["overlap_stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1, "{stages:?}");
    &stages[0]
}

#[test]
fn hta_nccl_training_trace_has_an_exposed_all_reduce_row() {
    let path = shared_trace("facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz");
    let report = triage_json(&["--framework", "vllm", "--input", path.to_str().unwrap()]);
    let measured = only_overlap_stage(&report);
    assert_eq!(measured["stage"], "all");
    assert_eq!(measured["streams"], 2);
    assert_eq!(measured["busy_us"], 157500.014);
    assert_eq!(measured["overlapped_us"], 7685.824);
    assert_eq!(measured["idle_us"], 503050.991);
    assert_eq!(measured["same_stream_overlap_us"], 0.0);

    let rows = report["stages"][0]["overlap"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{rows:?}");
    let nccl = &rows[0];
    assert_eq!(nccl["kernel"], "ncclKernel_AllReduce_RING_LL_Sum_float");
    assert_eq!(nccl["total_us"], 46762.159);
    assert_eq!(nccl["hidden_us"], 7685.824);
    assert_eq!(nccl["exclusive_us"], 39076.335);
    assert_eq!(nccl["verdict"], "headroom");
    assert_eq!(nccl["recommendation"], "try overlap");
    // An all-reduce is not on vLLM's async-TP path (it fuses reduce-scatter / all-gather
    // with a GEMM and never runs an all-reduce), so no known path is named.
    assert_eq!(nccl["known_path"], Value::Null);
    for row in rows {
        let sum = row["hidden_us"].as_f64().unwrap() + row["exclusive_us"].as_f64().unwrap();
        assert!(
            (sum - row["total_us"].as_f64().unwrap()).abs() < 1e-6,
            "{row}"
        );
    }
}

#[test]
fn vllm_b200_eager_trace_has_one_stream_and_reports_its_same_stream_overlap() {
    let path = shared_trace("AMD-AGI__TraceLens__eager_trace.json.gz");
    let report = triage_json(&["--framework", "vllm", "--input", path.to_str().unwrap()]);
    let measured = only_overlap_stage(&report);
    assert_eq!(measured["stage"], "extend/prefill");
    assert_eq!(measured["streams"], 1);
    assert_eq!(measured["busy_us"], 11596.482);
    assert_eq!(measured["same_stream_overlap_us"], 69.278);
    let notes = measured["notes"].as_array().unwrap();
    assert_eq!(
        notes[0],
        "one GPU stream (stream 7) ran all 929 GPU ops of this stage: nothing overlaps, so there are no overlap rows"
    );
    assert!(
        notes[1]
            .as_str()
            .unwrap()
            .starts_with("112 GPU ops ran while another op of their own stream was running (69.3 us of same-stream overlap"),
        "{notes:?}"
    );
    assert_eq!(report["stages"][0]["overlap"], serde_json::json!([]));
}
