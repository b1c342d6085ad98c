//! llm-triage engine plugin: TensorRT-LLM (PyTorch backend, `trtllm-serve`).
//!
//! Detection: python frames inside the `tensorrt_llm/` package. TensorRT-LLM's own torch
//! profiler runs without `with_stack`, so a trace may have no python frames at all; then
//! kernels in the `tensorrt_llm::` namespace earn a weak claim (file-name tier). With any
//! python frames present, those kernels came through another library (flashinfer ships
//! them to vLLM and SGLang) and earn nothing. Server args are never read: SGLang values
//! such as `trtllm_mla` name a kernel backend, not this engine.

use llm_triage_plugin_api::scan::{self, Signal};
use llm_triage_plugin_api::{
    capability, capability_cell, export_plugin, rstrings, score, wrapper, Attribution, Claim,
    EnginePlugin, Manifest, MarkerKind, StageHint, Support, TraceEvidence, Upstream,
    PLUGIN_API_VERSION,
};

mod capture;
pub mod py_executor;

pub struct TrtLlm;

impl EnginePlugin for TrtLlm {
    fn manifest() -> Manifest {
        Manifest {
            name: "trtllm".into(),
            aliases: rstrings(["trt", "tllm", "tensorrt-llm", "tensorrtllm"]),
            display_name: "TensorRT-LLM".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            // The v1.2.0rc5 commit pinned by ai-dynamo/dynamo PR #5017 (2025-12-18); paths
            // below were checked against the stored upstream tree.
            upstream: Upstream {
                repo: "NVIDIA/TensorRT-LLM".into(),
                commit: "e4c707845ff58fcc0b1d87afb4dd0e64885c780a".into(),
                date: "2025-12-18".into(),
            },
            capabilities: vec![
                capability_cell(capability::TRACE_TRIAGE, Support::Yes, ""),
                capability_cell(
                    capability::LIVE_CAPTURE,
                    Support::Conditional,
                    "only if the server exposes /start_profile and /stop_profile",
                ),
                capability_cell(capability::MAPPING_FORMAL, Support::Yes, ""),
                capability_cell(
                    capability::STAGE_CAPTURE,
                    Support::Conditional,
                    "via a shared output dir or the per-stage runner",
                ),
                capability_cell(capability::PROFILE_BY_STAGE, Support::No, ""),
                capability_cell(capability::PROFILE_PREFIX, Support::Ignored, ""),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn detect(evidence: &TraceEvidence) -> Option<Claim> {
        let signals = [
            scan::source_frames_signal(evidence, &[&["tensorrt_llm"]], "tensorrt_llm/"),
            stackless_kernel_signal(evidence),
        ];
        scan::best_claim(signals.into_iter().flatten())
    }

    fn attribution() -> Attribution {
        Attribution {
            source_roots: rstrings(["tensorrt_llm/"]),
            wrapper_frames: vec![
                // CUDA graph replay: tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py.
                wrapper("tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py", ""),
                // The executor loop only drives steps: tensorrt_llm/_torch/pyexecutor/py_executor.py.
                wrapper("tensorrt_llm/_torch/pyexecutor/py_executor.py", ""),
                // Decorators and helpers around every op: tensorrt_llm/_torch/utils.py.
                wrapper("tensorrt_llm/_torch/utils.py", ""),
                // torch.compile piecewise regions: tensorrt_llm/_torch/compilation/.
                wrapper("tensorrt_llm/_torch/compilation/", ""),
            ]
            .into_iter()
            .collect(),
        }
    }

    /// Always `Unknown`: trace paths come from `TLLM_TORCH_PROFILE_TRACE` (user chosen,
    /// `-rank-<r>` appended; the host's generic prefill/decode path rules cover the runner's
    /// layout), and the executor writes no stage annotations into torch traces.
    fn stage_of(_kind: MarkerKind, _text: &str) -> StageHint {
        StageHint::Unknown
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

    fn tools() -> Vec<llm_triage_plugin_api::ToolSpec> {
        vec![py_executor::spec()]
    }

    fn run_tool(
        name: &str,
        inputs: &[llm_triage_plugin_api::ToolFile],
    ) -> Result<llm_triage_plugin_api::ToolOutput, String> {
        match name {
            py_executor::TOOL => py_executor::run(inputs),
            other => Err(format!("the trtllm plugin has no tool named {other:?}")),
        }
    }
}

export_plugin!(
    TrtLlm,
    registry = include_str!("../../../catalog/fusions/trtllm.toml"),
    steps = include_str!("../../../catalog/steps/trtllm.toml")
);

fn stackless_kernel_signal(evidence: &TraceEvidence) -> Option<Signal> {
    if !evidence.python_files.is_empty() {
        return None;
    }
    let count = scan::count_where(&evidence.kernel_names, |k| {
        k.contains("tensorrt_llm::") || k.starts_with("trtllm")
    });
    (count > 0).then(|| Signal {
        score: score::FILE_NAME + scan::bounded(count).min(99),
        evidence: format!(
            "{count} kernel launches in TensorRT-LLM's namespace and no python frames (weak: \
             kernel names only)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_triage_plugin_api::testing::{counted, key_values};

    #[test]
    fn tensorrt_llm_frames_claim_the_source_tier() {
        let e = TraceEvidence {
            python_files: counted(&[
                (
                    "/usr/lib/python3/dist-packages/tensorrt_llm/_torch/models/modeling_llama.py",
                    300,
                ),
                ("torch/nn/modules/module.py", 700),
            ]),
            ..Default::default()
        };
        let claim = TrtLlm::detect(&e).expect("claim");
        assert_eq!(claim.score, score::SOURCE_FRAMES + 299); // 300 * 999 / 1000
        assert_eq!(
            claim.evidence[0].as_str(),
            "300 python frames under tensorrt_llm/"
        );
    }

    #[test]
    fn kernel_names_in_a_trace_with_frames_earn_nothing() {
        let e = TraceEvidence {
            python_files: counted(&[("vllm/model_executor/layers/fused_moe/layer.py", 1008)]),
            kernel_names: counted(&[("tensorrt_llm::kernels::quantize_with_block_size", 36)]),
            ..Default::default()
        };
        assert_eq!(TrtLlm::detect(&e), None);
    }

    #[test]
    fn kernel_names_without_stacks_are_weak() {
        let e = TraceEvidence {
            kernel_names: counted(&[
                ("void tensorrt_llm::kernels::fmha::run<128>(…)", 150),
                ("nvjet_tst_128x64", 40),
            ]),
            ..Default::default()
        };
        let claim = TrtLlm::detect(&e).expect("claim");
        assert_eq!(claim.score, score::FILE_NAME + 99);
        assert!(claim.score < score::ANNOTATIONS);
    }

    #[test]
    fn sglang_args_naming_trtllm_backends_are_not_trtllm() {
        let e = TraceEvidence {
            server_args: key_values(&[("attention_backend", "\"trtllm_mla\"")]),
            file_path: "/runs/trtllm_mla_test/x-TP-0.trace.json.gz".into(),
            ..Default::default()
        };
        assert_eq!(TrtLlm::detect(&e), None);
    }

    #[test]
    fn aliases_and_stages() {
        let m = TrtLlm::manifest();
        let aliases: Vec<&str> = m.aliases.iter().map(|a| a.as_str()).collect();
        assert_eq!(aliases, ["trt", "tllm", "tensorrt-llm", "tensorrtllm"]);
        assert_eq!(
            TrtLlm::stage_of(MarkerKind::Annotation, "step[DECODE bs=1]"),
            StageHint::Unknown
        );
    }
}
