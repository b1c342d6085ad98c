//! The timeline scenarios `make-fixtures --timeline` writes: CUDA eager, CUDA graph
//! replay, HIP eager (with `hipExtModuleLaunchKernel`), HIP graph replay, one that
//! mixes every kind of delay, and CUDA eager through the extended launch calls
//! (`cudaLaunchKernelExC`, `cuLaunchKernelEx`, `cudaMemsetAsync`, event waits), and
//! CUDA eager on two streams (NCCL all-reduce overlapping compute); and the step layouts
//! that need a rule: a graph replay's gap while the host waits in a sync, vLLM's
//! `execute_…` markers inside `ProfilerStep#N`, current vLLM's `execute_new_…_cached_…`,
//! step markers that overlap in time, and a marker only a plugin names (`forward_step#N`). Each has at most five single-gap delays (host, sync,
//! graph), all larger than any other gap in its trace, so a report's default top-5 gaps
//! list every one of them.

use super::{CudaApis, HostDelay, Marker, Part, Platform, Scenario, StepPlan};
use crate::{Engine, Frame, StageKind};

const fn frame(path: &'static str, line: u32, func: &'static str) -> Frame {
    Frame { path, line, func }
}

// Scheduler work between steps (paths from the engines' source roots).
const SGLANG_RECV: Frame = frame("managers/scheduler.py", 1086, "recv_requests");
const SGLANG_NEXT_BATCH: Frame = frame("managers/scheduler.py", 1790, "get_next_batch_to_run");
const SGLANG_PROCESS_INPUT: Frame = frame("managers/scheduler.py", 1190, "process_input_requests");
const VLLM_SCHEDULE: Frame = frame("v1/core/sched/scheduler.py", 190, "schedule");
const VLLM_INPUT_QUEUE: Frame = frame("v1/engine/core.py", 870, "_process_input_queue");
const VLLM_UPDATE: Frame = frame("v1/core/sched/scheduler.py", 820, "update_from_output");

fn host(frame: Frame, us: u64) -> Option<HostDelay> {
    Some(HostDelay {
        frame,
        ns: us * 1000,
    })
}

fn step(host_delay: Option<HostDelay>, parts: Vec<Part>) -> StepPlan {
    StepPlan { host_delay, parts }
}

fn sync_us(us: u64) -> Part {
    Part::SyncWait { wait_ns: us * 1000 }
}

fn graph(kernels: usize, gaps_us: &[(usize, u64)]) -> Part {
    Part::Graph {
        kernels,
        gaps: gaps_us.iter().map(|&(k, us)| (k, us * 1000)).collect(),
    }
}

/// The marker prefix the `step-markers` test plugin (tests/plugins/step-markers) names.
pub const PLUGIN_MARKER: &str = "forward_step#";

