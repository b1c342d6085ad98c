//! The `Report` value: the single thing every renderer sees, so every output format
//! shows the same facts. Serialised as-is for `--format json` (schema in the README).

use serde::{Deserialize, Serialize};

/// Bumped on any incompatible change of the JSON shape.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub schema_version: u32,
    pub tool_version: String,
    /// `single-trace` or `mapping-formal`.
    pub mode: String,
    pub framework: FrameworkInfo,
    pub inputs: Vec<InputInfo>,
    /// `model_path` (else `model`) from server args.
    pub model: Option<String>,
    /// The model class the traces name in their `nn.Module:` frames (`GptOssForCausalLM`,
    /// `Qwen3Model`), whether or not server args name the model.
    #[serde(default)]
    pub model_class: Option<String>,
    /// All top-level server args, as found in `server_args.json`.
    pub server_args: serde_json::Map<String, serde_json::Value>,
    /// The `server_args.json` that `model` and `server_args` come from (found only inside
    /// the input's capture layout); `None` when there is none.
    #[serde(default)]
    pub server_args_path: Option<String>,
    pub stages: Vec<StageReport>,
    /// Notes about the whole run: skipped events, unlinked kernels, other ranks.
    pub notes: Vec<String>,
    /// Mapping+formal mode: the engine of the mapping traces (`framework` is the formal
    /// side's). `None` in single-trace mode.
    pub mapping_framework: Option<FrameworkInfo>,
    /// Mapping+formal mode: the mapping traces (`inputs` are the formal ones).
    pub mapping_inputs: Vec<InputInfo>,
    /// Per stage, what the overlap sweep measured and what the reader should know about
    /// the overlap rows (`stages[].overlap`), in stage order.
    pub overlap_stages: Vec<OverlapStage>,
    /// `--all-ranks` only (absent from the JSON otherwise): every rank's clock offset and
    /// per-stage busy, idle, collective and wait time (`ranks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankRow>,
    /// `--all-ranks` only: the matched collectives per stage and family, split into
    /// transfer and wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<CollectiveRow>,
    /// `--all-ranks` only: per step, the rank that arrived last at its most skewed
    /// collective, when it was at least 5 µs late, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stragglers: Vec<StragglerRow>,
    /// Where all-to-all ops carry per-peer split sizes (`In split size` / `Out split
    /// size`): the elements each rank sent and received per peer, and how unevenly
    /// (`analyze::ep_imbalance`). Absent when no op carries a non-empty split list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep_imbalance: Option<EpImbalance>,
    /// The GPU the kernels ran on and its peaks (`analyze::device`); absent when the
    /// traces list no device and neither `--device` nor `--device-spec` names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceReport>,
}

