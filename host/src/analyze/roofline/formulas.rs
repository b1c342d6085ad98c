//! FLOPs and bytes of one launch, per op kind: pure arithmetic on shapes, no trace.
//!
//! Every formula counts what the op must do at least: each input tensor read once, each
//! output written once (no re-reads, no cache effects), and the arithmetic of the
//! mathematical operation (a multiply-add is two FLOPs). The counting follows TraceLens's
//! perf models where it has one, so its published figures are an independent check
//! (`tests/tests/e2e/roofline.rs`). All counts are integers (`u128`: a 1e6-token prefill
//! of a large GEMM stays far from overflow).

/// FLOPs and bytes of one launch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub flops: u128,
    pub bytes: u128,
}

/// A GEMM `C[b, m, n] = A[b, m, k] · B[b, k, n] (+ bias)`, with each operand's element
/// size in bytes. FLOPs `2·b·m·n·k`, plus `b·m·n` for the bias add; bytes: A, B and C
/// once, and the bias (`bias_elems` elements of `bias_bytes`) once.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Gemm {
    pub b: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub a_bytes: u64,
    pub b_bytes: u64,
    pub c_bytes: u64,
    pub bias_elems: u64,
    pub bias_bytes: u64,
}

pub fn gemm(g: &Gemm) -> Cost {
    let (b, m, n, k) = (
        u128::from(g.b),
        u128::from(g.m),
        u128::from(g.n),
        u128::from(g.k),
    );
    let bias_add = if g.bias_elems > 0 { b * m * n } else { 0 };
    Cost {
        flops: 2 * b * m * n * k + bias_add,
        bytes: b
            * (m * k * u128::from(g.a_bytes)
                + k * n * u128::from(g.b_bytes)
                + m * n * u128::from(g.c_bytes))
            + u128::from(g.bias_elems) * u128::from(g.bias_bytes),
    }
}

/// A scaled (quantised) GEMM: the GEMM itself plus its scale tensors read once
/// (`scale_bytes` in total: per-tensor, per-row or per-128-block scales alike).
pub fn scaled_gemm(g: &Gemm, scale_bytes: u64) -> Cost {
    let base = gemm(g);
    Cost {
        flops: base.flops,
        bytes: base.bytes + u128::from(scale_bytes),
    }
}

/// A grouped MoE GEMM pair (gate/up then down) over `tokens` tokens routed to `top_k`
/// experts each, `experts` experts of `hidden -> 2·inter -> inter -> hidden`.
/// FLOPs: `2·tokens·top_k·hidden·2·inter + 2·tokens·top_k·inter·hidden`. Bytes: the
/// weights of the experts that can be hit, `min(experts, tokens·top_k)` of them (all of
/// them at prefill sizes, few at small decode batches), plus the hidden states in and out.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MoeGemm {
    pub tokens: u64,
    pub top_k: u64,
    pub experts: u64,
    pub hidden: u64,
    pub inter: u64,
    pub act_bytes: u64,
    pub weight_bytes: u64,
}

pub fn grouped_moe(g: &MoeGemm) -> Cost {
    let t = u128::from(g.tokens);
    let k = u128::from(g.top_k);
    let h = u128::from(g.hidden);
    let i = u128::from(g.inter);
    let routed = t * k;
    let experts_hit = u128::from(g.experts).min(routed);
    Cost {
        flops: 2 * routed * h * 2 * i + 2 * routed * i * h,
        bytes: experts_hit * (h * 2 * i + i * h) * u128::from(g.weight_bytes)
            + 2 * t * h * u128::from(g.act_bytes),
    }
}

/// One step's attention work, as the engines' step annotations give it: over context
/// (prefill) requests the sums `c_sq = Σ sq`, `c_sk = Σ sk`, `c_sqsq = Σ sq²`,
/// `c_sqsk = Σ sq·sk`, and the same `g_*` over generation (decode) requests.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StepCounts {
    pub c_sq: u64,
    pub c_sk: u64,
    pub c_sqsq: u64,
    pub c_sqsk: u64,
    pub g_sq: u64,
    pub g_sk: u64,
    pub g_sqsq: u64,
    pub g_sqsk: u64,
}

