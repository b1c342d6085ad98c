//! What each engine's traces look like: source paths of the Python frames, CPU ops,
//! kernel names, stage annotations and file names. Paths and function names follow the
//! engines' real source trees (SGLang/vLLM lines from published traces; other line
//! numbers are illustrative). Kernel names are the ones these engines launch on Hopper.

use crate::{Engine, StageKind};

/// One Python frame: `path` is relative to the engine's source root.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub path: &'static str,
    pub line: u32,
    pub func: &'static str,
}

const fn frame(path: &'static str, line: u32, func: &'static str) -> Frame {
    Frame { path, line, func }
}

/// Torch's module call frame, which wraps every layer call in a real stack.
pub const MODULE_CALL: &str = "torch/nn/modules/module.py(1779): _call_impl";
/// Torch's graph replay frame, innermost above a `cudaGraphLaunch`.
pub const GRAPH_REPLAY: &str = "torch/cuda/graphs.py(139): replay";

/// How a GPU op is issued: a kernel launch or an async copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issue {
    Kernel,
    MemcpyDtoD,
}

/// One GPU op of a decoder layer.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// The kernel name as the trace writes it (parameter list included).
    pub raw: &'static str,
    /// The canonical name: the trailing parameter list cut (`void foo<int>(float*)` ->
    /// `void foo<int>`).
    pub canonical: &'static str,
    pub cpu_op: &'static str,
    pub frame: Frame,
    pub issue: Issue,
    /// Duration range in ns, extend and decode.
    pub extend_ns: (u64, u64),
    pub decode_ns: (u64, u64),
    /// Runs on the side (communication) stream when the spec asks for several streams.
    pub side_stream: bool,
}

/// Everything engine-specific the generator needs.
pub struct Profile {
    /// Prefix that turns a relative frame path into the path the trace shows.
    pub frame_prefix: &'static str,
    /// Prefix of the expected location: the path from the engine's source root on
    /// (`python/sglang/…`, `vllm/…`).
    pub location_prefix: &'static str,
    /// Frames around a whole forward step, outer to inner; the last one is the
    /// innermost engine frame and names graph-replayed kernels.
    pub outer: fn(StageKind) -> Vec<Frame>,
    /// The engine's graph-runner frame between `outer` and torch's replay (low signal).
    pub graph_runner: Frame,
    /// Model forward and decoder-layer forward.
    pub model: [Frame; 2],
    pub ops: fn(StageKind) -> Vec<Op>,
    /// The user annotation around one step, if the engine writes one.
    pub step_annotation: fn(StageKind, usize) -> Option<String>,
    pub process_name: &'static str,
    /// Outer frames that only forward to the model (the engine plugin skips them as
    /// wrappers), so graph-replayed kernels name the next outer frame.
    pub forwarding: &'static [&'static str],
}

pub fn profile(engine: Engine) -> Profile {
    match engine {
        Engine::Sglang => sglang(),
        Engine::Vllm => vllm(),
        Engine::Trtllm => trtllm(),
        Engine::Tokenspeed => tokenspeed(),
    }
}

/// The file name the engine's profiler writes for one capture.
pub fn file_name(engine: Engine, stage: StageKind, rank: u32, seed: u64, gzip: bool) -> String {
    let ext = if gzip { ".gz" } else { "" };
    let stamp = 1_761_000_000 + seed % 1000;
    let stage_suffix = match stage {
        StageKind::Extend => "-EXTEND",
        StageKind::Decode => "-DECODE",
        StageKind::Mixed => "",
    };
    match engine {
        // `<profile_id>-TP-<rank>-<stage>.trace.json.gz`, profile_id = time.time().
        Engine::Sglang => format!("{stamp}.{seed:04}-TP-{rank}{stage_suffix}.trace.json{ext}"),
        // torch's tensorboard handler: `<host>_<pid>.<time_ns>.pt.trace.json.gz`.
        Engine::Vllm => format!(
            "gpu-node-7_{}.{stamp}123456789.pt.trace.json{ext}",
            41000 + rank
        ),
        // TLLM_TORCH_PROFILE_TRACE base with the rank appended.
        // The predecessor's per-stage runner script names the base `trace-<stage>`.
        Engine::Trtllm => {
            let stage = match stage {
                StageKind::Extend => "-prefill",
                StageKind::Decode => "-decode",
                StageKind::Mixed => "",
            };
            format!("trace{stage}-rank-{rank}.json{ext}")
        }
        // `<profile_id>-TP<rank>-<stage>.trace.json.gz` (request_handler.py).
        Engine::Tokenspeed => format!("{stamp}-TP{rank}{stage_suffix}.trace.json{ext}"),
    }
}

