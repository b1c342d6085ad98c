//! The overlap table end to end: hand-built traces whose hidden and exclusive times are
//! known by construction (two and three streams, stream 0, same-stream overlap, idle
//! gaps), mapping+formal pairs from the fixture generator (graphs off / graphs on), the
//! bare-list trace form in both roles, and the mode validation of the command line.

use std::path::{Path, PathBuf};

use crate::util::*;
use llm_triage_tests::{write_fixture, Engine, FixtureSpec, StageKind};
use serde_json::Value;

const GEMM: &str = "nvjet_tst_128x64_64x6_1x1_v_bz_coopA_TNT";
const NORM: &str = "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>";
const ALL_REDUCE: &str = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
const COPY: &str = "Memcpy DtoD (Device -> Device)";

/// Where the hand-built traces' clock starts, in µs.
const T0: f64 = 1_700_000_000.0;

/// One GPU op: name, stream, start and duration in µs after `T0`.
type Op = (&'static str, u32, f64, f64);

/// A Kineto trace holding only GPU ops on pid 0 (stream = tid, as Kineto writes them).
fn write_trace(dir: &Path, file: &str, ops: &[Op]) -> PathBuf {
    let events: Vec<Value> = ops
        .iter()
        .enumerate()
        .map(|(i, &(name, stream, start, dur))| {
            let cat = if name.starts_with("Memcpy") {
                "gpu_memcpy"
            } else {
                "kernel"
            };
            serde_json::json!({
                "ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
                "ts": T0 + start, "dur": dur,
                "args": {"device": 0, "stream": stream, "correlation": 100 + i},
            })
        })
        .collect();
    let doc = serde_json::json!({"schemaVersion": 1, "traceEvents": events});
    let path = dir.join(file);
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    path
}

fn stage<'a>(report: &'a Value, label: &str) -> &'a Value {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == label)
        .unwrap_or_else(|| panic!("no stage {label}: {report}"))
}

fn measured<'a>(report: &'a Value, label: &str) -> &'a Value {
    report["overlap_stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == label)
        .unwrap_or_else(|| panic!("no overlap stage {label}: {report}"))
}

fn row<'a>(stage: &'a Value, kernel: &str) -> &'a Value {
    stage["overlap"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kernel"] == kernel)
        .unwrap_or_else(|| panic!("no overlap row {kernel}: {stage}"))
}

