//! Test-only plugin exactly as a plugin compiled against plugin API 1.0.0 looks to the
//! host: its root module is the frozen `baseline::v1_0::FrameworkPlugin` (four entry
//! points, no `fusion_registry`) and its header says API 1.0.0. A 1.1 host must load it
//! through the baseline layout, call it, and read its fusion registry as absent.

use abi_stable::{
    export_root_module,
    prefix_type::PrefixTypeTrait,
    std_types::{ROption, RResult, RStr, RString},
};
use llm_triage_plugin_api::baseline::v1_0::{FrameworkPlugin, FrameworkPluginRef, API_VERSION};
use llm_triage_plugin_api::{
    rstrings, Attribution, Claim, Manifest, MarkerKind, StageHint, TraceEvidence, Upstream,
};

extern "C" fn manifest() -> RResult<Manifest, RString> {
    RResult::ROk(Manifest {
        name: "legacy-engine".into(),
        aliases: rstrings(["legacy"]),
        display_name: "Legacy Engine (API 1.0 test build)".into(),
        plugin_version: env!("CARGO_PKG_VERSION").into(),
        api_version: API_VERSION.into(),
        upstream: Upstream {
            repo: "example/legacy-engine".into(),
            commit: "0000000000000000000000000000000000000000".into(),
            date: "2025-01-01".into(),
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

#[export_root_module]
pub fn get_library() -> FrameworkPluginRef {
    FrameworkPlugin {
        manifest,
        detect,
        attribution,
        stage_of,
    }
    .leak_into_prefix()
}