const GEMM_QKV: &str = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT";
const GEMM_GATE_UP: &str = "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT";
const GEMM_ROW: &str = "nvjet_tst_128x64_64x6_1x1_v_bz_coopA_TNT";
pub(crate) const FUSED_ADD_RMSNORM: &str =
    "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>";
pub(crate) const FUSED_ADD_RMSNORM_RAW: &str = "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)";
const RMSNORM: &str = "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>";
const RMSNORM_RAW: &str = "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, unsigned int, float, float)";
const ACT_AND_MUL: &str = "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &silu>";
const ACT_AND_MUL_RAW: &str = "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &silu>(__nv_bfloat16*, __nv_bfloat16 const*, int)";
const ROPE: &str = "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>";
const ROPE_RAW: &str = "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)";
const PREFILL_ATTN: &str = "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 2u, 4u, 4u, 4u, 1u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, DefaultAttention<false, false, false, false>>, BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>>";
const PREFILL_ATTN_RAW: &str = "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 2u, 4u, 4u, 4u, 1u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, DefaultAttention<false, false, false, false>>, BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>>(BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)";
const DECODE_ATTN: &str = "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>>";
const DECODE_ATTN_RAW: &str = "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>>(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)";
const CUSTOM_AR: &str = "void cross_device_reduce_2stage<__nv_bfloat16, 2>";
const CUSTOM_AR_RAW: &str = "void cross_device_reduce_2stage<__nv_bfloat16, 2>(RankData*, RankSignals, Signal*, __nv_bfloat16*, int, int)";
const NCCL_AR: &str = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
const NCCL_AR_RAW: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const MEMCPY_DTOD: &str = "Memcpy DtoD (Device -> Device)";

const GEMM_NS: ((u64, u64), (u64, u64)) = ((60_000, 140_000), (9_000, 22_000));
const NORM_NS: ((u64, u64), (u64, u64)) = ((9_000, 16_000), (2_500, 4_000));
const SMALL_NS: ((u64, u64), (u64, u64)) = ((4_000, 9_000), (1_800, 3_200));
const ATTN_NS: ((u64, u64), (u64, u64)) = ((45_000, 90_000), (12_000, 25_000));
const AR_NS: ((u64, u64), (u64, u64)) = ((30_000, 55_000), (6_000, 11_000));

fn op(
    raw: &'static str,
    canonical: &'static str,
    cpu_op: &'static str,
    frame: Frame,
    ns: ((u64, u64), (u64, u64)),
) -> Op {
    Op {
        raw,
        canonical,
        cpu_op,
        frame,
        issue: if raw.starts_with("Memcpy") {
            Issue::MemcpyDtoD
        } else {
            Issue::Kernel
        },
        extend_ns: ns.0,
        decode_ns: ns.1,
        side_stream: false,
    }
}

const NCCL_AG: &str = "ncclDevKernel_AllGather_RING_LL";
const NCCL_AG_RAW: &str = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

/// vLLM's logits all-gather: `LogitsProcessor._gather_logits` gathers the vocabulary
/// shards of the lm_head output (`vllm/model_executor/layers/logits_processor.py`), once
/// per step on the compute stream; as long as an o_proj GEMM, so it shows in the tables.
pub(crate) fn logits_all_gather() -> Op {
    op(
        NCCL_AG_RAW,
        NCCL_AG,
        "c10d::allgather_",
        frame(
            "model_executor/layers/logits_processor.py",
            92,
            "_gather_logits",
        ),
        GEMM_NS,
    )
}

fn side(mut op: Op) -> Op {
    op.side_stream = true;
    op
}

