//! From a CPU op's `Input Dims` / `Input type` JSON text and its catalog row to the
//! launch's FLOPs and bytes. Parsed once per distinct (op, dims, types) text: shapes
//! repeat across layers and steps, so the per-launch cost is one cache lookup.

use crate::analyze::roofline::formulas::{self, AttentionHeads, Cost, Gemm, MoeGemm, StepCounts};
use crate::catalog::roofline::OpFormula;

/// The dtype class a peak is quoted for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DtypeClass {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    Fp4,
    Int8,
}

impl DtypeClass {
    /// The JSON spelling (`peak_tflops` keys).
    pub fn as_str(self) -> &'static str {
        match self {
            DtypeClass::Fp32 => "fp32",
            DtypeClass::Bf16 => "bf16",
            DtypeClass::Fp16 => "fp16",
            DtypeClass::Fp8 => "fp8",
            DtypeClass::Fp4 => "fp4",
            DtypeClass::Int8 => "int8",
        }
    }
}

/// Element size in bytes and dtype class of a torch `Input type` string
/// (`c10::BFloat16`, `float`, `c10::Float8_e4m3fn`, `long int`, ...); `None` for
/// non-tensors (`Scalar`, ``) and unknown names.
pub fn dtype(name: &str) -> Option<(u64, Option<DtypeClass>)> {
    Some(match name {
        "c10::BFloat16" => (2, Some(DtypeClass::Bf16)),
        "c10::Half" => (2, Some(DtypeClass::Fp16)),
        "float" => (4, Some(DtypeClass::Fp32)),
        "double" => (8, None),
        "c10::Float8_e4m3fn"
        | "c10::Float8_e5m2"
        | "c10::Float8_e4m3fnuz"
        | "c10::Float8_e5m2fnuz" => (1, Some(DtypeClass::Fp8)),
        // Two fp4 values per byte: the element size of the packed tensor.
        "c10::Float4_e2m1fn_x2" => (1, Some(DtypeClass::Fp4)),
        "signed char" => (1, Some(DtypeClass::Int8)),
        "unsigned char" | "bool" => (1, None),
        "short int" => (2, None),
        "int" | "unsigned int" => (4, None),
        "long int" | "long long int" | "unsigned long" => (8, None),
        _ => return None,
    })
}

/// One positional argument: its dims when it is a tensor with a known dtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    pub dims: Vec<u64>,
    pub elem_bytes: u64,
    pub class: Option<DtypeClass>,
}

impl Arg {
    pub fn numel(&self) -> u64 {
        self.dims.iter().product()
    }

    pub fn bytes(&self) -> u64 {
        self.numel() * self.elem_bytes
    }
}

/// The op's arguments, `None` where an argument is not a tensor (a scalar, a list, an
/// empty dims list, an unknown dtype). `None` overall when the text is not the JSON
/// lists torch.profiler writes.
pub fn parse_args(dims_json: &str, types_json: &str) -> Option<Vec<Option<Arg>>> {
    let dims: Vec<serde_json::Value> = serde_json::from_str(dims_json).ok()?;
    let types: Vec<serde_json::Value> = serde_json::from_str(types_json).ok()?;
    Some(
        dims.iter()
            .enumerate()
            .map(|(i, d)| {
                let list = d.as_array()?;
                if list.is_empty() {
                    return None;
                }
                let dims = list
                    .iter()
                    .map(serde_json::Value::as_u64)
                    .collect::<Option<Vec<u64>>>()?;
                let (elem_bytes, class) = dtype(types.get(i)?.as_str()?)?;
                Some(Arg {
                    dims,
                    elem_bytes,
                    class,
                })
            })
            .collect(),
    )
}

/// What a launch costs and which peak it runs against.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchCost {
    pub cost: Cost,
    /// The dtype of the arithmetic (a GEMM's A, attention's Q), for the compute peak.
    pub class: Option<DtypeClass>,
}

/// The facts beyond the op's own arguments a formula may need.
#[derive(Copy, Clone, Debug, Default)]
pub struct Context<'a> {
    /// The step's attention sums, from the annotation around the launch.
    pub step: Option<&'a StepCounts>,
    /// Ranks of the job (the trace's world size), for all-reduce.
    pub ranks: u64,
    /// The output's element size the op's `Concrete Inputs` record (a GEMM row's
    /// `out_dtype` argument, see [`out_dtype_bytes`]); `None`: not recorded.
    pub out_bytes: Option<u64>,
}

