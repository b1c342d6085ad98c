//! llm-triage engine plugin: vLLM.
//!
//! Detection: python frames inside the `vllm/` package (a whole path component, so
//! `nanovllm/` is not vLLM), then vLLM's `execute_context_N(…)_generation_M(…)` step
//! annotations and `VLLM::` process titles, then its worker trace file naming. The step
//! annotations are weaker than source frames because some SGLang builds write them too.
//! Kernel names never count: vLLM ships TensorRT-LLM kernels through flashinfer.

use llm_triage_plugin_api::scan::{self, Signal};
use llm_triage_plugin_api::{
    capability, capability_cell, export_plugin, rstrings, score, wrapper, Attribution, Claim,
    EnginePlugin, Manifest, MarkerKind, StageHint, Support, TraceEvidence, Upstream,
    PLUGIN_API_VERSION,
};

mod capture;

pub struct Vllm;

impl EnginePlugin for Vllm {
    fn manifest() -> Manifest {
        Manifest {
            name: "vllm".into(),
            aliases: rstrings([]),
            display_name: "vLLM".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            // vLLM main as cited by vllm-project/vllm-ascend PR #6968 (2026-03-03, v0.16.0);
            // paths below were checked against the stored upstream tree.
            upstream: Upstream {
                repo: "vllm-project/vllm".into(),
                commit: "15d76f74e2fdb12a95ea00f0ca283acf6219a2b7".into(),
                date: "2026-03-03".into(),
            },
            capabilities: vec![
                capability_cell(capability::TRACE_TRIAGE, Support::Yes, ""),
                capability_cell(
                    capability::LIVE_CAPTURE,
                    Support::Conditional,
                    "only with the torch profiler configured on the server (--profiler-config)",
                ),
                capability_cell(capability::MAPPING_FORMAL, Support::Yes, ""),
                capability_cell(capability::STAGE_CAPTURE, Support::Yes, ""),
                capability_cell(capability::PROFILE_BY_STAGE, Support::No, ""),
                capability_cell(capability::PROFILE_PREFIX, Support::Ignored, ""),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn detect(evidence: &TraceEvidence) -> Option<Claim> {
        let signals = [
            scan::source_frames_signal(evidence, &[&["vllm"]], "vllm/"),
            execute_annotation_signal(evidence),
            process_name_signal(evidence),
            file_name_signal(evidence),
        ];
        scan::best_claim(signals.into_iter().flatten())
    }

    fn attribution() -> Attribution {
        Attribution {
            source_roots: rstrings(["vllm/"]),
            wrapper_frames: vec![
                // CUDA graph replay: vllm/compilation/cuda_graph.py (CUDAGraphWrapper.__call__).
                wrapper("vllm/compilation/cuda_graph.py", ""),
                // Piecewise compiled regions: vllm/compilation/cuda_piecewise_backend.py,
                // piecewise_backend.py.
                wrapper("vllm/compilation/cuda_piecewise_backend.py", ""),
                wrapper("vllm/compilation/piecewise_backend.py", ""),
                // torch.compile trampolines: vllm/compilation/decorators.py, wrapper.py.
                wrapper("vllm/compilation/decorators.py", ""),
                wrapper("vllm/compilation/wrapper.py", ""),
                // Parameter subclasses' __torch_function__: vllm/model_executor/parameter.py.
                wrapper("vllm/model_executor/parameter.py", ""),
                // The runner's model call only forwards to the model; the runner's other
                // functions (input preparation, sampling) are real launch sites and stay.
                wrapper("vllm/v1/worker/gpu_model_runner.py", "_model_forward"),
                // Thin Python bindings of the C++ ops (vllm/_custom_ops.py) and CustomOp's
                // dispatch to forward_cuda/forward_native (vllm/model_executor/custom_op.py):
                // the layer that called them is the site worth showing.
                wrapper("vllm/_custom_ops.py", ""),
                wrapper("vllm/model_executor/custom_op.py", "forward"),
                // The NCCL library binding (vllm/distributed/device_communicators/pynccl_wrapper.py):
                // its caller (pynccl.py, the layer) is the site.
                wrapper(
                    "vllm/distributed/device_communicators/pynccl_wrapper.py",
                    "",
                ),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn stage_of(kind: MarkerKind, text: &str) -> StageHint {
        match kind {
            // vLLM's trace names carry no stage (`<worker>.<ms>.pt.trace.json.gz`); the
            // host's generic prefill/ and decode/ directory rules cover stage captures.
            MarkerKind::FilePath => StageHint::Unknown,
            // Older builds' `execute_…context_…_generation_…`, else current vLLM's
            // `execute_new_…_cached_…`.
            MarkerKind::Annotation => match scan::execute_annotation_stage(text) {
                StageHint::Unknown => scan::new_cached_annotation_stage(text),
                known => known,
            },
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
    Vllm,
    registry = include_str!("../../../catalog/fusions/vllm.toml"),
    steps = include_str!("../../../catalog/steps/vllm.toml")
);

fn execute_annotation_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let count = scan::count_where(&evidence.annotation_names, scan::is_execute_annotation);
    (count > 0).then(|| Signal {
        score: score::ANNOTATIONS + scan::bounded(count),
        evidence: scan::counted_noun(
            count,
            "vLLM execute_context_N(…)_generation_N(…) annotation",
        ),
    })
}

/// vLLM titles its processes `VLLM::EngineCore`, `VLLM::Worker_TP0` … (prefix configurable,
/// `VLLM` by default).
fn process_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let names = evidence
        .process_names
        .iter()
        .chain(evidence.thread_names.iter());
    let count = names
        .filter(|n| n.as_str().to_ascii_lowercase().starts_with("vllm::"))
        .count() as u64;
    (count > 0).then(|| Signal {
        score: score::ANNOTATIONS + scan::bounded(count),
        evidence: format!(
            "{} starting with VLLM::",
            scan::counted_noun(count, "process/thread name")
        ),
    })
}

/// Worker traces are `[<prefix>_]dp<d>_pp<p>_tp<t>_dcp<c>_ep<e>_rank<r>.<ms>.pt.trace.json.gz`
/// (vllm/profiler/wrapper.py, `get_worker_rank_suffix`).
fn file_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let name = scan::file_name(evidence.file_path.as_str());
    let numbered = |token: &str, prefix: &str| {
        token
            .strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let stem = name.split('.').next().unwrap_or("");
    let tokens: Vec<&str> = stem.split('_').collect();
    let has_rank_suffix = tokens
        .windows(3)
        .any(|w| numbered(w[0], "dp") && numbered(w[1], "pp") && numbered(w[2], "tp"));
    has_rank_suffix.then(|| Signal {
        score: score::FILE_NAME,
        evidence: format!("file name {name} follows vLLM's dp<d>_pp<p>_tp<t> worker naming"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_triage_plugin_api::testing::counted;

    #[test]
    fn nanovllm_is_not_vllm() {
        // Python roots of zhang-yuhui__nano-vllm__decode_gpu_0.json.
        let e = TraceEvidence {
            python_files: counted(&[
                ("torch/_dynamo/eval_frame.py", 168),
                ("nanovllm/engine/model_runner.py", 20),
                ("nanovllm/layers/attention.py", 15),
            ]),
            file_path: "/traces/nano-vllm/decode_gpu_0.json".into(),
            ..Default::default()
        };
        assert_eq!(Vllm::detect(&e), None);
    }

    #[test]
    fn vllm_frames_win_over_trtllm_kernel_names() {
        // As in AMD-AGI__TraceLens__eager_trace (vLLM on B200 with trtllm-gen kernels).
        let e = TraceEvidence {
            python_files: counted(&[
                ("vllm/model_executor/layers/fused_moe/layer.py", 1008),
                ("torch/nn/modules/module.py", 1632),
            ]),
            annotation_names: counted(&[("execute_context_N(N_N)_generation_N(N)", 2)]),
            kernel_names: counted(&[("tensorrt_llm::kernels::quantize_with_block_size", 36)]),
            ..Default::default()
        };
        let claim = Vllm::detect(&e).expect("claim");
        // 1008 * 999 / 2640 = 381
        assert_eq!(claim.score, score::SOURCE_FRAMES + 381);
        assert_eq!(claim.evidence[0].as_str(), "1008 python frames under vllm/");
        assert_eq!(
            claim.evidence[1].as_str(),
            "2 vLLM execute_context_N(…)_generation_N(…) annotations"
        );
    }

    #[test]
    fn annotations_alone_are_the_annotation_tier() {
        let e = TraceEvidence {
            annotation_names: counted(&[(
                "execute_N_context_N(sqNskNsqsqNsqskN)_generation_N(sqNskNsqsqNsqskN)",
                1,
            )]),
            ..Default::default()
        };
        assert_eq!(Vllm::detect(&e).unwrap().score, score::ANNOTATIONS + 1);
    }

    #[test]
    fn worker_file_names() {
        let named = |p: &str| {
            let e = TraceEvidence {
                file_path: p.into(),
                ..Default::default()
            };
            Vllm::detect(&e).map(|c| c.score)
        };
        assert_eq!(
            named("/t/dp0_pp0_tp1_dcp0_ep0_rank1.1761000000123.pt.trace.json.gz"),
            Some(score::FILE_NAME)
        );
        assert_eq!(
            named("/t/my_dp0_pp0_tp0_rank0.1.pt.trace.json.gz"),
            Some(score::FILE_NAME)
        );
        assert_eq!(named("/t/host_12.34.pt.trace.json.gz"), None);
    }

    #[test]
    fn stages_from_annotations() {
        let ann = |a| Vllm::stage_of(MarkerKind::Annotation, a);
        assert_eq!(
            ann("execute_context_1(888_788544)_generation_0(0)"),
            StageHint::Extend
        );
        assert_eq!(
            ann("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"),
            StageHint::Decode
        );
        assert_eq!(
            ann("execute_context_3(9_9)_generation_5(5)"),
            StageHint::Mixed
        );
        assert_eq!(ann("step[DECODE bs=32]"), StageHint::Unknown);
        assert_eq!(
            Vllm::stage_of(
                MarkerKind::FilePath,
                "/t/prefill/dp0_pp0_tp0.1.pt.trace.json.gz"
            ),
            StageHint::Unknown
        );
    }
}