pub fn scenarios() -> Vec<Scenario> {
    use Part::{Eager, GraphDuringSync, LaunchBound};
    vec![
        Scenario {
            name: "cuda-eager",
            engine: Engine::Vllm,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 4,
            seed: 31,
            steps: vec![
                step(None, vec![Eager(24)]),
                step(host(VLLM_SCHEDULE, 300), vec![LaunchBound(20), Eager(12)]),
                step(
                    host(VLLM_INPUT_QUEUE, 450),
                    vec![Eager(16), sync_us(350), Eager(8)],
                ),
            ],
        },
        Scenario {
            name: "cuda-graph",
            engine: Engine::Sglang,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 8,
            seed: 32,
            steps: vec![
                step(None, vec![Eager(4), graph(26, &[])]),
                step(
                    host(SGLANG_RECV, 250),
                    vec![Eager(4), graph(26, &[(5, 60), (17, 90)])],
                ),
                step(host(SGLANG_NEXT_BATCH, 400), vec![Eager(4), graph(26, &[])]),
            ],
        },
        Scenario {
            name: "hip-eager",
            engine: Engine::Sglang,
            platform: Platform::Rocm,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Extend,
            stage_label: "extend/prefill",
            batch_size: 4,
            seed: 33,
            steps: vec![
                step(None, vec![Eager(20)]),
                step(
                    host(SGLANG_PROCESS_INPUT, 350),
                    vec![Eager(10), sync_us(300), LaunchBound(16), Eager(6)],
                ),
                step(host(SGLANG_RECV, 280), vec![LaunchBound(16), Eager(10)]),
            ],
        },
        Scenario {
            name: "hip-graph",
            engine: Engine::Sglang,
            platform: Platform::Rocm,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 32,
            seed: 34,
            steps: vec![
                step(None, vec![Eager(3), sync_us(400), graph(30, &[(8, 70)])]),
                step(
                    host(SGLANG_NEXT_BATCH, 300),
                    vec![Eager(3), graph(30, &[(12, 50), (20, 110)])],
                ),
            ],
        },
        Scenario {
            name: "mixed",
            engine: Engine::Vllm,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::ProfilerStep,
            stage: StageKind::Decode,
            // No engine marker names the stage.
            stage_label: "all",
            batch_size: 4,
            seed: 35,
            steps: vec![
                step(None, vec![Eager(10), graph(20, &[(6, 80)])]),
                step(
                    host(VLLM_UPDATE, 260),
                    vec![LaunchBound(16), Eager(8), sync_us(320)],
                ),
                step(host(VLLM_SCHEDULE, 380), vec![graph(20, &[(10, 45)])]),
            ],
        },
        Scenario {
            name: "cuda-eager-ext",
            engine: Engine::Vllm,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Extended,
            background_thread: true,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 8,
            seed: 36,
            steps: vec![
                step(None, vec![Eager(18), sync_us(240)]),
                step(
                    host(VLLM_UPDATE, 330),
                    vec![LaunchBound(18), Eager(14), sync_us(280)],
                ),
            ],
        },
        Scenario {
            name: "cuda-two-stream",
            engine: Engine::Sglang,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 2,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 16,
            seed: 37,
            steps: vec![
                step(None, vec![Eager(26)]),
                step(
                    host(SGLANG_PROCESS_INPUT, 270),
                    vec![Eager(13), sync_us(310), Eager(13)],
                ),
                step(host(SGLANG_RECV, 360), vec![LaunchBound(14), Eager(26)]),
            ],
        },
        Scenario {
            name: "graph-sync",
            engine: Engine::Sglang,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 16,
            seed: 38,
            steps: vec![
                step(None, vec![Eager(4), graph(22, &[(6, 80)])]),
                step(
                    host(SGLANG_RECV, 260),
                    vec![
                        Eager(4),
                        GraphDuringSync {
                            kernels: 24,
                            after: 8,
                            gap_ns: 300_000,
                        },
                    ],
                ),
            ],
        },
        Scenario {
            name: "nested-markers",
            engine: Engine::Vllm,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::EngineInProfilerStep,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 4,
            seed: 39,
            steps: vec![
                step(None, vec![Eager(14)]),
                step(
                    host(VLLM_SCHEDULE, 310),
                    vec![LaunchBound(16), Eager(10), sync_us(270)],
                ),
                step(host(VLLM_UPDATE, 360), vec![Eager(12)]),
            ],
        },
        Scenario {
            name: "overlapping-steps",
            engine: Engine::Sglang,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: true,
            marker: Marker::Engine,
            stage: StageKind::Decode,
            stage_label: "decode",
            batch_size: 8,
            seed: 40,
            steps: vec![
                step(None, vec![Eager(12), sync_us(230)]),
                step(
                    host(SGLANG_NEXT_BATCH, 290),
                    vec![LaunchBound(12), Eager(10)],
                ),
                step(host(SGLANG_RECV, 340), vec![Eager(16)]),
            ],
        },
        Scenario {
            name: "vllm-new-cached",
            engine: Engine::Vllm,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::VllmNewCached,
            stage: StageKind::Decode,
            // Cached requests decode or continue a chunked prefill: the marker bounds the
            // steps but cannot name their stage.
            stage_label: "all",
            batch_size: 6,
            seed: 42,
            steps: vec![
                step(None, vec![Eager(10), sync_us(240)]),
                step(host(VLLM_INPUT_QUEUE, 330), vec![LaunchBound(12), Eager(8)]),
                step(host(VLLM_SCHEDULE, 300), vec![Eager(14)]),
            ],
        },
        Scenario {
            name: "plugin-marker",
            engine: Engine::Vllm,
            platform: Platform::Cuda,
            cuda_apis: CudaApis::Classic,
            background_thread: false,
            streams: 1,
            overlapping_markers: false,
            marker: Marker::Named(PLUGIN_MARKER),
            stage: StageKind::Decode,
            // No marker the host knows names the stage.
            stage_label: "all",
            batch_size: 4,
            seed: 41,
            steps: vec![
                step(None, vec![Eager(12), graph(16, &[(5, 70)])]),
                step(host(VLLM_SCHEDULE, 320), vec![LaunchBound(14), Eager(8)]),
                step(host(VLLM_UPDATE, 280), vec![Eager(10), sync_us(260)]),
            ],
        },
    ]
}
