//! Test-only plugin exactly as a plugin compiled against plugin API 1.2.0 looks to the
//! host: its root module is the frozen `baseline::v1_2::FrameworkPlugin` (seven entry
//! points: live capture, no `tools`) and its header says API 1.2.0. A 1.3 host must load
//! it through the baseline layout, keep its endpoint detection, and see no tools.

use abi_stable::{
    export_root_module,
    prefix_type::PrefixTypeTrait,
    std_types::{ROption, RResult, RStr, RString},
};
use llm_triage_plugin_api::baseline::v1_2::{FrameworkPlugin, FrameworkPluginRef, API_VERSION};
use llm_triage_plugin_api::{
    rstrings, Attribution, CapturePlan, CaptureRequest, Claim, EndpointEvidence, Manifest,
    MarkerKind, StageHint, TraceEvidence, Upstream,
};

extern "C" fn manifest() -> RResult<Manifest, RString> {
    RResult::ROk(Manifest {
        name: "late-engine".into(),
        aliases: rstrings(["late"]),
        display_name: "Late Engine (API 1.2 test build)".into(),
        plugin_version: env!("CARGO_PKG_VERSION").into(),
        api_version: API_VERSION.into(),
        upstream: Upstream {
            repo: "example/late-engine".into(),
            commit: "1212121212121212121212121212121212121212".into(),
            date: "2026-06-01".into(),
        },
        capabilities: Default::default(),
    })
}

extern "C" fn detect(_: &TraceEvidence) -> RResult<ROption<Claim>, RString> {
    RResult::ROk(ROption::RNone)
}

extern "C" fn attribution() -> RResult<Attribution, RString> {
    RResult::ROk(Attribution::default())
}

extern "C" fn stage_of(_: MarkerKind, _: RStr<'_>) -> RResult<StageHint, RString> {
    RResult::ROk(StageHint::Decode)
}

extern "C" fn fusion_registry() -> RResult<RString, RString> {
    RResult::ROk(RString::new())
}

extern "C" fn capture_plan(
    _: &CaptureRequest,
    _: &EndpointEvidence,
) -> RResult<CapturePlan, RString> {
    RResult::RErr("late-engine test build: no capture".into())
}

extern "C" fn detect_endpoint(_: &EndpointEvidence) -> RResult<ROption<Claim>, RString> {
    RResult::ROk(ROption::RSome(Claim {
        score: 1234,
        evidence: rstrings(["late-engine answers every probe"]),
    }))
}

#[export_root_module]
pub fn get_library() -> FrameworkPluginRef {
    FrameworkPlugin {
        manifest,
        detect,
        attribution,
        stage_of,
        fusion_registry,
        capture_plan,
        detect_endpoint,
    }
    .leak_into_prefix()
}
