//! Timeline fixtures: Kineto traces whose GPU idle time is injected on purpose, each
//! written with a ground truth of where that idle time is and who caused it.
//!
//! A [`Scenario`] is a sequence of steps; a step is a sequence of [`Part`]s (eager
//! launches that keep the GPU queue full, a launch-bound stretch of tiny kernels, a sync
//! wait, a graph replay with in-graph gaps), optionally preceded by a host delay in a
//! named Python frame. [`write_scenario`] writes the trace (CUDA or ROCm runtime calls,
//! Python frames, CPU ops, kernels with correlation and External id, step markers) and
//! `ground_truth.json` beside it: per injected delay its window, cause
//! (`launch|sync|graph|host`), frame and amount in ns. Everything else in the trace is
//! laid out so that it adds no idle of its own larger than a few µs, so an analysis that
//! charges each delay to the right cause and frame is told apart from one that does not.
//!
//! The existing fixtures (`write_fixture`) are untouched: this module only reuses the
//! engines' frame paths and kernel names, and the µs/JSON text helpers.

pub(crate) mod hip_layer;
mod scenarios;
mod truth;
mod writer;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use scenarios::{scenarios, PLUGIN_MARKER};
pub use truth::{Cause, Delay, FrameTruth, StepTruth, TimelineTruth};

use crate::{Engine, Frame, StageKind};

/// Which runtime the trace records: CUDA (`cuda*` calls, an H100) or ROCm (`hip*`
/// calls, an MI300X).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Platform {
    Cuda,
    Rocm,
}

/// Which CUDA calls issue the work (ROCm traces ignore this).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CudaApis {
    /// `cudaLaunchKernel`, `cudaMemcpyAsync`, `cudaStreamSynchronize`.
    Classic,
    /// What newer stacks record (the B200 vLLM trace in ../shared/traces):
    /// `cudaLaunchKernelExC` and the driver's `cuLaunchKernelEx` beside
    /// `cudaLaunchKernel`, `cudaMemsetAsync`, and waits through `cudaEventRecord` +
    /// `cudaEventSynchronize`.
    Extended,
}

/// The step marker the engine writes around each step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// The engine's own: SGLang `step[DECODE bs=N]`, vLLM `execute_context_…`.
    Engine,
    /// torch.profiler's `ProfilerStep#N` (a profiler schedule).
    ProfilerStep,
    /// The engine's marker inside torch's `ProfilerStep#N`: both kinds around every step
    /// (a profiler schedule over a vLLM or SGLang run). The engine's is the step.
    EngineInProfilerStep,
    /// `<prefix><N>`, a marker no built-in row knows (a plugin names it).
    Named(&'static str),
    /// Current vLLM's `execute_new_<n>_cached_<m>` (vllm/v1/worker/gpu_worker.py): a
    /// prefill step's requests are new, a decode step's cached.
    VllmNewCached,
}

/// What a step does, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// `n` kernels launched faster than they run: the GPU queue stays full, no idle.
    Eager(usize),
    /// (c) `n` tiny kernels whose launches take longer than the kernels: the GPU drains
    /// before each launch.
    LaunchBound(usize),
    /// (b) One kernel is launched, then the host blocks in a synchronize or blocking
    /// device-to-host copy while that kernel waits `wait_ns` before it runs.
    SyncWait { wait_ns: u64 },
    /// (d) One graph launch replaying `kernels` kernels; `gaps` are (after kernel i, ns)
    /// idle stretches inside the replay (other kernels follow 1 µs apart).
    Graph {
        kernels: usize,
        gaps: Vec<(usize, u64)>,
    },
    /// (b) inside (d): one graph launch, then the host blocks in a synchronize or blocking
    /// copy at once, while the replay idles `gap_ns` after kernel `after` (CUDA only). The
    /// idle is a sync wait: the host is blocked, not "nothing pending".
    GraphDuringSync {
        kernels: usize,
        after: usize,
        gap_ns: u64,
    },
}

/// (a) Host time in one Python frame between the previous step's last GPU op and this
/// step's first launch.
#[derive(Clone, Debug)]
pub struct HostDelay {
    pub frame: Frame,
    pub ns: u64,
}

#[derive(Clone, Debug)]
pub struct StepPlan {
    pub host_delay: Option<HostDelay>,
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    /// Directory name under the output directory.
    pub name: &'static str,
    pub engine: Engine,
    pub platform: Platform,
    pub cuda_apis: CudaApis,
    /// 1: every op on the compute stream; 2: the layers' NCCL all-reduce on a
    /// communication stream, overlapping the next layer's compute.
    pub streams: usize,
    /// A second Python thread runs an engine frame over every host delay.
    pub background_thread: bool,
    pub marker: Marker,
    /// Each step's marker stays open until 10 µs after the next step's first launch: two
    /// step annotations overlap, and the launches in the overlap are the later step's.
    pub overlapping_markers: bool,
    /// Extend or decode: names the file and the engine's markers.
    pub stage: StageKind,
    /// The section label the report gives the stage.
    pub stage_label: &'static str,
    pub batch_size: usize,
    pub seed: u64,
    pub steps: Vec<StepPlan>,
}

/// Writes `scenario` as `dir/<trace file>` plus `dir/ground_truth.json`.
pub fn write_scenario(dir: &Path, scenario: &Scenario) -> std::io::Result<TimelineTruth> {
    std::fs::create_dir_all(dir)?;
    let file = crate::file_name(scenario.engine, scenario.stage, 0, scenario.seed, true);
    let path = dir.join(file);
    let (text, truth) = writer::write(scenario, &path);
    let out = std::fs::File::create(&path)?;
    let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    std::io::Write::write_all(&mut encoder, text.as_bytes())?;
    encoder.finish()?;
    let body = serde_json::to_string_pretty(&truth.to_json()).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(truth::FILE_NAME), body + "\n")?;
    Ok(truth)
}

/// Writes every scenario of [`scenarios`] as `dir/<scenario name>/…`.
pub fn write_timeline_set(dir: &Path) -> std::io::Result<Vec<TimelineTruth>> {
    scenarios()
        .iter()
        .map(|s| write_scenario(&dir.join(s.name), s))
        .collect()
}