/// The analysed GPU (`deviceProperties` of the trace) and its row of the device table
/// (`catalog/devices.toml`). An unknown device (no row matched, no override) keeps its
/// trace facts with `matched_by`, `hbm_tb_per_s` and `citation` null and `peak_tflops`
/// empty, and a run note says so.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceReport {
    /// The device table row's name (`--device-spec`: the file's row); unknown: the
    /// trace's `deviceProperties.name` (possibly empty).
    pub name: String,
    /// How the row was chosen: `name` (the trace's device name is the row's name or an
    /// alias), `sms-and-memory` (only this row has the trace's SM count and, within
    /// 10%, its memory size), `flag` (`--device`), `spec-file` (`--device-spec`); null:
    /// unknown.
    pub matched_by: Option<String>,
    /// Dense peak TFLOP/s (TOPS for `int8`) per data type (`fp32`, `tf32`, `bf16`, `fp16`,
    /// `fp8`, `fp4`, `int8`), only those the row gives; empty when unknown.
    pub peak_tflops: std::collections::BTreeMap<String, f64>,
    /// Peak memory bandwidth in TB/s; null when unknown.
    pub hbm_tb_per_s: Option<f64>,
    /// SMs (CUs on AMD): the trace's `numSms` for the analysed device, else the row's.
    pub sms: Option<u32>,
    /// The trace's `deviceProperties.name` of the analysed device; null when the traces
    /// list no device.
    pub trace_name: Option<String>,
    /// The trace's `totalGlobalMem` of the analysed device, in bytes.
    pub memory_bytes: Option<u64>,
    /// The vendor document the row's figures come from; null when unknown.
    pub citation: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FrameworkInfo {
    pub name: String,
    pub display_name: String,
    pub plugin_version: String,
    /// How the framework was chosen: `--framework sglang`, or the evidence of the
    /// winning claim.
    pub decided_by: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct InputInfo {
    pub path: String,
    pub rank: Option<u32>,
    /// Stage read from the path: `extend/prefill`, `decode` or `all`.
    pub path_stage: String,
    pub events: u64,
    pub gpu_events: u64,
    /// Set when this trace recorded a CUDA/HIP graph being captured: its launches were
    /// recorded into the graph, (almost) nothing executed, so it has no kernel table.
    #[serde(default)]
    pub graph_capture: Option<GraphCaptureInfo>,
}

/// A trace of a graph capture (`trace::graph_capture`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GraphCaptureInfo {
    /// Capture annotation names (`capture_32_DECODE`), first seen first; may be empty.
    pub annotations: Vec<String>,
    /// Kernel launch calls recorded (`cudaLaunchKernel`, `hipLaunchKernel`, ...).
    pub launches: u64,
    /// Kernels that executed on the GPU.
    pub kernels_executed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StageReport {
    /// Section label: `extend/prefill`, `decode` or `all`.
    pub stage: String,
    /// Sum of `dur` of every GPU event in the stage (streams add up).
    pub total_gpu_time_us: f64,
    /// One line: what dominates the stage.
    pub summary: String,
    pub kernels: Vec<KernelRow>,
    pub overlap: Vec<OverlapRow>,
    /// The fuse-pattern table, in selection order (`analyze::fuse`).
    pub fusions: Vec<FusionRow>,
    /// At most one heuristic note, kept apart from the tables (`analyze::fuse::similarity`).
    pub similarity: Vec<SimilarityNote>,
    pub notes: Vec<String>,
    /// Where the stage's wall time goes: steps, GPU busy and idle time, idle by cause
    /// (`analyze::timeline`). `None` only in reports saved before it existed.
    #[serde(default)]
    pub timeline: Option<StageTimeline>,
    /// The stage's speed of light against its measured time (`analyze::roofline`);
    /// absent without a known device roof or without a kernel of known shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sol: Option<StageSol>,
    /// The decoder layers found in the stage's steps (`analyze::layers`); absent when no
    /// step repeats a layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<StageLayers>,
    /// The stage's GPU time by role in the model (`catalog/roles.toml`), most time
    /// first; absent when no GPU op has a role other than `other`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<RoleRow>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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
    /// Where the launch site of the row's largest site (`python_locations[0]`) came from:
    /// `eager` (its own launch), `graph-launch` (a graph replay charged to the graph
    /// launch), `capture` (the node recorded in a capture trace), `mapping` (the kernel
    /// aligned in the mapping trace), `graph-node` (a graph node id joined to the capture).
    #[serde(default = "eager_source")]
    pub launch_site_source: String,
    /// The launching CPU op's `Input Dims` (its JSON text) of the row's launches with the
    /// most GPU time, when the trace or its capture recorded shapes; ties by text.
    #[serde(default)]
    pub input_dims: Option<String>,
    /// How the row's launches resolved from the mapping trace were paired with their
    /// mapping kernels: `exact` (equal canonical name), `family` (another name of the
    /// same kernel family) or `fused-split` (a fused kernel and the split ones it stands
    /// for), the kind with the most of that GPU time; absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_by: Option<String>,
    /// Those launches' pair confidence (exact 1.0, family 0.5, fused-split 0.4),
    /// averaged weighted by GPU time; absent with `matched_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_confidence: Option<f64>,
    /// The row's GPU time by launch site and CPU op together, so a matcher can count only
    /// the launches that belong to a pattern (`analyze::fuse`); not part of the report.
    #[serde(skip)]
    pub launch_mix: Vec<LaunchShare>,
    /// How close the row's launches run to the device's roofs (`analyze::roofline`);
    /// absent when the trace gives neither a shape nor a launch geometry for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<KernelRoofline>,
    /// The role (`catalog/roles.toml`, `analyze::layers`) of the most of the row's GPU
    /// time; absent when that role is `other`. `diff` pairs rows across backends by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// One (launch site, CPU op) pair of a kernel row and its share of the row's GPU time.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchShare {
    /// Index into the row's `python_locations`.
    pub site: usize,
    /// Index into the row's `cpu_ops`; `None` for launches without a CPU op.
    pub cpu_op: Option<usize>,
    pub share_pct: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SiteShare {
    /// `path:line function`, or `unresolved`.
    pub location: String,
    /// Share of this row's GPU time launched from here.
    pub share_pct: f64,
    /// Where this site came from (the `launch_site_source` spellings): the source of the
    /// most of its GPU time.
    #[serde(default = "eager_source")]
    pub launch_site_source: String,
    /// The class of the `nn.Module` that made the launch: the innermost `nn.Module:`
    /// frame of its stack, instance number dropped (`RowParallelLinear`); absent when the
    /// trace recorded no module frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The innermost engine frame of the launch (`path:line function`), when `location`
    /// is the model's frame that called it instead; fuse patterns match both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_frame: Option<String>,
}

/// `launch_site_source` of reports saved before it existed: every site was eager or a
/// graph launch, and neither told apart.
fn eager_source() -> String {
    "eager".to_string()
}

/// One row of the overlap-opportunity table: a headroom or low-roi-hidden kernel with its
/// exposure totals, dependency risk, priority and recommendation (rules in
/// `analyze::overlap`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OverlapRow {
    /// Canonical kernel name.
    pub kernel: String,
    pub raw_names: Vec<String>,
    /// `headroom` (mostly exclusive: room to overlap) or `low-roi-hidden` (already
    /// hidden behind other streams: little to gain).
    pub verdict: String,
    /// `P1` (act first) .. `P5`.
    pub priority: String,
    /// `path:line function` of the launch, from the mapping trace in mapping+formal
    /// mode; `None` when unknown (e.g. CUDA-graph replays in single-trace mode).
    pub python_scope: Option<String>,
    /// Time another stream was busy while this kernel ran (exact sums of ns).
    pub hidden_us: f64,
    /// Time no other stream was busy: `total_us - hidden_us`.
    pub exclusive_us: f64,
    /// Part of `hidden_us` during which a compute kernel ran on another stream.
    pub hidden_by_compute_us: f64,
    pub total_us: f64,
    /// The busiest kernels of other streams while this one ran, most time first.
    pub overlaps_with: Vec<OverlapPartner>,
    /// `low`, `high` or `unclear`: whether same-stream neighbours depend on it.
    pub dep_risk: String,
    /// Why `dep_risk` is what it is: the same-stream neighbour (side, family, gap) and
    /// the test that fired (same scope family, same launch op, producer/consumer by
    /// category, scope unknown), or that no neighbour was within the tight gap.
    #[serde(default)]
    pub dep_reason: String,
    /// `try overlap`, `try fusion`, `check deps` or `skip`.
    pub recommendation: String,
    /// Id of the matching row of `catalog/overlap.toml`, if any.
    pub known_path: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OverlapPartner {
    pub kernel: String,
    pub overlap_us: f64,
}

/// What the overlap sweep measured over one stage's GPU work.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OverlapStage {
    /// Section label, as in `stages[].stage`.
    pub stage: String,
    /// Union of the time any GPU op ran; the Formal signal's share is of this.
    pub busy_us: f64,
    /// Union of the time two or more streams were busy.
    pub overlapped_us: f64,
    /// Gaps between the stage's first GPU start and last GPU end: the same time as
    /// `stages[].timeline.idle_us`, which splits it by cause.
    pub idle_us: f64,
    /// Time two ops ran at once on one stream, summed over streams.
    pub same_stream_overlap_us: f64,
    /// Streams with GPU work.
    pub streams: usize,
    /// True when the streams other than the busiest hold under 1.0% of the stage's GPU
    /// op time (`NEGLIGIBLE_OTHER_STREAMS_PCT`): the stage is treated as one stream and
    /// has no overlap rows.
    #[serde(default)]
    pub effectively_one_stream: bool,
    /// What the reader should know: caveats, left-out work, joins.
    pub notes: Vec<String>,
}

/// One row of the fuse-pattern table: a catalog row that matched the stage.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FusionRow {
    /// Catalog id, e.g. `sglang.fused-add-rmsnorm`.
    pub id: String,
    /// The Pattern column.
    pub label: String,
    pub origin: String,
    /// `mainline`, `upstream` or `inflight` (relative to the origin engine).
    pub status: String,
    /// The open upstream PR of an `inflight` row.
    pub pr: Option<u64>,
    /// `present` (the fused path ran), `not-fired` (the engine has it, split kernels
    /// ran), `undecided` (split kernels ran, but on this platform the fused path launches
    /// them too), `upstream-only` (only upstream or another engine has it), `open-pr`.
    pub conclusion: String,
    /// `Confirmed` or `Candidate`.
    pub confidence: String,
    pub related_gpu_time_us: f64,
    pub share_pct: f64,
    /// Every related kernel row, active hits first, with the pattern that matched it.
    pub evidence: Vec<FusionEvidence>,
    /// Launch sites of the related rows (`path:line function`), first seen first.
    pub python_locations: Vec<String>,
    /// The calling modules of those sites (each site's `module`), first seen first;
    /// empty when the trace recorded no module frames.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
    /// Where the fused path lives, repository-relative.
    pub candidate_paths: Vec<String>,
    /// `owner/repo@commit:path` of the upstream files the row was checked against.
    pub checked_against: Vec<String>,
    /// The conclusion as a sentence, any gate caveat, then the row's rationale.
    pub rationale: String,
}

