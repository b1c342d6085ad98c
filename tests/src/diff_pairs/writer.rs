//! Lays out one side of a diff pair: [`STEPS`] SGLang prefill steps of [`LAYERS`] Qwen3
//! layers, each op launched eagerly on one stream from its `nn.Module:` stack, and
//! records the ground truth as it goes.
//!
//! Every kernel runs at least 5 µs and most far longer than a launch (about 12 µs of
//! host time), and a step opens with its longest kernels' layer, so after a step's first
//! kernel the queue never drains (asserted): the only GPU idle is the first launch's
//! latency and the host time between steps. So a change of durations moves the wall time
//! by exactly its ns, and a longer scheduler frame moves only the host gap.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::truth::{KernelTotal, SideTruth, StepParts};
use super::{Pair, Side, BETWEEN_STEPS_NS, LAYERS, STEPS};
use crate::engines::{profile, Issue, Op, Profile, MODULE_CALL};
use crate::names::canonical_name;
use crate::timeline::hip_layer::hip_ops;
use crate::timeline::Platform;
use crate::{
    engine_metadata, events_and_end, frame_name, json_str, us, Engine, Event, Frame, GpuOpEvent,
    HostTrack, Rng, StageKind, CPU_PID, GPU_PID,
};

const STREAM: u64 = 7;
const EPOCH_NS: u64 = 1_700_000_000_000_000;
/// From a launch call's start to the earliest its GPU op can start.
const LAUNCH_LATENCY_NS: u64 = 4_000;
const LAUNCH_CALL_NS: u64 = 5_000;
/// Where the post-attention norm sits in a layer (`engines::layer_ops`).
const POST_ATTENTION_NORM: usize = 8;
/// The scheduler's frame between steps (SGLang `Scheduler.get_next_batch_to_run`).
const NEXT_BATCH: Frame = Frame {
    path: "managers/scheduler.py",
    line: 1790,
    func: "get_next_batch_to_run",
};
/// SGLang's `RMSNorm.forward_native`: the norm in plain PyTorch.
const FORWARD_NATIVE: Frame = Frame {
    path: "layers/layernorm.py",
    line: 171,
    func: "forward_native",
};

/// Where the attention kernel sits in a layer.
const ATTENTION: usize = 5;
/// The MI300X prefill attention kernel, whole, as the SGLang MI300X prefill trace in
/// ../shared/traces names it (the timeline scenarios' shortened name demangles to an
/// elided `ck_tile::kentry<2, …>` that no family rule can read).
const CK_TILE_PREFILL: &str = "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipelineQRKSVSAsyncINS_36BlockFmhaBatchPrefillPipelineProblemIDF16bDF16bDF16bffDF16bhfDF16bfDF16bNS_13TileFmhaShapeINS_8sequenceIJLi128ELi128ELi32ELi128ELi32ELi128EEEENS5_IJLi4ELi1ELi1EEEENS5_IJLi32ELi32ELi16EEEES7_S8_Lb1EEELb1ENS_17ComposedAttentionILj0ELb1EEENS_30SimplifiedGenericAttentionMaskILb1EEELb0ELi1ENS_26TileFmhaBatchPrefillTraitsILb1ELb1ELb1ELb1ELb0ELNS_22BlockAttentionBiasEnumE0ELb0ELb0ELb0ELNS_28BlockAttentionQuantScaleEnumE0ELin1ELb0ELb0ELi1ELNS_37BlockAttentionKVCacheMemoryLayoutEnumE1ELNS_36BlockAttentionKVCacheLookupTableEnumE1ELNS_33BlockAttentionKVCacheLoadModeEnumE0EEEEENS_53BlockFmhaBatchPrefillPipelineQRKSVSAsyncDefaultPolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb1ELb1ELb1EEEvEEEEJNSS_21FmhaFwdGroupModeKargsEEEEvDpT1_";

