//! Model-config shapes: FLOPs and bytes for the launches whose CPU op left no `Input
//! Dims` (CUDA/HIP graph replays without a capture trace), from the model's
//! `config.json`, the TP size and the step's token count.
//!
//! A dense decoder layer runs four GEMMs in this order: qkv, o_proj, gate_up, down; the
//! step ends with the lm_head. So the GEMM-family kernels of one step, in GPU start
//! order, are `4 * num_hidden_layers` of the layers and maybe one more (the lm_head): a
//! step with any other count (a MoE router, a fused or split projection) keeps no
//! model-config shapes and is counted in a note. Shapes per rank, with `tp` the TP size:
//!
//! ```text
//! qkv      [T, H] x [H, (heads + 2 kv_heads) d / tp]      T = the step's tokens
//! o_proj   [T, heads d / tp] x [heads d / tp, H]
//! gate_up  [T, H] x [H, 2 I / tp]
//! down     [T, I / tp] x [I / tp, H]
//! lm_head  [R, H] x [H, vocab / tp]                         R = the step's requests
//! ```
//!
//! Attention takes `heads / tp`, `kv_heads / tp` (at least one) and `head_dim` from the
//! config and the sq/sk sums from the step annotation (as with `Input Dims`); the first
//! attention-family kernel of each layer carries the layer's cost (decode runs a
//! partition kernel and a reduce kernel per layer).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::analyze::roofline::formulas::{self, AttentionHeads, Gemm};
use crate::analyze::roofline::shapes::{DtypeClass, LaunchCost};
use crate::analyze::roofline::steps::{step_tokens, StepIndex, StepTokens};
use crate::catalog::FamilyRules;
use crate::trace::event::{GpuKind, Ns, Sym, Trace};
use crate::trace::link::Linked;
use crate::trace::model_config::ModelShape;

/// GEMMs of one dense decoder layer.
const LAYER_GEMMS: u64 = 4;

/// What the model-config shapes read beyond the trace.
#[derive(Copy, Clone, Debug)]
pub struct ModelInputs<'a> {
    /// The model's dimensions (`--model-config`, or `config.json` beside the traces).
    pub shape: Option<&'a ModelShape>,
    /// The TP size from the server args; `None`: the trace's world size, else 1.
    pub tp: Option<u64>,
    pub families: &'a FamilyRules,
}

/// One trace's model-config costs, by GPU op index, and the steps that could not use
/// them.
#[derive(Clone, Debug, Default)]
pub(super) struct ConfigShapes {
    pub costs: FxHashMap<usize, LaunchCost>,
    /// Indices of `costs` that are attention launches.
    pub attention: FxHashSet<usize>,
    /// Steps whose GEMM kernel count is not 4 per layer (+ the lm_head).
    pub steps_skipped: u64,
    /// The TP size used.
    pub tp: u64,
}

/// The dimensions of a dense decoder, all present.
#[derive(Copy, Clone, Debug)]
struct Dense {
    layers: u64,
    hidden: u64,
    inter: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    vocab: u64,
    elem_bytes: u64,
    class: Option<DtypeClass>,
}

impl Dense {
    fn of(shape: &ModelShape) -> Option<Dense> {
        if shape.quantized {
            return None;
        }
        Some(Dense {
            layers: shape.layers?,
            hidden: shape.hidden?,
            inter: shape.intermediate?,
            heads: shape.heads?,
            kv_heads: shape.kv_heads?,
            head_dim: shape.head_dim?,
            vocab: shape.vocab?,
            elem_bytes: shape.elem_bytes?,
            class: match shape.dtype? {
                "bfloat16" => Some(DtypeClass::Bf16),
                "float16" => Some(DtypeClass::Fp16),
                _ => Some(DtypeClass::Fp32),
            },
        })
    }

    /// GEMM `index` of a step (launch order), per rank: past the layers, the lm_head.
    fn gemm(&self, index: u64, step: StepTokens, tp: u64) -> Gemm {
        let (h, d) = (self.hidden, self.head_dim);
        let q = (self.heads / tp) * d;
        let kv = (self.kv_heads / tp).max(1) * d;
        let (m, n, k) = if index >= self.layers * LAYER_GEMMS {
            (step.requests, self.vocab.div_ceil(tp), h)
        } else {
            match index % LAYER_GEMMS {
                0 => (step.tokens, q + 2 * kv, h),
                1 => (step.tokens, h, q),
                2 => (step.tokens, 2 * (self.inter / tp), h),
                _ => (step.tokens, h, self.inter / tp),
            }
        };
        let e = self.elem_bytes;
        Gemm {
            b: 1,
            m,
            n,
            k,
            a_bytes: e,
            b_bytes: e,
            c_bytes: e,
            ..Gemm::default()
        }
    }

