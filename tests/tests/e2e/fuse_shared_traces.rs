//! End-to-end fuse table on the real traces in ../shared/traces: fused paths that ran
//! are recognised (times recounted here from the raw events), model gates keep other
//! families' rows out, and no row rests on a path hash.

use std::collections::HashMap;

use crate::util::*;
use serde_json::Value;

const SGLANG_PREFILL: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz";
const VLLM_B200: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";

/// Every trace, with the framework to force for those `auto` refuses.
const ALL_TRACES: &[(&str, &str)] = &[
    (VLLM_B200, "auto"),
    (SGLANG_PREFILL, "auto"),
    ("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz", "auto"),
    (
        "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
        "auto",
    ),
    (
        "AMD-AGI__TraceLens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "vllm",
    ),
    ("zhang-yuhui__nano-vllm__decode_gpu_0.json", "vllm"),
    (
        "facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
        "sglang",
    ),
    ("pytorch__kineto__worker0.pt.trace.json.gz", "trtllm"),
];

fn fusions(report: &Value) -> Vec<(&str, &Value)> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            let stage = s["stage"].as_str().unwrap();
            s["fusions"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |f| (stage, f))
        })
        .collect()
}

fn row<'a>(report: &'a Value, stage: &str, id: &str) -> &'a Value {
    fusions(report)
        .into_iter()
        .find(|(s, f)| *s == stage && f["id"] == id)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no {id} row in {stage}: {:#?}", fusions(report)))
}

/// Summed `dur` (ns) of the GPU events whose name contains `needle`, and of all.
fn recount(file: &str, needle: &str) -> (i64, i64) {
    let events = raw_events(&shared_trace(file));
    let gpu = gpu_events(&events);
    let total: i64 = gpu.iter().map(|e| us_to_ns(&e["dur"])).sum();
    let part: i64 = gpu
        .iter()
        .filter(|e| e["name"].as_str().unwrap_or("").contains(needle))
        .map(|e| us_to_ns(&e["dur"]))
        .sum();
    (part, total)
}

