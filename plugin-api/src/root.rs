//! The root module: the table of entry points a plugin library exports and the host
//! loads, and the version abi_stable checks it against.
//!
//! Versioning: the crate version is the ABI version. abi_stable refuses a plugin whose
//! major version differs from the host's, and (for prefix types) a plugin with *fewer*
//! fields than the host. New entry points are therefore appended after
//! `last_prefix_field` in a new minor version, and the host keeps a frozen copy of each
//! released layout (`crate::baseline`) to load older plugins through.
//!
//! Authors never fill this table by hand: [`export_plugin!`](crate::export_plugin) does,
//! from an [`EnginePlugin`](crate::EnginePlugin).

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings,
    sabi_types::VersionStrings,
    std_types::{ROption, RResult, RStr, RString},
    StableAbi,
};

use crate::{
    Attribution, CapturePlan, CaptureRequest, Claim, EndpointEvidence, Manifest, MarkerKind,
    StageHint, ToolBox, TraceEvidence,
};

/// The plugin-API version this crate defines (also the version abi_stable checks).
pub const PLUGIN_API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The root module every plugin exports. Fields after `last_prefix_field` are added in
/// later minor versions and read as absent from older plugins.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = FrameworkPluginRef)))]
#[sabi(missing_field(option))]
pub struct FrameworkPlugin {
    pub manifest: extern "C" fn() -> RResult<Manifest, RString>,
    /// `ROk(RNone)`: the evidence is not this engine's.
    pub detect: extern "C" fn(&TraceEvidence) -> RResult<ROption<Claim>, RString>,
    pub attribution: extern "C" fn() -> RResult<Attribution, RString>,
    #[sabi(last_prefix_field)]
    pub stage_of: extern "C" fn(MarkerKind, RStr<'_>) -> RResult<StageHint, RString>,
    /// Since 1.1.0: the engine's fusion-catalog rows, the TOML text of
    /// `catalog/fusions/<origin>.toml` (schema in `catalog/README.md`); empty for none.
    /// Read through the `Option` accessor: a 1.0 plugin has no such field.
    pub fusion_registry: extern "C" fn() -> RResult<RString, RString>,
    /// Since 1.2.0: the engine's live-capture protocol for `request` at the server that
    /// gave `evidence`; `RErr` with a one-line reason when it cannot capture (the host
    /// reports it as a capture failure). Read through the `Option` accessor.
    pub capture_plan:
        extern "C" fn(&CaptureRequest, &EndpointEvidence) -> RResult<CapturePlan, RString>,
    /// Since 1.2.0: a claim that the server behind `evidence` runs this engine;
    /// `ROk(RNone)` when it is not. Read through the `Option` accessor.
    pub detect_endpoint: extern "C" fn(&EndpointEvidence) -> RResult<ROption<Claim>, RString>,
    /// Since 1.3.0: the plugin's text tools (`llm-triage tool`), possibly none. Read
    /// through the `Option` accessor.
    pub tools: extern "C" fn() -> RResult<ToolBox, RString>,
    /// Since 1.4.0: the engine's step markers and forward calls, the TOML text of
    /// `catalog/steps/<origin>.toml` (the format of `catalog/steps.toml`, documented
    /// there); empty for none. Read through the `Option` accessor: the host's own rows
    /// are all an older plugin gets.
    pub step_catalog: extern "C" fn() -> RResult<RString, RString>,
}

impl RootModule for FrameworkPluginRef {
    declare_root_module_statics! {FrameworkPluginRef}
    const BASE_NAME: &'static str = "llm_triage_plugin";
    const NAME: &'static str = "llm_triage_plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}
