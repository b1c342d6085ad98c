//! Before/after trace pairs for `llm-triage diff` (issue 20): one SGLang Qwen3 prefill
//! profile written twice, the second side with one known change, and the ground truth of
//! what a correct diff reports about it.
//!
//! ```text
//! DIR/<pair>/base/<id>-TP-0-EXTEND.trace.json.gz  + server_args.json   the BASE side
//! DIR/<pair>/new/<id>-TP-0-EXTEND.trace.json.gz   + server_args.json   the NEW side
//! DIR/<pair>/ground_truth.json                                         what changed, in ns
//! ```
//!
//! Both sides draw every kernel's duration from one table (seeded, a multiple of 20 ns,
//! the same in every step), lay the kernels out on one stream with the queue kept full
//! (so nothing but the injected change moves the wall time), and record per side and
//! step the wall time split as the timeline defines it, per kernel name and per role the
//! exact ns. The changes ([`pairs`]):
//!
//! * `gemm-5pct-slower`: every GEMM (family `gemm`: the QKV, o_proj, gate_up and down
//!   projections, three `nvjet_*` kernel names) runs exactly 5% longer;
//! * `norm-unfused`: the post-attention fused add + RMSNorm
//!   (`FusedAddRMSNormKernel`) is replaced by its split kernels (residual add, then
//!   SGLang's `forward_native` RMSNorm in plain PyTorch: pow, mean, add eps, rsqrt, two
//!   muls), so `torch.eager-unfused-rmsnorm` starts firing on the new side;
//! * `host-gap`: the scheduler spends 200 µs more between steps (`get_next_batch_to_run`),
//!   so every step after the first gains exactly that much host idle;
//! * `batch-16`: 16 requests a step instead of 8 (2048 tokens instead of 1024), kernels
//!   unchanged: only the workload differs;
//! * `cuda-vs-rocm`: the same projections on an MI300X (hipBLASLt `Cijk_*` GEMMs, aiter
//!   norms, RCCL) against an H100 (`nvjet_*`, FlashInfer, NCCL) with the same durations:
//!   rows meet only at the role, and every role is the same.
//!
//! The stacks carry torch's `nn.Module:` frames (`with_modules`), so every launch has a
//! role (`catalog/roles.toml`) and the projections are told apart.

mod truth;
mod writer;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use truth::{ChangedRow, KernelTotal, PairTruth, SideTruth, StepParts, FILE_NAME, PARTS};

use crate::timeline::Platform;

/// Steps per side; each runs [`LAYERS`] decoder layers.
pub const STEPS: usize = 4;
pub const LAYERS: usize = 4;
/// The stage every pair's traces hold, as the report labels it.
pub const STAGE: &str = "extend/prefill";
/// Host time the scheduler spends between two steps on a base side.
const BETWEEN_STEPS_NS: u64 = 40_000;

/// One side of a pair: what its trace runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub platform: Platform,
    /// Requests per step (the step marker's `bs=`; tokens are 128 per request).
    pub batch_size: usize,
    /// Percent added to every GEMM's duration (0 or 5).
    pub gemm_slower_pct: u64,
    /// The post-attention norm runs as split kernels instead of one fused kernel.
    pub unfused_norm: bool,
    /// Host ns added between steps (the scheduler's frame runs longer).
    pub extra_host_ns: u64,
}

impl Side {
    /// The base side every pair starts from: CUDA, 8 requests, nothing changed.
    pub const BASE: Side = Side {
        platform: Platform::Cuda,
        batch_size: 8,
        gemm_slower_pct: 0,
        unfused_norm: false,
        extra_host_ns: 0,
    };
}

/// A pair: its directory name, its two sides, and the seed of the duration table.
#[derive(Clone, Copy, Debug)]
pub struct Pair {
    pub name: &'static str,
    /// What changed, in one sentence (written into the ground truth).
    pub change: &'static str,
    pub base: Side,
    pub new: Side,
    pub seed: u64,
    /// Fusion-table rows (catalog ids) listed on the new side only / on the base only.
    pub fusions_started: &'static [&'static str],
    pub fusions_stopped: &'static [&'static str],
}

pub fn pairs() -> Vec<Pair> {
    vec![
        Pair {
            name: "gemm-5pct-slower",
            change: "every GEMM kernel (family gemm: qkv, o_proj, gate_up, down) runs exactly 5% longer",
            base: Side::BASE,
            new: Side {
                gemm_slower_pct: 5,
                ..Side::BASE
            },
            seed: 61,
            fusions_started: &[],
            fusions_stopped: &[],
        },
        Pair {
            name: "norm-unfused",
            change: "the post-attention fused add + RMSNorm kernel is replaced by a residual add and an eager RMSNorm (pow, mean, add, rsqrt, mul, mul)",
            base: Side::BASE,
            new: Side {
                unfused_norm: true,
                ..Side::BASE
            },
            seed: 62,
            fusions_started: &["torch.eager-unfused-rmsnorm"],
            fusions_stopped: &[],
        },
        Pair {
            name: "host-gap",
            change: "the scheduler's get_next_batch_to_run takes 200 us longer before every step after the first",
            base: Side::BASE,
            new: Side {
                extra_host_ns: 200_000,
                ..Side::BASE
            },
            seed: 63,
            fusions_started: &[],
            fusions_stopped: &[],
        },
        Pair {
            name: "batch-16",
            change: "16 requests (2048 tokens) a step instead of 8 (1024 tokens); kernels unchanged",
            base: Side::BASE,
            new: Side {
                batch_size: 16,
                ..Side::BASE
            },
            seed: 64,
            fusions_started: &[],
            fusions_stopped: &[],
        },
        Pair {
            name: "cuda-vs-rocm",
            change: "the same layers and durations on an AMD MI300X (Cijk_* GEMMs, aiter norms, RCCL) instead of an NVIDIA H100 (nvjet_* GEMMs, FlashInfer norms, NCCL)",
            base: Side::BASE,
            new: Side {
                platform: Platform::Rocm,
                ..Side::BASE
            },
            seed: 65,
            // FlashInfer's all-reduce fusion is CUDA-only, AITER's ROCm-only: each side
            // shows its own platform's row (both split: all-reduce then a norm).
            fusions_started: &["sglang.aiter-allreduce-fusion"],
            fusions_stopped: &["sglang.flashinfer-allreduce-fusion"],
        },
    ]
}

/// Writes `pair` as `dir/{base,new}/…` plus `dir/ground_truth.json`.
pub fn write_pair(dir: &Path, pair: &Pair) -> std::io::Result<PairTruth> {
    let base = writer::write_side(&dir.join("base"), pair, &pair.base)?;
    let new = writer::write_side(&dir.join("new"), pair, &pair.new)?;
    let truth = PairTruth {
        name: pair.name.to_string(),
        change: pair.change.to_string(),
        fusions_started: pair.fusions_started.iter().map(|s| s.to_string()).collect(),
        fusions_stopped: pair.fusions_stopped.iter().map(|s| s.to_string()).collect(),
        base,
        new,
    };
    let body = serde_json::to_string_pretty(&truth.to_json(dir)).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(FILE_NAME), body + "\n")?;
    Ok(truth)
}

/// Writes every pair of [`pairs`] as `dir/<pair name>/…`.
pub fn write_diff_pairs(dir: &Path) -> std::io::Result<Vec<PairTruth>> {
    pairs()
        .iter()
        .map(|p| write_pair(&dir.join(p.name), p))
        .collect()
}
