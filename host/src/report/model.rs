//! The `Report` value: the single thing every renderer sees, so every output format
//! shows the same facts. Serialised as-is for `--format json` (schema in the README).

use serde::Serialize;

/// Bumped on any incompatible change of the JSON shape.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    pub schema_version: u32,
    pub tool_version: String,
    /// `single-trace` or `mapping-formal`.
    pub mode: String,
    pub framework: FrameworkInfo,
    pub inputs: Vec<InputInfo>,
    /// `model_path` (else `model`) from server args.
    pub model: Option<String>,
    /// All top-level server args, as found in `server_args.json`.
    pub server_args: serde_json::Map<String, serde_json::Value>,
    pub stages: Vec<StageReport>,
    /// Notes about the whole run: skipped events, unlinked kernels, other ranks.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FrameworkInfo {
    pub name: String,
    pub display_name: String,
    pub plugin_version: String,
    /// How the framework was chosen: `--framework sglang`, or the evidence of the
    /// winning claim.
    pub decided_by: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct InputInfo {
    pub path: String,
    pub rank: Option<u32>,
    /// Stage read from the path: `extend/prefill`, `decode` or `all`.
    pub path_stage: String,
    pub events: u64,
    pub gpu_events: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StageReport {
    /// Section label: `extend/prefill`, `decode` or `all`.
    pub stage: String,
    /// Sum of `dur` of every GPU event in the stage (streams add up).
    pub total_gpu_time_us: f64,
    /// One line: what dominates the stage.
    pub summary: String,
    pub kernels: Vec<KernelRow>,
    pub overlap: Vec<serde_json::Value>,
    pub fusions: Vec<serde_json::Value>,
    pub similarity: Vec<serde_json::Value>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct KernelRow {
    /// Canonical name (parameter list cut, addresses masked), demangled.
    pub name: String,
    /// Every distinct trace name this row aggregates.
    pub raw_names: Vec<String>,
    pub family: String,
    /// Exact sum of the `dur` of the events in the row.
    pub gpu_time_us: f64,
    /// 100 * gpu_time_us / stage total.
    pub share_pct: f64,
    /// Number of GPU executions (graph replays count each kernel run).
    pub launches: u64,
    /// Python launch sites, largest share first.
    pub python_locations: Vec<SiteShare>,
    /// CPU ops of the same sites, most common first.
    pub cpu_ops: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SiteShare {
    /// `path:line function`, or `unresolved`.
    pub location: String,
    /// Share of this row's GPU time launched from here.
    pub share_pct: f64,
}
