//! Lays out one timeline scenario on a host clock and a compute stream (plus a
//! communication stream in two-stream scenarios), writes its events as Kineto JSON
//! text, and records the ground truth as it goes.
//!
//! The layout keeps the only sizeable GPU idle to the injected delays: eager kernels run
//! longer than their launches (the queue stays full), each step ends in a blocking
//! device-to-host copy the host waits in while the GPU is still busy, and graph nodes
//! follow each other 1 µs apart unless a gap is injected.

use std::fmt::Write as _;
use std::path::Path;

use super::hip_layer::hip_ops;
use super::truth::{Cause, Delay, FrameTruth, StepTruth, TimelineTruth};
use super::{CudaApis, HostDelay, Marker, Part, Platform, Scenario, StepPlan};
use crate::engines::{profile, Issue, Op, Profile, GRAPH_REPLAY, MODULE_CALL};
use crate::{
    engine_metadata, events_and_end, frame_name, json_str, metadata_event, us, Engine, Event,
    Frame, GpuOpEvent, HostTrack, Rng, StageKind, CPU_PID, GPU_PID,
};

const STREAM: u64 = 7;
/// The communication stream of two-stream scenarios.
const COMM_STREAM: u64 = 21;
/// A second Python thread of the process (not the one that launches).
const BACKGROUND_TID: u64 = 41_007;
/// Where the clock starts, in ns (13 integer digits in µs, like real Kineto traces).
const EPOCH_NS: u64 = 1_700_000_000_000_000;
/// From a launch call's start to the earliest its GPU op can start.
const LAUNCH_LATENCY_NS: u64 = 4_000;
/// Between two graph nodes without an injected gap.
const GRAPH_NODE_GAP_NS: u64 = 1_000;

/// Returns the trace text and its ground truth.
pub(super) fn write(scenario: &Scenario, path: &Path) -> (String, TimelineTruth) {
    let mut w = Writer::new(scenario);
    w.metadata();
    let event_loop = w.frames.event_loop;
    w.host.open_frame(frame_name(&w.profile, &event_loop));
    for (index, plan) in scenario.steps.iter().enumerate() {
        w.step = index;
        w.run_step(plan);
    }
    w.host.close_frame(true);
    let truth = w.truth(path);
    (trace_text(scenario, path, &w.host.events), truth)
}

/// The Python frames an engine's scheduler loop shows around the model steps.
struct EngineFrames {
    /// The loop every step runs in (outermost, spans the trace).
    event_loop: Frame,
    /// Where each step's sampled tokens are copied to the host (blocking).
    token_copy: Frame,
    /// Where a sync wait's blocking copy is made.
    sync_copy: Frame,
    /// Host work while a graph replays.
    during_replay: Frame,
    /// What a background thread of the process runs (never the launching thread).
    background: Frame,
}

fn engine_frames(engine: Engine) -> EngineFrames {
    let f = |path, line, func| Frame { path, line, func };
    match engine {
        Engine::Vllm => EngineFrames {
            event_loop: f("v1/engine/core.py", 791, "run_busy_loop"),
            token_copy: f("v1/worker/gpu_model_runner.py", 2254, "_to_list"),
            sync_copy: f("v1/worker/gpu_model_runner.py", 1180, "_prepare_inputs"),
            during_replay: f("v1/worker/gpu_model_runner.py", 2190, "_bookkeeping_sync"),
            background: f("v1/engine/core.py", 1004, "process_input_sockets"),
        },
        _ => EngineFrames {
            event_loop: f("managers/scheduler.py", 1014, "event_loop_normal"),
            token_copy: f(
                "managers/scheduler_output_processor_mixin.py",
                251,
                "process_batch_result_decode",
            ),
            sync_copy: f(
                "model_executor/cuda_graph_runner.py",
                1290,
                "replay_prepare",
            ),
            during_replay: f("managers/schedule_batch.py", 1702, "prepare_for_decode"),
            background: f("managers/scheduler.py", 2600, "watchdog_thread"),
        },
    }
}