/// (kernel, µs) pairs of a row's `overlaps_with`.
fn partners(row: &Value) -> Vec<(String, f64)> {
    row["overlaps_with"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kernel"].as_str().unwrap().to_string(),
                p["overlap_us"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn exposure(row: &Value) -> [f64; 4] {
    [
        "hidden_us",
        "exclusive_us",
        "hidden_by_compute_us",
        "total_us",
    ]
    .map(|k| {
        row[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} missing: {row}"))
    })
}

#[test]
fn two_streams_with_stream_zero_give_exact_hidden_and_exclusive_times() {
    let dir = tempfile::tempdir().unwrap();
    // stream 7: gemm 0-100, norm 100-130, gemm 130-230; stream 0: all-reduce 50-120, 200-260.
    let path = write_trace(
        dir.path(),
        "two-streams-DECODE.trace.json",
        &[
            (GEMM, 7, 0.0, 100.0),
            (NORM, 7, 100.0, 30.0),
            (GEMM, 7, 130.0, 100.0),
            (ALL_REDUCE, 0, 50.0, 70.0),
            (ALL_REDUCE, 0, 200.0, 60.0),
        ],
    );
    let report = triage_json(&["--framework", "sglang", "--input", path.to_str().unwrap()]);
    let decode = stage(&report, "decode");
    let rows = decode["overlap"].as_array().unwrap();
    let order: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["kernel"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    // The all-reduce is 77% hidden: neither headroom nor (communication) low-roi.
    assert_eq!(order, [(GEMM, "headroom"), (NORM, "low-roi-hidden")]);

    let gemm = row(decode, GEMM);
    assert_eq!(exposure(gemm), [80.0, 120.0, 0.0, 200.0]);
    assert_eq!(partners(gemm), [(ALL_REDUCE.to_string(), 80.0)]);
    // Its next neighbour is tight and has no known scope.
    assert_eq!(gemm["dep_risk"], "unclear");
    assert_eq!(gemm["priority"], "P2");
    assert_eq!(gemm["recommendation"], "check deps");
    assert_eq!(gemm["python_scope"], Value::Null);
    assert_eq!(gemm["known_path"], Value::Null);
    assert_eq!(gemm["raw_names"], serde_json::json!([GEMM]));

    let norm = row(decode, NORM);
    assert_eq!(exposure(norm), [20.0, 10.0, 0.0, 30.0]);
    // A norm right after a GEMM on its stream looks like its consumer.
    assert_eq!(norm["dep_risk"], "high");
    assert_eq!(norm["priority"], "P4");
    assert_eq!(norm["recommendation"], "skip");

    let m = measured(&report, "decode");
    assert_eq!(m["busy_us"], 260.0);
    assert_eq!(m["overlapped_us"], 100.0);
    assert_eq!(m["idle_us"], 0.0);
    assert_eq!(m["same_stream_overlap_us"], 0.0);
    assert_eq!(m["streams"], 2);

    // The markdown keeps the predecessor's columns and Formal signal text.
    let text = llm_triage()
        .args(["--framework", "sglang", "--input", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "| P2 | headroom | `{GEMM}` | unmapped | 200.0 us, share 76.9%, excl 60.0% / hid 40.0% | unclear (next op on the same stream (norm, 0.0 us gap): scope unknown) | check deps |"
        )),
        "{text}"
    );
    assert!(
        text.contains("GPU busy 0.26 ms on 2 streams: 0.10 ms overlapped, 0.00 ms idle"),
        "{text}"
    );
}

#[test]
fn three_streams_same_stream_overlap_and_idle_time_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    // stream 7: gemm 0-100, norm 90-110 (overlaps the gemm on its own stream),
    // gemm 150-160; stream 0: all-reduce 20-60; stream 21: copy 40-80.
    let path = write_trace(
        dir.path(),
        "three-streams-DECODE.trace.json",
        &[
            (GEMM, 7, 0.0, 100.0),
            (NORM, 7, 90.0, 20.0),
            (GEMM, 7, 150.0, 10.0),
            (ALL_REDUCE, 0, 20.0, 40.0),
            (COPY, 21, 40.0, 40.0),
        ],
    );
    let report = triage_json(&["--framework", "vllm", "--input", path.to_str().unwrap()]);
    let decode = stage(&report, "decode");
    let order: Vec<(&str, &str)> = decode["overlap"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kernel"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    // Non-compute headroom first, then compute, then low-roi-hidden.
    assert_eq!(
        order,
        [
            (NORM, "headroom"),
            (GEMM, "headroom"),
            (COPY, "low-roi-hidden")
        ]
    );
    let gemm = row(decode, GEMM);
    assert_eq!(exposure(gemm), [60.0, 50.0, 0.0, 110.0]);
    // Communication outranks the copy while both run (20-60); then the copy alone.
    assert_eq!(
        partners(gemm),
        [(ALL_REDUCE.to_string(), 40.0), (COPY.to_string(), 20.0)]
    );
    // The norm's time overlaps only its own stream: exclusive, and reported.
    let norm = row(decode, NORM);
    assert_eq!(exposure(norm), [0.0, 20.0, 0.0, 20.0]);
    assert_eq!(norm["dep_risk"], "high");
    assert_eq!(norm["priority"], "P2");
    let copy = row(decode, COPY);
    assert_eq!(exposure(copy), [40.0, 0.0, 40.0, 40.0]);
    assert_eq!(partners(copy), [(GEMM.to_string(), 40.0)]);
    assert_eq!(copy["recommendation"], "skip");

    let m = measured(&report, "decode");
    assert_eq!(m["busy_us"], 120.0);
    assert_eq!(m["overlapped_us"], 60.0);
    assert_eq!(m["idle_us"], 40.0);
    assert_eq!(m["same_stream_overlap_us"], 10.0);
    assert_eq!(m["streams"], 3);
    let notes: Vec<&str> = m["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.contains(&format!(
            "2 GPU ops ran while another op of their own stream was running (10.0 us of same-stream overlap, most in {GEMM}); they count as exclusive unless another stream was busy"
        ).as_str()),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.starts_with("single-trace mode: ")),
        "{notes:?}"
    );

    // --overlap-table-limit keeps the first rows.
    let limited = triage_json(&[
        "--framework",
        "vllm",
        "--overlap-table-limit",
        "1",
        "--input",
        path.to_str().unwrap(),
    ]);
    let rows = stage(&limited, "decode")["overlap"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 1);
}

