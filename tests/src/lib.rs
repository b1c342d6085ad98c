//! Fixture traces with known ground truth, for end-to-end tests of llm-triage.
//!
//! `write_fixture` writes one engine-shaped Kineto trace (SGLang, vLLM, TensorRT-LLM
//! or TokenSpeed): Python frames nested per thread, CPU ops with External ids,
//! `cudaLaunchKernel`/`cudaMemcpyAsync` with correlations, kernels on the GPU pid with
//! stream, correlation and External id, ac2g flows, optional CUDA-graph replay (one
//! `cudaGraphLaunch` whose correlation every replayed kernel carries) and an optional
//! side stream whose NCCL all-reduce overlaps compute. It returns what a correct
//! analysis must find: per stage and canonical kernel name, the GPU time, the count,
//! the Python sites and the CPU ops.
//!
//! Times are written in µs with exactly 3 decimals and are integers in ns internally,
//! so the ground truth is exact. Everything is deterministic in `FixtureSpec::seed`.

pub mod compiled_tp;
pub mod diff_pairs;
pub mod emulator;
mod engines;
pub mod graph_pairs;
pub mod names;
pub mod ranks;
pub mod timeline;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

pub use engines::{file_name, Frame};
use engines::{profile, Issue, Op, Profile, GRAPH_REPLAY, MODULE_CALL};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    Sglang,
    Vllm,
    Trtllm,
    Tokenspeed,
}

impl Engine {
    /// The plugin name a correct `--framework auto` verdict gives.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sglang => "sglang",
            Engine::Vllm => "vllm",
            Engine::Trtllm => "trtllm",
            Engine::Tokenspeed => "tokenspeed",
        }
    }

    pub const ALL: [Engine; 4] = [
        Engine::Sglang,
        Engine::Vllm,
        Engine::Trtllm,
        Engine::Tokenspeed,
    ];
}

/// What the captured steps were. `Mixed` is one extend step then one decode step in a
/// file whose name names no stage (only annotations tell them apart).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum StageKind {
    Extend,
    Decode,
    Mixed,
}

#[derive(Clone, Debug)]
pub struct FixtureSpec {
    pub engine: Engine,
    pub stage: StageKind,
    /// Decoder layers per step (13 GPU ops each).
    pub layers: usize,
    /// Decode steps replay one CUDA graph instead of launching each kernel.
    pub graph_replay: bool,
    /// 1: everything on the compute stream; 2: the MLP all-reduce runs on a
    /// communication stream and overlaps the next layer's compute.
    pub streams: usize,
    /// Python frames recorded (torch.profiler `with_stack=True`).
    pub with_stack: bool,
    pub seed: u64,
    pub gzip: bool,
    pub tp_rank: u32,
    /// Requests per step (shows in the stage annotation).
    pub batch_size: usize,
    /// Written as `server_args.json` beside the trace when given.
    pub server_args: Option<serde_json::Value>,
    /// After the layers of each eager step, the engine's logits all-gather (vLLM's
    /// `LogitsProcessor._gather_logits`): a collective that only looks like the ones
    /// async TP fuses. Off by default, so no other fixture changes.
    pub logits_all_gather: bool,
}

impl FixtureSpec {
    /// A small, realistic default: 2 layers, one stream, stacks on, gzip, rank 0,
    /// decode replayed from a CUDA graph.
    pub fn new(engine: Engine, stage: StageKind) -> Self {
        FixtureSpec {
            engine,
            stage,
            layers: 2,
            graph_replay: stage == StageKind::Decode,
            streams: 1,
            with_stack: true,
            seed: 1,
            gzip: true,
            tp_rank: 0,
            batch_size: 4,
            server_args: None,
            logits_all_gather: false,
        }
    }
}

/// One canonical kernel name within one stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTruth {
    /// Every raw trace name aggregated here.
    pub raw_names: Vec<String>,
    pub total_ns: u64,
    pub count: u64,
    /// Expected location (`path:line function`, or `unresolved`) -> (ns, count).
    pub sites: BTreeMap<String, (u64, u64)>,
    /// Expected CPU op (or launch name for graph replays) -> count.
    pub cpu_ops: BTreeMap<String, u64>,
}

impl KernelTruth {
    /// The site with the most GPU time (ties: the smaller text).
    pub fn location(&self) -> &str {
        dominant(self.sites.iter().map(|(k, v)| (k, v.0)))
    }

