//! The compact [`TraceEvidence`] engine plugins judge a trace by.
//!
//! Plugins see strings and counts, never events: python source files of the stack frames,
//! process and thread names, annotation names, kernel names, the document's top-level keys
//! and `server_args.json`. Each list is de-duplicated, counted where counts mean something,
//! ordered most frequent first (ties by text, so the result is deterministic) and capped,
//! so a plugin can scan it freely.

use std::collections::HashMap;

use llm_triage_plugin_api::abi_stable::std_types::{RString, RVec};
use llm_triage_plugin_api::{Counted, KeyValue, TraceEvidence};

use crate::trace::event::{GpuKind, Sym, Trace};

/// The most entries any one list keeps. SGLang writes about 400 server args, so the cap
/// is above that.
pub const MAX_ENTRIES: usize = 500;

/// Builds the evidence for `trace`, with the top-level entries of the `server_args.json`
/// found beside it (values as JSON text).
pub fn evidence(
    trace: &Trace,
    server_args: Option<&serde_json::Map<String, serde_json::Value>>,
) -> TraceEvidence {
    let file_path = std::path::absolute(&trace.path).unwrap_or_else(|_| trace.path.clone());
    TraceEvidence {
        file_path: RString::from(file_path.to_string_lossy().into_owned()),
        python_files: counted(python_files(trace)),
        process_names: distinct(
            trace
                .process_names
                .iter()
                .map(|(_, name)| trace.name(*name)),
        ),
        thread_names: distinct(
            trace
                .thread_names
                .iter()
                .map(|(_, _, name)| trace.name(*name)),
        ),
        annotation_names: counted(annotation_names(trace)),
        kernel_names: counted(kernel_names(trace)),
        metadata_keys: trace
            .meta
            .keys
            .iter()
            .take(MAX_ENTRIES)
            .map(|k| RString::from(k.as_str()))
            .collect(),
        server_args: server_args.map(key_values).unwrap_or_default(),
    }
}

/// The python source file of a frame name `path(line): function`; `None` for names of
/// another shape (`<built-in method …>`, `nn.Module: Linear_0`).
pub fn python_file(frame_name: &str) -> Option<&str> {
    let open = frame_name.find("(")?;
    let rest = &frame_name[open + 1..];
    let close = rest.find("): ")?;
    let line = &rest[..close];
    let is_line = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
    (is_line && open > 0).then(|| &frame_name[..open])
}

/// An annotation name with every run of ASCII digits replaced by `N`, so per-step names
/// (`step[DECODE bs=32]`, `ProfilerStep#6`) collapse into one entry each.
pub fn collapse_digits(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Frames per python file. Frames are counted per interned name first: a trace has
/// millions of frames but only thousands of distinct names.
fn python_files(trace: &Trace) -> HashMap<String, u64> {
    let mut files: HashMap<String, u64> = HashMap::new();
    for (name, count) in trace.frame_names() {
        if let Some(file) = python_file(name) {
            *files.entry(file.to_string()).or_default() += count;
        }
    }
    files
}

fn annotation_names(trace: &Trace) -> HashMap<String, u64> {
    let per_name = count_syms(trace.annotations.iter().map(|a| a.name));
    let mut names: HashMap<String, u64> = HashMap::new();
    for (sym, count) in per_name {
        *names.entry(collapse_digits(trace.name(sym))).or_default() += count;
    }
    names
}

fn kernel_names(trace: &Trace) -> HashMap<String, u64> {
    let kernels = trace.gpu_ops.iter().filter(|op| op.kind == GpuKind::Kernel);
    count_syms(kernels.map(|op| op.name))
        .into_iter()
        .map(|(sym, count)| (trace.name(sym).to_string(), count))
        .collect()
}

fn count_syms(syms: impl Iterator<Item = Sym>) -> HashMap<Sym, u64> {
    let mut counts: HashMap<Sym, u64> = HashMap::new();
    for sym in syms {
        *counts.entry(sym).or_default() += 1;
    }
    counts
}

/// Most frequent first, ties by text; capped.
fn counted(counts: HashMap<String, u64>) -> RVec<Counted> {
    let mut entries: Vec<(String, u64)> = counts.into_iter().collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    entries
        .into_iter()
        .take(MAX_ENTRIES)
        .map(|(text, count)| Counted {
            text: text.into(),
            count,
        })
        .collect()
}

/// Distinct non-empty names in first-seen order; capped.
fn distinct<'a>(names: impl Iterator<Item = &'a str>) -> RVec<RString> {
    let mut seen = std::collections::HashSet::new();
    names
        .filter(|n| !n.is_empty() && seen.insert(*n))
        .take(MAX_ENTRIES)
        .map(RString::from)
        .collect()
}