struct Writer<'a> {
    scenario: &'a Scenario,
    profile: Profile,
    frames: EngineFrames,
    /// The kernels and copies a step launches, cycled through.
    ops: Vec<Op>,
    next_op: usize,
    /// Launch calls so far (picks the call in the extended CUDA API mix).
    launches: u64,
    rng: Rng,
    host: HostTrack,
    /// When the stream's last queued GPU op ends.
    gpu: u64,
    busy: Vec<(u64, u64)>,
    delays: Vec<Delay>,
    steps: Vec<StepTruth>,
    step: usize,
    step_first_launch: Option<u64>,
    step_gpu_start: Option<u64>,
    /// The step's GPU ops so far: start, end, and 0 compute kernel, 1 communication
    /// kernel, 2 copy or memset.
    step_ops: Vec<(u64, u64, usize)>,
    /// When the communication stream's last queued op ends (0: none yet).
    side: u64,
    /// A step marker held open into the next step (overlapping markers): label, start,
    /// External id.
    open_marker: Option<(String, u64, u64)>,
}

impl<'a> Writer<'a> {
    fn new(scenario: &'a Scenario) -> Self {
        let ops = match scenario.platform {
            Platform::Cuda => (profile(scenario.engine).ops)(scenario.stage),
            Platform::Rocm => hip_ops(scenario.stage),
        };
        Writer {
            scenario,
            profile: profile(scenario.engine),
            frames: engine_frames(scenario.engine),
            ops,
            next_op: 0,
            launches: 0,
            rng: Rng::new(scenario.seed),
            host: HostTrack::new(EPOCH_NS + 10_000),
            gpu: 0,
            busy: Vec::new(),
            delays: Vec::new(),
            steps: Vec::new(),
            step: 0,
            step_first_launch: None,
            step_gpu_start: None,
            step_ops: Vec::new(),
            side: 0,
            open_marker: None,
        }
    }

    fn rocm(&self) -> bool {
        self.scenario.platform == Platform::Rocm
    }

    fn metadata(&mut self) {
        let meta = |pid, tid, what, value: &str| metadata_event(EPOCH_NS, pid, tid, what, value);
        let events = engine_metadata(EPOCH_NS, self.profile.process_name, STREAM);
        self.host.events.extend(events);
        if self.scenario.streams > 1 {
            let name = format!("stream {COMM_STREAM}");
            let event = meta(GPU_PID, Some(COMM_STREAM), "thread_name", &name);
            self.host.events.push(event);
        }
        if self.scenario.background_thread {
            let event = meta(CPU_PID, Some(BACKGROUND_TID), "thread_name", "python3");
            self.host.events.push(event);
        }
    }

    fn step_label(&self) -> String {
        match self.scenario.marker {
            Marker::ProfilerStep => format!("ProfilerStep#{}", 10 + self.step),
            Marker::Named(prefix) => format!("{prefix}{}", self.step),
            Marker::VllmNewCached => {
                let batch = self.scenario.batch_size;
                match self.scenario.stage {
                    StageKind::Decode => format!("execute_new_0_cached_{batch}"),
                    _ => format!("execute_new_{batch}_cached_0"),
                }
            }
            Marker::Engine | Marker::EngineInProfilerStep => {
                (self.profile.step_annotation)(self.scenario.stage, self.scenario.batch_size)
                    .unwrap_or_default()
            }
        }
    }

