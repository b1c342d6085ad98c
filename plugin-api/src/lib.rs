//! The stable ABI between the `llm-triage` host and engine plugins.
//!
//! A plugin is a `cdylib` that implements [`EnginePlugin`] on a unit struct and exports
//! it with [`export_plugin!`] (`docs/writing-a-plugin.md` walks through a complete one).
//! Everything that crosses the boundary is an `abi_stable` type; every entry point
//! returns an [`RResult`](abi_stable::std_types::RResult) and never unwinds (the macro
//! wraps each call in `catch_unwind`). Plugins are pure: no I/O, no threads, no global
//! state the host can see.
//!
//! Where things live, all re-exported here: the trait and the macro (`export.rs`); the
//! data types a plugin returns and reads, [`Manifest`], [`TraceEvidence`], [`Claim`],
//! [`Attribution`], [`StageHint`] … (`types.rs`); the detection helpers ([`scan`]); live
//! capture ([`capture`]) and text tools ([`tools`]); and the root module the macro fills
//! in, [`FrameworkPlugin`], with the versioning rules (`root.rs`). The hidden `baseline`
//! module is host plumbing: frozen older layouts the host loads old plugins through. The
//! `testing` feature adds the `testing` module (builders for a plugin's unit tests).
//!
//! History: 1.0.0 `manifest`, `detect`, `attribution`, `stage_of`; 1.1.0 adds
//! `fusion_registry` (the plugin's fusion-catalog rows as TOML text); 1.2.0 adds
//! `capture_plan` and `detect_endpoint` (live capture, see [`capture`]); 1.3.0 adds
//! `tools` (named text transforms, see [`tools`]); 1.4.0 adds `step_catalog` (the
//! engine's step markers and forward calls as TOML text, `export_plugin!(…, steps = …)`).

pub mod capture;
mod export;
mod root;
pub mod scan;
pub mod tools;
mod types;

/// Builders for plugins' unit tests (feature `testing`, for `[dev-dependencies]`).
#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// Host plumbing: frozen older layouts of the root module (see the module doc).
#[doc(hidden)]
pub mod baseline;

pub use capture::{
    Accepted, CapturePlan, CaptureRequest, EndpointEvidence, GenerateApi, HttpCall, HttpMethod,
    ProbeAnswer, TraceFiles, Workload,
};
pub use export::EnginePlugin;
pub use root::{FrameworkPlugin, FrameworkPluginRef, PLUGIN_API_VERSION};
pub use tools::{ToolBox, ToolFile, ToolOutput, ToolSpec};
pub use types::{
    capability, capability_cell, rstrings, score, wrapper, Attribution, Capability, Claim, Counted,
    KeyValue, Manifest, MarkerKind, StageHint, Support, TraceEvidence, Upstream, WrapperFrame,
};

/// What `export_plugin!` expands to needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::export::guarded;
    pub use abi_stable::export_root_module;
    pub use abi_stable::prefix_type::PrefixTypeTrait;
    pub use abi_stable::std_types::{ROption, RResult, RSlice, RStr, RString};
}

/// abi_stable itself, so that plugins and the host name the same version of it.
pub use abi_stable;