/// A kernel row that made a fuse row match.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FusionEvidence {
    /// Canonical kernel name (as in the kernel table).
    pub kernel: String,
    pub gpu_time_us: f64,
    pub share_pct: f64,
    /// `fused` (active evidence) or `split:<group>`.
    pub part: String,
    /// Which field the pattern matched: `kernel`, `cpu_op` or `location`.
    pub field: String,
    /// The catalog pattern, as written.
    pub pattern: String,
}

/// A heuristic note: a kernel cluster resembles a known fusion without matching it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SimilarityNote {
    /// `high`, `medium` or `low`.
    pub level: String,
    /// The catalog id of the fusion it resembles.
    pub family_id: String,
    /// The family's label, for the text line.
    pub family: String,
    pub reason: String,
}

/// Where one stage's wall time goes (`analyze::timeline`). Every time is an exact sum of
/// integer nanoseconds shown in microseconds; `busy_us + idle_us = span_us` and each
/// step's parts sum to its `wall_us`, exactly in nanoseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StageTimeline {
    /// From the stage's first GPU op start to its last GPU op end (all streams of the
    /// GPU the tables cover; several traces of one stage add up).
    pub span_us: f64,
    /// Union of the time any GPU op of the stage ran.
    pub busy_us: f64,
    /// `span_us - busy_us`: no GPU op of the stage ran.
    pub idle_us: f64,
    /// `100 * idle_us / span_us`.
    pub idle_pct: f64,
    /// Idle time inside a step, from the step's first launch to the end of its last GPU
    /// op.
    pub idle_inside_steps_us: f64,
    /// `idle_us - idle_inside_steps_us`: between steps (host gaps) and outside every step.
    pub idle_outside_steps_us: f64,
    /// `idle_us` split by cause; the four parts sum to it exactly.
    pub idle_by_cause: IdleByCause,
    /// Idle gaps by length: `< 5 µs`, `5-20 µs`, `20-100 µs`, `100 µs-1 ms`, `1-10 ms`,
    /// `> 10 ms`; every bin is listed, empty ones too.
    pub histogram: Vec<GapBin>,
    /// The longest idle gaps (`--top-gaps`, default 5), longest first.
    pub top_gaps: Vec<Gap>,
    /// Where the steps came from: `step[...] annotations`, `execute_... annotations`,
    /// `ProfilerStep annotations`, `graph launches` or `whole stage`.
    pub step_source: String,
    /// Every step, in time order.
    pub steps: Vec<Step>,
    /// Wall-time statistics over `steps`.
    pub step_stats: StepStats,
    /// What the reader should know: how steps were found, ops outside every step.
    pub notes: Vec<String>,
    /// One step drawn op by op, for the HTML report's step timeline; absent without
    /// steps (and from reports saved before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub representative_step: Option<StepTimeline>,
}

// ---- The representative step (`analyze::timeline::representative`) ----

/// The stage's step of median wall time (the lower median; the first such step of the
/// stage's first trace), every GPU op of it on its stream's lane and every idle gap with
/// its cause. Offsets are from the step's `start_us`, exact ns shown in µs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepTimeline {
    /// The step's index in `timeline.steps`.
    pub step: usize,
    /// `steps[step].start_us` (the trace's clock).
    pub start_us: f64,
    /// `steps[step].wall_us`.
    pub wall_us: f64,
    /// One lane per stream (the op's `stream` arg, else its thread), first op first.
    pub lanes: Vec<StepLane>,
    /// The canonical names the ops point to (`StepOp::name`), first seen first, so a
    /// name repeated by many ops is written once.
    pub names: Vec<String>,
    /// The stretches of the step in which no GPU op ran, in time order; their lengths
    /// sum exactly to the step's idle parts.
    pub gaps: Vec<StepGap>,
    /// Ops of the step past the first 1000 (left out to keep the report small).
    pub ops_left_out: usize,
}

