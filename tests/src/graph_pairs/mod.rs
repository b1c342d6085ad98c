//! Graph-off / graph-on trace pairs for the mapping alignment (issue 17, source c): the
//! same SGLang decode model traced once with every kernel launched eagerly (the mapping
//! trace) and once replaying one CUDA or HIP graph per step (the formal trace), whose
//! nodes are the eager launches with some missing, some extra and some fused or split;
//! `cuda-piecewise` replays the same nodes as three graphs per step, one after another
//! (vLLM's piecewise CUDA graphs), each aligned on its own.
//!
//! ```text
//! DIR/<pair>/graph-off/<id>-TP-0-DECODE.trace.json   the mapping trace (--mapping-input)
//! DIR/<pair>/graph-on/<id>-TP-0-DECODE.trace.json    the formal trace (--input)
//! DIR/<pair>/ground_truth.json                       every graph node's counterpart
//! ```
//!
//! Ground truth, per graph node in replay order: its kernel, its duration, and the eager
//! kernel it corresponds to (`None` for a node only the graph has), with how (`exact`,
//! `family`, `fused`). Every kernel name has one launch site in the eager trace, so a
//! kernel row's location names the site of every launch in it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use std::fmt::Write as _;

use crate::{json_str, us, HostTrack, CPU_PID};

/// Decoder layers in each step.
const LAYERS: usize = 4;
/// Steps of the eager trace and graph replays of the graph trace.
const EAGER_STEPS: usize = 2;
const REPLAYS: usize = 3;
const STREAM: u64 = 7;
const FRAME_PREFIX: &str = "/sgl-workspace/sglang/python/sglang/srt/";

/// One eager launch: kernel, its CPU op, and the Python frame it was launched from.
#[derive(Clone, Copy, Debug)]
struct Launch {
    kernel: &'static str,
    cpu_op: &'static str,
    frame: (&'static str, u32, &'static str),
}

const fn launch(
    kernel: &'static str,
    cpu_op: &'static str,
    frame: (&'static str, u32, &'static str),
) -> Launch {
    Launch {
        kernel,
        cpu_op,
        frame,
    }
}

const INPUT_COPY: Launch = launch(
    "Memcpy HtoD (Pinned -> Device)",
    "aten::copy_",
    ("model_executor/forward_batch_info.py", 412, "init_new"),
);
const EMBED: Launch = launch(
    "indexSelectLargeIndex",
    "aten::embedding",
    ("layers/vocab_parallel_embedding.py", 486, "forward"),
);
const NORM: Launch = launch(
    "rmsnorm_kernel",
    "sgl_kernel::rmsnorm",
    ("layers/layernorm.py", 140, "forward_cuda"),
);
const QKV: Launch = launch(
    "nvjet_tst_128x64_64x8_qkv",
    "aten::mm",
    ("layers/linear.py", 461, "forward"),
);
const ROPE: Launch = launch(
    "rotary_embedding_kernel",
    "sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
    ("layers/rotary_embedding/base.py", 335, "forward_cuda"),
);
const ATTENTION: Launch = launch(
    "flash_attn_decode_kernel",
    "flashinfer::run",
    (
        "layers/attention/flashinfer_backend.py",
        842,
        "forward_decode",
    ),
);
const O_PROJ: Launch = launch(
    "nvjet_tst_64x128_64x8_o_proj",
    "aten::mm",
    ("layers/linear.py", 1514, "forward"),
);
const ADD: Launch = launch(
    "add_kernel",
    "aten::add_",
    ("models/qwen3.py", 251, "forward"),
);
const POST_NORM: Launch = launch(
    "post_rmsnorm_kernel",
    "sgl_kernel::rmsnorm",
    ("layers/layernorm.py", 152, "forward_cuda"),
);
const FUSED_ADD_NORM: Launch = launch(
    "fused_add_rmsnorm_kernel",
    "sgl_kernel::fused_add_rmsnorm",
    ("layers/layernorm.py", 146, "forward_cuda"),
);
const GATE_UP: Launch = launch(
    "nvjet_tst_256x128_64x4_gate_up",
    "aten::mm",
    ("layers/linear.py", 470, "forward"),
);
const ACT: Launch = launch(
    "silu_and_mul_kernel",
    "sgl_kernel::silu_and_mul",
    ("layers/activation.py", 83, "forward_cuda"),
);
const DOWN: Launch = launch(
    "nvjet_tst_128x128_64x8_down",
    "aten::mm",
    ("layers/linear.py", 1520, "forward"),
);
const LM_HEAD: Launch = launch(
    "nvjet_tst_256x256_64x4_lm_head",
    "aten::mm",
    ("layers/logits_processor.py", 316, "_get_logits"),
);
/// A kernel only the graph runs (a scratch clear the capture recorded).
const GRAPH_ONLY: &str = "graph_barrier_kernel";
/// The QKV GEMM under the graph: another tile of the same family.
const QKV_GRAPH_TILE: &str = "nvjet_tst_64x64_64x8_qkv_graph";

