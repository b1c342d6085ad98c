//! Recounts a written fixture from its bytes alone (serde_json, no generator state),
//! so the generator's ground truth is checked against what the file really says.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

pub use crate::names::canonical_name;
use crate::{KernelTruth, StageTruth};

pub fn load(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    };
    serde_json::from_str(&text).unwrap()
}

fn ns(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1000.0).round() as u64
}

/// Frames that only wrap the real work: torch internals and graph runners.
fn is_wrapper(name: &str) -> bool {
    name.starts_with("torch/")
        || [
            "cuda_graph_runner.py(",
            "cuda_graph.py(",
            "cuda_graph_wrapper.py(",
            "py_executor.py(",
        ]
        .iter()
        .any(|m| name.contains(m))
        // vLLM's runner only forwards to the model here.
        || (name.contains("gpu_model_runner.py(") && name.ends_with(": _model_forward"))
}

/// `…/python/sglang/srt/x.py(12): f` -> `python/sglang/srt/x.py:12 f` (the report's location
/// format).
fn location_of(frame: &str) -> String {
    let (path, rest) = frame.split_once('(').unwrap();
    let (line, func) = rest.split_once("): ").unwrap();
    let lower = path.to_lowercase();
    let start = [
        "python/sglang/",
        "vllm/",
        "python/tokenspeed/",
        "tensorrt_llm/",
    ]
    .iter()
    .find_map(|m| lower.find(m))
    .unwrap_or(0);
    format!("{}:{line} {func}", &path[start..])
}

/// Per stage and canonical name, what the file says. `file_stage` is the stage the
/// file name gives (`None`: annotations decide, `all` without them).
pub fn recount(trace: &Value, file_stage: Option<&str>) -> BTreeMap<String, StageTruth> {
    let events = trace["traceEvents"].as_array().unwrap();
    let complete = |cat: &str| {
        events
            .iter()
            .filter(move |e| e["ph"] == "X" && e["cat"] == cat)
            .collect::<Vec<_>>()
    };
    let frames: Vec<(u64, u64, &str)> = complete("python_function")
        .iter()
        .map(|e| {
            (
                ns(&e["ts"]),
                ns(&e["ts"]) + ns(&e["dur"]),
                e["name"].as_str().unwrap(),
            )
        })
        .collect();
    let cpu_ops: BTreeMap<u64, (u64, &str)> = complete("cpu_op")
        .iter()
        .map(|e| {
            let probe = ns(&e["ts"]) + (ns(&e["dur"]) / 2).min(1000);
            (
                e["args"]["External id"].as_u64().unwrap(),
                (probe, e["name"].as_str().unwrap()),
            )
        })
        .collect();
    let launches: BTreeMap<u64, (u64, &str)> = complete("cuda_runtime")
        .iter()
        .map(|e| {
            (
                e["args"]["correlation"].as_u64().unwrap(),
                (ns(&e["ts"]), e["name"].as_str().unwrap()),
            )
        })
        .collect();
    let windows: Vec<(u64, u64, &str)> = complete("gpu_user_annotation")
        .iter()
        .map(|e| {
            (
                ns(&e["ts"]),
                ns(&e["ts"]) + ns(&e["dur"]),
                e["name"].as_str().unwrap(),
            )
        })
        .collect();

    let mut stages: BTreeMap<String, StageTruth> = BTreeMap::new();
    for kernel in events
        .iter()
        .filter(|e| e["ph"] == "X" && (e["cat"] == "kernel" || e["cat"] == "gpu_memcpy"))
    {
        let start = ns(&kernel["ts"]);
        let dur = ns(&kernel["dur"]);
        let label = match file_stage {
            Some(label) => label.to_string(),
            None => match windows.iter().find(|w| w.0 <= start && start <= w.1) {
                Some(w) if w.2.contains("DECODE") || w.2.starts_with("execute_context_0(") => {
                    "decode".into()
                }
                Some(_) => "extend/prefill".into(),
                None => "all".into(),
            },
        };
        let (probe, cpu_op) = match kernel["args"]["External id"].as_u64() {
            Some(id) => cpu_ops[&id],
            None => launches[&kernel["args"]["correlation"].as_u64().unwrap()],
        };
        let active = frames
            .iter()
            .filter(|f| f.0 <= probe && probe <= f.1 && !is_wrapper(f.2))
            .max_by_key(|f| f.0);
        let location = active
            .map(|f| location_of(f.2))
            .unwrap_or_else(|| "unresolved".into());

        let canonical = canonical_name(kernel["name"].as_str().unwrap());
        let stage = stages.entry(label).or_default();
        stage.total_gpu_ns += dur;
        let truth: &mut KernelTruth = stage.kernels.entry(canonical).or_default();
        let raw = kernel["name"].as_str().unwrap().to_string();
        if !truth.raw_names.contains(&raw) {
            truth.raw_names.push(raw);
        }
        truth.total_ns += dur;
        truth.count += 1;
        let site = truth.sites.entry(location).or_default();
        site.0 += dur;
        site.1 += 1;
        *truth.cpu_ops.entry(cpu_op.to_string()).or_default() += 1;
    }
    stages
}
