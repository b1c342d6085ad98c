//! llm-triage engine plugin: SGLang (also SGLang Omni traces).
//!
//! Detection reads evidence, strongest first: SGLang's own server-args keys, python frames
//! inside the `sglang/` package, its `step[EXTEND …]`/`step[DECODE …]` annotations and
//! `sglang::` process titles, and finally its `-TP-<rank>` trace file naming. Kernel names
//! are never used: SGLang, vLLM and TokenSpeed launch the same kernel libraries.

use llm_triage_plugin_api::scan::{self, Signal};
use llm_triage_plugin_api::{
    capability, capability_cell, export_plugin, rstrings, score, wrapper, Attribution, Claim,
    EnginePlugin, Manifest, MarkerKind, StageHint, Support, TraceEvidence, Upstream,
    PLUGIN_API_VERSION,
};

mod capture;

pub struct SgLang;

/// Server-args keys SGLang writes (`python/sglang/srt/server_args.py`). TokenSpeed, a
/// descendant, shares `attention_backend`, `sampling_backend` and `chunked_prefill_size`,
/// so two keys are required and any TokenSpeed-only key vetoes the claim.
const SGLANG_ARG_KEYS: &[&str] = &[
    "attention_backend",
    "sampling_backend",
    "disable_cuda_graph",
    "disable_piecewise_cuda_graph",
    "chunked_prefill_size",
    "schedule_policy",
    "mem_fraction_static",
    "disable_radix_cache",
];

/// Keys only TokenSpeed writes (`python/tokenspeed/runtime/utils/server_args.py` @ f4d8ec6e).
const TOKENSPEED_ONLY_KEYS: &[&str] = &[
    "attn_tp_size",
    "dense_tp_size",
    "moe_tp_size",
    "enable_mla_l1_5_cache",
    "mla_chunk_multiplier",
    "comm_fusion_max_num_tokens",
    "enable_allreduce_fusion",
];