    /// The most frequent CPU op.
    pub fn cpu_op(&self) -> &str {
        dominant(self.cpu_ops.iter().map(|(k, v)| (k, *v)))
    }
}

fn dominant<'a>(items: impl Iterator<Item = (&'a String, u64)>) -> &'a str {
    let mut best: Option<(&String, u64)> = None;
    for (key, value) in items {
        if best.is_none_or(|(_, b)| value > b) {
            best = Some((key, value));
        }
    }
    best.map(|(k, _)| k.as_str()).unwrap_or("")
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageTruth {
    pub kernels: BTreeMap<String, KernelTruth>,
    /// Sum of every GPU op's duration in the stage (streams add up).
    pub total_gpu_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroundTruth {
    /// Plugin name of the engine that wrote the trace.
    pub framework: &'static str,
    pub path: PathBuf,
    /// Keyed by section label: `extend/prefill`, `decode` or `all`.
    pub stages: BTreeMap<String, StageTruth>,
    /// Events in `traceEvents`.
    pub events: usize,
}

impl GroundTruth {
    pub fn stage(&self, label: &str) -> Option<&StageTruth> {
        self.stages.get(label)
    }
}

/// Writes the trace (and `server_args.json` when the spec has some) into `dir`.
/// The 16 small fixtures of the end-to-end ground-truth test: every engine, extend and
/// decode, eager on one stream and (decode only) graph replay on two streams.
pub fn matrix_specs() -> Vec<FixtureSpec> {
    let mut specs = Vec::new();
    for engine in Engine::ALL {
        for stage in [StageKind::Extend, StageKind::Decode] {
            for (graph_replay, streams) in [(false, 1), (true, 2)] {
                let mut spec = FixtureSpec::new(engine, stage);
                spec.graph_replay = graph_replay && stage == StageKind::Decode;
                spec.streams = streams;
                spec.seed = 7 + specs.len() as u64;
                specs.push(spec);
            }
        }
    }
    specs
}

/// Writes `matrix_specs()` as `dir/case<N>/…` and returns their ground truths in order.
pub fn write_matrix(dir: &Path) -> std::io::Result<Vec<GroundTruth>> {
    matrix_specs()
        .iter()
        .enumerate()
        .map(|(i, spec)| Ok(write_fixture(&dir.join(format!("case{i}")), spec)?.1))
        .collect()
}

pub fn write_fixture(dir: &Path, spec: &FixtureSpec) -> std::io::Result<(PathBuf, GroundTruth)> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(file_name(
        spec.engine,
        spec.stage,
        spec.tp_rank,
        spec.seed,
        spec.gzip,
    ));
    let (events, stages) = generate(spec);
    let text = trace_text(spec, &path, &events);
    if spec.gzip {
        let file = std::fs::File::create(&path)?;
        let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        encoder.write_all(text.as_bytes())?;
        encoder.finish()?;
    } else {
        std::fs::write(&path, text.as_bytes())?;
    }
    if let Some(args) = &spec.server_args {
        let body = serde_json::to_string_pretty(args).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("server_args.json"), body + "\n")?;
    }
    let truth = GroundTruth {
        framework: spec.engine.name(),
        path: path.clone(),
        stages,
        events: events.len(),
    };
    Ok((path, truth))
}

/// The section label a step of `kind` lands in, for a file of `file_stage`.
fn stage_label(file_stage: StageKind, step: StageKind, annotated: bool) -> &'static str {
    match (file_stage, step) {
        (StageKind::Mixed, _) if !annotated => "all",
        (_, StageKind::Decode) => "decode",
        _ => "extend/prefill",
    }
}

pub(crate) const CPU_PID: u64 = 41_000;
pub(crate) const GPU_PID: u64 = 0;
const COMPUTE_STREAM: u64 = 7;
const COMM_STREAM: u64 = 21;
/// Where the clock starts, in ns: 13 integer digits in µs, like real Kineto traces.
const EPOCH_NS: u64 = 1_700_000_000_000_000;

/// A deterministic xorshift generator (no dependency; only reproducibility matters).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn between(&mut self, (lo, hi): (u64, u64)) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// One trace event, already as JSON text, with its start for ordering.
struct Event {
    ts: u64,
    json: String,
}