/// A layer position's role, family and `nn.Module:` classes inside the decoder layer
/// (SGLang `models/qwen3.py`: `Qwen3DecoderLayer` holds `self_attn` and `mlp`; the
/// tensor-parallel all-reduce runs inside `RowParallelLinear.forward`).
fn position(pos: usize) -> (&'static str, Option<&'static str>, &'static [&'static str]) {
    const ATTN: &str = "Qwen3Attention";
    const MLP: &str = "Qwen2MLP";
    match pos {
        0 => ("norm", None, &["RMSNorm"]),
        1 => ("qkv", Some("gemm"), &[ATTN, "QKVParallelLinear"]),
        2 => ("norm", None, &[ATTN, "RMSNorm"]),
        3 => ("rope", None, &[ATTN, "RotaryEmbedding"]),
        4 => ("other", None, &[ATTN, "RadixAttention"]),
        5 => ("attention", None, &[ATTN, "RadixAttention"]),
        6 => ("o_proj", Some("gemm"), &[ATTN, "RowParallelLinear"]),
        7 => ("all-reduce", None, &[ATTN, "RowParallelLinear"]),
        8 => ("norm", None, &["RMSNorm"]),
        9 => (
            "gate_up",
            Some("gemm"),
            &[MLP, "MergedColumnParallelLinear"],
        ),
        10 => ("activation", None, &[MLP, "SiluAndMul"]),
        11 => ("down", Some("gemm"), &[MLP, "RowParallelLinear"]),
        _ => ("all-reduce", None, &[MLP, "RowParallelLinear"]),
    }
}

/// The split kernels of SGLang's eager RMSNorm with a residual (`forward_native`):
/// raw name (as the HF transformers H100 trace in ../shared/traces shows them), CPU op,
/// and the share of the fused kernel's duration it takes, as (numerator, denominator).
const UNFUSED_NORM: [(&str, &str, (u64, u64)); 7] = [
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
        "aten::add",
        (1, 4),
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul>)",
        "aten::pow",
        (1, 4),
    ),
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
        "aten::mean",
        (1, 2),
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)",
        "aten::add",
        (1, 5),
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
        "aten::rsqrt",
        (1, 5),
    ),
    (
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
        "aten::mul",
        (1, 4),
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)",
        "aten::mul",
        (1, 4),
    ),
];

/// One GPU op to launch: what the trace shows and what the truth counts.
struct Launch<'a> {
    raw: &'a str,
    cpu_op: &'a str,
    frame: Frame,
    issue: Issue,
    dur: u64,
    role: &'static str,
    family: Option<&'static str>,
    /// 0 compute kernel, 1 communication kernel, 2 copy.
    part: usize,
}

/// Durations per (layer, position), drawn once per pair so both sides share them: a
/// multiple of 20 ns (5% of it is whole), kernels 20-60 µs, the KV-cache copy 5-9 µs.
fn durations(seed: u64, ops: &[Op]) -> Vec<Vec<u64>> {
    let mut rng = Rng::new(seed);
    (0..LAYERS)
        .map(|_| {
            ops.iter()
                .map(|op| match op.issue {
                    Issue::Kernel => rng.between((1_000, 3_000)) * 20,
                    Issue::MemcpyDtoD => rng.between((250, 450)) * 20,
                })
                .collect()
        })
        .collect()
}

struct Writer<'a> {
    side: &'a Side,
    profile: Profile,
    host: HostTrack,
    /// When the stream's last GPU op ends (0: none yet).
    gpu: u64,
    steps: Vec<StepParts>,
    kernels: BTreeMap<String, KernelTotal>,
    roles: BTreeMap<String, (u64, u64)>,
    /// The open step: its first launch call and the parts so far.
    first_launch: Option<u64>,
    parts: StepParts,
}

