//! Finding, loading, choosing and managing engine plugins.
//!
//! An engine plugin is a `cdylib` exporting the `plugin-api` root module. [`load`] finds
//! candidate files on the search path and checks each one (abi_stable header, plugin-API
//! version, type layout, unique name); a bad file is reported and skipped, never fatal.
//! [`select`] picks the engine for a trace: the one named by `--framework`, or the single
//! strongest claim among all plugins (none or a tie is refused). [`manage`] and
//! [`install`] back the `plugins list|info|install|remove|doctor` subcommands.
//!
//! # Keeping old plugins loading when the API grows
//!
//! The plugin API is versioned by the `llm-triage-plugin-api` crate version (1.4.0 now).
//! abi_stable accepts a plugin built against a *newer* minor API (the host ignores the
//! fields it does not know), but rejects one built against an *older* minor API: the host's
//! prefix type then has more fields than the plugin's (`too many fields`). So when a minor
//! version adds an entry point (appended after `last_prefix_field`, read through an
//! `Option` accessor):
//!
//! 1. `plugin-api` keeps a frozen copy of every released root-module layout in a
//!    `llm_triage_plugin_api::baseline::v1_N` module: the same type name `FrameworkPlugin`
//!    and fields as released, with its own `RootModule` impl (abi_stable 0.11 compares
//!    type name and package, not module path).
//! 2. [`load`] reads the plugin's API version from its header *before* the layout check.
//!    Same major and a minor at least the host's: the normal checked load. Same major but
//!    an older minor: `init_root_module::<baseline::v1_N::FrameworkPluginRef>()` (still a
//!    full layout check, against the old layout), then a prefix-pointer cast to the
//!    current `FrameworkPluginRef`; the new entry points read as absent (`None`) and the
//!    host falls back to the old behaviour. A newer plugin is never loaded through a
//!    baseline, so a broken field after the old ones is still caught.
//! 3. Another major: refused, with a message naming both API versions.
//!
//! API 1.1.0 appended `fusion_registry`; `baseline::v1_0` keeps the 1.0.0 layout, and a
//! 1.0.x plugin loads through it and contributes no fusion rows
//! (`host/tests/plugin_baseline.rs` loads a real 1.0 cdylib). API 1.2.0 appended
//! `capture_plan` and `detect_endpoint`; `baseline::v1_1` keeps the 1.1.0 layout, and a
//! 1.1.x plugin loads through it, keeps its fusion rows and has no live capture. API
//! 1.3.0 appended `tools`; `baseline::v1_2` keeps the 1.2.0 layout, and a 1.2.x plugin
//! loads through it with live capture and no tools. API 1.4.0 appended `step_catalog`;
//! `baseline::v1_3` keeps the 1.3.0 layout, and a 1.3.x plugin loads through it with its
//! tools and names no step markers (the host's step rows apply).

pub(crate) mod install;
pub mod library_file;
pub mod load;
pub(crate) mod manage;
pub mod select;
pub mod trust;

use std::path::PathBuf;

use llm_triage_plugin_api::abi_stable::std_types::RSlice;
use llm_triage_plugin_api::{
    CapturePlan, CaptureRequest, EndpointEvidence, FrameworkPluginRef, Support, ToolFile,
    ToolOutput, ToolSpec, TraceEvidence,
};

use crate::error::TriageError;
use crate::trace::stage::{MarkerKind, StageHint};

pub use install::{install, remove, user_plugin_dir};
pub use load::{
    load_all, load_file, load_search_path, search_dirs, PluginSet, Rejected, SearchPath,
};
pub use manage::{doctor, info, list};
pub use select::{select, Selection};

/// A loaded engine plugin.
pub struct Engine {
    /// The library file it was loaded from.
    pub path: PathBuf,
    pub manifest: EngineManifest,
    module: FrameworkPluginRef,
}