    /// One step: its host delay (outside the step's marker), then the marker around the
    /// engine's outer frames, the parts, and the blocking copy of the sampled tokens.
    fn run_step(&mut self, plan: &StepPlan) {
        if let Some(delay) = &plan.host_delay {
            self.host_delay(delay);
        }
        let label = self.step_label();
        let step_start = self.host.cpu;
        self.host.cpu += 1_000;
        self.step_first_launch = None;
        self.step_gpu_start = None;
        self.step_ops.clear();
        for frame in (self.profile.outer)(self.scenario.stage) {
            self.host.open_frame(frame_name(&self.profile, &frame));
        }
        for part in &plan.parts {
            match part {
                Part::Eager(n) => self.eager(*n),
                Part::LaunchBound(n) => self.launch_bound(*n),
                Part::SyncWait { wait_ns } => self.sync_wait(*wait_ns),
                Part::Graph { kernels, gaps } => self.graph(*kernels, gaps),
                Part::GraphDuringSync {
                    kernels,
                    after,
                    gap_ns,
                } => self.graph_during_sync(*kernels, *after, *gap_ns),
            }
        }
        // The previous step's marker, held open into this step's first launches.
        if let Some((label, start, external)) = self.open_marker.take() {
            let first_launch = self.step_first_launch.unwrap_or(self.host.cpu);
            self.push_marker(&label, start, first_launch + 10_000, external);
        }
        let token_copy = self.frames.token_copy;
        self.blocking_copy(&token_copy);
        while self.host.open.len() > 1 {
            self.host.close_frame(true);
        }
        self.host.cpu += 1_000;
        let external = self.host.external();
        if self.scenario.overlapping_markers && self.step + 1 < self.scenario.steps.len() {
            self.open_marker = Some((label.clone(), step_start, external));
        } else {
            self.push_marker(&label, step_start, self.host.cpu, external);
        }
        if self.scenario.marker == Marker::EngineInProfilerStep {
            let outer = format!("ProfilerStep#{}", 10 + self.step);
            let external = self.host.external();
            self.push_marker(&outer, step_start - 500, self.host.cpu + 500, external);
        }
        let gpu_start = self.step_gpu_start.unwrap_or(self.gpu);
        let parts = busy_parts(&self.step_ops);
        self.host.push(
            gpu_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": {}, \"pid\": {GPU_PID}, \"tid\": {STREAM}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}}}}}",
                json_str(&label),
                us(gpu_start),
                us(self.gpu - gpu_start)
            ),
        );
        self.steps.push(StepTruth {
            label,
            first_launch_ns: self.step_first_launch.unwrap_or(step_start),
            end_ns: self.gpu,
            compute_ns: parts[0],
            comm_ns: parts[1],
            memcpy_ns: parts[2],
        });
        self.host.cpu += 3_000;
    }

    /// A CPU `user_annotation` from `start` to `end`.
    fn push_marker(&mut self, label: &str, start: u64, end: u64, external: u64) {
        self.host.push(
            start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Record function id\": 0}}}}",
                json_str(label),
                us(start),
                us(end - start)
            ),
        );
    }

    /// (a) The scheduler runs `delay.frame` for `delay.ns` after the GPU has drained.
    fn host_delay(&mut self, delay: &HostDelay) {
        assert!(
            self.host.cpu >= self.gpu.max(self.side),
            "a host delay starts after the GPU drained"
        );
        self.host
            .open_frame(frame_name(&self.profile, &delay.frame));
        let start = self.host.cpu;
        // close_frame adds its own 300 ns.
        self.host.cpu += delay.ns - 300;
        self.host.close_frame(true);
        let frame = Some(self.frame_truth(&delay.frame));
        if self.scenario.background_thread {
            // Another thread busy in Python over the whole delay: a correct analysis
            // charges the delay to the launching thread's frame only.
            let (from, to) = (start - 2_000, start + delay.ns + 2_000);
            let python_id = self.host.python_id();
            let background = frame_name(&self.profile, &self.frames.background);
            self.host.push(
                from,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {BACKGROUND_TID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"Python id\": {}, \"Python parent id\": 0}}}}",
                    json_str(&background),
                    us(from),
                    us(to - from),
                    python_id
                ),
            );
        }
        // The step it precedes is the one about to start.
        self.delays.push(Delay {
            cause: Cause::Host,
            step: self.step,
            start_ns: start,
            end_ns: start + delay.ns,
            amount_ns: delay.ns,
            gaps: 1,
            frame,
        });
    }

    /// Kernels of 20-60 µs (copies of 5-9 µs) launched in about 9 µs each.
    fn eager(&mut self, n: usize) {
        self.open_model_frames();
        for _ in 0..n {
            let op = self.next_op(false);
            let dur = match op.issue {
                Issue::Kernel => self.rng.between((20_000, 60_000)),
                Issue::MemcpyDtoD => self.rng.between((5_000, 9_000)),
            };
            let side = op.side_stream && self.scenario.streams > 1;
            self.launch_on(&op, dur, 0, side);
        }
        self.host.close_frame(true);
        self.host.close_frame(true);
    }

    /// (c) Kernels of 1.2-2 µs, each launched at least 6.7 µs after the previous one's
    /// launch: the GPU drains before each launch call once the queue ahead is done.
    fn launch_bound(&mut self, n: usize) {
        self.join_side_stream();
        self.open_model_frames();
        let mut gaps = Vec::new();
        for k in 0..n {
            let op = self.next_op(true);
            let dur = self.rng.between((1_200, 2_000));
            let prev_end = self.gpu;
            let (launch_start, start) = self.launch(&op, dur, 0);
            // A gap counts as launch-bound when the launch call began after the GPU had
            // drained; the stretch's first kernel follows whatever came before it.
            if k > 0 && start > prev_end && launch_start >= prev_end {
                gaps.push((prev_end, start));
            }
        }
        self.host.close_frame(true);
        self.host.close_frame(true);
        let (Some(first), Some(last)) = (gaps.first(), gaps.last()) else {
            panic!("launch-bound stretch of {n} kernels left no gap: the queue ahead was too deep");
        };
        self.delays.push(Delay {
            cause: Cause::Launch,
            step: self.step,
            start_ns: first.0,
            end_ns: last.1,
            amount_ns: gaps.iter().map(|(a, b)| b - a).sum(),
            gaps: gaps.len(),
            frame: None,
        });
    }

    /// (b) A kernel is queued, then the host blocks in a copy to the host while that
    /// kernel waits `wait_ns` (on something the trace does not show) before it runs.
    fn sync_wait(&mut self, wait_ns: u64) {
        self.join_side_stream();
        self.open_model_frames();
        let op = self.next_op(true);
        let prev_end = self.gpu;
        let dur = self.rng.between((20_000, 40_000));
        let (launch_start, start) = self.launch(&op, dur, wait_ns);
        assert!(
            prev_end >= launch_start + LAUNCH_LATENCY_NS,
            "a sync wait needs a full queue ahead of it"
        );
        self.host.close_frame(true);
        self.host.close_frame(true);
        let sync_copy = self.frames.sync_copy;
        let blocked_from = self.blocking_copy(&sync_copy);
        assert!(
            blocked_from <= prev_end,
            "the host must be blocked before the GPU drains"
        );
        let frame = Some(self.frame_truth(&sync_copy));
        self.delays.push(Delay {
            cause: Cause::Sync,
            step: self.step,
            start_ns: prev_end,
            end_ns: start,
            amount_ns: start - prev_end,
            gaps: 1,
            frame,
        });
    }

    /// (d) One graph launch; its kernels carry the launch's correlation and no External
    /// id. The host then works in Python until the replay is done.
    fn graph(&mut self, kernels: usize, gaps: &[(usize, u64)]) {
        self.replay(kernels, gaps, Cause::Graph);
        let during = self.frames.during_replay;
        self.host.open_frame(frame_name(&self.profile, &during));
        self.host.cpu = self.host.cpu.max(self.gpu + 3_000);
        self.host.close_frame(true);
    }

    /// (b) inside (d): the graph launch, then at once a blocking copy the host waits in
    /// until the replay is done, while the replay idles `gap_ns` after kernel `after`.
    fn graph_during_sync(&mut self, kernels: usize, after: usize, gap_ns: u64) {
        assert!(!self.rocm(), "the sync-during-replay layout is CUDA's");
        let launch_start = self.replay(kernels, &[(after, gap_ns)], Cause::Sync);
        let sync_copy = self.frames.sync_copy;
        let blocked_from = self.blocking_copy(&sync_copy);
        let frame = self.frame_truth(&sync_copy);
        let delay = self.delays.last_mut().expect("the replay's gap");
        assert!(
            launch_start < blocked_from && blocked_from <= delay.start_ns,
            "the host must block before the replay's gap opens"
        );
        delay.frame = Some(frame);
    }

    /// One graph launch and its replayed kernels, the `gaps` recorded as delays of
    /// `cause`; returns the launch call's start.
    fn replay(&mut self, kernels: usize, gaps: &[(usize, u64)], cause: Cause) -> u64 {
        assert!(gaps.iter().all(|&(after, _)| after + 1 < kernels));
        self.join_side_stream();
        let runner = self.profile.graph_runner;
        self.host.open_frame(frame_name(&self.profile, &runner));
        self.host.open_frame(GRAPH_REPLAY.to_string());
        let correlation = self.host.correlation();
        let launch_start = self.host.cpu + 1_000;
        let (name, id, launch_dur) = if self.rocm() {
            ("hipGraphLaunch", "\"cid\": 215", 40_000)
        } else {
            ("cudaGraphLaunch", "\"cbid\": 311", 12_000)
        };
        self.host.push(
            launch_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{name}\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{{id}, \"correlation\": {correlation}}}}}",
                us(launch_start),
                us(launch_dur)
            ),
        );
        self.step_first_launch.get_or_insert(launch_start);
        self.host.cpu = launch_start + launch_dur + 1_000;
        let mut start = self.gpu.max(launch_start + 6_000);
        for k in 0..kernels {
            let op = self.next_op(true);
            let dur = self.rng.between((8_000, 30_000));
            self.gpu_op(
                op.raw,
                "kernel",
                STREAM,
                start,
                dur,
                None,
                correlation,
                launch_start,
            );
            let end = start + dur;
            let injected = gaps.iter().find(|g| g.0 == k).map(|g| g.1);
            if let Some(gap) = injected {
                self.delays.push(Delay {
                    cause,
                    step: self.step,
                    start_ns: end,
                    end_ns: end + gap,
                    amount_ns: gap,
                    gaps: 1,
                    frame: None,
                });
            }
            start = end + injected.unwrap_or(GRAPH_NODE_GAP_NS);
        }
        self.host.close_frame(true);
        self.host.close_frame(true);
        launch_start
    }

    /// A device-to-host copy the host waits for: CUDA `cudaMemcpyAsync` then
    /// `cudaStreamSynchronize` (extended APIs: `cudaEventRecord` then
    /// `cudaEventSynchronize`), ROCm one blocking `hipMemcpyWithStream`. Returns when the
    /// host started to block.
    fn blocking_copy(&mut self, frame: &Frame) -> u64 {
        self.join_side_stream();
        self.host.open_frame(frame_name(&self.profile, frame));
        let external = self.host.external();
        let op_start = self.host.cpu;
        self.host.cpu += 1_500;
        let copy_start = self.host.cpu;
        let correlation = self.host.correlation();
        let gpu_start = self.gpu.max(copy_start + LAUNCH_LATENCY_NS);
        let gpu_dur = 3_000;
        let gpu_end = gpu_start + gpu_dur;
        let (name, blocked_from) = if self.rocm() {
            let end = gpu_end + 1_500;
            self.host.push(
                copy_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipMemcpyWithStream\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"cid\": 153, \"correlation\": {correlation}, \"bytes\": \"256\", \"kind\": \"2\"}}}}",
                    us(copy_start),
                    us(end - copy_start)
                ),
            );
            self.host.cpu = end;
            ("Memcpy DtoH (Device -> Host)", copy_start)
        } else {
            let call_dur = 5_000;
            self.host.push(
                copy_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"cbid\": 41, \"correlation\": {correlation}}}}}",
                    us(copy_start),
                    us(call_dur)
                ),
            );
            let mut sync_start = copy_start + call_dur + 500;
            let (sync_name, sync_cbid) = if self.scenario.cuda_apis == CudaApis::Extended {
                // Record an event after the copy and wait for that event.
                let record_correlation = self.host.correlation();
                self.host.push(
                    sync_start,
                    format!(
                        "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaEventRecord\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": 2.000, \"args\": {{\"cbid\": 135, \"correlation\": {record_correlation}}}}}",
                        us(sync_start)
                    ),
                );
                sync_start += 2_500;
                ("cudaEventSynchronize", 133)
            } else {
                ("cudaStreamSynchronize", 131)
            };
            let sync_end = gpu_end.max(sync_start) + 1_500;
            let sync_correlation = self.host.correlation();
            self.host.push(
                sync_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{sync_name}\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"cbid\": {sync_cbid}, \"correlation\": {sync_correlation}}}}}",
                    us(sync_start),
                    us(sync_end - sync_start)
                ),
            );
            self.host.cpu = sync_end;
            ("Memcpy DtoH (Device -> Pageable)", sync_start)
        };
        self.step_first_launch.get_or_insert(copy_start);
        self.gpu_op(
            name,
            "gpu_memcpy",
            STREAM,
            gpu_start,
            gpu_dur,
            Some(external),
            correlation,
            copy_start,
        );
        self.host.cpu += 500;
        self.host.push(
            op_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::copy_\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Record function id\": 0}}}}",
                us(op_start),
                us(self.host.cpu - op_start)
            ),
        );
        self.host.close_frame(true);
        blocked_from
    }

    /// The compute stream waits for the communication stream (the engines' event wait
    /// before using an all-reduce's output), so what follows starts on a drained GPU.
    fn join_side_stream(&mut self) {
        self.gpu = self.gpu.max(self.side);
    }

    /// The model's forward frames around a run of launches.
    fn open_model_frames(&mut self) {
        let model = self.profile.model[0];
        self.host.open_frame(MODULE_CALL.to_string());
        self.host.open_frame(frame_name(&self.profile, &model));
    }

    /// The next op of the cycle; `kernels_only` skips copies.
    fn next_op(&mut self, kernels_only: bool) -> Op {
        loop {
            let op = self.ops[self.next_op % self.ops.len()];
            self.next_op += 1;
            if !kernels_only || op.issue == Issue::Kernel {
                return op;
            }
        }
    }

    /// One eager launch: module call and op frames, the CPU op, the runtime call, the GPU
    /// op `wait` ns after it could have started. Returns the launch call's start and the
    /// GPU op's start.
    fn launch(&mut self, op: &Op, dur: u64, wait: u64) -> (u64, u64) {
        self.launch_on(op, dur, wait, false)
    }

    /// [`Self::launch`] on the communication stream when `side`; it starts after the
    /// compute queued so far (its input) and overlaps the compute launched after it.
    fn launch_on(&mut self, op: &Op, dur: u64, wait: u64, side: bool) -> (u64, u64) {
        self.host.open_frame(MODULE_CALL.to_string());
        self.host.open_frame(frame_name(&self.profile, &op.frame));
        let external = self.host.external();
        let correlation = self.host.correlation();
        let op_start = self.host.cpu;
        self.host.cpu += 1_500;
        let launch_start = self.host.cpu;
        let launch_dur = self.rng.between((3_000, 6_000));
        self.host.cpu += launch_dur + 500;
        self.host.push(
            op_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Record function id\": 0}}}}",
                json_str(op.cpu_op),
                us(op_start),
                us(self.host.cpu - op_start)
            ),
        );
        let (cat, args, gpu_cat, gpu_name) = self.launch_call(op, external, correlation);
        self.host.push(
            launch_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"{cat}\", {args}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}}}",
                us(launch_start),
                us(launch_dur)
            ),
        );
        self.step_first_launch.get_or_insert(launch_start);
        let floor = if side {
            self.side.max(self.gpu)
        } else {
            self.gpu
        };
        let start = floor.max(launch_start + LAUNCH_LATENCY_NS) + wait;
        let stream = if side { COMM_STREAM } else { STREAM };
        self.gpu_op(
            gpu_name,
            gpu_cat,
            stream,
            start,
            dur,
            Some(external),
            correlation,
            launch_start,
        );
        self.host.cpu += 300;
        self.host.close_frame(true);
        self.host.close_frame(true);
        (launch_start, start)
    }

    /// The runtime (or driver) call that issues `op`: its category, its name and args
    /// as JSON members, and the GPU event's category and name.
    fn launch_call(
        &mut self,
        op: &Op,
        external: u64,
        correlation: u64,
    ) -> (&'static str, String, &'static str, &'static str) {
        self.launches += 1;
        let extended = self.scenario.cuda_apis == CudaApis::Extended;
        match (self.rocm(), op.issue) {
            (false, Issue::Kernel) => {
                let (cat, name, cbid, external) = match (extended, self.launches % 3) {
                    (true, 0) => ("cuda_runtime", "cudaLaunchKernelExC", 430, Some(external)),
                    // Driver launches (JIT-compiled kernels) carry no External id.
                    (true, 1) => ("cuda_driver", "cuLaunchKernelEx", 652, None),
                    _ => ("cuda_runtime", "cudaLaunchKernel", 211, Some(external)),
                };
                let external = external
                    .map(|e| format!("\"External id\": {e}, "))
                    .unwrap_or_default();
                let args = format!("\"name\": \"{name}\", \"args\": {{{external}\"cbid\": {cbid}, \"correlation\": {correlation}}}");
                (cat, args, "kernel", op.raw)
            }
            (false, Issue::MemcpyDtoD) if extended => {
                let args = format!("\"name\": \"cudaMemsetAsync\", \"args\": {{\"External id\": {external}, \"cbid\": 51, \"correlation\": {correlation}}}");
                ("cuda_runtime", args, "gpu_memset", "Memset (Device)")
            }
            (false, Issue::MemcpyDtoD) => {
                let args = format!("\"name\": \"cudaMemcpyAsync\", \"args\": {{\"External id\": {external}, \"cbid\": 41, \"correlation\": {correlation}}}");
                ("cuda_runtime", args, "gpu_memcpy", op.raw)
            }
            (true, Issue::Kernel) => {
                // hipBLASLt's Tensile kernels go through the module API.
                let (name, cid) = if op.raw.starts_with("Cijk_") {
                    ("hipExtModuleLaunchKernel", 65)
                } else {
                    ("hipLaunchKernel", 107)
                };
                let args = format!(
                    "\"name\": \"{name}\", \"args\": {{\"External id\": {external}, \"kernel\": {}, \"cid\": {cid}, \"correlation\": {correlation}, \"grid\": [304, 1, 1], \"block\": [256, 1, 1], \"shared memory\": 0}}",
                    json_str(op.raw)
                );
                ("cuda_runtime", args, "kernel", op.raw)
            }
            (true, Issue::MemcpyDtoD) => {
                let args = format!("\"name\": \"hipMemcpyAsync\", \"args\": {{\"External id\": {external}, \"cid\": 134, \"correlation\": {correlation}, \"bytes\": \"262144\", \"kind\": \"3\"}}");
                ("cuda_runtime", args, "gpu_memcpy", op.raw)
            }
        }
    }

    #[expect(clippy::too_many_arguments, reason = "one GPU event's fields")]
    fn gpu_op(
        &mut self,
        name: &str,
        cat: &str,
        stream: u64,
        start: u64,
        dur: u64,
        external: Option<u64>,
        correlation: u64,
        launch_start: u64,
    ) {
        let external_arg = external
            .map(|e| format!("\"External id\": {e}, "))
            .unwrap_or_default();
        let extra = match (cat, self.rocm(), external.is_some()) {
            ("kernel", true, true) => ", \"kind\": \"Dispatch Kernel\", \"grid\": [304, 1, 1], \"block\": [256, 1, 1]",
            // ROCm's replayed graph nodes.
            ("kernel", true, false) => ", \"kind\": \"Dispatch Task\"",
            ("kernel", false, _) => ", \"registers per thread\": 128, \"shared memory\": 49152, \"grid\": [132, 1, 1], \"block\": [384, 1, 1]",
            _ => ", \"bytes\": 256, \"memory bandwidth (GB/s)\": 0.08",
        };
        self.host.push_gpu_op(&GpuOpEvent {
            cat,
            name,
            stream,
            start,
            dur,
            launch_start,
            correlation,
            args: &format!("{external_arg}\"device\": 0, \"stream\": {stream}, \"correlation\": {correlation}{extra}"),
        });
        self.step_gpu_start.get_or_insert(start);
        let part = match cat {
            "kernel" if self.is_communication(name) => 1,
            "kernel" => 0,
            _ => 2,
        };
        self.step_ops.push((start, start + dur, part));
        self.busy.push((start, start + dur));
        if stream == COMM_STREAM {
            self.side = start + dur;
        } else {
            self.gpu = start + dur;
        }
    }

    /// A kernel is communication when the layer op it comes from is an all-reduce.
    fn is_communication(&self, kernel: &str) -> bool {
        self.ops.iter().any(|op| {
            op.raw == kernel
                && (op.cpu_op.contains("all_reduce") || op.cpu_op.contains("allreduce"))
        })
    }

    fn truth(&self, path: &Path) -> TimelineTruth {
        let busy_ns = union_ns(&self.busy);
        TimelineTruth {
            scenario: self.scenario.name.to_string(),
            framework: self.scenario.engine.name().to_string(),
            trace: path.to_path_buf(),
            stage: self.scenario.stage_label.to_string(),
            trace_start_ns: EPOCH_NS,
            gpu_start_ns: self.busy.iter().map(|b| b.0).min().unwrap_or(0),
            gpu_end_ns: self.gpu.max(self.side),
            busy_ns,
            steps: self.steps.clone(),
            delays: self.delays.clone(),
            foreign_frames: if self.scenario.background_thread {
                vec![self.frame_truth(&self.frames.background)]
            } else {
                Vec::new()
            },
        }
    }

    fn frame_truth(&self, frame: &Frame) -> FrameTruth {
        FrameTruth {
            name: frame_name(&self.profile, frame),
            path: format!("{}{}", self.profile.location_prefix, frame.path),
            line: frame.line,
            function: frame.func.to_string(),
        }
    }
}