/// A `ph: M` metadata event naming a process (`tid` `None`) or a thread, stamped at
/// `epoch_ns`, sorted first.
fn metadata_event(epoch_ns: u64, pid: u64, tid: Option<u64>, what: &str, value: &str) -> Event {
    let tid = tid.map(|t| format!(", \"tid\": {t}")).unwrap_or_default();
    let json = format!(
        "{{\"name\": \"{what}\", \"ph\": \"M\", \"ts\": {ts}, \"pid\": {pid}{tid}, \"args\": {{\"name\": {value}}}}}",
        ts = us(epoch_ns),
        value = json_str(value)
    );
    Event { ts: 0, json }
}

/// The metadata an engine-style trace starts with: the CPU process (`process_name`) and
/// its launching thread, the GPU process and its `stream`.
fn engine_metadata(epoch_ns: u64, process_name: &str, stream: u64) -> [Event; 4] {
    [
        metadata_event(epoch_ns, CPU_PID, None, "process_name", process_name),
        metadata_event(epoch_ns, CPU_PID, Some(CPU_PID), "thread_name", "python3"),
        metadata_event(epoch_ns, GPU_PID, None, "process_name", "python3"),
        metadata_event(
            epoch_ns,
            GPU_PID,
            Some(stream),
            "thread_name",
            &format!("stream {stream}"),
        ),
    ]
}

/// The state of one generation: clocks, id counters, the open frames, the output.
struct Writer<'a> {
    spec: &'a FixtureSpec,
    profile: Profile,
    rng: Rng,
    host: HostTrack,
    streams: BTreeMap<u64, u64>,
    stages: BTreeMap<String, StageTruth>,
}

fn generate(spec: &FixtureSpec) -> (Vec<Event>, BTreeMap<String, StageTruth>) {
    let mut w = Writer {
        spec,
        profile: profile(spec.engine),
        rng: Rng::new(spec.seed),
        host: HostTrack::new(EPOCH_NS),
        streams: BTreeMap::new(),
        stages: BTreeMap::new(),
    };
    let steps: &[StageKind] = match spec.stage {
        StageKind::Mixed => &[StageKind::Extend, StageKind::Decode],
        StageKind::Extend => &[StageKind::Extend],
        StageKind::Decode => &[StageKind::Decode],
    };
    w.metadata();
    for &step in steps {
        w.step(step);
    }
    (w.host.events, w.stages)
}