/// A plugin's manifest as plain Rust values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineManifest {
    pub name: String,
    pub aliases: Vec<String>,
    pub display_name: String,
    pub plugin_version: String,
    pub api_version: String,
    pub upstream: UpstreamRef,
    pub capabilities: Vec<CapabilityCell>,
}

/// The upstream repository and commit a plugin was checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamRef {
    pub repo: String,
    pub commit: String,
    pub date: String,
}

/// One cell of the capability matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilityCell {
    pub key: String,
    pub support: Support,
    pub note: String,
}

/// A plugin's claim on a trace: its strength and the facts that earned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub score: u32,
    pub evidence: Vec<String>,
}

/// How to turn Python frames into source locations for one engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Path markers of the engine's own code, most specific first (`python/sglang/`, ...).
    pub source_roots: Vec<String>,
    /// Frames that only wrap the real launch site.
    pub wrapper_frames: Vec<WrapperFrame>,
}

/// A frame to skip: its path contains `path_contains` and its function equals `function`
/// (an empty field matches anything).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrapperFrame {
    pub path_contains: String,
    pub function: String,
}

impl WrapperFrame {
    pub fn matches(&self, path: &str, function: &str) -> bool {
        (self.path_contains.is_empty() || path.contains(self.path_contains.as_str()))
            && (self.function.is_empty() || self.function == function)
    }
}

impl Engine {
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The plugin's verdict on `evidence`; `None` when it is not this engine's trace.
    pub fn detect(&self, evidence: &TraceEvidence) -> Result<Option<Claim>, TriageError> {
        let claim = self.call((self.module.detect())(evidence))?;
        Ok(claim.into_option().map(|c| Claim {
            score: c.score,
            evidence: c.evidence.iter().map(|e| e.to_string()).collect(),
        }))
    }

    pub fn attribution(&self) -> Result<Attribution, TriageError> {
        let a = self.call((self.module.attribution())())?;
        Ok(Attribution {
            source_roots: a.source_roots.iter().map(|r| r.to_string()).collect(),
            wrapper_frames: a
                .wrapper_frames
                .iter()
                .map(|w| WrapperFrame {
                    path_contains: w.path_contains.to_string(),
                    function: w.function.to_string(),
                })
                .collect(),
        })
    }

    /// The plugin's fusion-catalog rows as TOML text; `None` when the plugin predates
    /// plugin API 1.1 (no such entry point) or exports an empty registry.
    pub fn fusion_registry(&self) -> Result<Option<String>, TriageError> {
        let Some(entry) = self.module.fusion_registry() else {
            return Ok(None);
        };
        let text = self.call(entry())?;
        Ok(Some(text.to_string()).filter(|t| !t.trim().is_empty()))
    }

    /// The engine's step markers and forward calls as TOML text (`catalog/steps.toml`'s
    /// format); `None` when the plugin predates plugin API 1.4 (no such entry point) or
    /// names none.
    pub fn step_catalog(&self) -> Result<Option<String>, TriageError> {
        let Some(entry) = self.module.step_catalog() else {
            return Ok(None);
        };
        let text = self.call(entry())?;
        Ok(Some(text.to_string()).filter(|t| !t.trim().is_empty()))
    }

    /// The engine's live-capture protocol for `request`. A plugin built before API 1.2, or
    /// one that declines, is a capture error (exit 5); a panic is a plugin error (exit 6).
    pub fn capture_plan(
        &self,
        request: &CaptureRequest,
        evidence: &EndpointEvidence,
    ) -> Result<CapturePlan, TriageError> {
        let Some(entry) = self.module.capture_plan() else {
            return Err(TriageError::Capture(format!(
                "the {} plugin (plugin API {}) predates live capture (plugin API 1.2); capture \
                 the traces by hand and pass them with --input",
                self.manifest.display_name, self.manifest.api_version
            )));
        };
        entry(request, evidence).into_result().map_err(|reason| {
            let reason = reason.to_string();
            if let Some(usage) =
                reason.strip_prefix(llm_triage_plugin_api::capture::build::USAGE_PREFIX)
            {
                TriageError::Usage(usage.to_string())
            } else if reason.starts_with("plugin panicked") {
                TriageError::plugin(self.name(), reason)
            } else {
                TriageError::Capture(format!(
                    "{} live capture: {reason}",
                    self.manifest.display_name
                ))
            }
        })
    }

