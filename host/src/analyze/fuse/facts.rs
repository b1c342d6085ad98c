//! The run facts the fusion rows' gates read (model names and TP size, from server args
//! and the traces themselves), and a gate's verdict against them.
//!
//! Every source is read in a fixed order, so the same inputs give the same facts: server
//! args ([`MODEL_KEYS`], [`TP_KEYS`]) first, then model class names anywhere in a trace's
//! strings and the model source files of its Python frames, then
//! `distributedInfo.world_size` for the TP size.

use crate::catalog::fusions::{FusionRule, Gate};
use crate::trace::event::Trace;

/// Facts about the run the gates read: model names and TP size, with where they came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFacts {
    /// Lower-case model identifiers: server-arg values, model class names seen in the
    /// trace (`Qwen3ForCausalLM`), model source files (`models/qwen3.py` gives `qwen3`).
    pub models: Vec<String>,
    pub tp: Option<u32>,
    /// Where `tp` came from, e.g. `server args tp_size`.
    pub tp_source: Option<String>,
    /// The GPU platform, `cuda` or `rocm` ([`super::platform`]), read by `devices` gates.
    pub device: Option<String>,
    /// The trace signs that gave `device`, e.g. `hip* runtime calls`.
    pub device_source: Option<String>,
}

/// Server-arg keys that name the model, in the order they are read.
pub(crate) const MODEL_KEYS: &[&str] = &["model_path", "model", "served_model_name", "model_name"];
/// Server-arg keys that give the tensor-parallel size, in the order they are read.
pub(crate) const TP_KEYS: &[&str] = &["tp_size", "tensor_parallel_size", "tp"];

/// The gate facts of a run: server args first, then what the traces themselves show
/// (model class names in any interned string, model source files of Python frames,
/// `distributedInfo.world_size` when no server arg gives the TP size).
pub fn run_facts(
    server_args: Option<&serde_json::Map<String, serde_json::Value>>,
    traces: &[&Trace],
) -> RunFacts {
    let mut models: Vec<String> = Vec::new();
    let mut add = |name: String| {
        let name = name.trim().to_lowercase();
        if !name.is_empty() && !models.contains(&name) {
            models.push(name);
        }
    };
    if let Some(args) = server_args {
        for key in MODEL_KEYS {
            match args.get(*key) {
                Some(serde_json::Value::String(s)) => add(s.clone()),
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .for_each(|s| add(s.to_string())),
                _ => {}
            }
        }
    }
    for trace in traces {
        for name in trace_model_names(trace) {
            add(name);
        }
    }
    let from_args = server_args.and_then(|args| {
        TP_KEYS.iter().find_map(|key| {
            let n = match args.get(*key)? {
                serde_json::Value::Number(n) => n.as_u64()?,
                serde_json::Value::String(s) => s.trim().parse().ok()?,
                _ => return None,
            };
            (n >= 1).then(|| (n.min(u32::MAX as u64) as u32, format!("server args {key}")))
        })
    });
    let from_trace = || {
        traces
            .iter()
            .filter_map(|t| t.meta.world_size)
            .filter(|&n| n >= 1)
            .max()
            .map(|n| (n, "trace distributedInfo.world_size".to_string()))
    };
    let (tp, tp_source) = match from_args.or_else(from_trace) {
        Some((n, source)) => (Some(n), Some(source)),
        None => (None, None),
    };
    let (device, device_source) = super::platform::platform(traces).unzip();
    RunFacts {
        models,
        tp,
        tp_source,
        device,
        device_source,
    }
}

