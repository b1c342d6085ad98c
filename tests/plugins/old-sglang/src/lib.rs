//! Test-only plugin: claims the name `sglang` at version 0.0.1 and detects nothing.

use llm_triage_plugin_api::{
    export_plugin, rstrings, Attribution, Claim, EnginePlugin, Manifest, MarkerKind, StageHint,
    TraceEvidence, Upstream, PLUGIN_API_VERSION,
};

pub struct OldSglang;

impl EnginePlugin for OldSglang {
    fn manifest() -> Manifest {
        Manifest {
            name: "sglang".into(),
            aliases: rstrings(["sgl"]),
            display_name: "SGLang (old test build)".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            upstream: Upstream {
                repo: "sgl-project/sglang".into(),
                commit: "0000000000000000000000000000000000000000".into(),
                date: "2025-01-01".into(),
            },
            capabilities: Default::default(),
        }
    }

    fn detect(_evidence: &TraceEvidence) -> Option<Claim> {
        None
    }

    fn attribution() -> Attribution {
        Attribution::default()
    }

    fn stage_of(_kind: MarkerKind, _text: &str) -> StageHint {
        StageHint::Unknown
    }
}

export_plugin!(OldSglang);