/// How the two traces of a pair differ.
#[derive(Clone, Copy, Debug)]
struct PairSpec {
    name: &'static str,
    hip: bool,
    /// The eager trace's post-attention norm is one fused kernel, the graph's is split
    /// into add + norm (else the other way round).
    eager_fused: bool,
    /// Graphs each step replays, one after another, each a piece of the nodes (vLLM's
    /// piecewise graphs: several replays per step); 1 for one whole-step graph.
    pieces: usize,
}

const PAIRS: [PairSpec; 3] = [
    PairSpec {
        name: "cuda-fused-in-graph",
        hip: false,
        eager_fused: false,
        pieces: 1,
    },
    PairSpec {
        name: "hip-split-in-graph",
        hip: true,
        eager_fused: true,
        pieces: 1,
    },
    PairSpec {
        name: "cuda-piecewise",
        hip: false,
        eager_fused: false,
        pieces: 3,
    },
];

/// One graph node of the truth: its kernel and what it corresponds to in the eager step.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTruth {
    pub kernel: String,
    pub dur_ns: u64,
    /// The eager kernel it corresponds to; `None` for a node only the graph has.
    pub counterpart: Option<String>,
    /// `exact`, `family`, `fused` or `extra`.
    pub kind: String,
}

/// One generated pair and what a correct alignment gives.
#[derive(Clone, Debug)]
pub struct PairTruth {
    pub name: String,
    pub mapping: PathBuf,
    pub formal: PathBuf,
    /// The nodes of one replay, in order (every replay is the same graph).
    pub nodes: Vec<NodeTruth>,
    /// Eager kernels of a step the graph has no node for.
    pub missing: Vec<String>,
    /// Steps replayed (each replays `graphs` graphs, one per piece of `nodes`).
    pub replays: u64,
    /// Distinct graphs: the pieces each step's nodes are replayed in.
    pub graphs: u64,
}

impl PairTruth {
    /// GPU ops of all replays with no counterpart, and their exact time.
    pub fn unmatched(&self) -> (u64, u64) {
        let extra: Vec<&NodeTruth> = self
            .nodes
            .iter()
            .filter(|n| n.counterpart.is_none())
            .collect();
        let ns: u64 = extra.iter().map(|n| n.dur_ns).sum();
        (extra.len() as u64 * self.replays, ns * self.replays)
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "mapping": self.mapping,
            "formal": self.formal,
            "replays": self.replays,
            "graphs": self.graphs,
            "missing": self.missing,
            "nodes": self.nodes.iter().map(|n| json!({
                "kernel": n.kernel,
                "dur_ns": n.dur_ns,
                "counterpart": n.counterpart,
                "kind": n.kind,
            })).collect::<Vec<_>>(),
        })
    }
}

/// One step's eager launches, in order.
fn eager_step(spec: &PairSpec) -> Vec<Launch> {
    let mut step = vec![INPUT_COPY, EMBED];
    for _ in 0..LAYERS {
        step.extend([NORM, QKV, ROPE, ATTENTION, O_PROJ]);
        if spec.eager_fused {
            step.push(FUSED_ADD_NORM);
        } else {
            step.extend([ADD, POST_NORM]);
        }
        step.extend([GATE_UP, ACT, DOWN]);
    }
    step.extend([NORM, LM_HEAD]);
    step
}