/// Element size of a c10 `ScalarType` code (`c10/core/ScalarType.h`): the output dtype
/// an op such as `_scaled_mm` takes as an argument; `None` for codes a GEMM does not
/// write.
fn scalar_type_bytes(code: u64) -> Option<u64> {
    Some(match code {
        5 | 15 => 2,  // Half, BFloat16
        6 => 4,       // Float
        23..=26 => 1, // Float8_e5m2, _e4m3fn, _e5m2fnuz, _e4m3fnuz
        _ => return None,
    })
}

/// The element size named by argument `index` of a CPU op's `Concrete Inputs` JSON list
/// (torch.profiler writes scalars as their text, tensors as ""): a ScalarType code.
pub fn out_dtype_bytes(concrete_json: &str, index: usize) -> Option<u64> {
    let values: Vec<serde_json::Value> = serde_json::from_str(concrete_json).ok()?;
    let code = match values.get(index)? {
        serde_json::Value::String(text) => text.trim().parse::<u64>().ok()?,
        serde_json::Value::Number(n) => n.as_u64()?,
        _ => return None,
    };
    scalar_type_bytes(code)
}

/// The launch's cost under `formula`, or `None` when the arguments do not have the
/// shapes the formula reads (a row meant for another overload, a missing step count).
pub fn cost(formula: &OpFormula, args: &[Option<Arg>], ctx: &Context<'_>) -> Option<LaunchCost> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    match formula {
        OpFormula::Gemm {
            a,
            b,
            b_nk,
            bias,
            scales,
            out_bytes,
            out_dtype: _,
        } => {
            let (a, b) = (arg(*a)?, arg(*b)?);
            if a.dims.len() < 2 || b.dims.len() != 2 {
                return None;
            }
            let k = *a.dims.last()?;
            let m: u64 = a.dims[..a.dims.len() - 1].iter().product();
            let (bk, n) = if *b_nk {
                (b.dims[1], b.dims[0])
            } else {
                (b.dims[0], b.dims[1])
            };
            if bk != k {
                return None;
            }
            let bias = bias.and_then(arg);
            let g = Gemm {
                b: 1,
                m,
                n,
                k,
                a_bytes: a.elem_bytes,
                b_bytes: b.elem_bytes,
                c_bytes: ctx.out_bytes.or(*out_bytes).unwrap_or(a.elem_bytes),
                bias_elems: bias.map_or(0, Arg::numel),
                bias_bytes: bias.map_or(0, |x| x.elem_bytes),
            };
            let scale_bytes: u64 = scales.iter().filter_map(|&i| arg(i)).map(Arg::bytes).sum();
            Some(LaunchCost {
                cost: formulas::scaled_gemm(&g, scale_bytes),
                class: a.class,
            })
        }
        OpFormula::Bmm { a, b } => {
            let (a, b) = (arg(*a)?, arg(*b)?);
            let ([ba, m, k], [bb, bk, n]) = (a.dims.as_slice(), b.dims.as_slice()) else {
                return None;
            };
            if ba != bb || k != bk {
                return None;
            }
            let g = Gemm {
                b: *ba,
                m: *m,
                n: *n,
                k: *k,
                a_bytes: a.elem_bytes,
                b_bytes: b.elem_bytes,
                c_bytes: a.elem_bytes,
                ..Gemm::default()
            };
            Some(LaunchCost {
                cost: formulas::gemm(&g),
                class: a.class,
            })
        }
        OpFormula::Moe {
            hidden,
            w1,
            w2,
            topk,
        } => {
            let (x, w1, w2, topk) = (arg(*hidden)?, arg(*w1)?, arg(*w2)?, arg(*topk)?);
            let ([t, h], [e, two_i, h1], [_, _, inter], [_, k]) = (
                x.dims.as_slice(),
                w1.dims.as_slice(),
                w2.dims.as_slice(),
                topk.dims.as_slice(),
            ) else {
                return None;
            };
            if h != h1 || *two_i != 2 * inter {
                return None;
            }
            let g = MoeGemm {
                tokens: *t,
                top_k: *k,
                experts: *e,
                hidden: *h,
                inter: *inter,
                act_bytes: x.elem_bytes,
                weight_bytes: w1.elem_bytes,
            };
            Some(LaunchCost {
                cost: formulas::grouped_moe(&g),
                class: w1.class.or(x.class),
            })
        }
        OpFormula::Attention { q, k, v } => {
            let (q, k, v) = (arg(*q)?, arg(*k)?, arg(*v)?);
            let [_, q_heads, d_qk] = q.dims.as_slice() else {
                return None;
            };
            let kv_heads = *k.dims.get(k.dims.len().checked_sub(2)?)?;
            let heads = AttentionHeads {
                q_heads: *q_heads,
                kv_heads,
                d_qk: *d_qk,
                d_v: *v.dims.last()?,
                elem_bytes: q.elem_bytes,
            };
            Some(LaunchCost {
                cost: formulas::attention(&heads, ctx.step?),
                class: q.class,
            })
        }
        OpFormula::RmsNorm { add, in_place } => {
            let x = arg(0)?;
            let cols = *x.dims.last()?;
            let rows = x.numel() / cols.max(1);
            let row_tensors = args.iter().flatten().filter(|a| a.dims == x.dims).count() as u64;
            let passes = if *in_place { 2 } else { 1 };
            Some(LaunchCost {
                cost: formulas::rmsnorm(rows, cols, row_tensors * passes, *add, x.elem_bytes),
                class: x.class,
            })
        }
        OpFormula::Rope { tensors } => {
            let rotated: Vec<&Arg> = tensors.iter().filter_map(|&i| arg(i)).collect();
            let first = rotated.first()?;
            let elems: u64 = rotated.iter().map(|a| a.numel()).sum();
            Some(LaunchCost {
                cost: formulas::rope(elems, first.elem_bytes),
                class: first.class,
            })
        }
        OpFormula::KvCacheWrite { tensors, cache } => {
            let new: Vec<&Arg> = tensors.iter().filter_map(|&i| arg(i)).collect();
            let first = new.first()?;
            let elems: u64 = new.iter().map(|a| a.numel()).sum();
            let cache_bytes = arg(*cache).map_or(first.elem_bytes, |c| c.elem_bytes);
            Some(LaunchCost {
                cost: formulas::kv_cache_write(elems, first.elem_bytes, cache_bytes),
                class: first.class,
            })
        }
        OpFormula::AllReduce { buffer } => {
            let buf = arg(*buffer)?;
            Some(LaunchCost {
                cost: formulas::all_reduce(buf.numel(), buf.elem_bytes, ctx.ranks.max(1)),
                class: buf.class,
            })
        }
        OpFormula::Elementwise { flops_per_elem } => {
            let first = arg(0)?;
            let bytes: u64 = args.iter().flatten().map(Arg::bytes).sum();
            Some(LaunchCost {
                cost: formulas::streaming(first.numel(), *flops_per_elem, bytes),
                class: first.class,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::roofline::{parse_roofline_ops, BUILTIN_ROOFLINE};
    use std::path::Path;

    fn cost_of(cpu_op: &str, dims: &str, types: &str, ctx: &Context<'_>) -> Option<LaunchCost> {
        let ops = parse_roofline_ops(BUILTIN_ROOFLINE, Path::new("r.toml")).unwrap();
        let row = ops.for_cpu_op(cpu_op).unwrap();
        cost(&row.formula, &parse_args(dims, types).unwrap(), ctx)
    }

    #[test]
    fn input_dims_and_types_parse_into_tensor_arguments() {
        let args = parse_args(
            "[[15360, 4096], [], [2, [3]], [7]]",
            "[\"c10::BFloat16\", \"Scalar\", \"TensorList\", \"Scalar\"]",
        )
        .unwrap();
        assert_eq!(
            args[0],
            Some(Arg {
                dims: vec![15360, 4096],
                elem_bytes: 2,
                class: Some(DtypeClass::Bf16)
            })
        );
        assert_eq!(args[1..], [None, None, None]);
        assert!(parse_args("not json", "[]").is_none());
    }

    #[test]
    fn an_mm_takes_m_k_and_n_from_its_two_matrices() {
        let c = cost_of(
            "aten::mm",
            "[[15, 4096], [4096, 151936]]",
            "[\"c10::BFloat16\", \"c10::BFloat16\"]",
            &Context::default(),
        )
        .unwrap();
        assert_eq!(c.cost.flops, 2 * 15 * 151_936 * 4096);
        assert_eq!(
            c.cost.bytes,
            (15 * 4096 + 4096 * 151_936 + 15 * 151_936) * 2
        );
        assert_eq!(c.class, Some(DtypeClass::Bf16));
        // K that does not agree: not this formula's shapes.
        assert!(cost_of(
            "aten::mm",
            "[[15, 4096], [4095, 8]]",
            "[\"float\", \"float\"]",
            &Context::default()
        )
        .is_none());
    }

    #[test]
    fn a_scaled_mm_writes_the_out_dtype_its_concrete_inputs_record() {
        // aten::_scaled_mm(a fp8 [M, K], b fp8 [K, N], scale_a, scale_b, bias?, scale_result?,
        // out_dtype, use_fast_accum): Concrete Inputs hold out_dtype as its c10 code.
        let dims = "[[16, 4096], [4096, 1024], [], [], [], [], [], []]";
        let types = "[\"c10::Float8_e4m3fn\", \"c10::Float8_e4m3fn\", \"float\", \"float\", \"\", \"\", \"Scalar\", \"Scalar\"]";
        let ops = parse_roofline_ops(BUILTIN_ROOFLINE, Path::new("r.toml")).unwrap();
        let row = ops.for_cpu_op("aten::_scaled_mm").unwrap();
        let OpFormula::Gemm { out_dtype, .. } = &row.formula else {
            panic!("{row:?}")
        };
        let at = out_dtype.expect("the row names out_dtype's position");
        let concrete =
            |code: &str| format!("[\"\", \"\", \"\", \"\", \"\", \"\", \"{code}\", \"False\"]");
        // float (6): 4-byte output; BFloat16 (15), Half (5): 2; Float8_e4m3fn (24): 1.
        let written = |out: Option<u64>| {
            let ctx = Context {
                out_bytes: out,
                ..Context::default()
            };
            let c = cost(&row.formula, &parse_args(dims, types).unwrap(), &ctx).unwrap();
            c.cost.bytes - (16 * 4096 + 4096 * 1024)
        };
        assert_eq!(out_dtype_bytes(&concrete("6"), at), Some(4));
        assert_eq!(out_dtype_bytes(&concrete("15"), at), Some(2));
        assert_eq!(out_dtype_bytes(&concrete("5"), at), Some(2));
        assert_eq!(out_dtype_bytes(&concrete("24"), at), Some(1));
        assert_eq!(out_dtype_bytes(&concrete(""), at), None);
        assert_eq!(out_dtype_bytes("not json", at), None);
        assert_eq!(written(out_dtype_bytes(&concrete("6"), at)), 16 * 1024 * 4);
        assert_eq!(written(out_dtype_bytes(&concrete("24"), at)), 16 * 1024);
        // Not recorded: the bf16 serving engines ask for.
        assert_eq!(written(None), 16 * 1024 * 2);
    }

    #[test]
    fn attention_needs_the_step_counts_and_reads_heads_from_q_and_k() {
        let dims = "[[888, 8, 64], [888, 1, 64], [888, 1, 64], [888, 8, 64], [], [], []]";
        let types = "[\"c10::Float8_e4m3fn\", \"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"\", \"\", \"\"]";
        assert!(cost_of(
            "vllm::unified_attention_with_output",
            dims,
            types,
            &Context::default()
        )
        .is_none());
        let step = StepCounts {
            c_sq: 888,
            c_sk: 888,
            c_sqsq: 788_544,
            c_sqsk: 788_544,
            ..StepCounts::default()
        };
        let ctx = Context {
            step: Some(&step),
            ranks: 8,
            out_bytes: None,
        };
        let c = cost_of("vllm::unified_attention_with_output", dims, types, &ctx).unwrap();
        // 8 heads * (64 + 64) * (2*788544 - 788544); Q is fp8: 1 byte per element.
        assert_eq!(c.cost.flops, 8 * 128 * 788_544);
        assert_eq!(c.cost.bytes, 888 * 8 * 128 + 888 * 128);
        assert_eq!(c.class, Some(DtypeClass::Fp8));
    }

    #[test]
    fn an_in_place_fused_add_norm_counts_its_two_tensors_twice() {
        let c = cost_of(
            "_C::fused_add_rms_norm",
            "[[888, 2880], [888, 2880], [2880], []]",
            "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]",
            &Context::default(),
        )
        .unwrap();
        assert_eq!(c.cost.bytes, (888 * 2880 * 4 + 2880) * 2);
        assert_eq!(c.cost.flops, 888 * 2880 * 5);
    }

    #[test]
    fn a_kv_cache_write_into_an_fp8_cache_writes_one_byte_per_element() {
        let c = cost_of(
            "_C_cache_ops::reshape_and_cache_flash",
            "[[888, 1, 64], [888, 1, 64], [4213816, 16, 1, 64], [4213816, 16, 1, 64], [888], [], [], []]",
            "[\"c10::BFloat16\", \"c10::BFloat16\", \"unsigned char\", \"unsigned char\", \"long int\", \"\", \"float\", \"float\"]",
            &Context::default(),
        )
        .unwrap();
        assert_eq!(c.cost.bytes, 2 * 888 * 64 * 3);
    }
}
