//! Test-only plugin: a valid manifest, but `detect` and `stage_of` panic. The host must get
//! an error value back (exit 6) and keep running.

use llm_triage_plugin_api::{
    export_plugin, rstrings, Attribution, Claim, EnginePlugin, Manifest, MarkerKind, StageHint,
    TraceEvidence, Upstream, PLUGIN_API_VERSION,
};

pub struct Panicky;

impl EnginePlugin for Panicky {
    fn manifest() -> Manifest {
        Manifest {
            name: "panicky".into(),
            aliases: rstrings([]),
            display_name: "Panicky".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            upstream: Upstream {
                repo: "example/panicky".into(),
                commit: "0000000000000000000000000000000000000000".into(),
                date: "2026-01-01".into(),
            },
            capabilities: Default::default(),
        }
    }

    fn detect(_evidence: &TraceEvidence) -> Option<Claim> {
        panic!("boom in detect")
    }

    fn attribution() -> Attribution {
        Attribution::default()
    }

    fn stage_of(_kind: MarkerKind, text: &str) -> StageHint {
        panic!("boom in stage_of for {text}")
    }
}

export_plugin!(Panicky);
