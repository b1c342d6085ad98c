//! llm-triage engine plugin: TokenSpeed (lightseekorg/tokenspeed).
//!
//! Detection: server-args keys only TokenSpeed writes, python frames inside the
//! `tokenspeed/` package, `tokenspeed::` process titles, and its
//! `<id>-[DP<d>-][CP<c>-]TP<t>[-STAGE].trace.json.gz` file naming.

use llm_triage_plugin_api::scan::{self, Signal};
use llm_triage_plugin_api::{
    capability, capability_cell, export_plugin, rstrings, score, wrapper, Attribution, Claim,
    EnginePlugin, Manifest, MarkerKind, StageHint, Support, TraceEvidence, Upstream,
    PLUGIN_API_VERSION,
};

mod capture;

pub struct TokenSpeed;

/// Server-args fields only TokenSpeed has (python/tokenspeed/runtime/utils/server_args.py
/// @ f4d8ec6e; `enable_mla_l1_5_cache` from older releases). Keys shared with SGLang
/// (`attention_backend`, `chunked_prefill_size` …) prove nothing.
const TOKENSPEED_ONLY_KEYS: &[&str] = &[
    "attn_tp_size",
    "dense_tp_size",
    "moe_tp_size",
    "enable_mla_l1_5_cache",
    "mla_chunk_multiplier",
    "comm_fusion_max_num_tokens",
    "enable_allreduce_fusion",
];