#[test]
fn one_stream_says_so_in_one_line_without_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trace(
        dir.path(),
        "one-stream-DECODE.trace.json",
        &[(GEMM, 0, 0.0, 100.0), (NORM, 0, 100.0, 30.0)],
    );
    let report = triage_json(&["--framework", "sglang", "--input", path.to_str().unwrap()]);
    assert_eq!(stage(&report, "decode")["overlap"], serde_json::json!([]));
    let m = measured(&report, "decode");
    assert_eq!(m["streams"], 1);
    assert_eq!(
        m["notes"],
        serde_json::json!([
            "one GPU stream (stream 0) ran all 2 GPU ops of this stage: nothing overlaps, so there are no overlap rows"
        ])
    );
    let out = llm_triage()
        .args(["--framework", "sglang", "--input", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let section = text
        .split("## Overlap Opportunity Table\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n## Fuse Opportunity Table").next())
        .unwrap();
    assert_eq!(
        section,
        "### decode\n- one GPU stream (stream 0) ran all 2 GPU ops of this stage: nothing overlaps, so there are no overlap rows"
    );
}

/// A decode fixture with the all-reduce on a second stream.
fn decode_fixture(
    dir: &Path,
    graph_replay: bool,
    seed: u64,
) -> (PathBuf, llm_triage_tests::GroundTruth) {
    let spec = FixtureSpec {
        graph_replay,
        streams: 2,
        seed,
        gzip: false,
        layers: 3,
        ..FixtureSpec::new(Engine::Sglang, StageKind::Decode)
    };
    write_fixture(dir, &spec).unwrap()
}

/// Mapping (graphs off) and formal (graphs on) fixtures of one engine.
fn mapping_formal_pair(root: &Path) -> (PathBuf, PathBuf, llm_triage_tests::GroundTruth) {
    let (mapping, mapping_truth) = decode_fixture(&root.join("mapping"), false, 3);
    let (formal, _) = decode_fixture(&root.join("formal"), true, 4);
    (mapping, formal, mapping_truth)
}

fn check_scopes_come_from_mapping(report: &Value, mapping_truth: &llm_triage_tests::GroundTruth) {
    assert_eq!(report["mode"], "mapping-formal");
    assert_eq!(report["mapping_framework"]["name"], "sglang");
    assert_eq!(report["mapping_inputs"].as_array().unwrap().len(), 1);
    let decode = stage(report, "decode");
    let rows = decode["overlap"].as_array().unwrap();
    assert!(!rows.is_empty(), "{decode}");
    let truth = mapping_truth.stage("decode").unwrap();
    for r in rows {
        let kernel = r["kernel"].as_str().unwrap();
        let expected = truth.kernels[kernel].location();
        assert_eq!(r["python_scope"], expected, "{kernel}");
        // Never the graph launch of the formal trace.
        assert!(!expected.contains("model_runner.py"), "{expected}");
    }
    // Issue 17: the formal trace's graph replays are aligned with the mapping trace, so
    // its kernel table shows each kernel's mapping launch site and CPU op, not the graph
    // launch.
    let kernel_rows = decode["kernels"].as_array().unwrap();
    for k in kernel_rows {
        let name = k["name"].as_str().unwrap();
        let want = &truth.kernels[name];
        assert_eq!(
            k["python_locations"][0]["location"],
            want.location(),
            "{name}"
        );
        assert_eq!(k["cpu_ops"][0], want.cpu_op(), "{name}");
    }
    let notes = measured(report, "decode")["notes"].to_string();
    assert!(
        notes.contains("Python scope from the mapping trace for 11 kernels: 11 by canonical name"),
        "{notes}"
    );
}