/// A node of the graph: (kernel, counterpart, kind).
type Node = (&'static str, Option<&'static str>, &'static str);

/// The graph's nodes: the eager step without the input copy (graphs copy into static
/// buffers before the replay) and layer 2's rope (missing), with a graph-only kernel
/// after layer 1's activation (extra), the QKV GEMM of layer 3 as another tile
/// (family), and the post-attention norm fused or split the other way round.
fn graph_nodes(spec: &PairSpec) -> Vec<Node> {
    let exact = |l: Launch| -> Node { (l.kernel, Some(l.kernel), "exact") };
    let mut nodes = vec![exact(EMBED)];
    for layer in 0..LAYERS {
        nodes.push(exact(NORM));
        if layer == 3 {
            nodes.push((QKV_GRAPH_TILE, Some(QKV.kernel), "family"));
        } else {
            nodes.push(exact(QKV));
        }
        if layer != 2 {
            nodes.push(exact(ROPE));
        }
        nodes.extend([exact(ATTENTION), exact(O_PROJ)]);
        if spec.eager_fused {
            // Split under the graph: both parts stand for the fused eager kernel.
            let fused = Some(FUSED_ADD_NORM.kernel);
            nodes.extend([
                (ADD.kernel, fused, "fused"),
                (POST_NORM.kernel, fused, "fused"),
            ]);
        } else {
            // Fused under the graph: it stands for the split norm of its family.
            nodes.push((FUSED_ADD_NORM.kernel, Some(POST_NORM.kernel), "fused"));
        }
        nodes.extend([exact(GATE_UP), exact(ACT)]);
        if layer == 1 {
            nodes.push((GRAPH_ONLY, None, "extra"));
        }
        nodes.push(exact(DOWN));
    }
    nodes.extend([exact(NORM), exact(LM_HEAD)]);
    nodes
}

/// A kernel's duration: fixed per name, so both traces agree and sums are exact.
fn duration(kernel: &str) -> u64 {
    let hash = kernel
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    2_000 + hash % 9_000
}

fn frame_text(frame: (&str, u32, &str)) -> String {
    format!("{FRAME_PREFIX}{}({}): {}", frame.0, frame.1, frame.2)
}

/// The frames every step runs under, outer to inner.
fn outer_frames() -> Vec<String> {
    [
        ("managers/scheduler.py", 2919, "_run_batch_inner"),
        ("managers/tp_worker.py", 445, "forward_batch_generation"),
        ("model_executor/model_runner.py", 3123, "forward"),
        ("model_executor/model_runner.py", 2964, "forward_decode"),
    ]
    .into_iter()
    .map(frame_text)
    .collect()
}

fn annotation(host: &mut HostTrack, start: u64, name: &str) {
    let external = host.external();
    let dur = host.cpu - start;
    host.push(
        start,
        format!(
            "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {dur_us}, \"args\": {{\"External id\": {external}}}}}",
            json_str(name),
            us(start),
            dur_us = us(dur),
        ),
    );
}

/// The graph-off trace: every kernel launched by its own CPU op and runtime call.
fn eager_trace(spec: &PairSpec) -> Vec<crate::Event> {
    let mut host = HostTrack::new(1_000_000);
    let mut gpu = 2_000_000u64;
    let launch_call = if spec.hip {
        "hipLaunchKernel"
    } else {
        "cudaLaunchKernel"
    };
    for _ in 0..EAGER_STEPS {
        let start = host.cpu;
        for frame in outer_frames() {
            host.open_frame(frame);
        }
        host.open_frame(frame_text(("models/qwen3.py", 384, "forward")));
        for l in eager_step(spec) {
            host.open_frame(frame_text(l.frame));
            let external = host.external();
            let correlation = host.correlation();
            let op_start = host.cpu;
            let launch_start = op_start + 100;
            host.cpu += 900;
            host.push(
                op_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Input Dims\": [[8, 4096], [4096]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]}}}}",
                    json_str(l.cpu_op),
                    us(op_start),
                    us(900),
                ),
            );
            host.push(
                launch_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{launch_call}\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"cbid\": 211, \"correlation\": {correlation}}}}}",
                    us(launch_start),
                    us(500),
                ),
            );
            let dur = duration(l.kernel);
            gpu = gpu.max(launch_start + 2_000);
            push_kernel(
                &mut host,
                l.kernel,
                gpu,
                dur,
                launch_start,
                correlation,
                Some(external),
            );
            gpu += dur + 500;
            host.close_frame(true);
        }
        host.close_frame(true);
        for _ in outer_frames() {
            host.close_frame(true);
        }
        annotation(&mut host, start, "step[DECODE bs=8]");
        host.cpu = host.cpu.max(gpu) + 50_000;
        gpu = host.cpu + 10_000;
    }
    host.events
}