/// One stream of the representative step.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepLane {
    /// The stream id (or the thread name when the trace gives no stream).
    pub stream: String,
    /// The stream's ops in start order.
    pub ops: Vec<StepOp>,
}

/// One GPU op of the representative step.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepOp {
    /// Start, from the step's `start_us`.
    pub offset_us: f64,
    pub dur_us: f64,
    /// Index into `names`.
    pub name: usize,
}

/// One idle stretch of the representative step.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepGap {
    /// Start, from the step's `start_us`.
    pub offset_us: f64,
    pub dur_us: f64,
    /// The cause holding most of it: `launch`, `sync`, `graph` or `host` (as `Gap::cause`).
    pub cause: String,
}

/// Idle time by cause (definitions in `docs/report-labels.md`, "Timeline").
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct IdleByCause {
    pub launch_us: f64,
    pub sync_us: f64,
    pub graph_us: f64,
    pub host_us: f64,
}

/// One bin of the gap histogram: gaps with `lo_us <= length < hi_us`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct GapBin {
    pub lo_us: f64,
    /// `None` for the last, open bin (`> 10 ms`).
    pub hi_us: Option<f64>,
    pub count: u64,
    /// Exact sum of the gaps' lengths.
    pub total_us: f64,
}

/// One idle gap: a maximal stretch of the stage's span in which no GPU op ran.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Gap {
    /// Start on the trace's clock (the `ts` of the op before ends here), in µs.
    pub start_us: f64,
    /// The same start from the first GPU op of its trace's stage span, in µs: what the
    /// report's tables print (the trace clock's absolute values are unreadable there).
    #[serde(default)]
    pub offset_us: f64,
    pub dur_us: f64,
    /// Canonical name of the GPU op that ended at the gap's start.
    pub before: String,
    /// Canonical name of the GPU op that started at the gap's end.
    pub after: String,
    /// The cause holding the largest part of the gap: `launch`, `sync`, `graph` or `host`
    /// (definitions in `docs/report-labels.md`, "Timeline").
    pub cause: String,
    /// What the launching thread ran during the gap, as self time: the innermost runtime
    /// call, CPU op and engine Python frame at each instant, largest share first.
    pub host_activity: Vec<HostShare>,
}

/// Part of a gap during which the launching thread was inside one runtime call, CPU op
/// or Python frame (its innermost one of that kind).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct HostShare {
    /// A runtime call or CPU op name, or a Python frame as `path:line function`.
    pub location: String,
    /// `100 * time inside / gap length`.
    pub share_pct: f64,
}

/// One step and its wall time split exactly: `wall_us = compute_us + exposed_comm_us +
/// memcpy_us + launch_idle_us + sync_idle_us + graph_gap_us + host_gap_us` (in ns).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// 0-based, in time order.
    pub index: usize,
    /// The marker's name (`step[DECODE bs=32]`), or what bounds the step.
    pub label: String,
    /// Where the step's wall time begins: the end of the previous step's last GPU op
    /// when the host gap between them is this step's, else its first launch (µs, the
    /// trace's clock).
    pub start_us: f64,
    /// From `start_us` to the end of the step's last GPU op.
    pub wall_us: f64,
    /// Time a kernel other than communication ran (any stream).
    pub compute_us: f64,
    /// Time a communication kernel ran and no compute kernel did.
    pub exposed_comm_us: f64,
    /// Time only a memcpy or memset ran.
    pub memcpy_us: f64,
    /// GPU idle waiting for the next op's launch (the call had not begun, or was in
    /// flight) with the host not blocked.
    pub launch_idle_us: f64,
    /// GPU idle while the launching thread was blocked in a synchronize, event wait or
    /// blocking copy.
    pub sync_idle_us: f64,
    /// GPU idle inside a graph replay whose launch had already been issued.
    pub graph_gap_us: f64,
    /// GPU idle between the previous step's last GPU op and this step's first launch.
    pub host_gap_us: f64,
}

/// Wall-time statistics over a stage's steps.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepStats {
    pub count: usize,
    pub median_wall_us: f64,
    pub p90_wall_us: f64,
    pub max_wall_us: f64,
    /// The steady-state window: the longest run of consecutive steps whose wall times
    /// lie within 10% of the median (indices, inclusive); `None` without steps.
    pub steady_first: Option<usize>,
    pub steady_last: Option<usize>,
    /// Steps whose wall time exceeds 1.5x the median, with the part that grew most.
    pub outliers: Vec<StepOutlier>,
}

/// A step much longer than the median, and what made it so.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepOutlier {
    pub index: usize,
    pub wall_us: f64,
    /// The part that grew most over its median across steps: `compute`,
    /// `exposed_comm`, `memcpy`, `launch_idle`, `sync_idle`, `graph_gap` or `host_gap`.
    pub part: String,
    /// That part's excess over its median.
    pub grew_us: f64,
}