impl Writer<'_> {
    fn metadata(&mut self) {
        let name = self.profile.process_name;
        let meta = |pid: u64, tid: Option<u64>, what: &str, value: &str| {
            let tid = tid.map(|t| format!(", \"tid\": {t}")).unwrap_or_default();
            format!(
                "{{\"name\": \"{what}\", \"ph\": \"M\", \"ts\": {ts}, \"pid\": {pid}{tid}, \"args\": {{\"name\": {value}}}}}",
                ts = us(EPOCH_NS),
                value = json_str(value)
            )
        };
        let mut lines = vec![
            meta(CPU_PID, None, "process_name", name),
            meta(CPU_PID, Some(CPU_PID), "thread_name", "python3"),
            meta(GPU_PID, None, "process_name", "python3"),
            meta(
                GPU_PID,
                Some(COMPUTE_STREAM),
                "thread_name",
                &format!("stream {COMPUTE_STREAM}"),
            ),
        ];
        if self.spec.streams > 1 {
            lines.push(meta(
                GPU_PID,
                Some(COMM_STREAM),
                "thread_name",
                &format!("stream {COMM_STREAM}"),
            ));
        }
        for json in lines {
            self.host.events.push(Event { ts: 0, json });
        }
    }

    /// One forward step: outer frames, the step annotation, then every layer's ops
    /// (launched one by one, or replayed from one CUDA graph).
    fn step(&mut self, step: StageKind) {
        let annotation = (self.profile.step_annotation)(step, self.spec.batch_size);
        let label = stage_label(self.spec.stage, step, annotation.is_some());
        let step_start = self.host.cpu;
        self.host.cpu += 2_000;
        let outer = (self.profile.outer)(step);
        for frame in &outer {
            let name = frame_name(&self.profile, frame);
            self.host.open_frame(name);
        }
        let ops: Vec<Op> = (0..self.spec.layers)
            .flat_map(|_| (self.profile.ops)(step))
            .collect();
        let gpu_start = self.gpu_clock();
        if self.spec.graph_replay && step == StageKind::Decode {
            let forwarding = self.profile.forwarding;
            let innermost = outer
                .iter()
                .rev()
                .find(|f| !forwarding.contains(&f.func))
                .copied();
            self.replay(label, &ops, innermost);
        } else {
            self.launch_layers(label, step, &ops);
            if self.spec.logits_all_gather {
                // vLLM computes logits outside its CUDA graphs, so only eager steps.
                self.launch(label, step, &engines::logits_all_gather());
            }
        }
        while !self.host.open.is_empty() {
            self.host.close_frame(self.spec.with_stack);
        }
        self.host.cpu += 2_000;
        let gpu_end = self.gpu_clock();
        if let Some(name) = annotation {
            let external = self.host.external();
            self.host.push(
                step_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}}}}}",
                    json_str(&name),
                    us(step_start),
                    us(self.host.cpu - step_start)
                ),
            );
            self.host.push(
                gpu_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": {}, \"pid\": {GPU_PID}, \"tid\": {COMPUTE_STREAM}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}}}}}",
                    json_str(&name),
                    us(gpu_start),
                    us(gpu_end - gpu_start)
                ),
            );
        }
        // The next step starts after this one's GPU work (the scheduler syncs).
        self.host.cpu = self.host.cpu.max(gpu_end) + 20_000;
    }

    fn launch_layers(&mut self, label: &str, step: StageKind, ops: &[Op]) {
        let per_layer = ops.len() / self.spec.layers.max(1);
        let model = self.profile.model;
        let model_frame = frame_name(&self.profile, &model[0]);
        self.host.open_frame(MODULE_CALL.to_string());
        self.host.open_frame(model_frame);
        for (layer, chunk) in ops.chunks(per_layer.max(1)).enumerate() {
            let _ = layer;
            let layer_frame = frame_name(&self.profile, &model[1]);
            self.host.open_frame(MODULE_CALL.to_string());
            self.host.open_frame(layer_frame);
            for op in chunk {
                self.launch(label, step, op);
            }
            self.host.close_frame(self.spec.with_stack);
            self.host.close_frame(self.spec.with_stack);
        }
        self.host.close_frame(self.spec.with_stack);
        self.host.close_frame(self.spec.with_stack);
    }

    /// One op: module call frame, the op's frame, the CPU op, the runtime call, the
    /// GPU op.
    fn launch(&mut self, label: &str, step: StageKind, op: &Op) {
        let site_name = frame_name(&self.profile, &op.frame);
        self.host.open_frame(MODULE_CALL.to_string());
        self.host.open_frame(site_name);
        let external = self.host.external();
        let correlation = self.host.correlation();
        let op_start = self.host.cpu;
        self.host.cpu += 1_500;
        let launch_start = self.host.cpu;
        let launch_dur = self.rng.between((3_000, 6_000));
        let runtime = match op.issue {
            Issue::Kernel => "cudaLaunchKernel",
            Issue::MemcpyDtoD => "cudaMemcpyAsync",
        };
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
        self.host.push(
            launch_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{runtime}\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"cbid\": 211, \"correlation\": {correlation}}}}}",
                us(launch_start),
                us(launch_dur)
            ),
        );
        let stream = self.stream_of(op);
        let dur = self.duration(op, step);
        let start = self.stream_clock(stream).max(launch_start + 4_000);
        self.gpu_op(
            op,
            stream,
            start,
            dur,
            Some(external),
            correlation,
            launch_start,
        );
        self.host.cpu += 300;
        self.host.close_frame(self.spec.with_stack);
        self.host.close_frame(self.spec.with_stack);
        let location = if self.spec.with_stack {
            self.location(&op.frame)
        } else {
            "unresolved".to_string()
        };
        self.record(label, op, dur, location, op.cpu_op);
    }

    /// A CUDA-graph replay: the graph runner frames, one `cudaGraphLaunch`, then every
    /// op on the GPU carrying that launch's correlation and no External id.
    fn replay(&mut self, label: &str, ops: &[Op], innermost: Option<Frame>) {
        let runner = self.profile.graph_runner;
        let runner_name = frame_name(&self.profile, &runner);
        self.host.open_frame(runner_name);
        self.host.open_frame(GRAPH_REPLAY.to_string());
        let correlation = self.host.correlation();
        let launch_start = self.host.cpu + 1_000;
        let launch_dur = 12_000;
        self.host.push(
            launch_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"cbid\": 311, \"correlation\": {correlation}}}}}",
                us(launch_start),
                us(launch_dur)
            ),
        );
        self.host.cpu = launch_start + launch_dur + 1_000;
        let mut start_floor = launch_start + 6_000;
        for op in ops {
            let stream = self.stream_of(op);
            let dur = self.duration(op, StageKind::Decode);
            let start = self.stream_clock(stream).max(start_floor);
            self.gpu_op(op, stream, start, dur, None, correlation, launch_start);
            if stream == COMPUTE_STREAM {
                start_floor = start + dur + 1_000;
            }
            let location = match (self.spec.with_stack, innermost) {
                (true, Some(frame)) => self.location(&frame),
                _ => "unresolved".to_string(),
            };
            self.record(label, op, dur, location, "cudaGraphLaunch");
        }
        self.host.close_frame(self.spec.with_stack);
        self.host.close_frame(self.spec.with_stack);
    }

    #[expect(clippy::too_many_arguments)]
    fn gpu_op(
        &mut self,
        op: &Op,
        stream: u64,
        start: u64,
        dur: u64,
        external: Option<u64>,
        correlation: u64,
        launch_start: u64,
    ) {
        let external = external
            .map(|e| format!("\"External id\": {e}, "))
            .unwrap_or_default();
        let (cat, extra) = match op.issue {
            Issue::Kernel => (
                "kernel",
                ", \"registers per thread\": 128, \"shared memory\": 49152, \"grid\": [132, 1, 1], \"block\": [384, 1, 1]",
            ),
            Issue::MemcpyDtoD => ("gpu_memcpy", ", \"bytes\": 262144, \"memory bandwidth (GB/s)\": 1200.0"),
        };
        self.host.push_gpu_op(&GpuOpEvent {
            cat,
            name: op.raw,
            stream,
            start,
            dur,
            launch_start,
            correlation,
            args: &format!("{external}\"device\": 0, \"stream\": {stream}, \"correlation\": {correlation}{extra}"),
        });
        self.streams.insert(stream, start + dur);
    }

    fn record(&mut self, label: &str, op: &Op, dur: u64, location: String, cpu_op: &str) {
        let stage = self.stages.entry(label.to_string()).or_default();
        stage.total_gpu_ns += dur;
        let kernel = stage.kernels.entry(op.canonical.to_string()).or_default();
        if !kernel.raw_names.iter().any(|r| r == op.raw) {
            kernel.raw_names.push(op.raw.to_string());
        }
        kernel.total_ns += dur;
        kernel.count += 1;
        let site = kernel.sites.entry(location).or_default();
        site.0 += dur;
        site.1 += 1;
        *kernel.cpu_ops.entry(cpu_op.to_string()).or_default() += 1;
    }

    fn duration(&mut self, op: &Op, step: StageKind) -> u64 {
        let range = match step {
            StageKind::Decode => op.decode_ns,
            _ => op.extend_ns,
        };
        self.rng.between(range)
    }

    fn stream_of(&self, op: &Op) -> u64 {
        if op.side_stream && self.spec.streams > 1 {
            COMM_STREAM
        } else {
            COMPUTE_STREAM
        }
    }

    fn stream_clock(&self, stream: u64) -> u64 {
        self.streams.get(&stream).copied().unwrap_or(0)
    }

    fn gpu_clock(&self) -> u64 {
        self.streams
            .values()
            .copied()
            .max()
            .unwrap_or(self.host.cpu)
            .max(self.host.cpu)
    }

    /// The location a correct analysis reports for `frame`: `path:line function`, the path
    /// from the source root on.
    fn location(&self, frame: &Frame) -> String {
        format!(
            "{}{}:{} {}",
            self.profile.location_prefix, frame.path, frame.line, frame.func
        )
    }
}