/// The Qwen3 decoder layer every engine runs: norm, QKV, QK-norm, RoPE, KV write,
/// attention, o_proj, all-reduce, norm, gate_up, SiLU-and-mul, down, all-reduce.
struct LayerSites {
    norm: (&'static str, Frame),
    column: Frame,
    row: Frame,
    qk_norm: (&'static str, Frame),
    rope: (&'static str, Frame),
    kv_write: (&'static str, Frame),
    attention: (&'static str, Frame),
    custom_ar: (&'static str, Frame),
    nccl_ar: (&'static str, Frame),
    act: (&'static str, Frame),
}

fn layer_ops(stage: StageKind, s: &LayerSites) -> Vec<Op> {
    let attention = match stage {
        StageKind::Decode => op(
            DECODE_ATTN_RAW,
            DECODE_ATTN,
            s.attention.0,
            s.attention.1,
            ATTN_NS,
        ),
        _ => op(
            PREFILL_ATTN_RAW,
            PREFILL_ATTN,
            s.attention.0,
            s.attention.1,
            ATTN_NS,
        ),
    };
    vec![
        op(
            FUSED_ADD_RMSNORM_RAW,
            FUSED_ADD_RMSNORM,
            s.norm.0,
            s.norm.1,
            NORM_NS,
        ),
        op(GEMM_QKV, GEMM_QKV, "aten::mm", s.column, GEMM_NS),
        op(RMSNORM_RAW, RMSNORM, s.qk_norm.0, s.qk_norm.1, SMALL_NS),
        op(ROPE_RAW, ROPE, s.rope.0, s.rope.1, SMALL_NS),
        op(
            MEMCPY_DTOD,
            MEMCPY_DTOD,
            s.kv_write.0,
            s.kv_write.1,
            SMALL_NS,
        ),
        attention,
        op(GEMM_ROW, GEMM_ROW, "aten::mm", s.row, GEMM_NS),
        op(
            CUSTOM_AR_RAW,
            CUSTOM_AR,
            s.custom_ar.0,
            s.custom_ar.1,
            AR_NS,
        ),
        op(
            FUSED_ADD_RMSNORM_RAW,
            FUSED_ADD_RMSNORM,
            s.norm.0,
            s.norm.1,
            NORM_NS,
        ),
        op(GEMM_GATE_UP, GEMM_GATE_UP, "aten::mm", s.column, GEMM_NS),
        op(ACT_AND_MUL_RAW, ACT_AND_MUL, s.act.0, s.act.1, SMALL_NS),
        op(GEMM_ROW, GEMM_ROW, "aten::mm", s.row, GEMM_NS),
        side(op(NCCL_AR_RAW, NCCL_AR, s.nccl_ar.0, s.nccl_ar.1, AR_NS)),
    ]
}

fn sglang() -> Profile {
    fn outer(stage: StageKind) -> Vec<Frame> {
        let mut frames = vec![
            frame("managers/scheduler.py", 2919, "_run_batch_inner"),
            frame("managers/tp_worker.py", 445, "forward_batch_generation"),
            frame("model_executor/model_runner.py", 3123, "forward"),
            frame("model_executor/model_runner.py", 3194, "_forward_raw"),
        ];
        frames.push(match stage {
            StageKind::Decode => frame("model_executor/model_runner.py", 2964, "forward_decode"),
            _ => frame("model_executor/model_runner.py", 3003, "forward_extend"),
        });
        frames
    }
    fn ops(stage: StageKind) -> Vec<Op> {
        let attention = match stage {
            StageKind::Decode => frame(
                "layers/attention/flashinfer_backend.py",
                842,
                "forward_decode",
            ),
            _ => frame(
                "layers/attention/flashinfer_backend.py",
                745,
                "forward_extend",
            ),
        };
        layer_ops(
            stage,
            &LayerSites {
                norm: (
                    "sgl_kernel::fused_add_rmsnorm",
                    frame("layers/layernorm.py", 140, "forward_cuda"),
                ),
                column: frame("layers/linear.py", 461, "forward"),
                row: frame("layers/linear.py", 1514, "forward"),
                qk_norm: (
                    "sgl_kernel::rmsnorm",
                    frame("models/utils.py", 416, "apply_qk_norm"),
                ),
                rope: (
                    "sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
                    frame("layers/rotary_embedding/base.py", 335, "forward_cuda"),
                ),
                kv_write: (
                    "aten::copy_",
                    frame("mem_cache/memory_pool.py", 1038, "set_kv_buffer"),
                ),
                attention: ("flashinfer::run", attention),
                custom_ar: (
                    "sgl_kernel::all_reduce",
                    frame(
                        "distributed/device_communicators/custom_all_reduce.py",
                        402,
                        "custom_all_reduce",
                    ),
                ),
                nccl_ar: (
                    "c10d::allreduce_",
                    frame(
                        "distributed/device_communicators/pynccl.py",
                        126,
                        "all_reduce",
                    ),
                ),
                act: (
                    "sgl_kernel::silu_and_mul",
                    frame("layers/activation.py", 83, "forward_cuda"),
                ),
            },
        )
    }
    fn annotation(stage: StageKind, batch: usize) -> Option<String> {
        Some(match stage {
            StageKind::Decode => format!("step[DECODE bs={batch}]"),
            _ => format!("step[EXTEND bs={batch} toks={}]", batch * 128),
        })
    }
    Profile {
        frame_prefix: "/sgl-workspace/sglang/python/sglang/srt/",
        location_prefix: "python/sglang/srt/",
        outer,
        graph_runner: frame("model_executor/cuda_graph_runner.py", 1333, "replay"),
        model: [
            frame("models/qwen3.py", 384, "forward"),
            frame("models/qwen3.py", 263, "forward"),
        ],
        ops,
        step_annotation: annotation,
        process_name: "sglang::scheduler_TP0",
        forwarding: &[],
    }
}

fn vllm() -> Profile {
    fn outer(_stage: StageKind) -> Vec<Frame> {
        vec![
            frame("v1/engine/core.py", 337, "step"),
            frame("v1/worker/gpu_worker.py", 447, "execute_model"),
            frame("v1/worker/gpu_model_runner.py", 3380, "execute_model"),
            frame("v1/worker/gpu_model_runner.py", 3007, "_model_forward"),
        ]
    }
    fn ops(stage: StageKind) -> Vec<Op> {
        layer_ops(
            stage,
            &LayerSites {
                norm: (
                    "_C::fused_add_rms_norm",
                    frame("model_executor/layers/layernorm.py", 194, "forward_cuda"),
                ),
                column: frame("model_executor/layers/linear.py", 557, "forward"),
                row: frame("model_executor/layers/linear.py", 1400, "forward"),
                qk_norm: (
                    "_C::rms_norm",
                    frame("model_executor/layers/layernorm.py", 180, "forward_cuda"),
                ),
                rope: (
                    "_C::rotary_embedding",
                    frame(
                        "model_executor/layers/rotary_embedding/base.py",
                        170,
                        "forward_cuda",
                    ),
                ),
                kv_write: (
                    "aten::copy_",
                    frame("v1/attention/backends/flashinfer.py", 1001, "forward"),
                ),
                attention: (
                    "flashinfer::run",
                    frame("v1/attention/backends/flashinfer.py", 1001, "forward"),
                ),
                custom_ar: (
                    "_C_custom_ar::all_reduce",
                    frame(
                        "distributed/device_communicators/custom_all_reduce.py",
                        283,
                        "custom_all_reduce",
                    ),
                ),
                nccl_ar: (
                    "c10d::allreduce_",
                    frame(
                        "distributed/device_communicators/pynccl.py",
                        140,
                        "all_reduce",
                    ),
                ),
                act: (
                    "_C::silu_and_mul",
                    frame("model_executor/layers/activation.py", 84, "forward_cuda"),
                ),
            },
        )
    }
    fn annotation(stage: StageKind, batch: usize) -> Option<String> {
        Some(match stage {
            StageKind::Decode => format!("execute_context_0(0)_generation_{batch}({batch})"),
            _ => format!("execute_context_{batch}({})_generation_0(0)", batch * 128),
        })
    }
    Profile {
        frame_prefix: "vllm/",
        location_prefix: "vllm/",
        outer,
        graph_runner: frame("compilation/cuda_graph.py", 121, "__call__"),
        model: [
            frame("model_executor/models/qwen3.py", 320, "forward"),
            frame("model_executor/models/qwen3.py", 221, "forward"),
        ],
        ops,
        step_annotation: annotation,
        process_name: "VLLM::Worker_TP0",
        // vllm/v1/worker/gpu_model_runner.py: `_model_forward` only calls the model.
        forwarding: &["_model_forward"],
    }
}

fn trtllm() -> Profile {
    fn outer(_stage: StageKind) -> Vec<Frame> {
        vec![
            frame("pyexecutor/py_executor.py", 1188, "_executor_loop"),
            frame("pyexecutor/py_executor.py", 1702, "_forward_step"),
            frame("pyexecutor/model_engine.py", 2240, "forward"),
            frame("pyexecutor/model_engine.py", 2325, "_forward_step"),
        ]
    }
    fn ops(stage: StageKind) -> Vec<Op> {
        layer_ops(
            stage,
            &LayerSites {
                norm: (
                    "flashinfer::fused_add_rmsnorm",
                    frame("modules/rms_norm.py", 70, "forward"),
                ),
                column: frame("modules/linear.py", 1820, "forward"),
                row: frame("modules/linear.py", 1820, "forward"),
                qk_norm: (
                    "flashinfer::rmsnorm",
                    frame("modules/qk_norm_attention.py", 180, "apply_qk_norm"),
                ),
                rope: (
                    "flashinfer::apply_rope_pos_ids_cos_sin_cache",
                    frame("modules/rotary_embedding.py", 120, "forward"),
                ),
                kv_write: (
                    "aten::copy_",
                    frame("attention_backend/trtllm.py", 1180, "forward"),
                ),
                attention: (
                    "trtllm::attention",
                    frame("attention_backend/trtllm.py", 1180, "forward"),
                ),
                custom_ar: (
                    "trtllm::allreduce",
                    frame("distributed/ops.py", 560, "forward"),
                ),
                nccl_ar: (
                    "trtllm::allreduce",
                    frame("distributed/ops.py", 560, "forward"),
                ),
                act: (
                    "trtllm::silu_and_mul",
                    frame("modules/gated_mlp.py", 150, "forward"),
                ),
            },
        )
    }
    fn annotation(_stage: StageKind, _batch: usize) -> Option<String> {
        None
    }
    Profile {
        frame_prefix: "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/",
        location_prefix: "tensorrt_llm/_torch/",
        outer,
        graph_runner: frame("pyexecutor/cuda_graph_runner.py", 390, "replay"),
        model: [
            frame("models/modeling_qwen3.py", 215, "forward"),
            frame("models/modeling_qwen3.py", 140, "forward"),
        ],
        ops,
        step_annotation: annotation,
        process_name: "trtllm-serve",
        forwarding: &[],
    }
}

fn tokenspeed() -> Profile {
    fn outer(_stage: StageKind) -> Vec<Frame> {
        vec![
            frame("engine/request_handler.py", 610, "run_batch"),
            frame("execution/model_executor.py", 1286, "execute_forward_op"),
            frame("execution/model_runner.py", 186, "forward"),
        ]
    }
    fn ops(stage: StageKind) -> Vec<Op> {
        let attention = match stage {
            StageKind::Decode => frame("layers/attention/backends/mha.py", 516, "forward_decode"),
            _ => frame("layers/attention/backends/mha.py", 557, "forward_extend"),
        };
        layer_ops(
            stage,
            &LayerSites {
                norm: (
                    "tokenspeed_kernel::fused_add_rmsnorm",
                    frame("layers/layernorm.py", 105, "forward"),
                ),
                column: frame("layers/linear.py", 453, "forward"),
                row: frame("layers/linear.py", 1229, "forward"),
                qk_norm: (
                    "tokenspeed_kernel::rmsnorm",
                    frame("layers/layernorm.py", 80, "forward"),
                ),
                rope: (
                    "tokenspeed_kernel::apply_rope",
                    frame("layers/rotary_embedding.py", 171, "forward"),
                ),
                kv_write: ("aten::copy_", attention),
                attention: ("flashinfer::run", attention),
                custom_ar: (
                    "tokenspeed_kernel::all_reduce",
                    frame("distributed/comm_ops.py", 88, "all_reduce"),
                ),
                nccl_ar: (
                    "c10d::allreduce_",
                    frame("distributed/comm_ops.py", 88, "all_reduce"),
                ),
                act: (
                    "tokenspeed_kernel::silu_and_mul",
                    frame("layers/activation.py", 54, "forward"),
                ),
            },
        )
    }
    fn annotation(_stage: StageKind, _batch: usize) -> Option<String> {
        None
    }
    Profile {
        frame_prefix: "/opt/tokenspeed/python/tokenspeed/runtime/",
        location_prefix: "python/tokenspeed/runtime/",
        outer,
        graph_runner: frame("execution/cuda_graph_wrapper.py", 160, "replay"),
        model: [
            frame("models/qwen3.py", 300, "forward"),
            frame("models/qwen3.py", 210, "forward"),
        ],
        ops,
        step_annotation: annotation,
        process_name: "tokenspeed::scheduler_TP0",
        forwarding: &[],
    }
}