    /// The plugin's verdict on a server's probe answers; `None` when it claims nothing or
    /// predates API 1.2.
    pub fn detect_endpoint(
        &self,
        evidence: &EndpointEvidence,
    ) -> Result<Option<Claim>, TriageError> {
        let Some(entry) = self.module.detect_endpoint() else {
            return Ok(None);
        };
        let claim = self.call(entry(evidence))?;
        Ok(claim.into_option().map(|c| Claim {
            score: c.score,
            evidence: c.evidence.iter().map(|e| e.to_string()).collect(),
        }))
    }

    /// The plugin's text tools; none when it offers none or predates plugin API 1.3.
    pub fn tools(&self) -> Result<Vec<ToolSpec>, TriageError> {
        let Some(entry) = self.module.tools() else {
            return Ok(Vec::new());
        };
        Ok(self.call(entry())?.tools.into_iter().collect())
    }

    /// Runs the tool `name` on `inputs`. The plugin's refusal comes back as `Ok(Err(reason))`
    /// (the caller names the input it refers to); a panic is a plugin error (exit 6).
    pub fn run_tool(
        &self,
        name: &str,
        inputs: &[ToolFile],
    ) -> Result<Result<ToolOutput, String>, TriageError> {
        let Some(entry) = self.module.tools() else {
            return Err(TriageError::plugin(
                self.name(),
                format!(
                    "plugin API {} predates tools (plugin API 1.3)",
                    self.manifest.api_version
                ),
            ));
        };
        let toolbox = self.call(entry())?;
        match (toolbox.run)(name.into(), RSlice::from_slice(inputs)).into_result() {
            Ok(output) => Ok(Ok(output)),
            Err(reason) if reason.starts_with("plugin panicked") => {
                Err(TriageError::plugin(self.name(), reason.to_string()))
            }
            Err(reason) => Ok(Err(reason.to_string())),
        }
    }

    /// The stage a file path or annotation name marks, by this engine's conventions.
    pub fn stage_of(&self, kind: MarkerKind, text: &str) -> Result<StageHint, TriageError> {
        let hint = self.call((self.module.stage_of())(kind.into(), text.into()))?;
        Ok(hint.into())
    }

    /// A plugin's error value (a caught panic included) as an exit-6 error.
    fn call<T>(
        &self,
        result: abi_stable::std_types::RResult<T, abi_stable::std_types::RString>,
    ) -> Result<T, TriageError> {
        result
            .into_result()
            .map_err(|message| TriageError::plugin(self.name(), message.to_string()))
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("path", &self.path)
            .field("manifest", &self.manifest)
            .finish_non_exhaustive()
    }
}

// The stage vocabulary crosses the ABI here only; `trace::stage` holds the host's copy.
impl From<MarkerKind> for llm_triage_plugin_api::MarkerKind {
    fn from(kind: MarkerKind) -> Self {
        match kind {
            MarkerKind::FilePath => llm_triage_plugin_api::MarkerKind::FilePath,
            MarkerKind::Annotation => llm_triage_plugin_api::MarkerKind::Annotation,
        }
    }
}

impl From<llm_triage_plugin_api::StageHint> for StageHint {
    fn from(hint: llm_triage_plugin_api::StageHint) -> Self {
        match hint {
            llm_triage_plugin_api::StageHint::Unknown => StageHint::Unknown,
            llm_triage_plugin_api::StageHint::Extend => StageHint::Extend,
            llm_triage_plugin_api::StageHint::Decode => StageHint::Decode,
            llm_triage_plugin_api::StageHint::Mixed => StageHint::Mixed,
        }
    }
}