/// One rank of an `--all-ranks` run (`ranks`). Collective times come from the
/// collectives matched on every rank (`catalog/collectives.toml`); each rank's own times
/// are on its own clock.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RankRow {
    /// The rank its file name carries (or its place in the input order).
    pub rank: u32,
    pub file: String,
    /// This rank's clock minus the reference rank's (the lowest): the median over matched
    /// collectives of the difference of their end times (a synchronising collective
    /// ends within a few µs on every rank). 0 for the reference rank.
    pub clock_offset_us: f64,
    /// Matched collectives this offset was estimated from.
    pub offset_samples: usize,
    pub stages: Vec<RankStage>,
    /// Events this rank's reader skipped (malformed, bad times, zero-duration GPU ops,
    /// oversized values), in all its files: `notes` says which and where.
    #[serde(default)]
    pub skipped: u64,
    /// This rank's read notes, as a one-rank report of it words them (`FILE: skipped N
    /// events (…)`, repaired strings, left-out values); empty when it read cleanly. The
    /// run's `notes` carry them too, other ranks' prefixed `rank N: `.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One stage of one rank.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RankStage {
    pub stage: String,
    /// The rank's own timeline: union of the time any GPU op of the stage ran.
    pub busy_us: f64,
    /// The rank's own timeline: span less busy.
    pub idle_us: f64,
    /// Sum of the steps' exposed communication (a communication kernel ran and no
    /// compute kernel did), from the rank's own timeline.
    pub exposed_comm_us: f64,
    /// Exact sum of the durations of the rank's matched collectives.
    pub comm_us: f64,
    /// The waiting part of `comm_us`: per matched collective, its duration on this rank
    /// less the shortest duration across ranks; `comm_us - wait_us` is transfer.
    pub wait_us: f64,
    /// The part of `wait_us` no other kernel of the rank ran beside: per matched
    /// collective, its first `wait` ns (where a rank that arrived early spins) less the
    /// time a non-collective kernel covered them. Wait hidden behind compute costs no
    /// wall time; this part does.
    #[serde(default)]
    pub exposed_wait_us: f64,
    /// Median and 90th percentile of the rank's step wall times.
    pub step_p50_us: f64,
    pub step_p90_us: f64,
    /// Steps in which this rank was the straggler (`stragglers`).
    pub late_steps: usize,
}

/// The matched collectives of one stage and family, across all ranks.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CollectiveRow {
    pub stage: String,
    /// `all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `broadcast`,
    /// `ep_dispatch` or `ep_combine`.
    pub family: String,
    /// Collectives matched on every rank (each counted once, not once per rank).
    pub count: usize,
    /// Sum over collectives and ranks of the transfer part: the shortest duration of the
    /// collective across ranks. `transfer_us + wait_us` is exactly the sum of every
    /// rank's measured durations.
    pub transfer_us: f64,
    /// Sum over collectives and ranks of each rank's duration less that shortest one.
    pub wait_us: f64,
    /// `100 * wait_us / (transfer_us + wait_us)`: the share of communication time that
    /// was waiting for another rank.
    pub wait_share_pct: f64,
    /// Start skew of a collective: its latest start less its earliest start across
    /// ranks, clocks aligned. Median, 90th percentile and maximum over the collectives.
    pub skew_p50_us: f64,
    pub skew_p90_us: f64,
    pub skew_max_us: f64,
}

/// The straggler of one step.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StragglerRow {
    pub stage: String,
    /// The step's index in the reference rank's timeline (0-based).
    pub step: usize,
    /// The rank that started the step's most skewed collective last.
    pub rank: u32,
    /// That collective's start skew: how much later the straggler started it than the
    /// earliest rank (clocks aligned).
    pub late_us: f64,
    /// The collective: its ordinal within the step (0-based, per family) and family.
    pub collective: usize,
    pub family: String,
    /// Median over the other ranks of their wait in that collective.
    pub others_wait_us: f64,
    /// What the straggler did before it arrived, against the other ranks' median in the
    /// same stretch (since the previous matched collective, or the step's start):
    /// `kernels` (its kernels ran longer), `launch` (the GPU idled waiting for a launch
    /// with the host in no frame of its own) or `python` (the host ran a Python frame).
    pub cause: String,
    /// The kernel that grew most, the launch call, or the frame as `path:line function`.
    pub detail: String,
}

/// One kernel row's roofline figures (`analyze::roofline`; labels in
/// `docs/report-labels.md`, "Roofline"). FLOPs and bytes come from the formulas of
/// `analyze::roofline::formulas` applied to each launch's shapes; every rate is over the
/// GPU time of the launches whose shape is known, so a row with some unknown launches is
/// not diluted by them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelRoofline {
    /// Total FLOPs of the row's launches with a known shape; `None` when none has one.
    pub flops: Option<f64>,
    /// Total bytes those launches must move to and from device memory.
    pub bytes: Option<f64>,
    /// Arithmetic intensity: `flops / bytes` (FLOP per byte).
    pub intensity: Option<f64>,
    /// Achieved `flops / time` of those launches, in TFLOP/s (1e12).
    pub tflops_per_s: Option<f64>,
    /// Achieved `bytes / time` of those launches, in TB/s (1e12).
    pub tb_per_s: Option<f64>,
    /// `100 * sol / time`, where `sol = max(flops / peak(dtype), bytes / bandwidth)`: how
    /// close the launches run to the roof that binds them. `None` for an unknown device.
    pub pct_of_peak: Option<f64>,
    /// `under-filled` (launches of fewer thread blocks than the GPU has SMs/CUs hold at
    /// least half the row's time), `latency` (it fills the GPU, but its launches average
    /// under 5 µs), `compute` or `memory` (intensity above or below the device's ridge
    /// point `peak / bandwidth`), `unknown` (no shape, or no device roof).
    pub bound: String,
    /// Where the shapes came from: `input-dims` (the launching op's `Input Dims`),
    /// `step-annotation` (attention: its `Input Dims` heads with the step annotation's
    /// sq/sk sums), `model-config` (no `Input Dims`: the model's `config.json`
    /// dimensions, the TP size and the step's tokens), `kineto-bytes` (a memcpy/memset
    /// row: the `bytes` of its Kineto args, no FLOPs); `None` without a shape.
    pub shape_source: Option<String>,
    /// The dtype class the compute peak is taken for (`bf16`, `fp8`, ...).
    pub dtype: Option<String>,
    /// Launches with a known shape (the rates' denominator's launches).
    pub shaped_launches: u64,
    /// Launches with fewer thread blocks than SMs/CUs (grid product, or Kineto's
    /// `blocks per SM` below 1).
    pub under_filled_launches: u64,
}