impl EnginePlugin for TokenSpeed {
    fn manifest() -> Manifest {
        Manifest {
            name: "tokenspeed".into(),
            aliases: rstrings(["token-speed", "ts"]),
            display_name: "TokenSpeed".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            // Checked in a snapshot of the repository (git log of main).
            upstream: Upstream {
                repo: "lightseekorg/tokenspeed".into(),
                commit: "f4d8ec6e039c028c7ee71317ccfb84e56ae2b45c".into(),
                date: "2026-08-22".into(),
            },
            capabilities: vec![
                capability_cell(capability::TRACE_TRIAGE, Support::Yes, ""),
                capability_cell(
                    capability::LIVE_CAPTURE,
                    Support::Conditional,
                    "if /start_profile and /stop_profile exist (control sidecar, main port + 1)",
                ),
                capability_cell(capability::MAPPING_FORMAL, Support::Yes, ""),
                capability_cell(capability::STAGE_CAPTURE, Support::Yes, ""),
                capability_cell(capability::PROFILE_BY_STAGE, Support::No, ""),
                capability_cell(
                    capability::PROFILE_PREFIX,
                    Support::Yes,
                    "sent as profile_id",
                ),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn detect(evidence: &TraceEvidence) -> Option<Claim> {
        let signals = [
            server_args_signal(evidence),
            scan::source_frames_signal(evidence, &[&["tokenspeed"]], "tokenspeed/"),
            process_name_signal(evidence),
            file_name_signal(evidence),
        ];
        scan::best_claim(signals.into_iter().flatten())
    }

    fn attribution() -> Attribution {
        Attribution {
            source_roots: rstrings(["python/tokenspeed/", "tokenspeed/"]),
            wrapper_frames: vec![
                // Graph replay: python/tokenspeed/runtime/execution/cuda_graph_wrapper.py
                // (CudaGraphWrapper.replay / __call__), prefill_graph.py,
                // breakable_cuda_graph.py (replay).
                wrapper(
                    "tokenspeed/runtime/execution/cuda_graph_wrapper.py",
                    "replay",
                ),
                wrapper(
                    "tokenspeed/runtime/execution/cuda_graph_wrapper.py",
                    "__call__",
                ),
                wrapper("tokenspeed/runtime/execution/prefill_graph.py", "replay"),
                wrapper(
                    "tokenspeed/runtime/execution/breakable_cuda_graph.py",
                    "replay",
                ),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn stage_of(kind: MarkerKind, text: &str) -> StageHint {
        match kind {
            MarkerKind::FilePath => scan::stage_of_file_name(scan::file_name(text)),
            // TokenSpeed writes no stage annotations into torch traces.
            MarkerKind::Annotation => StageHint::Unknown,
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
    TokenSpeed,
    registry = include_str!("../../../catalog/fusions/tokenspeed.toml"),
    steps = include_str!("../../../catalog/steps/tokenspeed.toml")
);

fn server_args_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let found: Vec<&str> = TOKENSPEED_ONLY_KEYS
        .iter()
        .copied()
        .filter(|k| evidence.server_args.iter().any(|kv| kv.key.as_str() == *k))
        .collect();
    (!found.is_empty()).then(|| Signal {
        score: score::SERVER_ARGS + scan::bounded(found.len() as u64),
        evidence: format!("server_args.json has TokenSpeed keys: {}", found.join(", ")),
    })
}

/// python/tokenspeed/runtime/engine/event_loop.py titles the scheduler
/// `tokenspeed::scheduler_<dp>`.
fn process_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let names = evidence
        .process_names
        .iter()
        .chain(evidence.thread_names.iter());
    let count = names
        .filter(|n| n.as_str().starts_with("tokenspeed::"))
        .count() as u64;
    (count > 0).then(|| Signal {
        score: score::ANNOTATIONS + scan::bounded(count),
        evidence: format!(
            "{} starting with tokenspeed::",
            scan::counted_noun(count, "process/thread name")
        ),
    })
}

/// request_handler.py names traces `<profile_id>-<rank_tag>[-EXTEND|-DECODE].trace.json.gz`
/// with `rank_tag = [DP<d>-][CP<c>-]TP<t>` (since 2026-07-13; SGLang writes `-TP-<t>`).
fn file_name_signal(evidence: &TraceEvidence) -> Option<Signal> {
    let name = scan::file_name(evidence.file_path.as_str());
    let is_rank_tag = |token: &str| {
        token
            .strip_prefix("TP")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    name.split(['-', '.']).any(is_rank_tag).then(|| Signal {
        score: score::FILE_NAME,
        evidence: format!("file name {name} follows TokenSpeed's TP<rank> naming"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_triage_plugin_api::testing::{counted, key_values};

    #[test]
    fn tokenspeed_args_and_frames() {
        let e = TraceEvidence {
            server_args: key_values(&[
                ("attn_tp_size", "4"),
                ("moe_tp_size", "1"),
                ("chunked_prefill_size", "8192"),
            ]),
            python_files: counted(&[
                (
                    "/ws/tokenspeed/python/tokenspeed/runtime/execution/model_executor.py",
                    40,
                ),
                (
                    "/ws/tokenspeed/python/tokenspeed/runtime/entrypoints/sglang_compat_http.py",
                    10,
                ),
            ]),
            ..Default::default()
        };
        let claim = TokenSpeed::detect(&e).expect("claim");
        assert_eq!(claim.score, score::SERVER_ARGS + 2);
        assert_eq!(
            claim.evidence[0].as_str(),
            "server_args.json has TokenSpeed keys: attn_tp_size, moe_tp_size"
        );
        assert_eq!(
            claim.evidence[1].as_str(),
            "50 python frames under tokenspeed/"
        );
    }

    #[test]
    fn the_ts_path_component_is_not_tokenspeed() {
        // The predecessor read any path containing `/ts/` as TokenSpeed.
        let e = TraceEvidence {
            file_path: "/home/me/ts/run-TP-0.trace.json.gz".into(),
            python_files: counted(&[("/home/me/ts/bench.py", 10)]),
            ..Default::default()
        };
        assert_eq!(TokenSpeed::detect(&e), None);
    }

    #[test]
    fn file_names_and_stages() {
        let e = TraceEvidence {
            file_path: "/o/20260822-101500-DP1-TP0-EXTEND.trace.json.gz".into(),
            ..Default::default()
        };
        assert_eq!(TokenSpeed::detect(&e).unwrap().score, score::FILE_NAME);
        let path = |p| TokenSpeed::stage_of(MarkerKind::FilePath, p);
        assert_eq!(
            path("/o/20260822-101500-TP0-EXTEND.trace.json.gz"),
            StageHint::Extend
        );
        assert_eq!(
            path("/o/20260822-101500-TP3-DECODE.trace.json.gz"),
            StageHint::Decode
        );
        assert_eq!(path("/o/run-prefill-TP-0.trace.json.gz"), StageHint::Extend);
        assert_eq!(
            path("/o/20260822-101500-TP0.trace.json.gz"),
            StageHint::Unknown
        );
    }
}
