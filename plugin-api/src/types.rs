//! The plain data that crosses the boundary, in the order a plugin meets it: who the
//! plugin is ([`Manifest`], its [`Capability`] cells), what the host saw in a trace
//! ([`TraceEvidence`]), and the plugin's answers ([`Claim`], [`Attribution`],
//! [`StageHint`]); plus the small constructors that keep plugin code readable.
//!
//! Every type here is `#[repr(C)]` and `StableAbi`: its layout is part of the ABI, so a
//! field changes only with a new major version.

use abi_stable::{
    std_types::{RString, RVec},
    StableAbi,
};

/// Where an engine's code lives upstream, and which commit the plugin was checked against.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// `owner/name` on GitHub, e.g. `sgl-project/sglang`.
    pub repo: RString,
    pub commit: RString,
    /// ISO date of that commit, e.g. `2026-08-22`.
    pub date: RString,
}

/// How well an engine supports one capability of the capability matrix.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Yes,
    No,
    /// Works under a condition the note states.
    Conditional,
    /// Accepted but has no effect.
    Ignored,
}

/// One cell of the capability matrix (rows are keyed by `key`, see [`capability`]).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Capability {
    pub key: RString,
    pub support: Support,
    /// The condition for `Conditional`, or any short remark.
    pub note: RString,
}

/// Row keys of the capability matrix, in display order, with their labels.
pub mod capability {
    pub const TRACE_TRIAGE: &str = "trace-triage";
    pub const LIVE_CAPTURE: &str = "live-capture";
    pub const MAPPING_FORMAL: &str = "mapping-formal";
    pub const STAGE_CAPTURE: &str = "stage-capture";
    pub const PROFILE_BY_STAGE: &str = "profile-by-stage";
    pub const PROFILE_PREFIX: &str = "profile-prefix";

    /// `(key, label)` in the order `plugins list` prints them.
    pub const ROWS: &[(&str, &str)] = &[
        (TRACE_TRIAGE, "Existing-trace triage"),
        (LIVE_CAPTURE, "Single live capture"),
        (MAPPING_FORMAL, "Mapping+formal analysis"),
        (STAGE_CAPTURE, "Stage-separated live workload"),
        (PROFILE_BY_STAGE, "--profile-by-stage capture"),
        (PROFILE_PREFIX, "--profile-prefix control"),
    ];
}

/// Who a plugin is. Returned by
/// [`FrameworkPlugin::manifest`](crate::FrameworkPlugin::manifest).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// Canonical name used by `--framework`, e.g. `sglang`. Lower case, unique.
    pub name: RString,
    /// Other spellings `--framework` accepts, e.g. `sgl`.
    pub aliases: RVec<RString>,
    /// Name shown in reports, e.g. `SGLang`.
    pub display_name: RString,
    /// The plugin's own semver.
    pub plugin_version: RString,
    /// The plugin-API version the plugin was compiled against
    /// ([`PLUGIN_API_VERSION`](crate::PLUGIN_API_VERSION)).
    pub api_version: RString,
    pub upstream: Upstream,
    pub capabilities: RVec<Capability>,
}

/// A string seen in a trace, with how often it was seen.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Counted {
    pub text: RString,
    pub count: u64,
}

/// A `key = value` pair; `value` is the JSON text of the value.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: RString,
    pub value: RString,
}

/// What the host saw in a trace, compactly, for framework detection.
///
/// Every list is de-duplicated and capped by the host (a few hundred entries), so a
/// plugin can scan it freely.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceEvidence {
    /// The trace file path as given (absolute).
    pub file_path: RString,
    /// Python source files of `python_function` frames (the part before `(line)`),
    /// with the number of frames in each.
    pub python_files: RVec<Counted>,
    pub process_names: RVec<RString>,
    pub thread_names: RVec<RString>,
    /// Names of `user_annotation` / `gpu_user_annotation` events, digits runs
    /// collapsed to `N`, with counts.
    pub annotation_names: RVec<Counted>,
    /// Distinct GPU kernel names (raw), with launch counts; the most frequent first.
    pub kernel_names: RVec<Counted>,
    /// Top-level keys of the trace document (`schemaVersion`, `deviceProperties`, ...).
    pub metadata_keys: RVec<RString>,
    /// Top-level entries of `server_args.json` next to the trace, if one was found.
    pub server_args: RVec<KeyValue>,
}

/// A plugin's claim that a trace came from its engine.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Strength of the claim. The host picks the single strongest claim; equal top
    /// scores are a tie and the host refuses. Use [`score`] tiers.
    pub score: u32,
    /// Human-readable facts that earned the claim, e.g.
    /// `4562 python frames under vllm/`. Shown in the report header.
    pub evidence: RVec<RString>,
}

/// Suggested claim strengths. A claim's score is its tier plus a bounded count (< 1000).
pub mod score {
    /// Server args written by this engine.
    pub const SERVER_ARGS: u32 = 3000;
    /// Python frames inside the engine's own source tree.
    pub const SOURCE_FRAMES: u32 = 2000;
    /// The engine's own stage annotations or process/thread names.
    pub const ANNOTATIONS: u32 = 1000;
    /// File naming alone.
    pub const FILE_NAME: u32 = 100;
}

/// A frame that only wraps the real launch site and must be skipped when choosing a
/// kernel's Python location (graph-runner replay, compile trampolines, profilers).
/// A frame matches when its path contains `path_contains` and its function name equals
/// `function`; an empty field matches anything.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct WrapperFrame {
    pub path_contains: RString,
    pub function: RString,
}

/// How the host turns Python frames into locations for this engine.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Path markers of the engine's own code, most specific first, e.g.
    /// `python/sglang/`, `sglang/`. A location is shown from the marker on.
    pub source_roots: RVec<RString>,
    pub wrapper_frames: RVec<WrapperFrame>,
}

/// Which text [`FrameworkPlugin::stage_of`](crate::FrameworkPlugin::stage_of) is asked
/// about.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// A trace file's path (absolute).
    FilePath,
    /// The name of a `user_annotation` or `gpu_user_annotation` event.
    Annotation,
}

/// A stage read from a marker.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageHint {
    /// The text says nothing about the stage.
    Unknown,
    /// Prefill / extend.
    Extend,
    Decode,
    /// A step that runs prefill and decode requests together.
    Mixed,
}

/// Small constructors that keep plugin code readable.
pub fn rstrings<'a>(items: impl IntoIterator<Item = &'a str>) -> RVec<RString> {
    items.into_iter().map(RString::from).collect()
}

/// A frame attribution skips: `function` empty means every function of the file.
pub fn wrapper(path_contains: &str, function: &str) -> WrapperFrame {
    WrapperFrame {
        path_contains: path_contains.into(),
        function: function.into(),
    }
}

/// One cell of the capability matrix; `key` is one of the [`capability`] row keys.
pub fn capability_cell(key: &str, support: Support, note: &str) -> Capability {
    Capability {
        key: key.into(),
        support,
        note: note.into(),
    }
}
