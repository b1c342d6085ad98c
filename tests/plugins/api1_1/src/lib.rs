//! Test-only plugin exactly as a plugin compiled against plugin API 1.1.0 looks to the
//! host: its root module is the frozen `baseline::v1_1::FrameworkPlugin` (five entry
//! points: no `capture_plan`, no `detect_endpoint`) and its header says API 1.1.0. A 1.2
//! host must load it through the baseline layout, read its fusion registry, and see no
//! live capture.

use abi_stable::{
    export_root_module,
    prefix_type::PrefixTypeTrait,
    std_types::{ROption, RResult, RStr, RString},
};
use llm_triage_plugin_api::baseline::v1_1::{FrameworkPlugin, FrameworkPluginRef, API_VERSION};
use llm_triage_plugin_api::{
    rstrings, Attribution, Claim, Manifest, MarkerKind, StageHint, TraceEvidence, Upstream,
};

extern "C" fn manifest() -> RResult<Manifest, RString> {
    RResult::ROk(Manifest {
        name: "middle-engine".into(),
        aliases: rstrings(["middle"]),
        display_name: "Middle Engine (API 1.1 test build)".into(),
        plugin_version: env!("CARGO_PKG_VERSION").into(),
        api_version: API_VERSION.into(),
        upstream: Upstream {
            repo: "example/middle-engine".into(),
            commit: "1111111111111111111111111111111111111111".into(),
            date: "2026-01-01".into(),
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
    RResult::ROk(StageHint::Extend)
}

extern "C" fn fusion_registry() -> RResult<RString, RString> {
    RResult::ROk("# middle-engine rows (none)\n".into())
}

#[export_root_module]
pub fn get_library() -> FrameworkPluginRef {
    FrameworkPlugin {
        manifest,
        detect,
        attribution,
        stage_of,
        fusion_registry,
    }
    .leak_into_prefix()
}