fn push_kernel(
    host: &mut HostTrack,
    kernel: &str,
    start: u64,
    dur: u64,
    launch_start: u64,
    correlation: u64,
    external: Option<u64>,
) {
    let cat = if kernel.starts_with("Memcpy") {
        "gpu_memcpy"
    } else {
        "kernel"
    };
    let args = match external {
        Some(external) => format!(
            "\"External id\": {external}, \"device\": 0, \"stream\": {STREAM}, \"correlation\": {correlation}"
        ),
        None => format!("\"device\": 0, \"stream\": {STREAM}, \"correlation\": {correlation}"),
    };
    host.push_gpu_op(&crate::GpuOpEvent {
        cat,
        name: kernel,
        stream: STREAM,
        start,
        dur,
        launch_start,
        correlation,
        args: &args,
    });
}

/// The graph-on trace: each step one graph launch, replaying [`graph_nodes`].
fn graph_trace(spec: &PairSpec) -> Vec<crate::Event> {
    let mut host = HostTrack::new(1_000_000);
    let launch_call = if spec.hip {
        "hipGraphLaunch"
    } else {
        "cudaGraphLaunch"
    };
    for _ in 0..REPLAYS {
        let start = host.cpu;
        for frame in outer_frames() {
            host.open_frame(frame);
        }
        host.open_frame(frame_text((
            "model_executor/cuda_graph_runner.py",
            1333,
            "replay",
        )));
        let nodes = graph_nodes(spec);
        let mut gpu = host.cpu + 5_100;
        for piece in nodes.chunks(nodes.len().div_ceil(spec.pieces)) {
            let correlation = host.correlation();
            let launch_start = host.cpu + 100;
            host.cpu += 2_000;
            host.push(
                launch_start,
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{launch_call}\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"cbid\": 311, \"correlation\": {correlation}}}}}",
                    us(launch_start),
                    us(1_500),
                ),
            );
            gpu = gpu.max(launch_start + 5_000);
            for &(kernel, _, _) in piece {
                let dur = duration(kernel);
                push_kernel(&mut host, kernel, gpu, dur, launch_start, correlation, None);
                gpu += dur + 300;
            }
        }
        host.close_frame(true);
        for _ in outer_frames() {
            host.close_frame(true);
        }
        annotation(&mut host, start, "step[DECODE bs=8]");
        host.cpu = host.cpu.max(gpu) + 50_000;
    }
    host.events
}

fn write_trace(path: &Path, events: &[crate::Event]) -> std::io::Result<()> {
    let mut order: Vec<&crate::Event> = events.iter().collect();
    order.sort_by_key(|e| e.ts);
    let mut text = String::from(
        "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045411840, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}],\n  \"with_stack\": 1,\n  \"record_shapes\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1761000000000000000,\n  \"traceEvents\": [\n",
    );
    let _ = writeln!(
        text,
        "  {{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {CPU_PID}, \"tid\": 0, \"args\": {{\"name\": \"sglang::scheduler_TP0\"}}}},"
    );
    crate::events_and_end(&mut text, &order, path);
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    std::fs::write(path, text)
}

/// Writes every pair under `dir` and returns their truths.
pub fn write_graph_pairs(dir: &Path) -> std::io::Result<Vec<PairTruth>> {
    let mut truths = Vec::new();
    for spec in &PAIRS {
        let root = dir.join(spec.name);
        let file = "1761000011-TP-0-DECODE.trace.json";
        let mapping = root.join("graph-off").join(file);
        let formal = root.join("graph-on").join(file);
        write_trace(&mapping, &eager_trace(spec))?;
        write_trace(&formal, &graph_trace(spec))?;
        let nodes: Vec<NodeTruth> = graph_nodes(spec)
            .into_iter()
            .map(|(kernel, counterpart, kind)| NodeTruth {
                kernel: kernel.to_string(),
                dur_ns: duration(kernel),
                counterpart: counterpart.map(str::to_string),
                kind: kind.to_string(),
            })
            .collect();
        let missing = vec![INPUT_COPY.kernel.to_string(), ROPE.kernel.to_string()];
        let truth = PairTruth {
            name: spec.name.to_string(),
            mapping,
            formal,
            nodes,
            missing,
            replays: REPLAYS as u64,
            graphs: spec.pieces as u64,
        };
        let body = serde_json::to_string_pretty(&truth.to_json()).unwrap_or_default();
        std::fs::write(root.join("ground_truth.json"), body + "\n")?;
        truths.push(truth);
    }
    Ok(truths)
}
