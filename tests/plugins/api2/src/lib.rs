//! Test-only plugin that exports a root module shaped like plugin-api's `FrameworkPlugin`
//! but declares plugin API 2.0.0, as a plugin built against a future major version would.
//! The host must refuse it with a message naming both API versions.

use abi_stable::{
    declare_root_module_statics, export_root_module,
    library::RootModule,
    prefix_type::PrefixTypeTrait,
    sabi_types::VersionStrings,
    std_types::{ROption, RResult, RStr, RString},
    StableAbi,
};
use llm_triage_plugin_api::{Attribution, Claim, Manifest, MarkerKind, StageHint, TraceEvidence};

#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = FrameworkPluginRef)))]
#[sabi(missing_field(option))]
pub struct FrameworkPlugin {
    pub manifest: extern "C" fn() -> RResult<Manifest, RString>,
    pub detect: extern "C" fn(&TraceEvidence) -> RResult<ROption<Claim>, RString>,
    pub attribution: extern "C" fn() -> RResult<Attribution, RString>,
    #[sabi(last_prefix_field)]
    pub stage_of: extern "C" fn(MarkerKind, RStr<'_>) -> RResult<StageHint, RString>,
}

impl RootModule for FrameworkPluginRef {
    declare_root_module_statics! {FrameworkPluginRef}
    const BASE_NAME: &'static str = "llm_triage_plugin";
    const NAME: &'static str = "llm_triage_plugin";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("2.0.0");
}

extern "C" fn manifest() -> RResult<Manifest, RString> {
    RResult::RErr("a 2.0.0 plugin must never be called by a 1.x host".into())
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