/// A stage's speed of light (`analyze::roofline`): the time its kernels of known shape
/// would take at the device's roofs, against the time they took.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StageSol {
    /// Sum over kernel rows of `max(flops / peak(dtype), bytes / bandwidth)`.
    pub sol_us: f64,
    /// GPU time of the launches with a known shape (exact sum of their `dur`): the same
    /// launches `sol_us` covers.
    pub measured_us: f64,
    /// `100 * sol_us / measured_us`.
    pub sol_pct: f64,
    /// `100 * measured_us / total_gpu_time_us`: the part of the stage's GPU time the SOL
    /// figure speaks for.
    pub covered_pct: f64,
    /// Where the stage's time beyond the speed of light goes.
    pub gap: SolGap,
}

/// Where a stage's time beyond its speed of light goes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SolGap {
    /// GPU idle inside the stage's span (`timeline.idle_us`).
    pub idle_us: f64,
    /// `measured_us - sol_us`: time kernels of known shape ran below their roof.
    pub below_roof_us: f64,
    /// The three kernel rows losing the most time to their roof, most first.
    pub below_roof_top: Vec<SolLoss>,
    /// Time a communication kernel ran and no compute kernel did, summed over the
    /// stage's steps (`timeline.steps[].exposed_comm_us`).
    pub exposed_comm_us: f64,
    /// GPU time of launches without a known shape, and of memcpy/memset (outside the
    /// SOL line, which is over kernels): what the SOL does not cover.
    pub unshaped_us: f64,
}

/// A kernel row's time beyond its roof.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SolLoss {
    /// Canonical kernel name.
    pub kernel: String,
    /// Measured time of its shaped launches minus their SOL time.
    pub lost_us: f64,
    /// The row's `pct_of_peak`.
    pub pct_of_peak: f64,
}

// ---- Layers and roles (`analyze::layers`) ----

/// The decoder layers of one stage: the repeating stretch of each step's kernel sequence
/// (kernels in GPU start order), with the kernels before it (prologue: embedding, input
/// preparation) and after it (epilogue: final norm, LM head, sampling). Every time is an
/// exact sum of integer nanoseconds over the steps that hold `count` layers:
/// `sum(rows[].gpu_time_us) + prologue_us + epilogue_us = total_us` exactly.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StageLayers {
    /// Layers per step (the most common count over the stage's steps).
    pub count: usize,
    /// Kernels per layer (the period of the repeating stretch).
    pub period_kernels: usize,
    /// `num_hidden_layers` of the model, when its config or server args give it.
    pub expected_count: Option<u64>,
    /// Where `expected_count` comes from (a file path or a server arg).
    pub expected_source: Option<String>,
    /// Steps that hold `count` layers of `period_kernels` kernels (their times are summed).
    pub steps: usize,
    /// Steps of the stage left out: no repeating stretch, or another count or period.
    pub steps_left_out: usize,
    /// Kernel time of the counted steps (memcpy and memset are not kernels).
    pub total_us: f64,
    /// Kernels of each counted step before its first layer, and their time summed.
    pub prologue_kernels: usize,
    pub prologue_us: f64,
    /// Kernels of each counted step after its last layer, and their time summed.
    pub epilogue_kernels: usize,
    pub epilogue_us: f64,
    /// Part of `total_us` replayed from CUDA/HIP graphs.
    pub graph_replay_us: f64,
    /// Median of `rows[].gpu_time_us`.
    pub median_layer_us: f64,
    /// One row per layer, in model order.
    pub rows: Vec<LayerRow>,
    /// What the reader should know: a count that differs from the model config, steps
    /// left out.
    pub notes: Vec<String>,
}

/// One decoder layer, summed over the counted steps.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LayerRow {
    /// 0-based, in model order.
    pub index: usize,
    /// Exact sum of the layer's kernel durations over the counted steps.
    pub gpu_time_us: f64,
    /// `100 * gpu_time_us / total_us` of the layers' stage.
    pub share_pct: f64,
    /// `first`, `last` or `middle`.
    pub position: String,
    /// `moe` when the layer runs a kernel of an MoE role (`catalog/roles.toml`
    /// `moe_roles`), else `dense`.
    pub kind: String,
    /// The layer's time is more than 25% away from `median_layer_us`.
    pub outlier: bool,
    /// The layer's time by role (`catalog/roles.toml`, catalog order, roles with time
    /// only), summed over the counted steps like `gpu_time_us`, which they sum to
    /// exactly: the layer x role heatmap of the HTML report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<LayerRole>,
}

/// One role's part of one layer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LayerRole {
    /// A role name, as in `stages[].roles[].role`.
    pub role: String,
    /// Exact sum of the `dur` of the layer's kernels with this role.
    pub gpu_time_us: f64,
}

/// One role's part of a stage's GPU time (`catalog/roles.toml`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RoleRow {
    /// `qkv`, `attention`, `o_proj`, `all-reduce`, `norm`, `rope`, `kv-cache write`,
    /// `gate_up`, `activation`, `down`, `moe-route`, `moe-experts`, `lm_head`,
    /// `sampler` or `other`.
    pub role: String,
    /// Exact sum of the `dur` of the stage's GPU ops with this role.
    pub gpu_time_us: f64,
    /// `100 * gpu_time_us / stages[].total_gpu_time_us`.
    pub share_pct: f64,
    /// GPU ops with this role (graph replays count each kernel run).
    pub launches: u64,
}

// ---- Diff of two runs (`diff`, `llm-triage diff BASE NEW`) ----
//
// The JSON of `llm-triage diff --format json` is a [`DiffDocument`]: `{"diff": {...}}`.
// Every time is carried twice: in exact integer nanoseconds (`*_ns`) and as those
// nanoseconds / 1000 (`*_us`), so the identities below hold exactly in the `_ns` fields.

/// The document `diff --format json` prints: the one key `diff`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DiffDocument {
    pub diff: DiffReport,
}