/// Writes one side's trace and `server_args.json` into `dir`; returns its truth.
pub(super) fn write_side(dir: &Path, pair: &Pair, side: &Side) -> std::io::Result<SideTruth> {
    std::fs::create_dir_all(dir)?;
    let file = crate::file_name(Engine::Sglang, StageKind::Extend, 0, pair.seed, true);
    let path = dir.join(file);
    let cuda_ops = (profile(Engine::Sglang).ops)(StageKind::Extend);
    let table = durations(pair.seed, &cuda_ops);
    let ops = match side.platform {
        Platform::Cuda => cuda_ops,
        Platform::Rocm => {
            let mut ops = hip_ops(StageKind::Extend);
            ops[ATTENTION].raw = CK_TILE_PREFILL;
            ops
        }
    };
    let mut w = Writer {
        side,
        profile: profile(Engine::Sglang),
        host: HostTrack::new(EPOCH_NS + 10_000),
        gpu: 0,
        steps: Vec::new(),
        kernels: BTreeMap::new(),
        roles: BTreeMap::new(),
        first_launch: None,
        parts: StepParts::default(),
    };
    w.metadata();
    for step in 0..STEPS {
        w.step(step, &ops, &table);
    }
    let text = w.trace_text(&path);
    let out = std::fs::File::create(&path)?;
    let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    encoder.write_all(text.as_bytes())?;
    encoder.finish()?;
    let args = server_args(side);
    let body = serde_json::to_string_pretty(&args).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("server_args.json"), body + "\n")?;
    Ok(SideTruth {
        trace: path,
        platform: match side.platform {
            Platform::Cuda => "cuda",
            Platform::Rocm => "rocm",
        },
        batch_size: side.batch_size,
        tokens_per_step: tokens(side),
        steps: w.steps,
        kernels: w.kernels,
        roles: w.roles,
    })
}

fn tokens(side: &Side) -> usize {
    side.batch_size * 128
}

fn server_args(side: &Side) -> serde_json::Value {
    serde_json::json!({
        "model_path": "Qwen/Qwen3-8B",
        "served_model_name": "Qwen/Qwen3-8B",
        "tp_size": 2,
        "dp_size": 1,
        "attention_backend": match side.platform {
            Platform::Cuda => "flashinfer",
            Platform::Rocm => "aiter",
        },
        "dtype": "bfloat16",
        "chunked_prefill_size": 8192,
        "max_running_requests": side.batch_size,
        "disable_cuda_graph": true,
    })
}