/// Heads and head sizes of a (paged or varlen) attention launch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AttentionHeads {
    pub q_heads: u64,
    pub kv_heads: u64,
    pub d_qk: u64,
    pub d_v: u64,
    /// Element size of Q, K, V and the output (the query's dtype).
    pub elem_bytes: u64,
}

/// Attention over one step. FLOPs: QKᵀ and PV, `2·H_q·(d_qk + d_v)` per (query, key)
/// pair; the context part is causal inside the new chunk, so each request's `sq²/2`
/// pairs that are masked are taken off: `H_q·(d_qk + d_v)·(2·c_sqsk − c_sqsq)`, plus
/// `2·H_q·(d_qk + d_v)·g_sqsk` for generation. Bytes: Q and the output once per query
/// token, K and V once per key token.
pub fn attention(h: &AttentionHeads, s: &StepCounts) -> Cost {
    let hq = u128::from(h.q_heads);
    let hkv = u128::from(h.kv_heads);
    let d = u128::from(h.d_qk) + u128::from(h.d_v);
    let c_pairs = (2 * u128::from(s.c_sqsk)).saturating_sub(u128::from(s.c_sqsq));
    let flops = hq * d * c_pairs + 2 * hq * d * u128::from(s.g_sqsk);
    let q_tokens = u128::from(s.c_sq) + u128::from(s.g_sq);
    let kv_tokens = u128::from(s.c_sk) + u128::from(s.g_sk);
    let elems = q_tokens * hq * d + kv_tokens * hkv * d;
    Cost {
        flops,
        bytes: elems * u128::from(h.elem_bytes),
    }
}

/// A memory-bound op that reads and writes the tensors it is given once: `tensor_bytes`
/// in total (inputs and outputs, as the op's arguments list them), `flops_per_elem` FLOPs
/// on each of `elems` elements. Norms, activations, quantisation and other elementwise
/// ops use it with their own FLOPs per element (catalog data).
pub fn streaming(elems: u64, flops_per_elem: u64, tensor_bytes: u64) -> Cost {
    Cost {
        flops: u128::from(elems) * u128::from(flops_per_elem),
        bytes: u128::from(tensor_bytes),
    }
}

/// RMSNorm over `rows × cols` elements, `tensors` row-sized tensors read or written
/// (2 for `out = norm(x)`, 4 for the fused residual add: x, residual in, out, residual
/// out) and the weight read once. FLOPs per element: 4 (square, sum, scale, weight),
/// one more for the residual add.
pub fn rmsnorm(rows: u64, cols: u64, tensors: u64, with_add: bool, elem_bytes: u64) -> Cost {
    let elems = u128::from(rows) * u128::from(cols);
    let per_elem = if with_add { 5 } else { 4 };
    Cost {
        flops: elems * per_elem,
        bytes: (elems * u128::from(tensors) + u128::from(cols)) * u128::from(elem_bytes),
    }
}

/// Rotary embedding applied in place to `elems` query and key elements: each read and
/// written once, 3 FLOPs per element (two multiplies and an add; the cos/sin cache
/// stays in cache).
pub fn rope(elems: u64, elem_bytes: u64) -> Cost {
    Cost {
        flops: 3 * u128::from(elems),
        bytes: 2 * u128::from(elems) * u128::from(elem_bytes),
    }
}

/// Writing the new tokens' keys and values (`elems` elements together) into the KV
/// cache: read once, written once into the cache at `cache_elem_bytes` (fp8 caches
/// halve the write); no FLOPs.
pub fn kv_cache_write(elems: u64, elem_bytes: u64, cache_elem_bytes: u64) -> Cost {
    Cost {
        flops: 0,
        bytes: u128::from(elems) * (u128::from(elem_bytes) + u128::from(cache_elem_bytes)),
    }
}