/// Two runs compared, stage by stage (`diff`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DiffReport {
    /// The report schema version the two sides were read with (`SCHEMA_VERSION`).
    pub schema_version: u32,
    pub tool_version: String,
    /// The baseline run.
    pub base: DiffSide,
    /// The run compared with it.
    pub new: DiffSide,
    /// `--noise PCT`: a row whose change is at most this percentage of its base counts
    /// as `same`.
    pub noise_pct: f64,
    /// `--fail-on-regression PCT`, if given.
    pub fail_on_regression_pct: Option<f64>,
    /// `--fail-on-regression-ms MS`, if given.
    pub fail_on_regression_ms: Option<f64>,
    /// Stages present on either side, in stage order.
    pub stages: Vec<DiffStage>,
    /// What crossed a `--fail-on-regression*` threshold; empty without a threshold.
    pub regressions: Vec<Regression>,
    /// What the reader should know about the comparison as a whole.
    pub notes: Vec<String>,
}

/// One side of a diff: what was read and what it is.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DiffSide {
    /// The path given on the command line.
    pub path: String,
    /// `trace` (a trace file triaged now), `directory` (a profile directory triaged
    /// now) or `report` (a saved `--format json` report).
    pub kind: String,
    /// The side's engine (`framework.display_name` of its report).
    pub framework: String,
    pub model: Option<String>,
    /// The side's trace files (its report's `inputs`).
    pub inputs: Vec<InputInfo>,
    /// The side's analysed GPU (`device.name`), when known.
    pub device: Option<String>,
}

/// One stage of the diff: the per-step wall time of each side and the waterfall that
/// splits its change. `sum(rows[].delta_ns) = delta_ns` exactly, and likewise
/// `sum(rows[].base_ns) = base_step_ns`, `sum(rows[].new_ns) = new_step_ns`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DiffStage {
    /// `extend/prefill`, `decode` or `all`.
    pub stage: String,
    /// The base side's wall time per step: the sum of its steps' `wall_us` divided by
    /// `base_steps`, rounded to the nanosecond (a stage without steps: its GPU time).
    pub base_step_us: f64,
    pub new_step_us: f64,
    /// `new_step_us - base_step_us`.
    pub delta_us: f64,
    /// `100 * delta / base_step` (null when the base has no time).
    pub delta_pct: Option<f64>,
    pub base_step_ns: i64,
    pub new_step_ns: i64,
    pub delta_ns: i64,
    /// `new`, `gone`, `faster`, `slower` or `same` (within `noise_pct`), as for rows.
    pub status: String,
    /// Steps each side's figures are averaged over (1 for a stage without steps).
    pub base_steps: usize,
    pub new_steps: usize,
    /// What each side's steps ran: batch, tokens, context (from the step labels).
    pub base_workload: Workload,
    pub new_workload: Workload,
    /// Wall time per token of each side, when both sides' steps all give token counts.
    pub per_token: Option<PerToken>,
    /// The waterfall: kernel rows (communication kernels excepted, which the exposed
    /// communication row covers), then exposed communication, each idle cause, the
    /// concurrency correction, the rows below a saved report's share cut and the
    /// rounding row.
    pub rows: Vec<DiffRow>,
    /// What changed in meaning: fusions, overlap, speed of light.
    pub meaning: DiffMeaning,
    /// What the reader should know about this stage's comparison.
    pub notes: Vec<String>,
}

/// What one side's steps of a stage ran, read from their labels (`bs=32`, `toks=15360`,
/// vLLM's `execute_N_context_C(sq..sk..)_generation_G(sq..sk..)`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Workload {
    /// Mean requests per step over the steps whose label gives one; null when none does.
    pub batch_mean: Option<f64>,
    /// Mean tokens per step over the steps whose label gives them.
    pub tokens_mean: Option<f64>,
    /// Mean context (KV) length summed over a step's requests, where the label gives it.
    pub context_mean: Option<f64>,
    /// Steps whose label gives a token count (per-token figures need all of them).
    pub steps_with_tokens: usize,
    /// Exact sum of the token counts of those steps.
    pub tokens_total: u64,
}

/// Wall time per token: the stage's summed step wall time over its summed tokens.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PerToken {
    pub base_us_per_token: f64,
    pub new_us_per_token: f64,
    /// `100 * (new - base) / base`.
    pub delta_pct: f64,
}

/// One waterfall row: a part of the per-step wall time on each side.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DiffRow {
    /// What the row is: a kernel's canonical name (the base side's when both have one),
    /// `role <role>` for a row matched across backends by its role, or one of the fixed
    /// rows `exposed communication`, `launch idle`, `sync idle`, `graph gap`, `host gap`,
    /// `concurrency`, `below share cut`, `rounding`.
    pub key: String,
    /// `kernel` or `fixed`.
    pub kind: String,
    /// The row's time per step on each side: its stage total over the steps divided by
    /// the side's step count, rounded to the nanosecond.
    pub base_us: f64,
    pub new_us: f64,
    /// `new_us - base_us`.
    pub delta_us: f64,
    /// `100 * delta / |base|`; null when the base is zero.
    pub delta_pct: Option<f64>,
    pub base_ns: i64,
    pub new_ns: i64,
    pub delta_ns: i64,
    /// `new` (no base time), `gone` (no new time), `faster`, `slower`, or `same` (the
    /// change is at most `noise_pct` of the base; the rounding row is always `same`).
    pub status: String,
    /// How the kernel rows of the two sides were paired: `role` (same role and family),
    /// `site` (same launch site and family), `name` (same canonical name), `untemplated`
    /// (same name without template arguments), `family` (same kernel family). Fixed rows,
    /// and kernel rows found on one side only, are keyed by their own name: `name`.
    pub matched_by: String,
    /// Canonical kernel name on each side (kernel rows; null where the side has none).
    pub base_kernel: Option<String>,
    pub new_kernel: Option<String>,
    /// The kernel family (the base side's when both have one).
    pub family: Option<String>,
}