fn key_values(args: &serde_json::Map<String, serde_json::Value>) -> RVec<KeyValue> {
    args.iter()
        .take(MAX_ENTRIES)
        .map(|(key, value)| KeyValue {
            key: key.as_str().into(),
            value: value.to_string().into(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::{Annotation, GpuOp, PyFrame};

    #[test]
    fn python_file_is_the_text_before_the_line_number() {
        assert_eq!(
            python_file("vllm/v1/worker/gpu_model_runner.py(2210): execute_model"),
            Some("vllm/v1/worker/gpu_model_runner.py")
        );
        assert_eq!(
            python_file("/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(998): event_loop_normal"),
            Some("/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py")
        );
        assert_eq!(
            python_file("<built-in method view of Tensor object at 0x7fdc681d0910>"),
            None
        );
        assert_eq!(python_file("nn.Module: Linear_0"), None);
        assert_eq!(python_file("torch/_ops.py(x): f"), None);
    }

    #[test]
    fn digit_runs_collapse() {
        assert_eq!(
            collapse_digits("step[EXTEND bs=15 toks=15360]"),
            "step[EXTEND bs=N toks=N]"
        );
        assert_eq!(
            collapse_digits("execute_context_1(888_788544)_generation_0(0)"),
            "execute_context_N(N_N)_generation_N(N)"
        );
        assert_eq!(collapse_digits("ProfilerStep#6"), "ProfilerStep#N");
    }

    /// A trace with 3 frames in one file, 1 in another, 2 builtins, two annotation names
    /// that collapse into one, and two kernels of one name plus a memcpy.
    fn small_trace() -> Trace {
        let mut t = Trace {
            path: "/tmp/x/rank0.trace.json".into(),
            ..Default::default()
        };
        let pid = t.strings.intern("1");
        let tid = t.strings.intern("2");
        let frame = |t: &mut Trace, name: &str| PyFrame {
            name: t.strings.intern(name),
            ts: 0,
            dur: 1,
            pid,
            tid,
        };
        for name in [
            "vllm/a.py(1): f",
            "vllm/a.py(2): g",
            "vllm/a.py(1): f",
            "torch/b.py(3): h",
            "<built-in function len>",
            "<built-in function len>",
        ] {
            let f = frame(&mut t, name);
            t.py_frames.push(f);
        }
        for name in ["step[DECODE bs=32]", "step[DECODE bs=8]", "fwd"] {
            let a = Annotation {
                name: t.strings.intern(name),
                ts: 0,
                dur: 1,
                pid,
                tid,
                external_id: None,
                on_gpu: false,
            };
            t.annotations.push(a);
        }
        for (name, kind) in [
            ("gemm_kernel", GpuKind::Kernel),
            ("gemm_kernel", GpuKind::Kernel),
            ("Memcpy HtoD", GpuKind::Memcpy),
        ] {
            let op = GpuOp {
                name: t.strings.intern(name),
                kind,
                ts: 0,
                dur: 1,
                pid,
                tid,
                stream: Some(7),
                device: Some(0),
                correlation: None,
                external_id: None,
                grid: None,
                block: None,
                blocks_per_sm: None,
                bytes: None,
            };
            t.gpu_ops.push(op);
        }
        let proc_name = t.strings.intern("python3");
        t.process_names.push((pid, proc_name));
        t.process_names.push((pid, proc_name));
        t.meta.keys = vec!["schemaVersion".into(), "traceEvents".into()];
        t
    }

    fn pairs(items: &RVec<Counted>) -> Vec<(String, u64)> {
        items
            .iter()
            .map(|c| (c.text.to_string(), c.count))
            .collect()
    }

    #[test]
    fn evidence_counts_and_orders() {
        let mut args = serde_json::Map::new();
        args.insert("attention_backend".into(), serde_json::json!("trtllm_mla"));
        args.insert("tp_size".into(), serde_json::json!(8));
        let e = evidence(&small_trace(), Some(&args));
        assert_eq!(e.file_path.as_str(), "/tmp/x/rank0.trace.json");
        assert_eq!(
            pairs(&e.python_files),
            [("vllm/a.py".to_string(), 3), ("torch/b.py".to_string(), 1)]
        );
        assert_eq!(
            pairs(&e.annotation_names),
            [("step[DECODE bs=N]".to_string(), 2), ("fwd".to_string(), 1)]
        );
        assert_eq!(pairs(&e.kernel_names), [("gemm_kernel".to_string(), 2)]);
        let procs: Vec<&str> = e.process_names.iter().map(|p| p.as_str()).collect();
        assert_eq!(procs, ["python3"]);
        assert_eq!(e.metadata_keys.len(), 2);
        let kv: Vec<(String, String)> = e
            .server_args
            .iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect();
        assert_eq!(
            kv,
            [
                (
                    "attention_backend".to_string(),
                    "\"trtllm_mla\"".to_string()
                ),
                ("tp_size".to_string(), "8".to_string())
            ]
        );
    }

    #[test]
    fn lists_are_capped_most_frequent_first() {
        let mut counts = HashMap::new();
        for i in 0..(MAX_ENTRIES as u64 + 20) {
            counts.insert(format!("f{i:04}.py"), i + 1);
        }
        let list = counted(counts);
        assert_eq!(list.len(), MAX_ENTRIES);
        assert_eq!(list[0].count, MAX_ENTRIES as u64 + 20);
        assert_eq!(list[MAX_ENTRIES - 1].count, 21);
    }
}
