//! llm-triage engine plugin for LMDeploy's PyTorch engine (`InternLM/lmdeploy`,
//! `lmdeploy/pytorch/`), written against the public plugin API only: the host knows
//! nothing about LMDeploy.
//!
//! How LMDeploy profiles (checked against `lmdeploy/pytorch/envs.py` and
//! `lmdeploy/pytorch/engine/model_agent/profiler.py`): no HTTP route; the model agent
//! runs `torch.profiler.profile(activities=...)` when `LMDEPLOY_PROFILE_CPU=1` and/or
//! `LMDEPLOY_PROFILE_CUDA=1`, starting after `LMDEPLOY_PROFILE_DELAY` seconds and stopping
//! after `LMDEPLOY_PROFILE_DURATION` seconds (or at exit), and writes one file per rank,
//! `<LMDEPLOY_PROFILE_OUT_PREFIX><rank>.json.gz` (prefix `lmdeploy_profile_` by default;
//! `LMDEPLOY_PROFILE_USE_GZIP=0` for `.json`). It sets no `with_stack`, so traces usually
//! have no Python frames.
//!
//! Detection therefore leans on the engine's `record_function` annotations
//! (`forward_cudagraph`, `make_forward_inputs`, `schedule_decoding`, ...), then Python
//! frames under `lmdeploy/pytorch/` when a patched profiler recorded stacks, then the
//! default file name. Stages: `forward_cudagraph` encloses CUDA-graph replays, which
//! LMDeploy uses only for decoding (`graph_runner.py`: `enable_graph =
//! context.global_is_decoding() and ...`); `forward_eager` runs prefill, and decode when
//! graphs are off, so it says nothing.

use llm_triage_plugin_api::scan::{self, Signal};
use llm_triage_plugin_api::{
    capability, capability_cell, export_plugin, rstrings, score, wrapper, Attribution, Claim,
    EnginePlugin, Manifest, MarkerKind, StageHint, Support, TraceEvidence, Upstream,
    PLUGIN_API_VERSION,
};

pub struct LmDeploy;

/// `record_function` names only LMDeploy's PyTorch engine uses (engine, model agent,
/// scheduler, graph runner).
pub const ENGINE_ANNOTATIONS: &[&str] = &[
    "forward_cudagraph",
    "capture_cudagraph",
    "fill_buffers_cudagraph",
    "make_forward_inputs",
    "create_model_inputs",
    "create_model_inputs_delta",
    "create_model_inputs_long_context",
    "build_step_context",
    "schedule_prefill",
    "schedule_decoding",
    "schedule_running",
    "make_infer_outputs",
];

/// Its other annotations: too generic to claim a trace alone.
pub const GENERIC_ANNOTATIONS: &[&str] = &[
    "forward_eager",
    "prepare_inputs_for_generation",
    "inputs_H2D",
    "outputs_D2H",
    "sampling_logits",
    "get_logits",
    "prepare_dp",
];

/// The directories of the engine's Python package.
const SOURCE_DIRS: &[&str] = &["lmdeploy", "pytorch"];

/// The default trace file prefix (`LMDEPLOY_PROFILE_OUT_PREFIX`).
const DEFAULT_PREFIX: &str = "lmdeploy_profile_";