/// The host side of a fixture being written, shared by both writers (this file's
/// `generate` and the timeline scenarios): the CPU clock, the id counters, the open
/// Python frames and the events so far.
pub(crate) struct HostTrack {
    pub(crate) cpu: u64,
    next_external: u64,
    next_correlation: u64,
    next_python_id: u64,
    /// Open Python frames: start, name, Python id.
    pub(crate) open: Vec<(u64, String, u64)>,
    pub(crate) events: Vec<Event>,
}

impl HostTrack {
    pub(crate) fn new(cpu: u64) -> Self {
        HostTrack {
            cpu,
            next_external: 1000,
            next_correlation: 50_000,
            next_python_id: 1,
            open: Vec::new(),
            events: Vec::new(),
        }
    }

    pub(crate) fn external(&mut self) -> u64 {
        self.next_external += 1;
        self.next_external
    }

    pub(crate) fn correlation(&mut self) -> u64 {
        self.next_correlation += 1;
        self.next_correlation
    }

    /// A fresh Python id (also for a frame another thread runs).
    pub(crate) fn python_id(&mut self) -> u64 {
        self.next_python_id += 1;
        self.next_python_id
    }

    pub(crate) fn open_frame(&mut self, name: String) {
        self.cpu += 400;
        let id = self.python_id();
        self.open.push((self.cpu, name, id));
    }

