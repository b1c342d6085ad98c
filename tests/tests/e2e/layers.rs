//! The Layers and Roles parts of the report (`stages[].layers`, `stages[].roles`) on the
//! shared traces, against counts made here from the raw events by rules of this file's
//! own: in eager traces a layer is the kernels launched inside one decoder-layer module
//! frame (`nn.Module: Qwen3DecoderLayer_<k>`, `TransformerBlock_<k>`), a role the kernels
//! launched inside its module frame; in the graph-replayed decode trace the layers are the
//! in-graph kernels between the embedding and the final norm, one per attention kernel.
//! Every time compares in exact integer nanoseconds.

use std::collections::HashMap;

use serde_json::Value;

use crate::util::{raw_events, shared_trace, triage_json, us_to_ns};

const SGLANG_PREFILL: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz";
const SGLANG_DECODE: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";
const VLLM_EAGER: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";

/// Integer ns from a report µs value (the report divides integer ns by 1000).
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) * 1000.0).round() as i64
}

/// One kernel of the raw trace with what its launch saw.
struct RawKernel {
    name: String,
    ts: i64,
    dur: i64,
    /// The runtime call that launched it.
    launch: Option<String>,
    /// Its launch lies inside a `step[...]` annotation (SGLang's step marker).
    in_step: bool,
    /// `nn.Module:` frames open at the launch on its thread, outer..inner (`X_<k>`).
    modules: Vec<String>,
}

/// (pid, tid) as JSON text.
type Thread = (String, String);
/// An `nn.Module:` frame: start, end (ns), instance name.
type ModuleFrame = (i64, i64, String);

/// Every kernel with a positive duration, by GPU start, with its launch's module frames.
fn raw_kernels(file: &str) -> Vec<RawKernel> {
    let events = raw_events(&shared_trace(file));
    let mut runtime: HashMap<u64, &Value> = HashMap::new();
    let mut modules: HashMap<Thread, Vec<ModuleFrame>> = HashMap::new();
    let mut steps: Vec<(i64, i64)> = Vec::new();
    let key = |e: &Value| (e["pid"].to_string(), e["tid"].to_string());
    for e in &events {
        let cat = e["cat"].as_str().unwrap_or("");
        if matches!(cat, "cuda_runtime" | "cuda_driver") {
            if let Some(c) = e["args"]["correlation"].as_u64() {
                runtime.insert(c, e);
            }
        }
        let name = e["name"].as_str().unwrap_or("");
        if cat == "user_annotation" && name.starts_with("step[") {
            let ts = us_to_ns(&e["ts"]);
            steps.push((ts, ts + us_to_ns(&e["dur"])));
        }
        if cat == "python_function" && name.starts_with("nn.Module: ") {
            let ts = us_to_ns(&e["ts"]);
            modules.entry(key(e)).or_default().push((
                ts,
                ts + us_to_ns(&e["dur"]),
                name["nn.Module: ".len()..].to_string(),
            ));
        }
    }
    let mut kernels: Vec<RawKernel> = events
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["ph"] == "X" && us_to_ns(&e["dur"]) > 0)
        .map(|e| {
            let call = e["args"]["correlation"]
                .as_u64()
                .and_then(|c| runtime.get(&c));
            let mut open: Vec<&ModuleFrame> = match call {
                Some(call) => {
                    let at = us_to_ns(&call["ts"]);
                    modules
                        .get(&key(call))
                        .into_iter()
                        .flatten()
                        .filter(|m| m.0 <= at && at <= m.1)
                        .collect()
                }
                None => Vec::new(),
            };
            open.sort_by_key(|m| (m.0, -m.1));
            RawKernel {
                name: e["name"].as_str().unwrap().to_string(),
                ts: us_to_ns(&e["ts"]),
                dur: us_to_ns(&e["dur"]),
                launch: call.and_then(|c| c["name"].as_str()).map(str::to_string),
                in_step: call.is_some_and(|c| {
                    let at = us_to_ns(&c["ts"]);
                    steps.iter().any(|&(s, e)| s <= at && at <= e)
                }),
                modules: open.into_iter().map(|m| m.2.clone()).collect(),
            }
        })
        .collect();
    kernels.sort_by_key(|k| k.ts);
    kernels
}

/// `Qwen3Attention_3` -> `Qwen3Attention`.
fn class(instance: &str) -> &str {
    instance.rsplit_once('_').map_or(instance, |(c, _)| c)
}

