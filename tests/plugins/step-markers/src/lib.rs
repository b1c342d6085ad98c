//! Test-only plugin built with the current plugin API through `export_plugin!`: an
//! engine whose steps are `forward_step#<N>` annotations, a marker no built-in row
//! knows, named through the plugin's step catalog (API 1.4). It claims no trace: the
//! host uses every loaded plugin's step rows, whichever engine is selected.

use llm_triage_plugin_api::{
    export_plugin, rstrings, Attribution, Claim, EnginePlugin, Manifest, MarkerKind, StageHint,
    TraceEvidence, Upstream, PLUGIN_API_VERSION,
};

pub struct StepMarkers;

impl EnginePlugin for StepMarkers {
    fn manifest() -> Manifest {
        Manifest {
            name: "step-markers".into(),
            aliases: rstrings(["forward-step"]),
            display_name: "Step Markers (test build)".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            api_version: PLUGIN_API_VERSION.into(),
            upstream: Upstream {
                repo: "example/step-markers".into(),
                commit: "1414141414141414141414141414141414141414".into(),
                date: "2026-10-01".into(),
            },
            capabilities: Default::default(),
        }
    }

    fn detect(_: &TraceEvidence) -> Option<Claim> {
        None
    }

    fn attribution() -> Attribution {
        Attribution::default()
    }

    fn stage_of(_: MarkerKind, _: &str) -> StageHint {
        StageHint::Unknown
    }
}

export_plugin!(
    StepMarkers,
    steps = r#"
schema = 1

[[marker]]
id = "step-markers.forward-step"
prefix = "forward_step#"
shown_as = "forward_step#N"
checked_against = ["tests/src/timeline/scenarios.rs: the plugin-marker scenario writes forward_step#<N>"]
"#
);