    /// Closes the innermost frame, writing its `python_function` event when stacks are
    /// `recorded`.
    pub(crate) fn close_frame(&mut self, recorded: bool) {
        if let Some((start, name, python_id)) = self.open.pop() {
            self.cpu += 300;
            let parent = self.open.last().map(|f| f.2).unwrap_or(0);
            if recorded {
                self.push(
                    start,
                    format!(
                        "{{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"Python id\": {python_id}, \"Python parent id\": {parent}}}}}",
                        json_str(&name),
                        us(start),
                        us(self.cpu - start)
                    ),
                );
            }
        }
    }

    pub(crate) fn push(&mut self, ts: u64, json: String) {
        self.events.push(Event { ts, json });
    }

    /// A GPU op's event and Kineto's launch-to-kernel flow arrows (`ac2g` start and end,
    /// which readers must ignore).
    pub(crate) fn push_gpu_op(&mut self, op: &GpuOpEvent<'_>) {
        let GpuOpEvent {
            cat,
            name,
            stream,
            start,
            dur,
            launch_start,
            correlation,
            args,
        } = *op;
        self.push(
            start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": {}, \"pid\": {GPU_PID}, \"tid\": {stream}, \"ts\": {}, \"dur\": {}, \"args\": {{{args}}}}}",
                json_str(name),
                us(start),
                us(dur)
            ),
        );
        self.push(
            launch_start,
            format!(
                "{{\"ph\": \"s\", \"id\": {correlation}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}",
                us(launch_start)
            ),
        );
        self.push(
            start,
            format!(
                "{{\"ph\": \"f\", \"id\": {correlation}, \"pid\": {GPU_PID}, \"tid\": {stream}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                us(start)
            ),
        );
    }
}

/// What [`HostTrack::push_gpu_op`] writes: `args` is the text inside the event's `args`
/// object.
#[derive(Clone, Copy)]
pub(crate) struct GpuOpEvent<'a> {
    pub(crate) cat: &'a str,
    pub(crate) name: &'a str,
    pub(crate) stream: u64,
    pub(crate) start: u64,
    pub(crate) dur: u64,
    pub(crate) launch_start: u64,
    pub(crate) correlation: u64,
    pub(crate) args: &'a str,
}

/// The frame text a trace shows: `<path>(<line>): <function>`.
pub(crate) fn frame_name(profile: &Profile, frame: &Frame) -> String {
    format!(
        "{}{}({}): {}",
        profile.frame_prefix, frame.path, frame.line, frame.func
    )
}

/// The rest of a trace document after its header: the events in `order`, one a line,
/// then the closing `traceName`, as torch.profiler writes them.
pub(crate) fn events_and_end(text: &mut String, order: &[&Event], path: &Path) {
    for (i, event) in order.iter().enumerate() {
        text.push_str("  ");
        text.push_str(&event.json);
        text.push_str(if i + 1 < order.len() { ",\n" } else { "\n" });
    }
    let _ = write!(
        text,
        "  ],\n  \"traceName\": {}\n}}\n",
        json_str(&path.display().to_string())
    );
}

/// ns as µs with exactly 3 decimals.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn json_str(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// The whole trace file: Kineto's top-level keys, then the events in time order.
fn trace_text(spec: &FixtureSpec, path: &Path, events: &[Event]) -> String {
    let mut order: Vec<&Event> = events.iter().collect();
    order.sort_by_key(|e| e.ts);
    let mut text = String::new();
    let world = spec
        .server_args
        .as_ref()
        .and_then(|a| a.get("tp_size").or_else(|| a.get("tensor_parallel_size")))
        .and_then(|v| v.as_u64())
        .unwrap_or(1);
    let _ = write!(
        text,
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045411840, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {world}}},\n  \"with_stack\": {},\n  \"record_shapes\": 1,\n  \"cuda_runtime_version\": 12080,\n  \"trace_id\": \"{:016X}\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1761000000000000000,\n  \"traceEvents\": [\n",
        spec.tp_rank,
        u8::from(spec.with_stack),
        spec.seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
    );
    events_and_end(&mut text, &order, path);
    text
}