#[test]
fn mapping_formal_takes_the_python_scope_from_the_mapping_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (mapping, formal, mapping_truth) = mapping_formal_pair(dir.path());
    let report = triage_json(&[
        "--framework",
        "auto",
        "--mapping-input",
        mapping.to_str().unwrap(),
        "--formal-input",
        formal.to_str().unwrap(),
    ]);
    check_scopes_come_from_mapping(&report, &mapping_truth);

    // Markdown: one Framework line (both sides agree), then both trace lists.
    let out = llm_triage()
        .args([
            "--mapping-input",
            mapping.to_str().unwrap(),
            "--formal-input",
            formal.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = text.lines().take(5).collect();
    assert_eq!(header[1], "Mode: mapping-formal");
    assert_eq!(header[2], "Framework: SGLang");
    assert!(text.contains("\nMapping traces: "), "{text}");
    assert!(text.contains("\nFormal traces: "), "{text}");
}

/// The same file as a bare JSON array of events (the form the predecessor crashed on).
fn as_list_form(path: &Path) -> PathBuf {
    let events = raw_events(path);
    let list = path.with_file_name(format!(
        "list-{}",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&list, serde_json::to_string(&events).unwrap()).unwrap();
    std::fs::remove_file(path).unwrap();
    list
}

#[test]
fn list_form_traces_work_in_both_roles() {
    let dir = tempfile::tempdir().unwrap();
    let (mapping, formal, mapping_truth) = mapping_formal_pair(dir.path());
    let mapping = as_list_form(&mapping);
    let formal = as_list_form(&formal);
    let report = triage_json(&[
        "--framework",
        "sglang",
        "--mapping-input",
        mapping.to_str().unwrap(),
        "--formal-input",
        formal.to_str().unwrap(),
    ]);
    check_scopes_come_from_mapping(&report, &mapping_truth);
}

#[test]
fn mode_flags_are_validated_with_clear_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--input", "a.json", "--formal-input", "b.json"],
            "--input (single-trace mode) cannot be combined with --mapping-input/--formal-input (mapping+formal mode); pass one mode",
        ),
        (
            &["--mapping-input", "a.json"],
            "mapping+formal mode needs --formal-input PATH too (the production-config trace the times come from)",
        ),
        (
            &["--formal-input", "b.json"],
            "mapping+formal mode needs --mapping-input PATH too (a trace captured with CUDA graphs off, for Python scopes)",
        ),
        (
            &["--framework", "sglang"],
            "nothing to triage: pass --input PATH (a trace file or profile directory), or --mapping-input PATH with --formal-input PATH; see --help",
        ),
    ];
    for (args, message) in cases {
        let out = llm_triage().args(*args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("llm-triage: error: {message}\n"),
            "{args:?}"
        );
    }
}

/// A vLLM eager decode trace (all-reduce on a second stream) whose steps end with the
/// logits all-gather: an exposed NCCL all-gather that async TP never fuses (it is not a
/// sequence-parallel collective next to a GEMM), so `vllm.async-tp` must not name it.
#[test]
fn the_logits_all_gather_is_not_tagged_async_tp() {
    let dir = tempfile::tempdir().unwrap();
    let spec = FixtureSpec {
        graph_replay: false,
        streams: 2,
        gzip: false,
        layers: 3,
        logits_all_gather: true,
        ..FixtureSpec::new(Engine::Vllm, StageKind::Decode)
    };
    let (path, truth) = write_fixture(dir.path(), &spec).unwrap();
    let gather = "ncclDevKernel_AllGather_RING_LL";
    let site = truth.stage("decode").unwrap().kernels[gather]
        .location()
        .to_string();
    assert!(site.contains("logits_processor.py"), "{site}");
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
    let row = row(stage(&report, "decode"), gather);
    assert_eq!(row["python_scope"], site.as_str(), "{row}");
    assert_eq!(row["known_path"], Value::Null, "{row}");
}