impl EnginePlugin for LmDeploy {
    fn manifest() -> Manifest {
        Manifest {
            name: "lmdeploy".into(),
            aliases: rstrings(["lmdeploy-pytorch", "pytorch-engine"]),
            display_name: "LMDeploy".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            upstream: Upstream {
                repo: "InternLM/lmdeploy".into(),
                commit: "1263d5cd889b7ad500e85b8eb20401327a4516ab".into(),
                date: "2026-08-21".into(),
            },
            capabilities: [
                capability_cell(capability::TRACE_TRIAGE, Support::Yes, ""),
                capability_cell(
                    capability::LIVE_CAPTURE,
                    Support::No,
                    "no profiler route: start the server with LMDEPLOY_PROFILE_CUDA=1 \
                     LMDEPLOY_PROFILE_CPU=1 (LMDEPLOY_PROFILE_DELAY/DURATION for the window); \
                     traces are <LMDEPLOY_PROFILE_OUT_PREFIX><rank>.json.gz",
                ),
                capability_cell(capability::MAPPING_FORMAL, Support::Yes, ""),
                capability_cell(capability::STAGE_CAPTURE, Support::No, ""),
                capability_cell(capability::PROFILE_BY_STAGE, Support::No, ""),
                capability_cell(capability::PROFILE_PREFIX, Support::No, ""),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn detect(evidence: &TraceEvidence) -> Option<Claim> {
        let signals = [
            annotation_signal(evidence),
            scan::source_frames_signal(evidence, &[SOURCE_DIRS], "lmdeploy/pytorch/"),
            file_name_signal(evidence),
        ];
        scan::best_claim(signals.into_iter().flatten())
    }

    fn attribution() -> Attribution {
        Attribution {
            source_roots: rstrings(["lmdeploy/pytorch/", "lmdeploy/"]),
            wrapper_frames: [
                // Graph replay (`CUDASingleGraphRunner.forward`) and the dispatcher around it
                // (`CUDAGraphRunner.__call__`): the launch site is their caller.
                wrapper("lmdeploy/pytorch/backends/cuda/graph_runner.py", "forward"),
                wrapper("lmdeploy/pytorch/backends/cuda/graph_runner.py", "__call__"),
                // Triton kernel wrappers: the layer that calls them is the useful location.
                wrapper("lmdeploy/pytorch/kernels/", ""),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn stage_of(kind: MarkerKind, text: &str) -> StageHint {
        match (kind, text) {
            (MarkerKind::Annotation, "forward_cudagraph" | "capture_cudagraph") => {
                StageHint::Decode
            }
            (MarkerKind::Annotation, "schedule_decoding") => StageHint::Decode,
            (MarkerKind::Annotation, "schedule_prefill") => StageHint::Extend,
            _ => StageHint::Unknown,
        }
    }
}

// Its step markers are data too: `steps.toml` beside Cargo.toml (plugin API 1.4).
export_plugin!(LmDeploy, steps = include_str!("../steps.toml"));

/// LMDeploy's own annotations: at least one engine-only name and two distinct names.
fn annotation_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let seen = |names: &[&str]| -> Vec<(String, u64)> {
        evidence
            .annotation_names
            .iter()
            .filter(|a| names.contains(&a.text.as_str()))
            .map(|a| (a.text.to_string(), a.count))
            .collect()
    };
    let engine = seen(ENGINE_ANNOTATIONS);
    let generic = seen(GENERIC_ANNOTATIONS);
    if engine.is_empty() || engine.len() + generic.len() < 2 {
        return None;
    }
    let events: u64 = engine.iter().chain(&generic).map(|(_, c)| c).sum();
    let mut names: Vec<&str> = engine.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    Some(Signal {
        score: score::ANNOTATIONS + scan::bounded(events),
        evidence: format!(
            "{} of LMDeploy's record_function annotations ({})",
            scan::counted_noun(events, "event"),
            names.join(", ")
        ),
    })
}

/// `lmdeploy_profile_<rank>.json[.gz]`: the default output name.
fn file_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let name = scan::file_name(evidence.file_path.as_str());
    let rank = name
        .strip_prefix(DEFAULT_PREFIX)?
        .strip_suffix(".gz")
        .unwrap_or(name.strip_prefix(DEFAULT_PREFIX)?)
        .strip_suffix(".json")?;
    (!rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit())).then(|| Signal {
        score: score::FILE_NAME + 1,
        evidence: format!("file name {name} is LMDeploy's default {DEFAULT_PREFIX}<rank>.json"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_triage_plugin_api::testing::counted;

    #[test]
    fn engine_annotations_claim_a_trace_without_stacks() {
        let evidence = TraceEvidence {
            file_path: "/runs/x/lmdeploy_profile_0.json.gz".into(),
            annotation_names: counted(&[
                ("forward_cudagraph", 12),
                ("forward_eager", 3),
                ("make_forward_inputs", 15),
            ]),
            ..Default::default()
        };
        let claim = LmDeploy::detect(&evidence).unwrap();
        assert_eq!(claim.score, score::ANNOTATIONS + 30);
        assert_eq!(
            claim.evidence[0].as_str(),
            "30 events of LMDeploy's record_function annotations (forward_cudagraph, make_forward_inputs)"
        );
        assert_eq!(
            claim.evidence[1].as_str(),
            "file name lmdeploy_profile_0.json.gz is LMDeploy's default lmdeploy_profile_<rank>.json"
        );
    }

    #[test]
    fn generic_names_alone_and_other_engines_are_not_claimed() {
        let generic = TraceEvidence {
            annotation_names: counted(&[("forward_eager", 3), ("get_logits", 3)]),
            ..Default::default()
        };
        assert_eq!(LmDeploy::detect(&generic), None);
        let one = TraceEvidence {
            annotation_names: counted(&[("forward_cudagraph", 3)]),
            ..Default::default()
        };
        assert_eq!(LmDeploy::detect(&one), None);
        let vllm = TraceEvidence {
            python_files: counted(&[("/py/vllm/v1/worker/gpu_model_runner.py", 40)]),
            file_path: "/t/lmdeploy_profile_x.json".into(),
            ..Default::default()
        };
        assert_eq!(LmDeploy::detect(&vllm), None);
    }

    #[test]
    fn frames_under_the_package_claim_the_source_tier() {
        let evidence = TraceEvidence {
            python_files: counted(&[
                ("/opt/lmdeploy/pytorch/engine/model_agent/agent.py", 30),
                ("/opt/torch/nn/modules/module.py", 10),
            ]),
            ..Default::default()
        };
        let claim = LmDeploy::detect(&evidence).unwrap();
        // 30 of 40 frames: 999 * 30 / 40 = 749 points.
        assert_eq!(claim.score, score::SOURCE_FRAMES + 749);
    }

    #[test]
    fn graph_replays_are_decode() {
        assert_eq!(
            LmDeploy::stage_of(MarkerKind::Annotation, "forward_cudagraph"),
            StageHint::Decode
        );
        assert_eq!(
            LmDeploy::stage_of(MarkerKind::Annotation, "forward_eager"),
            StageHint::Unknown
        );
        assert_eq!(
            LmDeploy::stage_of(MarkerKind::FilePath, "/x/lmdeploy_profile_0.json.gz"),
            StageHint::Unknown
        );
    }
}