#[cfg(test)]
mod recount;

#[cfg(test)]
mod tests {
    use super::*;
    use recount::{canonical_name, load, recount};

    fn file_stage(spec: &FixtureSpec) -> Option<&'static str> {
        match spec.stage {
            StageKind::Extend => Some("extend/prefill"),
            StageKind::Decode => Some("decode"),
            StageKind::Mixed => None,
        }
    }

    fn check(spec: &FixtureSpec) -> GroundTruth {
        let dir = tempfile::tempdir().unwrap();
        let (path, truth) = write_fixture(dir.path(), spec).unwrap();
        let trace = load(&path);
        assert_eq!(trace["traceEvents"].as_array().unwrap().len(), truth.events);
        assert_eq!(recount(&trace, file_stage(spec)), truth.stages, "{spec:?}");
        truth
    }

    #[test]
    fn ground_truth_matches_a_recount_for_every_engine_and_shape() {
        for engine in Engine::ALL {
            for stage in [StageKind::Extend, StageKind::Decode, StageKind::Mixed] {
                for (graph_replay, streams, with_stack, gzip) in [
                    (true, 2, true, true),
                    (false, 1, false, false),
                    (false, 2, true, false),
                ] {
                    let spec = FixtureSpec {
                        graph_replay,
                        streams,
                        with_stack,
                        gzip,
                        seed: 7,
                        ..FixtureSpec::new(engine, stage)
                    };
                    let truth = check(&spec);
                    assert_eq!(truth.framework, engine.name());
                }
            }
        }
    }

    #[test]
    fn sglang_extend_counts_follow_the_qwen3_layer() {
        let truth = check(&FixtureSpec::new(Engine::Sglang, StageKind::Extend));
        let stage = truth.stage("extend/prefill").unwrap();
        // 2 layers x 13 GPU ops; two norms, two row GEMMs and one of each other per layer.
        assert_eq!(stage.kernels.values().map(|k| k.count).sum::<u64>(), 26);
        let norm =
            &stage.kernels["void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>"];
        assert_eq!(norm.count, 4);
        assert_eq!(
            norm.location(),
            "python/sglang/srt/layers/layernorm.py:140 forward_cuda"
        );
        assert_eq!(norm.cpu_op(), "sgl_kernel::fused_add_rmsnorm");
        let row = &stage.kernels["nvjet_tst_128x64_64x6_1x1_v_bz_coopA_TNT"];
        assert_eq!(row.count, 4);
        assert_eq!(
            row.location(),
            "python/sglang/srt/layers/linear.py:1514 forward"
        );
        let memcpy = &stage.kernels["Memcpy DtoD (Device -> Device)"];
        assert_eq!(memcpy.cpu_op(), "aten::copy_");
        assert_eq!(
            stage.total_gpu_ns,
            stage.kernels.values().map(|k| k.total_ns).sum::<u64>()
        );
    }

    #[test]
    fn graph_replayed_kernels_point_at_the_model_runner_and_the_graph_launch() {
        let truth = check(&FixtureSpec::new(Engine::Sglang, StageKind::Decode));
        let stage = truth.stage("decode").unwrap();
        for kernel in stage.kernels.values() {
            assert_eq!(
                kernel.location(),
                "python/sglang/srt/model_executor/model_runner.py:2964 forward_decode"
            );
            assert_eq!(kernel.cpu_op(), "cudaGraphLaunch");
        }
        let truth = check(&FixtureSpec::new(Engine::Vllm, StageKind::Decode));
        let any = truth
            .stage("decode")
            .unwrap()
            .kernels
            .values()
            .next()
            .unwrap();
        assert_eq!(
            any.location(),
            "vllm/v1/worker/gpu_model_runner.py:3380 execute_model"
        );
    }

    #[test]
    fn mixed_files_split_by_annotation_or_fall_back_to_all() {
        let sglang = check(&FixtureSpec::new(Engine::Sglang, StageKind::Mixed));
        assert_eq!(
            sglang.stages.keys().collect::<Vec<_>>(),
            ["decode", "extend/prefill"]
        );
        let trtllm = check(&FixtureSpec::new(Engine::Trtllm, StageKind::Mixed));
        assert_eq!(trtllm.stages.keys().collect::<Vec<_>>(), ["all"]);
    }

    #[test]
    fn file_names_follow_each_engine() {
        assert_eq!(
            file_name(Engine::Sglang, StageKind::Extend, 0, 5, true),
            "1761000005.0005-TP-0-EXTEND.trace.json.gz"
        );
        assert_eq!(
            file_name(Engine::Tokenspeed, StageKind::Decode, 1, 5, true),
            "1761000005-TP1-DECODE.trace.json.gz"
        );
        assert_eq!(
            file_name(Engine::Trtllm, StageKind::Mixed, 0, 5, false),
            "trace-rank-0.json"
        );
        assert_eq!(
            file_name(Engine::Vllm, StageKind::Mixed, 0, 5, true),
            "gpu-node-7_41000.1761000005123456789.pt.trace.json.gz"
        );
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_times() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FixtureSpec {
            gzip: false,
            ..FixtureSpec::new(Engine::Vllm, StageKind::Extend)
        };
        let (a, _) = write_fixture(&dir.path().join("a"), &spec).unwrap();
        let (b, _) = write_fixture(&dir.path().join("b"), &spec).unwrap();
        // Identical except the `traceName`, which records where the file was written.
        let text = |p: &Path, sub: &str| {
            std::fs::read_to_string(p)
                .unwrap()
                .replace(&dir.path().join(sub).display().to_string(), "<dir>")
        };
        assert!(text(&a, "a") == text(&b, "b"), "same seed, different bytes");
        let (_, t1) = write_fixture(
            &dir.path().join("c"),
            &FixtureSpec {
                seed: 2,
                ..spec.clone()
            },
        )
        .unwrap();
        let (_, t0) = write_fixture(&dir.path().join("d"), &spec).unwrap();
        assert_ne!(t1.stages, t0.stages);
    }

    #[test]
    fn times_have_three_decimals_and_frames_nest() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FixtureSpec {
            gzip: false,
            streams: 2,
            ..FixtureSpec::new(Engine::Sglang, StageKind::Mixed)
        };
        let (path, _) = write_fixture(dir.path(), &spec).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let times = regex::Regex::new(r#""(ts|dur)": ([0-9.]+)"#).unwrap();
        let mut seen = 0;
        for cap in times.captures_iter(&text) {
            let value = &cap[2];
            assert_eq!(
                value.split_once('.').map(|(_, f)| f.len()),
                Some(3),
                "{value}"
            );
            seen += 1;
        }
        assert!(seen > 100);
        let trace = load(&path);
        let frames: Vec<(f64, f64)> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "python_function")
            .map(|e| {
                let ts = e["ts"].as_f64().unwrap();
                (ts, ts + e["dur"].as_f64().unwrap())
            })
            .collect();
        for a in &frames {
            for b in &frames {
                let disjoint = a.1 <= b.0 || b.1 <= a.0;
                let nested = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
                assert!(disjoint || nested, "{a:?} {b:?}");
            }
        }
        // The side stream really overlaps compute.
        let kernels: Vec<(u64, f64, f64)> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "kernel")
            .map(|e| {
                let ts = e["ts"].as_f64().unwrap();
                (
                    e["args"]["stream"].as_u64().unwrap(),
                    ts,
                    ts + e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        let overlaps = kernels
            .iter()
            .filter(|a| a.0 == 21)
            .any(|a| kernels.iter().any(|b| b.0 == 7 && b.1 < a.2 && a.1 < b.2));
        assert!(overlaps);
    }

    #[test]
    fn canonical_names_cut_the_parameter_list_only() {
        assert_eq!(
            canonical_name("void foo<int>(float*, int)"),
            "void foo<int>"
        );
        assert_eq!(canonical_name("Memset (Device)"), "Memset (Device)");
        assert_eq!(canonical_name("void a<(b)1>(c<(d)2>)"), "void a<(b)1>");
        // Not only `void` signatures: NCCL's device kernels have parameters too.
        assert_eq!(
            canonical_name(
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
            ),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
        );
    }

    #[test]
    fn server_args_are_written_beside_the_trace() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FixtureSpec {
            server_args: Some(serde_json::json!({"model_path": "Qwen/Qwen3-8B", "tp_size": 2})),
            ..FixtureSpec::new(Engine::Sglang, StageKind::Extend)
        };
        write_fixture(dir.path(), &spec).unwrap();
        let args: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("server_args.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(args["tp_size"], 2);
    }
}