#[test]
fn sglang_mi300x_prefill_shows_its_fused_act_and_mul_as_present() {
    let path = shared_trace(SGLANG_PREFILL);
    let report = triage_json(&["--input", path.to_str().unwrap()]);
    for (id, needle, pattern) in [(
        "sglang.act-and-mul",
        "act_and_mul_kernel",
        "act and mul kernel",
    )] {
        let f = row(&report, "extend/prefill", id);
        assert_eq!(f["conclusion"], "present", "{id}");
        assert_eq!(f["confidence"], "Confirmed", "{id}");
        assert_eq!(f["status"], "mainline", "{id}");
        let (part, total) = recount(SGLANG_PREFILL, needle);
        let related = f["related_gpu_time_us"].as_f64().unwrap();
        assert!(
            (related - part as f64 / 1000.0).abs() < 1e-6,
            "{id}: {related} vs {part} ns"
        );
        let share = f["share_pct"].as_f64().unwrap();
        assert!(
            (share - 100.0 * part as f64 / total as f64).abs() < 1e-9,
            "{id}"
        );
        for e in f["evidence"].as_array().unwrap() {
            assert_eq!(e["part"], "fused", "{id}");
            assert_eq!(e["field"], "kernel", "{id}");
            assert_eq!(e["pattern"], pattern, "{id}");
            assert!(e["kernel"].as_str().unwrap().contains(needle), "{id}: {e}");
        }
        assert!(!f["checked_against"].as_array().unwrap().is_empty());
    }
    // act_and_mul: 16508.145 us of 492811.563 us (python recount: 3.3497...%).
    let act = row(&report, "extend/prefill", "sglang.act-and-mul");
    assert_eq!(format!("{:.1}", act["share_pct"].as_f64().unwrap()), "3.3");
    let text = llm_triage()
        .args(["--input", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(
            "| Fused activation-and-mul (SwiGLU / GeGLU) | Confirmed | 16.51 ms | 3.3% |"
        ),
        "{text}"
    );
    assert!(text.contains("The fused path is present in this trace (3.3% related GPU time)."));
}

/// The gates of every catalog row, by id, from `catalog list --format json`.
fn gates(extra: &[&str]) -> HashMap<String, Value> {
    let out = llm_triage()
        .args(["catalog", "list", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r["gate"].clone()))
        .collect()
}

#[test]
fn vllm_b200_gpt_oss_shows_no_row_gated_to_other_model_families() {
    let path = shared_trace(VLLM_B200);
    let gates = gates(&[]);
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0.1"]);
    let shown = fusions(&report);
    assert!(!shown.is_empty());
    for (stage, f) in &shown {
        let gate = &gates[f["id"].as_str().unwrap()];
        let include: Vec<&str> = gate["models_include"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            include.is_empty() || include.iter().any(|m| m.contains("gpt")),
            "{stage}: {} is gated to {include:?}",
            f["id"]
        );
    }
    let ids: Vec<&str> = shown
        .iter()
        .map(|(_, f)| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "vllm.upstream-rope-kv-store-cuda",
            "vllm.allreduce-rmsnorm",
            "vllm.attn-quant"
        ]
    );

    // vLLM on CUDA has no fused RoPE + KV-cache write (its compile pass registers only for
    // ROCm AITER), so the split kernels conclude "only upstream / another engine". Pinned
    // to a Python recount over the raw events: rotary_embedding_kernel 133.085 us +
    // reshape_and_cache_flash_kernel 162.686 us of 11665.760 us GPU time = 2.5354%.
    let upstream = shown
        .iter()
        .map(|(_, f)| f)
        .find(|f| f["id"] == "vllm.upstream-rope-kv-store-cuda")
        .unwrap();
    assert_eq!(upstream["status"], "upstream");
    assert_eq!(upstream["conclusion"], "upstream-only");
    assert_eq!(upstream["confidence"], "Confirmed");
    assert!((upstream["related_gpu_time_us"].as_f64().unwrap() - 295.771).abs() < 1e-6);
    assert!((upstream["share_pct"].as_f64().unwrap() - 2.535377).abs() < 1e-5);
    let parts: Vec<(&str, &str)> = upstream["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kernel"].as_str().unwrap(), e["part"].as_str().unwrap()))
        .collect();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts[0].0.contains("vllm::rotary_embedding_kernel") && parts[0].1 == "split:rope");
    assert!(
        parts[1].0.contains("vllm::reshape_and_cache_flash_kernel")
            && parts[1].1 == "split:kv-cache-write"
    );
    assert!(upstream["rationale"]
        .as_str()
        .unwrap()
        .starts_with("The fused path exists only upstream or in another engine"));

    // The gate is what keeps the Qwen3-only PR row out: with every model gate removed
    // its split kernels (RMSNorm, RoPE, cache write, FP8 quant) match this trace.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fusions")).unwrap();
    let catalog = workspace_root().join("catalog/fusions");
    for entry in std::fs::read_dir(&catalog).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let ungated: String = text
            .lines()
            .filter(|l| !l.starts_with("models_include") && !l.starts_with("models_exclude"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(
            dir.path().join("fusions").join(p.file_name().unwrap()),
            ungated,
        )
        .unwrap();
    }
    let ungated = triage_json(&[
        "--input",
        path.to_str().unwrap(),
        "--min-share",
        "0.1",
        "--catalog",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        fusions(&ungated)
            .iter()
            .any(|(_, f)| f["id"] == "vllm.fused-qk-norm-rope-cache-quant"),
        "{:#?}",
        fusions(&ungated)
    );
}

/// Words that look like digests: 12+ alphanumerics with a digit, or 24+ of anything.
/// Stricter than the tool's own filter, written independently.
fn without_digest_words(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !(w.len() >= 24 || (w.len() >= 12 && w.chars().any(|c| c.is_ascii_digit()))))
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The pattern's words, each lower-cased with separators dropped, appear in order in
/// `text` once separators are dropped too: a plain re-check of a token pattern.
fn compact_contains(text: &str, pattern: &str) -> bool {
    let compact = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    compact(text).contains(&compact(pattern))
}

#[test]
fn no_trace_shows_a_row_whose_only_evidence_is_a_path_hash() {
    let mut rows_seen = 0;
    for (file, framework) in ALL_TRACES {
        let path = shared_trace(file);
        let report = triage_json(&[
            "--input",
            path.to_str().unwrap(),
            "--framework",
            framework,
            "--min-share",
            "0.1",
        ]);
        let kernels: HashMap<(&str, &str), &Value> = report["stages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| {
                let stage = s["stage"].as_str().unwrap();
                s["kernels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |k| ((stage, k["name"].as_str().unwrap()), k))
            })
            .collect();
        for (stage, f) in fusions(&report) {
            rows_seen += 1;
            let backed = f["evidence"].as_array().unwrap().iter().any(|e| {
                let pattern = e["pattern"].as_str().unwrap();
                if pattern.starts_with("re:") || e["field"] == "kernel" {
                    return true;
                }
                // A location or CPU-op hit must survive dropping every digest-like word.
                let Some(k) = kernels.get(&(stage, e["kernel"].as_str().unwrap())) else {
                    return false;
                };
                let texts: Vec<String> = if e["field"] == "location" {
                    k["python_locations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s["location"].as_str().unwrap().to_string())
                        .collect()
                } else {
                    k["cpu_ops"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().to_string())
                        .collect()
                };
                texts
                    .iter()
                    .any(|t| compact_contains(&without_digest_words(t), pattern))
            });
            assert!(
                backed,
                "{file} {stage}: {} has only hash-backed evidence: {f:#}",
                f["id"]
            );
        }
    }
    assert!(rows_seen >= 8, "only {rows_seen} fuse rows over all traces");
}

#[test]
fn catalog_list_json_has_the_contract_fields_and_validate_passes() {
    let out = llm_triage()
        .args(["catalog", "list", "--format", "json"])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 60, "{}", rows.len());
    for r in rows {
        for key in ["id", "label", "origin", "status", "checked_against"] {
            assert!(!r[key].is_null(), "{key} missing in {r}");
        }
    }
    let out = llm_triage().args(["catalog", "validate"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("catalog OK: "), "{text}");

    let out = llm_triage()
        .args(["catalog", "show", "sglang.act-and-mul"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("id: sglang.act-and-mul\n"), "{text}");
    // A same-site group says which group anchors it, in text and JSON.
    let out = llm_triage()
        .args(["catalog", "show", "torch.eager-unfused-silu-mul"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nsplit mul (same site as silu): kernel: mul functor\n"),
        "{text}"
    );
    let out = llm_triage()
        .args([
            "catalog",
            "show",
            "torch.eager-unfused-silu-mul",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["split"][1]["same_site_as"], "silu");
    assert!(row["split"][0].get("same_site_as").is_none(), "{row}");
    let out = llm_triage()
        .args(["catalog", "show", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_broken_catalog_dir_is_one_line_naming_file_and_row_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fusions")).unwrap();
    let good =
        std::fs::read_to_string(workspace_root().join("catalog/fusions/torch.toml")).unwrap();
    let bad = good.replace(
        "kernel = [\"native anonymous namespace silu kernel\", \"native silu kernel\"]",
        "kernel = [\"mul\"]",
    );
    assert_ne!(good, bad);
    let file = dir.path().join("fusions/torch.toml");
    std::fs::write(&file, bad).unwrap();
    let path = shared_trace(SGLANG_PREFILL);
    for args in [
        vec![
            "catalog",
            "validate",
            "--catalog",
            dir.path().to_str().unwrap(),
        ],
        vec![
            "--input",
            path.to_str().unwrap(),
            "--catalog",
            dir.path().to_str().unwrap(),
        ],
    ] {
        let out = llm_triage().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&file.display().to_string()), "{err}");
        assert!(err.contains("row torch.eager-unfused-silu-mul"), "{err}");
        assert!(
            err.contains("split group \"silu\": pattern \"mul\""),
            "{err}"
        );
    }
}

/// The HF transformers Qwen1.5 eager trace multiplies in many places (RoPE, RMSNorm
/// weights, the gated MLP). The eager SiLU * mul row counts only the multiply launched
/// where the SiLU was (`modeling_qwen2.py:56`), so RoPE's multiplies are not sold as a
/// fusion opportunity. Pinned to a Python recount (kernel -> correlation -> runtime call
/// -> innermost enclosing `transformers/models/` frame): silu_kernel 1350.043 us, the
/// BinaryFunctor MulFunctor kernel 1790.553 us of which 1227.131 us at line 56 (the rest
/// has no Python frame).
#[test]
fn hf_eager_silu_mul_counts_only_the_multiply_at_the_silu_site() {
    let path = shared_trace("AMD-AGI__TraceLens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let report = triage_json(&[
        "--input",
        path.to_str().unwrap(),
        "--framework",
        "vllm",
        "--min-share",
        "0.1",
    ]);
    let rows = fusions(&report);
    let (_, row) = rows
        .iter()
        .find(|(_, f)| f["id"] == "torch.eager-unfused-silu-mul")
        .expect("the eager silu-mul row");
    let related = row["related_gpu_time_us"].as_f64().unwrap();
    assert!((related - (1350.043 + 1227.131)).abs() < 1e-6, "{related}");
    let evidence: Vec<(&str, f64)> = row["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["part"].as_str().unwrap(),
                e["gpu_time_us"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(evidence.len(), 2, "{evidence:?}");
    assert_eq!(evidence[0].0, "split:silu");
    assert!((evidence[0].1 - 1350.043).abs() < 1e-6);
    assert_eq!(evidence[1].0, "split:mul");
    assert!((evidence[1].1 - 1227.131).abs() < 1e-6);
    let locations: Vec<&str> = row["python_locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        !locations.iter().any(|l| l.contains("apply_rotary_pos_emb")),
        "{locations:?}"
    );
}

/// Whether a raw (mangled) AITER norm kernel name was built with `ADD_RESIDUAL = true`:
/// the first `bool` template argument (`Lb1`/`Lb0`) after the two `int` ones.
fn aiter_norm_adds_residual(raw: &str) -> Option<bool> {
    let rest = raw.split("add_rmsnorm_quant_kernel").nth(1)?;
    let at = rest.find("Lb")?;
    Some(&rest[at + 2..at + 3] == "1")
}

#[test]
fn sglang_qwen3_add_rmsnorm_counts_only_the_norms_that_add_the_residual() {
    // Qwen3's q/k-norm (`apply_qk_norm`, 2 per layer) and the final norm run the same
    // AITER template with ADD_RESIDUAL = false under the CPU op aiter::rmsnorm: they are
    // not evidence of the fused residual add, in eager prefill nor under graph replay.
    for (file, stage) in [
        (SGLANG_PREFILL, "extend/prefill"),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
            "decode",
        ),
    ] {
        let path = shared_trace(file);
        let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
        let f = row(&report, stage, "sglang.fused-add-rmsnorm");
        let events = raw_events(&path);
        let gpu = gpu_events(&events);
        let total: i64 = gpu.iter().map(|e| us_to_ns(&e["dur"])).sum();
        let (mut adds, mut plain) = (0i64, 0i64);
        for e in &gpu {
            match aiter_norm_adds_residual(e["name"].as_str().unwrap_or("")) {
                Some(true) => adds += us_to_ns(&e["dur"]),
                Some(false) => plain += us_to_ns(&e["dur"]),
                None => {}
            }
        }
        assert!(adds > 0 && plain > 0, "{file}: {adds} {plain}");
        let related = f["related_gpu_time_us"].as_f64().unwrap();
        assert!(
            (related - adds as f64 / 1000.0).abs() < 1e-6,
            "{file}: {related} us vs {adds} ns with the residual add ({plain} ns without)"
        );
        let share = f["share_pct"].as_f64().unwrap();
        assert!((share - 100.0 * adds as f64 / total as f64).abs() < 1e-9);
        for e in f["evidence"].as_array().unwrap() {
            let kernel = e["kernel"].as_str().unwrap();
            assert!(kernel.contains(", true,"), "{file}: {kernel}");
        }
        assert_eq!(f["conclusion"], "present");
    }
}

#[test]
fn vllm_b200_asynctp_near_miss_is_not_carried_by_every_gemm_of_the_stage() {
    // The only all-gather of this prefill is the logits gather (one launch, 0.2%); the
    // AsyncTP row's GEMM group matches every nvjet GEMM. A near miss is as large as its
    // smallest part, so this pairing is below the row's min_share and gives no note.
    let path = shared_trace(VLLM_B200);
    let (gather, total) = recount(VLLM_B200, "AllGather");
    assert!(gather > 0 && 100.0 * (gather as f64) / (total as f64) < 0.5);
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
    for stage in report["stages"].as_array().unwrap() {
        for note in stage["similarity"].as_array().unwrap() {
            assert_ne!(
                note["family_id"], "vllm.async-tp-gemm-collective",
                "{}: {note}",
                stage["stage"]
            );
        }
    }
}

#[test]
fn sglang_mi300x_never_says_the_cuda_only_rope_kv_store_did_not_fire() {
    // SGLang fuses the KV-cache store into RoPE only on CUDA with a bf16 KV cache
    // (`enable_fused_set_kv_buffer`); these traces ran on an AMD MI300X (hip* runtime
    // calls, `AMD Instinct MI300X`), so their RoPE + store kernels are no missed fusion.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fusions")).unwrap();
    let sglang = workspace_root().join("catalog/fusions/sglang.toml");
    // Left out too: the QK-norm + RoPE row, which claims the prefill RoPE launches first
    // (its split QK norms are seen at `models/utils.py apply_qk_norm`), so that the gate
    // alone is what this checks.
    let ungated: String = std::fs::read_to_string(&sglang)
        .unwrap()
        .split("\n[[fusion]]\n")
        .filter(|row| !row.contains("id = \"sglang.fused-qknorm-rope\""))
        .collect::<Vec<_>>()
        .join("\n[[fusion]]\n")
        .lines()
        .filter(|l| !l.starts_with("devices"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("fusions/sglang.toml"), ungated).unwrap();
    for (file, stage) in [
        (SGLANG_PREFILL, "extend/prefill"),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
            "decode",
        ),
    ] {
        let path = shared_trace(file);
        let args = ["--input", path.to_str().unwrap(), "--min-share", "0"];
        let report = triage_json(&args);
        let shown: Vec<&str> = fusions(&report)
            .iter()
            .map(|(_, f)| f["id"].as_str().unwrap())
            .collect();
        assert!(
            !shown.contains(&"sglang.fused-rope-kv-store"),
            "{file}: {shown:?}"
        );
        // The platform gate is what removes it: without `devices` lines it comes back.
        let mut with_catalog = args.to_vec();
        with_catalog.extend(["--catalog", dir.path().to_str().unwrap()]);
        let ungated = triage_json(&with_catalog);
        assert_eq!(
            row(&ungated, stage, "sglang.fused-rope-kv-store")["conclusion"],
            "not-fired",
            "{file}"
        );
    }
}

#[test]
fn vllm_llama_tp4_compiled_allreduce_rmsnorm_is_found_and_undecided_on_rocm() {
    use llm_triage_tests::compiled_tp::{write_compiled_llama_tp4, Platform, INDUCTOR_RMSNORM};
    // NCCL and custom all-reduce, each followed by Inductor's compiled RMSNorm: the
    // biggest fusion opportunity of the run, which a norm group of hand-written kernels
    // alone never reported.
    let dir = tempfile::tempdir().unwrap();
    let h100 = write_compiled_llama_tp4(&dir.path().join("h100"), Platform::H100).unwrap();
    let report = triage_json(&["--input", h100.to_str().unwrap(), "--min-share", "0"]);
    let f = row(&report, "extend/prefill", "vllm.allreduce-rmsnorm");
    assert_eq!(f["conclusion"], "not-fired", "{f}");
    let evidence = f["evidence"].as_array().unwrap();
    assert!(
        evidence
            .iter()
            .any(|e| e["kernel"] == INDUCTOR_RMSNORM && e["part"] == "split:norm"),
        "{f}"
    );
    // Recounted from the raw events: the all-reduces and the RMSNorms the row names.
    let events = raw_events(&h100);
    let gpu = gpu_events(&events);
    let total: i64 = gpu.iter().map(|e| us_to_ns(&e["dur"])).sum();
    let named: Vec<&str> = evidence
        .iter()
        .map(|e| e["kernel"].as_str().unwrap())
        .collect();
    let part: i64 = gpu
        .iter()
        .filter(|e| {
            let name = e["name"].as_str().unwrap_or("");
            named.iter().any(|k| name.starts_with(k))
        })
        .map(|e| us_to_ns(&e["dur"]))
        .sum();
    let share = f["share_pct"].as_f64().unwrap();
    assert!(
        (share - 100.0 * part as f64 / total as f64).abs() < 1e-9,
        "{share}"
    );

    // The MI300X copy: AITER's fused variant launches both kernels, so names cannot say.
    let mi300x = write_compiled_llama_tp4(&dir.path().join("mi300x"), Platform::Mi300x).unwrap();
    let report = triage_json(&["--input", mi300x.to_str().unwrap(), "--min-share", "0"]);
    let f = row(&report, "extend/prefill", "vllm.allreduce-rmsnorm");
    assert_eq!(f["conclusion"], "undecided", "{f}");
    assert_eq!(f["confidence"], "Candidate", "{f}");
    assert!(
        f["rationale"]
            .as_str()
            .unwrap()
            .starts_with("Undecided: on rocm the fused path launches these same kernels"),
        "{f}"
    );
}