/// ns covered by at least one of `intervals`.
fn union_ns(intervals: &[(u64, u64)]) -> u64 {
    let mut sorted = intervals.to_vec();
    sorted.sort_unstable();
    let (mut total, mut reach) = (0, 0);
    for (start, end) in sorted {
        let from = start.max(reach);
        if end > from {
            total += end - from;
        }
        reach = reach.max(end);
    }
    total
}

/// A step's busy time split as the issue defines it: compute where a compute kernel ran,
/// communication where only communication ran, copies where only a copy or memset ran.
fn busy_parts(ops: &[(u64, u64, usize)]) -> [u64; 3] {
    let upto = |kind: usize| {
        let spans: Vec<(u64, u64)> = ops
            .iter()
            .filter(|o| o.2 <= kind)
            .map(|o| (o.0, o.1))
            .collect();
        union_ns(&spans)
    };
    [upto(0), upto(1) - upto(0), upto(2) - upto(1)]
}

/// The whole file: Kineto's top-level keys for the platform, then the events in time
/// order.
fn trace_text(scenario: &Scenario, path: &Path, events: &[Event]) -> String {
    let mut order: Vec<&Event> = events.iter().collect();
    order.sort_by_key(|e| e.ts);
    let device = match scenario.platform {
        Platform::Cuda => "\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045411840, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}],\n  \"cuda_runtime_version\": 12080,",
        Platform::Rocm => "\"deviceProperties\": [{\"id\": 0, \"name\": \"AMD Instinct MI300X\", \"totalGlobalMem\": 206141652992, \"computeMajor\": 9, \"computeMinor\": 4, \"warpSize\": 64, \"numSms\": 304}],\n  \"roctracer_version\": 4.1,\n  \"hip_runtime_version\": 70253211,",
    };
    let mut text = String::new();
    let _ = write!(
        text,
        "{{\n  \"schemaVersion\": 1,\n  {device}\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 1}},\n  \"with_stack\": 1,\n  \"record_shapes\": 1,\n  \"trace_id\": \"{:016X}\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1761000000000000000,\n  \"traceEvents\": [\n",
        scenario.seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
    );
    events_and_end(&mut text, &order, path);
    text
}