/// Per decoder-layer frame (`<layer_class>_<k>`), the kernel time launched inside it.
fn per_layer_frame(kernels: &[RawKernel], layer_class: &str) -> Vec<i64> {
    let mut per: Vec<i64> = Vec::new();
    for k in kernels {
        let Some(frame) = k.modules.iter().find(|m| class(m) == layer_class) else {
            continue;
        };
        let index: usize = frame.rsplit_once('_').unwrap().1.parse().unwrap();
        if per.len() <= index {
            per.resize(index + 1, 0);
        }
        per[index] += k.dur;
    }
    per
}

/// The stage section `label` of a triage of `file`.
fn stage(file: &str, label: &str) -> Value {
    let path = shared_trace(file).display().to_string();
    let report = triage_json(&["--input", &path, "--framework", "auto"]);
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == label)
        .unwrap_or_else(|| panic!("{file}: no stage {label}"))
        .clone()
}

/// The layer rows' times, in ns.
fn layer_rows(layers: &Value) -> Vec<i64> {
    layers["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ns(&r["gpu_time_us"]))
        .collect()
}

/// Layers + prologue + epilogue = total, exactly.
fn assert_layers_sum_to_total(layers: &Value) {
    let rows: i64 = layer_rows(layers).iter().sum();
    assert_eq!(
        rows + ns(&layers["prologue_us"]) + ns(&layers["epilogue_us"]),
        ns(&layers["total_us"]),
        "{layers}"
    );
}

/// The report's role times, in ns, and launches.
fn roles(stage: &Value) -> HashMap<String, (i64, u64)> {
    stage["roles"]
        .as_array()
        .unwrap_or_else(|| panic!("no roles: {stage}"))
        .iter()
        .map(|r| {
            (
                r["role"].as_str().unwrap().to_string(),
                (ns(&r["gpu_time_us"]), r["launches"].as_u64().unwrap()),
            )
        })
        .collect()
}

/// Time and launches of the kernels whose innermost module frame is `module` (and, when
/// given, inside a frame whose class contains `inside`).
fn launched_in(kernels: &[RawKernel], module: &str, inside: Option<&str>) -> (i64, u64) {
    let hits = kernels.iter().filter(|k| {
        k.modules.last().is_some_and(|m| class(m) == module)
            && inside.is_none_or(|i| k.modules.iter().any(|m| class(m).contains(i)))
    });
    hits.fold((0, 0), |(t, n), k| (t + k.dur, n + 1))
}

#[test]
fn sglang_prefill_has_36_layers_that_match_its_decoder_layer_frames_to_the_nanosecond() {
    let kernels = raw_kernels(SGLANG_PREFILL);
    let attention = kernels
        .iter()
        .filter(|k| k.name.contains("FmhaBatchPrefill"))
        .count();
    assert_eq!(attention, 36, "one prefill attention kernel per layer");
    let frames = per_layer_frame(&kernels, "Qwen3DecoderLayer");
    assert_eq!(frames.len(), 36);

    let stage = stage(SGLANG_PREFILL, "extend/prefill");
    let layers = &stage["layers"];
    assert_eq!(layers["count"], 36, "{layers}");
    assert_eq!(layers["steps"], 1, "{layers}");
    assert_eq!(layer_rows(layers), frames);
    assert_layers_sum_to_total(layers);
    let in_step: i64 = kernels.iter().filter(|k| k.in_step).map(|k| k.dur).sum();
    assert_eq!(ns(&layers["total_us"]), in_step, "the step's kernel time");
    assert_eq!(ns(&layers["graph_replay_us"]), 0);
    let rows = layers["rows"].as_array().unwrap();
    assert_eq!(rows[0]["position"], "first");
    assert_eq!(rows[35]["position"], "last");
    assert!(rows.iter().all(|r| r["kind"] == "dense"), "{layers}");

    let roles = roles(&stage);
    let expect = [
        ("qkv", launched_in(&kernels, "QKVParallelLinear", None)),
        (
            "o_proj",
            launched_in(&kernels, "RowParallelLinear", Some("Attention")),
        ),
        (
            "down",
            launched_in(&kernels, "RowParallelLinear", Some("MLP")),
        ),
        (
            "gate_up",
            launched_in(&kernels, "MergedColumnParallelLinear", None),
        ),
        ("activation", launched_in(&kernels, "SiluAndMul", None)),
        ("rope", launched_in(&kernels, "RotaryEmbedding", None)),
        ("norm", launched_in(&kernels, "RMSNorm", None)),
        ("lm_head", launched_in(&kernels, "LogitsProcessor", None)),
        ("sampler", launched_in(&kernels, "Sampler", None)),
    ];
    for (role, counted) in expect {
        assert!(counted.1 > 0, "{role}: the recount found kernels");
        assert_eq!(roles.get(role), Some(&counted), "{role}");
    }
    // RadixAttention launches the KV-cache write and the attention kernel.
    let (radix, radix_n) = launched_in(&kernels, "RadixAttention", None);
    let (attn, attn_n) = roles["attention"];
    let (kv, kv_n) = roles["kv-cache write"];
    assert_eq!((attn + kv, attn_n + kv_n), (radix, radix_n));
    assert_eq!((attn_n, kv_n), (36, 36));
}

#[test]
fn vllm_gpt_oss_eager_has_36_moe_layers_that_match_its_transformer_block_frames() {
    let kernels = raw_kernels(VLLM_EAGER);
    let frames = per_layer_frame(&kernels, "TransformerBlock");
    // No config.json beside the trace: the layer count is the model's block frames.
    assert_eq!(frames.len(), 36);

    let stage = stage(VLLM_EAGER, "extend/prefill");
    let layers = &stage["layers"];
    assert_eq!(layers["count"], 36, "{layers}");
    assert_eq!(layer_rows(layers), frames);
    assert_layers_sum_to_total(layers);
    let rows = layers["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["kind"] == "moe"), "{layers}");

    let roles = roles(&stage);
    let expect = [
        ("qkv", launched_in(&kernels, "QKVParallelLinear", None)),
        ("moe-route", {
            // The router: a plain Linear in MLPBlock, and FusedMoE's routing kernels.
            let (t, n) = launched_in(&kernels, "Linear", Some("MLPBlock"));
            let routing = kernels.iter().filter(|k| {
                k.modules.last().is_some_and(|m| class(m) == "FusedMoE")
                    && k.name.contains("routing")
            });
            routing.fold((t, n), |(t, n), k| (t + k.dur, n + 1))
        }),
    ];
    for (role, counted) in expect {
        assert!(counted.1 > 0, "{role}: the recount found kernels");
        assert_eq!(roles.get(role), Some(&counted), "{role}");
    }
    // Every collective kernel is an all-reduce-role launch (o_proj, MoE, embedding, LM
    // head gather).
    let collectives = kernels
        .iter()
        .filter(|k| k.name.contains("all_reduce") || k.name.contains("AllGather"));
    let counted = collectives.fold((0, 0), |(t, n), k| (t + k.dur, n + 1));
    assert_eq!(roles.get("all-reduce"), Some(&counted));
    let shares: f64 = stage["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["share_pct"].as_f64().unwrap())
        .sum();
    assert!((shares - 100.0).abs() < 1e-6, "{shares}");
}

#[test]
fn sglang_decode_graph_replay_has_36_layers_summing_to_the_in_graph_time() {
    let kernels = raw_kernels(SGLANG_DECODE);
    let in_graph: Vec<&RawKernel> = kernels
        .iter()
        .filter(|k| {
            k.launch
                .as_deref()
                .is_some_and(|l| l.starts_with("hipGraphLaunch"))
        })
        .collect();
    let attention = in_graph
        .iter()
        .filter(|k| k.name.contains("paged_attention_ll4mi_QKV"))
        .count();
    assert_eq!(attention, 36, "one attention kernel per layer");
    // The layers: in-graph kernels after the embedding gather, up to the final norm (the
    // last norm kernel of the graph), split evenly, one per attention kernel.
    assert!(in_graph[0].name.contains("gather"), "{}", in_graph[0].name);
    let final_norm = in_graph
        .iter()
        .rposition(|k| k.name.contains("rmsnorm"))
        .unwrap();
    let body = &in_graph[1..final_norm];
    assert_eq!(body.len() % 36, 0);
    let per_layer: Vec<i64> = body
        .chunks(body.len() / 36)
        .map(|layer| layer.iter().map(|k| k.dur).sum())
        .collect();

    let stage = stage(SGLANG_DECODE, "decode");
    let layers = &stage["layers"];
    assert_eq!(layers["count"], 36, "{layers}");
    assert_eq!(layers["period_kernels"], body.len() / 36, "{layers}");
    assert_eq!(layer_rows(layers), per_layer);
    assert_layers_sum_to_total(layers);
    let graph: i64 = in_graph.iter().map(|k| k.dur).sum();
    assert_eq!(ns(&layers["graph_replay_us"]), graph);
    let in_step: i64 = kernels.iter().filter(|k| k.in_step).map(|k| k.dur).sum();
    assert_eq!(ns(&layers["total_us"]), in_step, "the step's kernel time");
    // Replayed kernels have no module frames without their capture: the family rules
    // still give attention and norms.
    let roles = roles(&stage);
    assert_eq!(roles["attention"].1, 72, "two attention kernels per layer");
}