/// An all-reduce of `elems` elements on one rank: the buffer read and the result
/// written through this GPU's memory once each (what the HBM roof sees; link bandwidth
/// is not a roof here), and one add per element per peer (`ranks - 1`).
pub fn all_reduce(elems: u64, elem_bytes: u64, ranks: u64) -> Cost {
    Cost {
        flops: u128::from(elems) * u128::from(ranks.saturating_sub(1)),
        bytes: 2 * u128::from(elems) * u128::from(elem_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u128 = 1 << 20;

    #[test]
    fn a_bf16_gemm_counts_two_flops_per_multiply_add_and_each_operand_once() {
        // 15360 x 4096 times 4096 x 24576 in bf16, by hand:
        // 2 * 15360 * 24576 * 4096 = 3_092_376_453_120 FLOPs;
        // (15360*4096 + 4096*24576 + 15360*24576) * 2 bytes = 1032 MiB.
        let g = Gemm {
            b: 1,
            m: 15360,
            n: 24576,
            k: 4096,
            a_bytes: 2,
            b_bytes: 2,
            c_bytes: 2,
            ..Gemm::default()
        };
        let cost = gemm(&g);
        assert_eq!(cost.flops, 3_092_376_453_120);
        assert_eq!(cost.bytes, 1032 * MIB);
    }

    #[test]
    fn a_bias_adds_one_flop_per_output_and_its_bytes() {
        // addmm 888 x 2880 · 2880 x 640 + bias[640], bf16:
        // 2*888*640*2880 + 888*640 = 3_273_523_200 + 568_320.
        let g = Gemm {
            b: 1,
            m: 888,
            n: 640,
            k: 2880,
            a_bytes: 2,
            b_bytes: 2,
            c_bytes: 2,
            bias_elems: 640,
            bias_bytes: 2,
        };
        let cost = gemm(&g);
        assert_eq!(cost.flops, 3_273_523_200 + 568_320);
        assert_eq!(
            cost.bytes,
            (888 * 2880 + 2880 * 640 + 888 * 640) * 2 + 640 * 2
        );
    }

    #[test]
    fn a_batched_gemm_multiplies_by_the_batch() {
        // bmm 8 x (16x64 · 64x32) fp32: 2*8*16*32*64 FLOPs; 8*(16*64+64*32+16*32)*4 bytes.
        let g = Gemm {
            b: 8,
            m: 16,
            n: 32,
            k: 64,
            a_bytes: 4,
            b_bytes: 4,
            c_bytes: 4,
            ..Gemm::default()
        };
        assert_eq!(
            gemm(&g),
            Cost {
                flops: 524_288,
                bytes: 8 * (1024 + 2048 + 512) * 4
            }
        );
    }

    #[test]
    fn a_scaled_fp8_gemm_reads_one_byte_operands_and_its_scales() {
        // fp8 128x256 · 256x512 -> bf16, per-128-block scales: a 128x2, b 2x4 floats.
        let g = Gemm {
            b: 1,
            m: 128,
            n: 512,
            k: 256,
            a_bytes: 1,
            b_bytes: 1,
            c_bytes: 2,
            ..Gemm::default()
        };
        let cost = scaled_gemm(&g, (128 * 2 + 2 * 4) * 4);
        assert_eq!(cost.flops, 2 * 128 * 512 * 256);
        assert_eq!(
            cost.bytes,
            128 * 256 + 256 * 512 + 128 * 512 * 2 + (256 + 8) * 4
        );
    }

    #[test]
    fn a_grouped_moe_reads_only_the_experts_a_small_batch_can_hit() {
        // 4 tokens, top 2 of 128 experts, hidden 64, inter 32, bf16:
        // FLOPs 2*8*64*64 + 2*8*32*64 = 65536 + 32768; experts hit min(128, 8) = 8,
        // each 64*64 + 32*64 weights; hidden in and out 2*4*64.
        let g = MoeGemm {
            tokens: 4,
            top_k: 2,
            experts: 128,
            hidden: 64,
            inter: 32,
            act_bytes: 2,
            weight_bytes: 2,
        };
        let cost = grouped_moe(&g);
        assert_eq!(cost.flops, 98_304);
        assert_eq!(cost.bytes, 8 * (4096 + 2048) * 2 + 2 * 4 * 64 * 2);
        // At prefill size every expert is read, once.
        let big = grouped_moe(&MoeGemm { tokens: 1000, ..g });
        assert_eq!(big.bytes, 128 * (4096 + 2048) * 2 + 2 * 1000 * 64 * 2);
    }

    #[test]
    fn causal_prefill_attention_takes_off_the_masked_half_of_the_chunk() {
        // Qwen3-8B prefill, 15 requests of 1024 tokens, no prefix: c_sq = c_sk = 15360,
        // c_sqsq = c_sqsk = 15 * 1024² = 15_728_640; 32 query heads, 8 KV heads, d 128.
        // FLOPs 32 * 256 * (2*15728640 - 15728640) = 128_849_018_880;
        // bytes (15360*32*256 + 15360*8*256) * 2 = 300 MiB.
        let heads = AttentionHeads {
            q_heads: 32,
            kv_heads: 8,
            d_qk: 128,
            d_v: 128,
            elem_bytes: 2,
        };
        let step = StepCounts {
            c_sq: 15360,
            c_sk: 15360,
            c_sqsq: 15_728_640,
            c_sqsk: 15_728_640,
            ..StepCounts::default()
        };
        let cost = attention(&heads, &step);
        assert_eq!(cost.flops, 128_849_018_880);
        assert_eq!(cost.bytes, 300 * MIB);
    }

    #[test]
    fn decode_attention_counts_every_query_key_pair_of_the_paged_context() {
        // 64 decode requests, 2048 keys each: g_sq 64, g_sk = g_sqsk = 131072.
        let heads = AttentionHeads {
            q_heads: 8,
            kv_heads: 1,
            d_qk: 64,
            d_v: 64,
            elem_bytes: 2,
        };
        let step = StepCounts {
            g_sq: 64,
            g_sk: 131_072,
            g_sqsq: 64,
            g_sqsk: 131_072,
            ..StepCounts::default()
        };
        let cost = attention(&heads, &step);
        assert_eq!(cost.flops, 2 * 8 * 128 * 131_072);
        assert_eq!(cost.bytes, (64 * 8 * 128 + 131_072 * 128) * 2);
    }

    #[test]
    fn rmsnorm_reads_and_writes_each_row_tensor_once_and_the_weight_once() {
        // (15360, 4096) bf16: out = norm(x): 2 tensors -> 240 MiB + 8 KiB weight;
        // 4 FLOPs per element = 251_658_240. The fused add: 4 tensors, 5 FLOPs.
        let plain = rmsnorm(15360, 4096, 2, false, 2);
        assert_eq!(plain.flops, 251_658_240);
        assert_eq!(plain.bytes, 240 * MIB + 8192);
        let fused = rmsnorm(15360, 4096, 4, true, 2);
        assert_eq!(fused.flops, 314_572_800);
        assert_eq!(fused.bytes, 480 * MIB + 8192);
    }

    #[test]
    fn rope_reads_and_writes_query_and_key_in_place() {
        // q 15360x4096 + k 15360x1024 = 78_643_200 bf16 elements: 300 MiB, 3 FLOPs each.
        let cost = rope(78_643_200, 2);
        assert_eq!(cost.flops, 235_929_600);
        assert_eq!(cost.bytes, 300 * MIB);
    }

    #[test]
    fn an_elementwise_op_moves_its_tensors_once() {
        // silu_and_mul: in 888 x 6144, out 888 x 3072, bf16; 3 FLOPs per output element.
        let cost = streaming(888 * 3072, 3, (888 * 6144 + 888 * 3072) * 2);
        assert_eq!(cost.flops, 8_183_808);
        assert_eq!(cost.bytes, 16_367_616);
    }

    #[test]
    fn a_kv_cache_write_reads_the_new_tokens_and_writes_them_at_the_cache_dtype() {
        // K and V of 15360 tokens x 1024 bf16 = 31_457_280 elements: 60 MiB in, 60 out;
        // an fp8 cache writes half.
        assert_eq!(kv_cache_write(31_457_280, 2, 2).bytes, 120 * MIB);
        assert_eq!(kv_cache_write(31_457_280, 2, 1).bytes, 90 * MIB);
        assert_eq!(kv_cache_write(31_457_280, 2, 2).flops, 0);
    }

    #[test]
    fn an_all_reduce_reads_and_writes_its_buffer_and_adds_once_per_peer() {
        // 2_557_440 bf16 elements over 8 ranks.
        let cost = all_reduce(2_557_440, 2, 8);
        assert_eq!(cost.bytes, 2 * 2_557_440 * 2);
        assert_eq!(cost.flops, 2_557_440 * 7);
    }
}
