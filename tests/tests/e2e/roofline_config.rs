//! The roofline's model-config shape source (issue 18) through the real binary: on the
//! SGLang Qwen3-8B decode step replayed from a HIP graph (no `Input Dims` of its own),
//! `--model-config` with the model's published `config.json` gives every decode GEMM
//! the bytes and FLOPs per launch that the same launches get from their capture trace's
//! `Input Dims` (within 5%); the TP size in `server_args.json` divides the sharded
//! dimensions; a config missing a needed field leaves the rows `unknown` with a note;
//! a `--model-config` that cannot be read or parsed is exit 3 naming the file.
//!
//! Qwen3-8B's `config.json` values below are those published on Hugging Face
//! (`Qwen/Qwen3-8B/config.json`, read through a verbatim copy at
//! huggingface.co/thejaminator/qwen-hook-layer-9/commit/478fb720f1f3ced834fce0275b55b2732d438edc,
//! "Copy config.json from Qwen/Qwen3-8B"); the prefill trace's own `Input Dims`
//! (`[15360, 4096] x [4096, 24576]`, `[15, 4096] x [4096, 151936]`) agree with them.

use std::path::Path;

use crate::util::*;
use serde_json::Value;

const DECODE: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";
const CAPTURE: &str = "AMD-AGI__TraceLens__bs_32_rank0.json.gz";

/// The fields of Qwen3-8B's published config the GEMM shapes need (and a few more).
const QWEN3_8B: &str = r#"{
  "architectures": ["Qwen3ForCausalLM"],
  "head_dim": 128,
  "hidden_size": 4096,
  "intermediate_size": 12288,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 151936
}"#;

/// Every kernel row of every stage whose family is `gemm`, by name.
fn gemm_rows(report: &Value) -> Vec<(String, Value)> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["kernels"].as_array().unwrap().iter())
        .filter(|k| k["family"] == "gemm")
        .map(|k| (k["name"].as_str().unwrap().to_string(), k.clone()))
        .collect()
}

fn per_launch(row: &Value, what: &str) -> f64 {
    let roof = &row["roofline"];
    roof[what].as_f64().unwrap() / roof["shaped_launches"].as_f64().unwrap()
}

fn within(actual: f64, expected: f64, pct: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= expected.abs() * pct / 100.0,
        "{what}: {actual} vs {expected} (more than {pct}% apart)"
    );
}

fn config_in(dir: &Path, text: &str) -> String {
    let path = dir.join("config.json");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn decode_gemm_bytes_from_the_model_config_agree_with_the_capture_input_dims() {
    let decode = shared_trace(DECODE);
    let from_dims = triage_json(&[
        "--input",
        decode.to_str().unwrap(),
        "--capture-input",
        shared_trace(CAPTURE).to_str().unwrap(),
        "--min-share",
        "0",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), QWEN3_8B);
    let from_config = triage_json(&[
        "--input",
        decode.to_str().unwrap(),
        "--model-config",
        &config,
        "--min-share",
        "0",
    ]);
    let dims_rows = gemm_rows(&from_dims);
    let config_rows = gemm_rows(&from_config);
    // qkv, o_proj, gate_up, down (one kernel each, 36 launches) and lm_head (one).
    assert_eq!(config_rows.len(), 5, "{config_rows:?}");
    for (name, row) in &config_rows {
        let roof = &row["roofline"];
        assert_eq!(roof["shape_source"], "model-config", "{name}");
        assert_eq!(roof["shaped_launches"], row["launches"], "{name}");
        let (_, dims) = dims_rows
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} in the capture run"));
        assert_eq!(dims["roofline"]["shape_source"], "input-dims", "{name}");
        within(
            per_launch(row, "bytes"),
            per_launch(dims, "bytes"),
            5.0,
            &format!("{name} bytes per launch"),
        );
        within(
            per_launch(row, "flops"),
            per_launch(dims, "flops"),
            5.0,
            &format!("{name} FLOPs per launch"),
        );
    }
    // Attention: the config's heads with the step annotation's sums, recounted here from
    // the raw event: per layer 2 * 32 heads * (128 + 128) * Σ sq·sk FLOPs, on the first
    // attention kernel of the layer (the partition kernel; the reduce follows it).
    let events = raw_events(&decode);
    let sqsk: u64 = events
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter_map(|n| n.strip_prefix("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32("))
        .map(|g| {
            g.split("sqsk")
                .nth(1)
                .unwrap()
                .trim_end_matches(')')
                .parse()
                .unwrap()
        })
        .next()
        .expect("the decode step's annotation");
    assert_eq!(sqsk, 32_785);
    let attention: Vec<&Value> = from_config["stages"][0]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["family"] == "attention" && !k["roofline"]["flops"].is_null())
        .collect();
    assert_eq!(attention.len(), 1, "one attention kernel per layer shaped");
    let roof = &attention[0]["roofline"];
    assert!(attention[0]["name"]
        .as_str()
        .unwrap()
        .contains("paged_attention_ll4mi_QKV"));
    assert_eq!(roof["shape_source"], "model-config");
    assert_eq!(roof["shaped_launches"], 36);
    assert_eq!(
        per_launch(attention[0], "flops"),
        (2 * 32 * 256 * sqsk) as f64
    );
    assert!(
        from_config["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("model config")
            && n.as_str().unwrap().contains("145 GEMM launches")),
        "a note says what the model config shaped: {}",
        from_config["notes"]
    );
}

