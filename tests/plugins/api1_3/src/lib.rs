//! Test-only plugin exactly as a plugin compiled against plugin API 1.3.0 looks to the
//! host: its root module is the frozen `baseline::v1_3::FrameworkPlugin` (eight entry
//! points: tools, no `step_catalog`) and its header says API 1.3.0. A 1.4 host must load
//! it through the baseline layout, keep its tools, and see no step catalog, so the
//! timeline's steps fall back to the host's rows.
//!
//! It claims traces whose annotations include `forward_step#` (the marker the
//! `step-markers` test plugin names), so a test can select it on the same fixture.

use abi_stable::{
    export_root_module,
    prefix_type::PrefixTypeTrait,
    std_types::{ROption, RResult, RSlice, RStr, RString},
};
use llm_triage_plugin_api::baseline::v1_3::{FrameworkPlugin, FrameworkPluginRef, API_VERSION};
use llm_triage_plugin_api::{
    rstrings, Attribution, CapturePlan, CaptureRequest, Claim, EndpointEvidence, Manifest,
    MarkerKind, StageHint, ToolBox, ToolFile, ToolOutput, ToolSpec, TraceEvidence, Upstream,
};

extern "C" fn manifest() -> RResult<Manifest, RString> {
    RResult::ROk(Manifest {
        name: "tooled-engine".into(),
        aliases: rstrings(["tooled"]),
        display_name: "Tooled Engine (API 1.3 test build)".into(),
        plugin_version: env!("CARGO_PKG_VERSION").into(),
        api_version: API_VERSION.into(),
        upstream: Upstream {
            repo: "example/tooled-engine".into(),
            commit: "1313131313131313131313131313131313131313".into(),
            date: "2026-09-01".into(),
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
    RResult::ROk(StageHint::Unknown)
}

extern "C" fn fusion_registry() -> RResult<RString, RString> {
    RResult::ROk(RString::new())
}

extern "C" fn capture_plan(
    _: &CaptureRequest,
    _: &EndpointEvidence,
) -> RResult<CapturePlan, RString> {
    RResult::RErr("tooled-engine test build: no capture".into())
}

extern "C" fn detect_endpoint(_: &EndpointEvidence) -> RResult<ROption<Claim>, RString> {
    RResult::ROk(ROption::RNone)
}

extern "C" fn run(_: RStr<'_>, _: RSlice<'_, ToolFile>) -> RResult<ToolOutput, RString> {
    RResult::ROk(ToolOutput::default())
}

extern "C" fn tools() -> RResult<ToolBox, RString> {
    RResult::ROk(ToolBox {
        tools: vec![ToolSpec::new("noop", "does nothing", &[], &[], "")]
            .into_iter()
            .collect(),
        run,
    })
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
        tools,
    }
    .leak_into_prefix()
}