    fn attention_heads(&self, tp: u64) -> AttentionHeads {
        AttentionHeads {
            q_heads: self.heads / tp,
            kv_heads: (self.kv_heads / tp).max(1),
            d_qk: self.head_dim,
            d_v: self.head_dim,
            elem_bytes: self.elem_bytes,
        }
    }
}

/// The model-config cost of every GEMM and attention launch of `trace`'s GPU `gpu_pid`
/// that a step annotation holds; empty without a complete config.
pub(super) fn config_shapes(
    trace: &Trace,
    linked: &Linked,
    gpu_pid: Sym,
    model: &ModelInputs<'_>,
    step_index: &StepIndex,
) -> ConfigShapes {
    let tp = model
        .tp
        .or(trace.meta.world_size.map(u64::from))
        .unwrap_or(1)
        .max(1);
    let mut out = ConfigShapes {
        tp,
        ..ConfigShapes::default()
    };
    let Some(dense) = model.shape.and_then(Dense::of) else {
        return out;
    };
    let steps = TokenSteps::new(trace);
    // GEMM kernels per token step, attention kernels per sums step: (GPU start, index).
    let mut gemms: FxHashMap<usize, Vec<(Ns, usize)>> = FxHashMap::default();
    let mut attention: FxHashMap<usize, Vec<(Ns, usize)>> = FxHashMap::default();
    let mut family_of: FxHashMap<Sym, &str> = FxHashMap::default();
    for (i, op) in trace.gpu_ops.iter().enumerate() {
        if op.pid != gpu_pid || op.kind != GpuKind::Kernel {
            continue;
        }
        let Some(at) = linked.sites.get(i).and_then(|s| s.launch_ts) else {
            continue;
        };
        let family = *family_of
            .entry(op.name)
            .or_insert_with(|| model.families.family_of(trace.name(op.name)));
        match family {
            "gemm" => {
                if let Some(step) = steps.position_at(at) {
                    gemms.entry(step).or_default().push((op.ts, i));
                }
            }
            "attention" => {
                if let Some(step) = step_index.position_at(at) {
                    attention.entry(step).or_default().push((op.ts, i));
                }
            }
            _ => {}
        }
    }
    let layer_gemms = dense.layers * LAYER_GEMMS;
    for (step, mut ops) in gemms {
        let count = ops.len() as u64;
        if count != layer_gemms && count != layer_gemms + 1 {
            out.steps_skipped += 1;
            continue;
        }
        ops.sort_unstable();
        let tokens = steps.steps[step].2;
        for (index, (_, op)) in ops.into_iter().enumerate() {
            let g = dense.gemm(index as u64, tokens, tp);
            out.costs.insert(
                op,
                LaunchCost {
                    cost: formulas::gemm(&g),
                    class: dense.class,
                },
            );
        }
    }
    let heads = dense.attention_heads(tp);
    for (step, mut ops) in attention {
        let (Some(counts), count) = (step_index.get(step), ops.len() as u64) else {
            continue;
        };
        if count == 0 || count % dense.layers != 0 {
            continue;
        }
        let per_layer = (count / dense.layers) as usize;
        ops.sort_unstable();
        for (_, op) in ops.into_iter().step_by(per_layer) {
            out.costs.insert(
                op,
                LaunchCost {
                    cost: formulas::attention(&heads, counts),
                    class: dense.class,
                },
            );
            out.attention.insert(op);
        }
    }
    out
}

/// A trace's step annotations that give token counts, by CPU start time.
struct TokenSteps {
    /// (start, end, tokens), sorted by start.
    steps: Vec<(Ns, Ns, StepTokens)>,
}

impl TokenSteps {
    fn new(trace: &Trace) -> TokenSteps {
        let mut steps: Vec<(Ns, Ns, StepTokens)> = trace
            .annotations
            .iter()
            .filter(|a| !a.on_gpu)
            .filter_map(|a| {
                let tokens = step_tokens(trace.name(a.name))?;
                Some((a.ts, a.ts.saturating_add(a.dur), tokens))
            })
            .collect();
        steps.sort_by_key(|&(start, end, _)| (start, end));
        TokenSteps { steps }
    }

    /// The latest-starting step that holds CPU time `at`.
    fn position_at(&self, at: Ns) -> Option<usize> {
        let after = self.steps.partition_point(|&(start, _, _)| start <= at);
        self.steps[..after]
            .iter()
            .rposition(|&(_, end, _)| end >= at)
    }
}