/// A threshold crossed: the stage's step time or one row grew beyond
/// `--fail-on-regression PCT` or `--fail-on-regression-ms MS`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Regression {
    pub stage: String,
    /// `step` (the stage's step time), or the row's `key`.
    pub key: String,
    pub base_us: f64,
    pub new_us: f64,
    pub delta_us: f64,
    /// `100 * delta / |base|`; for a row with no base time, of the stage's base step.
    pub delta_pct: Option<f64>,
    /// `pct` or `ms`: which threshold it crossed (both: `pct`).
    pub threshold: String,
}

/// What changed beyond the numbers in one stage.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DiffMeaning {
    /// Fuse-table rows whose conclusion differs between the sides, catalog order.
    pub fusions: Vec<FusionChange>,
    /// Union of the time two or more streams were busy, per step, on each side
    /// (`overlap_stages[].overlapped_us` over the steps); null when a side lacks it.
    pub base_overlapped_us: Option<f64>,
    pub new_overlapped_us: Option<f64>,
    /// `gained`, `lost` or `same` (within `noise_pct` of the base).
    pub overlap: Option<String>,
    /// The stage's speed of light (`sol.sol_pct`) on each side, where known.
    pub base_sol_pct: Option<f64>,
    pub new_sol_pct: Option<f64>,
    /// Decoder layers per step (`layers.count`) on each side, where found.
    pub base_layers: Option<usize>,
    pub new_layers: Option<usize>,
    /// The median layer's time in one step: `layers.median_layer_us / layers.steps` (the
    /// layer table sums each layer over its counted steps).
    pub base_median_layer_us: Option<f64>,
    pub new_median_layer_us: Option<f64>,
}

/// A fuse-table row that started or stopped firing, or changed its conclusion.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FusionChange {
    /// Catalog id.
    pub id: String,
    pub label: String,
    /// The row's `conclusion` on each side; null when the side's table lacks the row.
    pub base: Option<String>,
    pub new: Option<String>,
    /// `started firing` (now `present`), `stopped firing` (was `present`), or
    /// `changed`.
    pub change: String,
}

/// The EP imbalance section: every all-to-all(-v) op that carried per-peer split sizes,
/// summed per stage, process group and rank. Counts are the trace's own unit, elements
/// of the op's dtype (a token row is `hidden size` elements, which the trace does not
/// give). In `--all-ranks` every rank's ops, else the one rank's own sends and receives.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EpImbalance {
    /// `elements` or `elements (BFloat16)` when every op names the same dtype.
    pub unit: String,
    /// Ops whose split sizes were read.
    pub ops: usize,
    /// Ops left out: a split list that is not a list of non-negative integers (or the
    /// two lists differ in length), a list PyTorch cut short (`, ...]`), one side an
    /// empty list (an even split whose counts the trace does not give).
    pub skipped_malformed: usize,
    pub skipped_truncated: usize,
    pub skipped_one_sided: usize,
    /// `--all-ranks`: (sender, receiver) pairs of matched ops (same group and `Seq`,
    /// else the same place among the group's ops) where the sender's `In split size`
    /// entry for the receiver was compared with the receiver's `Out split size` entry
    /// for the sender, and how many differed.
    pub cross_checked: usize,
    pub mismatches: usize,
    /// The first mismatches (at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatch_examples: Vec<EpMismatch>,
    pub ranks: Vec<EpRankRow>,
    pub groups: Vec<EpGroupRow>,
}

/// One rank's all-to-alls in one process group and stage.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EpRankRow {
    pub stage: String,
    /// `Process Group Name` (`""` when the trace has none).
    pub group: String,
    /// `dispatch` or `combine` (an MoE layer's mirrored pair of all-to-alls, dispatch
    /// first), else `all-to-all` (docs/report-labels.md, "EP imbalance").
    #[serde(default = "plain_all_to_all")]
    pub phase: String,
    /// The recording rank's global rank (`Rank`, else the trace's), null when unknown.
    pub rank: Option<u32>,
    /// All-to-all ops summed.
    pub count: usize,
    /// Elements sent (`In split size`) and received (`Out split size`), summed.
    pub sent: u64,
    pub received: u64,
    /// Per peer, in group order, the rank itself included.
    pub peers: Vec<EpPeer>,
    /// Largest per-peer `sent` over the mean per-peer `sent` (1.0 = even; 0 when nothing
    /// was sent), and the peer it went to.
    pub max_over_mean: f64,
    pub hot_peer: Option<u32>,
}

/// What one rank sent to and received from one peer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EpPeer {
    /// The peer's global rank (`Process Group Ranks`), else its index in the group.
    pub peer: u32,
    pub sent: u64,
    pub received: u64,
}

/// One process group in one stage: what its members received from the ranks seen.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EpGroupRow {
    pub stage: String,
    pub group: String,
    /// As [`EpRankRow::phase`].
    #[serde(default = "plain_all_to_all")]
    pub phase: String,
    /// `Process Group Description` (`ep_group`, `default_pg`), when given.
    pub description: Option<String>,
    /// Whether `members` are global ranks (`Process Group Ranks`) or group indices.
    pub members_are_ranks: bool,
    pub members: Vec<u32>,
    /// The ranks whose ops were read (one without `--all-ranks`).
    pub senders: Vec<u32>,
    /// Per member: elements the senders' `In split size` lists sent it.
    pub received: Vec<u64>,
    /// Largest `received` over the mean (1.0 = even), and the member (the hot rank).
    pub max_over_mean: f64,
    pub hot_rank: Option<u32>,
}

/// The phase of a row saved before phases were told apart.
fn plain_all_to_all() -> String {
    "all-to-all".to_string()
}

/// A sender's count for a receiver that the receiver's own op does not repeat.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EpMismatch {
    pub group: String,
    /// `Seq` when the ops carry it, else the op's place among the group's ops.
    pub seq: u64,
    pub from: u32,
    pub to: u32,
    /// The sender's `In split size` entry and the receiver's `Out split size` entry.
    pub sent: u64,
    pub received: u64,
}