#[test]
fn the_config_beside_server_args_and_its_tp_size_shard_the_gemms() {
    // The trace in a run directory with its server args (TP 2) and the model's config.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join(DECODE);
    std::fs::copy(shared_trace(DECODE), &trace).unwrap();
    std::fs::write(
        dir.path().join("server_args.json"),
        r#"{"model_path": "Qwen/Qwen3-8B", "tp_size": 2}"#,
    )
    .unwrap();
    config_in(dir.path(), QWEN3_8B);
    let report = triage_json(&[
        "--input",
        trace.to_str().unwrap(),
        "--framework",
        "sglang",
        "--min-share",
        "0",
    ]);
    // bs=32 tokens; per rank: qkv N = (32 + 2 * 8) * 128 / 2, gate_up N = 2 * 12288 / 2,
    // o_proj K = 32 * 128 / 2, down K = 12288 / 2, lm_head N = 151936 / 2 (bf16).
    let gemm = |m: u64, n: u64, k: u64| (2 * (m * k + k * n + m * n), 2 * m * n * k);
    let mut expected = vec![
        gemm(32, 3072, 4096),
        gemm(32, 4096, 2048),
        gemm(32, 12288, 4096),
        gemm(32, 4096, 6144),
        gemm(32, 75968, 4096),
    ];
    let mut got: Vec<(u64, u64)> = gemm_rows(&report)
        .iter()
        .map(|(name, row)| {
            assert_eq!(row["roofline"]["shape_source"], "model-config", "{name}");
            (
                per_launch(row, "bytes") as u64,
                per_launch(row, "flops") as u64,
            )
        })
        .collect();
    expected.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, expected);
}

#[test]
fn a_config_without_a_needed_field_leaves_the_gemms_unknown_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(
        dir.path(),
        &QWEN3_8B.replace("\"intermediate_size\": 12288,", ""),
    );
    let report = triage_json(&[
        "--input",
        shared_trace(DECODE).to_str().unwrap(),
        "--model-config",
        &config,
        "--min-share",
        "0",
    ]);
    let rows = gemm_rows(&report);
    assert_eq!(rows.len(), 5);
    for (name, row) in rows {
        // No figure at all (HIP kernels carry no grid either), or an `unknown` one.
        let roof = &row["roofline"];
        assert!(
            roof.is_null() || (roof["flops"].is_null() && roof["bound"] == "unknown"),
            "{name}: {row}"
        );
    }
    let notes = report["notes"].to_string();
    assert!(
        notes.contains(&config) && notes.contains("intermediate_size"),
        "{notes}"
    );
}

#[test]
fn an_unreadable_or_invalid_model_config_is_exit_3_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.json");
    let bad = config_in(dir.path(), "{not json");
    for (path, why) in [
        (missing.to_str().unwrap().to_string(), "cannot read"),
        (bad, "invalid JSON"),
    ] {
        let out = llm_triage()
            .args(["--input", shared_trace(DECODE).to_str().unwrap()])
            .args(["--model-config", &path])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{path}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "{stderr}");
        assert!(
            line.contains(&path) && line.contains(why),
            "{path}: {stderr}"
        );
    }
}