impl Writer<'_> {
    fn rocm(&self) -> bool {
        self.side.platform == Platform::Rocm
    }

    fn metadata(&mut self) {
        let events = engine_metadata(EPOCH_NS, self.profile.process_name, STREAM);
        self.host.events.extend(events);
    }

    /// One prefill step: the scheduler's frame after the previous step, the step marker
    /// around the engine's frames and every layer's launches; the host then waits for the
    /// GPU (the sampled tokens) before the next step.
    fn step(&mut self, index: usize, ops: &[Op], table: &[Vec<u64>]) {
        let previous_end = self.gpu;
        if index > 0 {
            self.host.open_frame(frame_name(&self.profile, &NEXT_BATCH));
            // close_frame adds its own 300 ns.
            self.host.cpu += BETWEEN_STEPS_NS + self.side.extra_host_ns - 300;
            self.host.close_frame(true);
        }
        let label = (self.profile.step_annotation)(StageKind::Extend, self.side.batch_size)
            .expect("SGLang marks its steps");
        let step_start = self.host.cpu;
        self.host.cpu += 1_000;
        self.first_launch = None;
        self.parts = StepParts::default();
        let outer = (self.profile.outer)(StageKind::Extend);
        for frame in &outer {
            self.host.open_frame(frame_name(&self.profile, frame));
        }
        let model = self.profile.model;
        self.open_module("Qwen3ForCausalLM", 0, &model[0]);
        for (layer, durations) in table.iter().enumerate() {
            self.open_module("Qwen3DecoderLayer", layer, &model[1]);
            for (pos, (op, &dur)) in ops.iter().zip(durations).enumerate() {
                self.layer_op(pos, op, dur);
            }
            self.close_frames(3);
        }
        self.close_frames(3);
        while !self.host.open.is_empty() {
            self.host.close_frame(true);
        }
        let first_launch = self.first_launch.expect("a step launches");
        let gpu_start = first_launch + LAUNCH_LATENCY_NS;
        // The host syncs on the sampled tokens, then closes the step.
        self.host.cpu = self.host.cpu.max(self.gpu) + 1_500;
        let external = self.host.external();
        self.host.push(
            step_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Record function id\": 0}}}}",
                json_str(&label),
                us(step_start),
                us(self.host.cpu - step_start)
            ),
        );
        self.host.push(
            gpu_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": {}, \"pid\": {GPU_PID}, \"tid\": {STREAM}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}}}}}",
                json_str(&label),
                us(gpu_start),
                us(self.gpu - gpu_start)
            ),
        );
        let mut parts = self.parts;
        parts.launch_idle_ns = LAUNCH_LATENCY_NS;
        let wall_start = if index == 0 {
            first_launch
        } else {
            parts.host_gap_ns = first_launch - previous_end;
            previous_end
        };
        parts.wall_ns = self.gpu - wall_start;
        assert_eq!(
            parts.wall_ns,
            parts.compute_ns
                + parts.exposed_comm_ns
                + parts.memcpy_ns
                + parts.launch_idle_ns
                + parts.host_gap_ns,
            "step {index}: the queue drained inside the step"
        );
        self.steps.push(parts);
        self.host.cpu += 3_000;
    }

    /// torch's module call frame, the `nn.Module: <class>_<n>` frame, then `frame`.
    fn open_module(&mut self, class: &str, instance: usize, frame: &Frame) {
        self.host.open_frame(MODULE_CALL.to_string());
        self.host
            .open_frame(format!("nn.Module: {class}_{instance}"));
        self.host.open_frame(frame_name(&self.profile, frame));
    }

    fn close_frames(&mut self, n: usize) {
        for _ in 0..n {
            self.host.close_frame(true);
        }
    }

    /// The op at layer position `pos` inside its modules: one launch, or the split norm.
    fn layer_op(&mut self, pos: usize, op: &Op, base_dur: u64) {
        let (role, family, modules) = position(pos);
        let dur = if family == Some("gemm") {
            base_dur * (100 + self.side.gemm_slower_pct) / 100
        } else {
            base_dur
        };
        let (leaf, outer) = modules.split_last().expect("every op has a module");
        for (i, class) in outer.iter().enumerate() {
            self.host.open_frame(MODULE_CALL.to_string());
            self.host.open_frame(format!("nn.Module: {class}_{i}"));
        }
        self.host.open_frame(MODULE_CALL.to_string());
        self.host.open_frame(format!("nn.Module: {leaf}_{pos}"));
        let communication = op.cpu_op.contains("all_reduce") || op.cpu_op.contains("allreduce");
        let part = match (op.issue, communication) {
            (Issue::MemcpyDtoD, _) => 2,
            (_, true) => 1,
            _ => 0,
        };
        if pos == POST_ATTENTION_NORM && self.side.unfused_norm {
            for (raw, cpu_op, (num, den)) in UNFUSED_NORM {
                self.launch(&Launch {
                    raw,
                    cpu_op,
                    frame: FORWARD_NATIVE,
                    issue: Issue::Kernel,
                    dur: base_dur * num / den,
                    role,
                    family: None,
                    part: 0,
                });
            }
        } else {
            self.launch(&Launch {
                raw: op.raw,
                cpu_op: op.cpu_op,
                frame: op.frame,
                issue: op.issue,
                dur,
                role,
                family,
                part,
            });
        }
        self.close_frames(2 * modules.len());
    }

    /// One eager launch from `l.frame`: the CPU op, the runtime call, the GPU op.
    fn launch(&mut self, l: &Launch<'_>) {
        self.host.open_frame(frame_name(&self.profile, &l.frame));
        let external = self.host.external();
        let correlation = self.host.correlation();
        let op_start = self.host.cpu;
        self.host.cpu += 1_500;
        let launch_start = self.host.cpu;
        self.host.cpu += LAUNCH_CALL_NS + 500;
        self.host.push(
            op_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Record function id\": 0}}}}",
                json_str(l.cpu_op),
                us(op_start),
                us(self.host.cpu - op_start)
            ),
        );
        let (runtime, id) = self.runtime_call(l);
        let kernel_arg = if self.rocm() && l.issue == Issue::Kernel {
            format!(", \"kernel\": {}", json_str(l.raw))
        } else {
            String::new()
        };
        self.host.push(
            launch_start,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{runtime}\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}{kernel_arg}, {id}, \"correlation\": {correlation}}}}}",
                us(launch_start),
                us(LAUNCH_CALL_NS)
            ),
        );
        let earliest = launch_start + LAUNCH_LATENCY_NS;
        let start = match self.first_launch {
            None => {
                self.first_launch = Some(launch_start);
                assert!(earliest >= self.gpu, "a step starts on a drained GPU");
                earliest
            }
            Some(_) => {
                assert!(earliest <= self.gpu, "the queue drained inside a step");
                self.gpu
            }
        };
        let (cat, extra) = match (l.issue, self.rocm()) {
            (Issue::Kernel, false) => ("kernel", ", \"registers per thread\": 128, \"shared memory\": 49152, \"grid\": [132, 1, 1], \"block\": [384, 1, 1]"),
            (Issue::Kernel, true) => ("kernel", ", \"kind\": \"Dispatch Kernel\", \"grid\": [304, 1, 1], \"block\": [256, 1, 1]"),
            (Issue::MemcpyDtoD, _) => ("gpu_memcpy", ", \"bytes\": 262144, \"memory bandwidth (GB/s)\": 1200.0"),
        };
        self.host.push_gpu_op(&GpuOpEvent {
            cat,
            name: l.raw,
            stream: STREAM,
            start,
            dur: l.dur,
            launch_start,
            correlation,
            args: &format!("\"External id\": {external}, \"device\": 0, \"stream\": {STREAM}, \"correlation\": {correlation}{extra}"),
        });
        self.gpu = start + l.dur;
        match l.part {
            0 => self.parts.compute_ns += l.dur,
            1 => self.parts.exposed_comm_ns += l.dur,
            _ => self.parts.memcpy_ns += l.dur,
        }
        let kernel = self.kernels.entry(canonical_name(l.raw)).or_default();
        kernel.role = l.role.to_string();
        kernel.family = l.family.map(str::to_string);
        kernel.ns += l.dur;
        kernel.count += 1;
        let role = self.roles.entry(l.role.to_string()).or_default();
        role.0 += l.dur;
        role.1 += 1;
        self.host.cpu += 300;
        self.host.close_frame(true);
    }

    /// The runtime call that issues `l` and its callback-id member.
    fn runtime_call(&self, l: &Launch<'_>) -> (&'static str, &'static str) {
        match (self.rocm(), l.issue) {
            (false, Issue::Kernel) => ("cudaLaunchKernel", "\"cbid\": 211"),
            (false, Issue::MemcpyDtoD) => ("cudaMemcpyAsync", "\"cbid\": 41"),
            // hipBLASLt's Tensile kernels go through the module API.
            (true, Issue::Kernel) if l.raw.starts_with("Cijk_") => {
                ("hipExtModuleLaunchKernel", "\"cid\": 65")
            }
            (true, Issue::Kernel) => ("hipLaunchKernel", "\"cid\": 107"),
            (true, Issue::MemcpyDtoD) => ("hipMemcpyAsync", "\"cid\": 134"),
        }
    }

    /// The whole file: Kineto's top-level keys for the platform, then the events in time
    /// order.
    fn trace_text(&self, path: &Path) -> String {
        let mut order: Vec<&Event> = self.host.events.iter().collect();
        order.sort_by_key(|e| e.ts);
        let device = match self.side.platform {
            Platform::Cuda => "\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045411840, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}],\n  \"cuda_runtime_version\": 12080,",
            Platform::Rocm => "\"deviceProperties\": [{\"id\": 0, \"name\": \"AMD Instinct MI300X\", \"totalGlobalMem\": 206141652992, \"computeMajor\": 9, \"computeMinor\": 4, \"warpSize\": 64, \"numSms\": 304}],\n  \"roctracer_version\": 4.1,\n  \"hip_runtime_version\": 70253211,",
        };
        let mut text = String::new();
        let _ = write!(
            text,
            "{{\n  \"schemaVersion\": 1,\n  {device}\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2}},\n  \"with_stack\": 1,\n  \"record_shapes\": 1,\n  \"with_modules\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1761000000000000000,\n  \"traceEvents\": [\n"
        );
        events_and_end(&mut text, &order, path);
        text
    }
}