/// Model class names (`...ForCausalLM`, `...ForConditionalGeneration`) anywhere in the
/// trace's strings, and the model source files of its Python frames, in first-seen order.
fn trace_model_names(trace: &Trace) -> Vec<String> {
    let mut names = Vec::new();
    // Searchers built once, not per string (`str::find` builds one each call: that was
    // most of the facts' work, a fixed ~0.5 ms per triage).
    let suffixes: Vec<(&str, memchr::memmem::Finder<'_>)> = CLASS_SUFFIXES
        .iter()
        .map(|s| (*s, memchr::memmem::Finder::new(s)))
        .collect();
    for i in 0..trace.strings.len() {
        let text = trace.name(crate::trace::event::Sym(i as u32));
        for class in model_classes(text, &suffixes) {
            if !names.contains(&class) {
                names.push(class);
            }
        }
    }
    // The `nn.Module:` class also catches a decoder stack alone (`Qwen3Model`).
    if let Some(class) = crate::trace::model::model_class(trace) {
        if !names.contains(&class) {
            names.push(class);
        }
    }
    // The frames' distinct names in symbol order, marked by index rather than sorted:
    // a trace holds millions of frames and few names.
    for (name, _) in trace.frame_names() {
        if let Some(stem) = model_file_stem(name) {
            if !names.contains(&stem) {
                names.push(stem);
            }
        }
    }
    names
}

const CLASS_SUFFIXES: &[&str] = &["ForCausalLM", "ForConditionalGeneration"];

/// `Qwen3ForCausalLM` in `nn.Module: Qwen3ForCausalLM_0` or any other text, given
/// [`CLASS_SUFFIXES`] and a searcher for each.
fn model_classes(text: &str, suffixes: &[(&str, memchr::memmem::Finder<'_>)]) -> Vec<String> {
    let mut found = Vec::new();
    for (suffix, finder) in suffixes {
        let mut from = 0;
        while let Some(at) = finder.find(&text.as_bytes()[from..]) {
            let end = from + at;
            let start = text[..end]
                .rfind(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .map_or(0, |i| i + 1);
            let stem = &text[start..end];
            if stem.starts_with(|c: char| c.is_ascii_uppercase()) {
                found.push(format!("{stem}{suffix}"));
            }
            from = end + suffix.len();
        }
    }
    found
}

/// `qwen3` for a frame in `.../models/qwen3.py(12): forward`, `qwen2` for
/// `transformers/models/qwen2/modeling_qwen2.py`: the component after a `models` directory.
fn model_file_stem(frame: &str) -> Option<String> {
    let path = frame.split('(').next().unwrap_or(frame);
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    let at = parts.iter().rposition(|p| *p == "models")?;
    let next = parts.get(at + 1)?;
    let stem = next.strip_suffix(".py").unwrap_or(next);
    (!stem.is_empty() && stem != "__init__").then(|| stem.to_string())
}

/// A gate's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateState {
    Passed,
    /// Cannot be evaluated; the text says why.
    Unknown(String),
    Failed,
}

/// `token` occurs in `model` once both are lower-cased with separators dropped, so
/// `gpt-oss` finds `GptOssForCausalLM` and `openai/gpt-oss-20b`.
fn model_mentions(model: &str, token: &str) -> bool {
    let compact = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let token = compact(token);
    !token.is_empty() && compact(model).contains(&token)
}

/// The gates of `rule` against the run facts: every failed gate fails, else any unknown
/// gate is unknown.
pub(crate) fn gate_state(rule: &FusionRule, facts: &RunFacts) -> GateState {
    let mut unknown = Vec::new();
    if !rule.gate.devices.is_empty() {
        match &facts.device {
            Some(device) if !rule.gate.devices.contains(device) => return GateState::Failed,
            Some(_) => {}
            None => unknown.push(format!(
                "GPU platform unknown (the fused path exists only on {})",
                rule.gate.devices.join("/")
            )),
        }
    }
    if rule.gate.min_tp > 1 {
        match facts.tp {
            Some(tp) if tp < rule.gate.min_tp => return GateState::Failed,
            Some(_) => {}
            None => unknown.push(format!(
                "TP size unknown (the row needs TP >= {})",
                rule.gate.min_tp
            )),
        }
    }
    let gated = !rule.gate.models_include.is_empty() || !rule.gate.models_exclude.is_empty();
    if gated {
        if facts.models.is_empty() {
            unknown.push(format!(
                "model unknown (the row applies to {})",
                describe_models(&rule.gate)
            ));
        } else {
            let mentions = |tokens: &[String]| {
                facts
                    .models
                    .iter()
                    .any(|m| tokens.iter().any(|t| model_mentions(m, t)))
            };
            if mentions(&rule.gate.models_exclude) {
                return GateState::Failed;
            }
            if !rule.gate.models_include.is_empty() && !mentions(&rule.gate.models_include) {
                return GateState::Failed;
            }
        }
    }
    if unknown.is_empty() {
        GateState::Passed
    } else {
        GateState::Unknown(unknown.join("; "))
    }
}

fn describe_models(gate: &Gate) -> String {
    let mut parts = Vec::new();
    if !gate.models_include.is_empty() {
        parts.push(gate.models_include.join("/"));
    }
    if !gate.models_exclude.is_empty() {
        parts.push(format!("not {}", gate.models_exclude.join("/")));
    }
    parts.join(", ")
}

/// Why the split kernels of `rule` cannot show whether its fused path fired on this run
/// (`split_ambiguous_on` names the platform, or the platform is unknown), if so.
pub(crate) fn split_ambiguity(rule: &FusionRule, facts: &RunFacts) -> Option<String> {
    let on = &rule.gate.split_ambiguous_on;
    if on.is_empty() {
        return None;
    }
    let platforms = on.join("/");
    match &facts.device {
        Some(device) if on.contains(device) => Some(format!(
            "on {device} the fused path launches these same kernels, so kernel names cannot tell whether it fired"
        )),
        Some(_) => None,
        None => Some(format!(
            "the GPU platform is unknown, and on {platforms} the fused path launches these same kernels, so kernel names cannot tell whether it fired"
        )),
    }
}