impl EnginePlugin for SgLang {
    fn manifest() -> Manifest {
        Manifest {
            name: "sglang".into(),
            aliases: rstrings(["sgl"]),
            display_name: "SGLang".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            // Commit of the `lmsysorg/sglang:nightly-dev-20260103-24c91001` image (cited in
            // THUDM/slime PR #1324); paths below were checked against the stored upstream tree.
            upstream: Upstream {
                repo: "sgl-project/sglang".into(),
                commit: "24c91001cf99ba642be791e099d358f4dfe955f5".into(),
                date: "2026-01-03".into(),
            },
            capabilities: vec![
                capability_cell(capability::TRACE_TRIAGE, Support::Yes, ""),
                capability_cell(capability::LIVE_CAPTURE, Support::Yes, ""),
                capability_cell(capability::MAPPING_FORMAL, Support::Yes, ""),
                capability_cell(capability::STAGE_CAPTURE, Support::Yes, ""),
                capability_cell(capability::PROFILE_BY_STAGE, Support::Yes, ""),
                capability_cell(capability::PROFILE_PREFIX, Support::Yes, ""),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn detect(evidence: &TraceEvidence) -> Option<Claim> {
        let signals = [
            server_args_signal(evidence),
            scan::source_frames_signal_with_kernel_lib(
                evidence,
                &[&["sglang"], &["sglang_omni"]],
                "sglang/",
                &["sgl_kernel"],
                "sgl_kernel/",
            ),
            step_annotation_signal(evidence),
            process_name_signal(evidence),
            file_name_signal(evidence),
        ];
        scan::best_claim(signals.into_iter().flatten())
    }

    fn attribution() -> Attribution {
        Attribution {
            // Most specific first; `python/sglang/` is the source checkout layout.
            source_roots: rstrings(["python/sglang/", "sglang_omni/", "sglang/", "sgl_kernel/"]),
            wrapper_frames: vec![
                // Graph replay: python/sglang/srt/model_executor/cuda_graph_runner.py (and the
                // 2026 split into model_executor/cuda_graph_runner/ and model_executor/runner/).
                wrapper("sglang/srt/model_executor/cuda_graph_runner", "replay"),
                wrapper("sglang/srt/model_executor/runner/", "replay"),
                wrapper(
                    "sglang/srt/model_executor/piecewise_cuda_graph_runner.py",
                    "replay",
                ),
                wrapper(
                    "sglang/srt/model_executor/breakable_cuda_graph_runner.py",
                    "replay",
                ),
                // torch.compile trampolines: python/sglang/srt/compilation/cuda_piecewise_backend.py,
                // compile.py, backend.py.
                wrapper("sglang/srt/compilation/", ""),
                wrapper("sglang/srt/model_executor/compilation/", ""),
                // Kernel-shape profiler hooks every op: python/sglang/srt/utils/kernel_shape_profiler.py.
                wrapper("sglang/srt/utils/kernel_shape_profiler.py", ""),
                // Library wrappers: thin Python bindings that only hand tensors to a kernel,
                // so the layer or model line that called them is the site worth showing
                // (sgl-project/sglang sgl-kernel/python/sgl_kernel/, python/sglang/jit_kernel/,
                // python/sglang/srt/distributed/device_communicators/pynccl_wrapper.py, and
                // the quantization methods' `apply`, e.g.
                // python/sglang/srt/layers/quantization/unquant.py UnquantizedLinearMethod.apply).
                wrapper("sgl_kernel/", ""),
                wrapper("sglang/jit_kernel/", ""),
                wrapper(
                    "sglang/srt/distributed/device_communicators/pynccl_wrapper.py",
                    "",
                ),
                wrapper("sglang/srt/layers/quantization/", "apply"),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn stage_of(kind: MarkerKind, text: &str) -> StageHint {
        match kind {
            MarkerKind::FilePath => scan::stage_of_file_name(scan::file_name(text)),
            MarkerKind::Annotation => stage_of_annotation(text),
        }
    }

    fn capture_plan(
        request: &llm_triage_plugin_api::CaptureRequest,
        evidence: &llm_triage_plugin_api::EndpointEvidence,
    ) -> Result<llm_triage_plugin_api::CapturePlan, String> {
        capture::plan(request, evidence)
    }

    fn detect_endpoint(evidence: &llm_triage_plugin_api::EndpointEvidence) -> Option<Claim> {
        capture::detect_endpoint(evidence)
    }
}

export_plugin!(
    SgLang,
    registry = include_str!("../../../catalog/fusions/sglang.toml"),
    steps = include_str!("../../../catalog/steps/sglang.toml")
);

fn server_args_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let has = |key: &str| evidence.server_args.iter().any(|kv| kv.key.as_str() == key);
    if TOKENSPEED_ONLY_KEYS.iter().any(|k| has(k)) {
        return None;
    }
    let found: Vec<&str> = SGLANG_ARG_KEYS.iter().copied().filter(|k| has(k)).collect();
    (found.len() >= 2).then(|| Signal {
        score: score::SERVER_ARGS + scan::bounded(found.len() as u64),
        evidence: format!("server_args.json has SGLang keys: {}", found.join(", ")),
    })
}

fn step_annotation_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let count = scan::count_where(&evidence.annotation_names, |name| step_mode(name).is_some());
    (count > 0).then(|| Signal {
        score: score::ANNOTATIONS + scan::bounded(count),
        evidence: scan::counted_noun(count, "SGLang step[MODE …] annotation"),
    })
}

fn process_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let names = evidence
        .process_names
        .iter()
        .chain(evidence.thread_names.iter());
    let count = names.filter(|n| n.as_str().starts_with("sglang::")).count() as u64;
    (count > 0).then(|| Signal {
        score: score::ANNOTATIONS + scan::bounded(count),
        evidence: format!(
            "{} starting with sglang::",
            scan::counted_noun(count, "process/thread name")
        ),
    })
}

/// SGLang names rank files `[<prefix>-]<id>-TP-<tp>[-DP-<dp>]…[-<STAGE>].trace.json.gz`.
fn file_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let name = scan::file_name(evidence.file_path.as_str());
    let tokens: Vec<&str> = name.split(['-', '.']).collect();
    let tp_rank = tokens
        .windows(2)
        .any(|w| w[0] == "TP" && !w[1].is_empty() && w[1].bytes().all(|b| b.is_ascii_digit()));
    tp_rank.then(|| Signal {
        score: score::FILE_NAME,
        evidence: format!("file name {name} follows SGLang's -TP-<rank> naming"),
    })
}

/// The forward mode of a `step[MODE …]` annotation, e.g. `EXTEND` in `step[EXTEND bs=N]`.
fn step_mode(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("step[")?;
    let mode = rest.split([' ', ']']).next()?;
    let is_mode = !mode.is_empty() && mode.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    is_mode.then_some(mode)
}

/// Forward modes (`ForwardMode` in python/sglang/srt/model_executor/forward_batch_info.py)
/// mapped to stages. Speculative verification runs in the decode loop.
fn stage_of_mode(mode: &str) -> StageHint {
    match mode {
        "EXTEND" | "PREFILL" | "SPLIT_PREFILL" | "DRAFT_EXTEND" | "DRAFT_EXTEND_V2"
        | "DLLM_EXTEND" => StageHint::Extend,
        "DECODE" | "TARGET_VERIFY" => StageHint::Decode,
        "MIXED" => StageHint::Mixed,
        _ => StageHint::Unknown,
    }
}

fn stage_of_annotation(name: &str) -> StageHint {
    if let Some(mode) = step_mode(name) {
        return stage_of_mode(mode);
    }
    // Some SGLang builds (the AMD traces in shared/traces) also write vLLM-style
    // `execute_<bs>_context_<n>(…)_generation_<m>(…)` annotations.
    scan::execute_annotation_stage(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_triage_plugin_api::testing::{counted, key_values};

    #[test]
    fn sglang_frames_claim_the_source_tier() {
        // Counts as in AMD-AGI__TraceLens__sglang_Qwen3-8B_decode (83 sglang frames of 821).
        let e = TraceEvidence {
            python_files: counted(&[
                (
                    "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py",
                    15,
                ),
                (
                    "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py",
                    68,
                ),
                ("torch/utils/_pytree.py", 738),
            ]),
            annotation_names: counted(&[("step[DECODE bs=N]", 1)]),
            ..Default::default()
        };
        let claim = SgLang::detect(&e).expect("claim");
        // share = 83 * 999 / 821 = 100 (integer division)
        assert_eq!(claim.score, score::SOURCE_FRAMES + 100);
        assert_eq!(claim.evidence[0].as_str(), "83 python frames under sglang/");
        assert_eq!(
            claim.evidence[1].as_str(),
            "1 SGLang step[MODE …] annotation"
        );
    }

    #[test]
    fn trtllm_values_in_sglang_args_stay_sglang() {
        // The predecessor's substring rule made this TensorRT-LLM (`trtllm` inside an
        // SGLang attention-backend or MoE-runner value).
        let e = TraceEvidence {
            server_args: key_values(&[
                ("attention_backend", "\"trtllm_mla\""),
                ("moe_runner_backend", "\"flashinfer_trtllm\""),
                ("chunked_prefill_size", "8192"),
                ("schedule_policy", "\"fcfs\""),
            ]),
            ..Default::default()
        };
        let claim = SgLang::detect(&e).expect("claim");
        assert_eq!(claim.score, score::SERVER_ARGS + 3);
    }

    #[test]
    fn tokenspeed_args_are_not_sglang_args() {
        let e = TraceEvidence {
            server_args: key_values(&[
                ("attention_backend", "\"mla\""),
                ("chunked_prefill_size", "8192"),
                ("attn_tp_size", "4"),
            ]),
            ..Default::default()
        };
        assert_eq!(SgLang::detect(&e), None);
    }

    #[test]
    fn sgl_kernel_alone_is_weak_and_kernels_never_count() {
        let e = TraceEvidence {
            python_files: counted(&[("sgl_kernel/elementwise.py", 10), ("vllm/x/y.py", 90)]),
            kernel_names: counted(&[("sgl_hip::act_and_mul_kernel", 99)]),
            ..Default::default()
        };
        let claim = SgLang::detect(&e).expect("claim");
        assert_eq!(claim.score, score::ANNOTATIONS + 99); // 10 * 999 / 100 = 99
        let only_kernels = TraceEvidence {
            kernel_names: counted(&[("sgl_hip::act_and_mul_kernel", 99)]),
            ..Default::default()
        };
        assert_eq!(SgLang::detect(&only_kernels), None);
    }

    #[test]
    fn file_names_and_stages() {
        let e = TraceEvidence {
            file_path: "/x/1761000000.5-TP-0-EXTEND.trace.json.gz".into(),
            ..Default::default()
        };
        assert_eq!(SgLang::detect(&e).unwrap().score, score::FILE_NAME);
        let path = |p| SgLang::stage_of(MarkerKind::FilePath, p);
        assert_eq!(
            path("/x/1761000000.5-TP-0-EXTEND.trace.json.gz"),
            StageHint::Extend
        );
        assert_eq!(
            path("/x/1761000000.5-TP-1-DP-2-DECODE.trace.json.gz"),
            StageHint::Decode
        );
        assert_eq!(
            path("/x/decode-1761000000.5-TP-0.trace.json.gz"),
            StageHint::Decode
        );
        assert_eq!(
            path("/x/1761000000.5-TP-0.trace.json.gz"),
            StageHint::Unknown
        );
        let ann = |a| SgLang::stage_of(MarkerKind::Annotation, a);
        assert_eq!(ann("step[EXTEND bs=15 toks=15360]"), StageHint::Extend);
        assert_eq!(ann("step[DECODE bs=32]"), StageHint::Decode);
        assert_eq!(ann("step[MIXED bs=4 toks=900]"), StageHint::Mixed);
        assert_eq!(ann("step[IDLE]"), StageHint::Unknown);
        assert_eq!(
            ann("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"),
            StageHint::Decode
        );
        assert_eq!(ann("ProfilerStep#6"), StageHint::Unknown);
    }

    #[test]
    fn nothing_to_claim() {
        assert_eq!(SgLang::detect(&TraceEvidence::default()), None);
    }
}
