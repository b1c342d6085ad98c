//! The roofline pass on small hand-built traces: shapes from the launch sites, one
//! charge per CPU op, attention from the step annotation around its launch, the
//! under-filled recount, and the stage's speed of light with a known roof.

use super::*;
use crate::catalog::load_roofline_ops;
use crate::report::model::StageReport;
use crate::testutil::TraceFixture;
use crate::trace::event::{GpuOp, Trace};
use crate::trace::link::{link, Linked};
use crate::trace::stage::{StageSignal, StageSplit};

const MM_DIMS: &str = "[[64, 4096], [4096, 8192]]";
const BF16_2: &str = "[\"c10::BFloat16\", \"c10::BFloat16\"]";

/// One launch: (kernel, CPU op, External id, dur, Input Dims, grid).
type Launch<'a> = (&'a str, &'a str, u64, i64, Option<&'a str>, [u32; 3]);

/// Kernel `i` launched by runtime call `i` inside its CPU op with its External id;
/// returns the trace and its links with the ops' shapes set on the sites (as the
/// reader's `link` gives them) and each kernel's grid.
fn traced(kernels: &[Launch<'_>]) -> (Trace, Linked) {
    let mut f = TraceFixture::new();
    f.annotation(
        "execute_64_context_1(sq64sk64sqsq4096sqsk4096)_generation_0(sq0sk0sqsq0sqsk0)",
        0,
        1_000_000,
        false,
    );
    for (i, &(kernel, cpu_op, id, dur, _, _)) in kernels.iter().enumerate() {
        let t = 1000 * (i as i64 + 1);
        f.cpu_op(cpu_op, t - 10, 20, 1, Some(id));
        f.runtime("cudaLaunchKernel", t, 5, 1, i as u64 + 1, Some(id));
        f.kernel(
            kernel,
            100_000 + 100_000 * i as i64,
            dur,
            Some(i as u64 + 1),
            Some(id),
        );
    }
    let mut trace = f.build();
    let mut linked = link(&trace);
    for (i, &(_, _, _, _, dims, grid)) in kernels.iter().enumerate() {
        let op = trace.gpu_ops.at(i);
        trace.gpu_ops.set(
            i,
            GpuOp {
                grid: Some(grid),
                ..op
            },
        );
        if let Some(dims) = dims {
            linked.sites[i].input_dims = Some(trace.strings.intern(dims));
            linked.sites[i].input_types = Some(trace.strings.intern(if dims.contains(", 32, ") {
                "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]"
            } else {
                BF16_2
            }));
        }
    }
    trace.meta.devices.push(crate::trace::event::DeviceProps {
        num_sms: Some(132),
        ..Default::default()
    });
    (trace, linked)
}

fn rooflines(trace: &Trace, linked: &Linked, roof: &Roof) -> Vec<(Stage, StageRoofline)> {
    let split = StageSplit {
        stages: vec![Stage::Extend; trace.gpu_ops.len()],
        signal: StageSignal::Path,
        notes: Vec::new(),
    };
    let staged = [StagedTrace {
        trace,
        linked,
        split: &split,
    }];
    let families = crate::catalog::FamilyRules::default();
    let model = ModelInputs {
        shape: None,
        tp: None,
        families: &families,
    };
    stage_rooflines(&staged, &load_roofline_ops(None).unwrap(), roof, &model).0
}

fn report_with(names: &[&str]) -> StageReport {
    let mut stage = crate::report::model::StageReport {
        stage: "extend/prefill".to_string(),
        total_gpu_time_us: 0.0,
        summary: String::new(),
        kernels: Vec::new(),
        overlap: Vec::new(),
        fusions: Vec::new(),
        similarity: Vec::new(),
        notes: Vec::new(),
        timeline: None,
        sol: None,
        layers: None,
        roles: Vec::new(),
    };
    for name in names {
        stage.kernels.push(crate::report::model::KernelRow {
            matched_by: None,
            mapping_confidence: None,
            name: name.to_string(),
            raw_names: vec![name.to_string()],
            family: "other".to_string(),
            gpu_time_us: 0.0,
            share_pct: 0.0,
            launches: 0,
            python_locations: Vec::new(),
            cpu_ops: Vec::new(),
            launch_mix: Vec::new(),
            launch_site_source: "eager".to_string(),
            input_dims: None,
            roofline: None,
            role: None,
        });
    }
    stage
}

fn h100ish() -> Roof {
    Roof {
        sms: Some(132),
        peak_tflops: vec![(DtypeClass::Bf16, 989.0)],
        hbm_tb_per_s: Some(3.35),
    }
}

#[test]
fn shapes_on_the_sites_give_each_row_its_flops_bytes_and_source() {
    let (trace, linked) = traced(&[
        ("gemm_a", "aten::mm", 1, 40_000, Some(MM_DIMS), [64, 2, 1]),
        ("gemm_a", "aten::mm", 2, 40_000, Some(MM_DIMS), [64, 2, 1]),
        // The same op launches a second kernel: its cost stays with the first.
        (
            "splitk_reduce",
            "aten::mm",
            2,
            3_000,
            Some(MM_DIMS),
            [132, 1, 1],
        ),
        ("lonely", "aten::mm", 3, 40_000, None, [1, 1, 1]),
    ]);
    let roof = roof_of(trace.meta.devices.first(), None);
    assert_eq!(roof.sms, Some(132));
    let stages = attach(
        vec![report_with(&["gemm_a", "splitk_reduce", "lonely"])],
        rooflines(&trace, &linked, &roof),
        &roof,
    );
    let rows = &stages[0].kernels;
    let gemm = rows[0].roofline.as_ref().unwrap();
    let per_launch_flops = 2.0 * 64.0 * 8192.0 * 4096.0;
    let per_launch_bytes = ((64 * 4096 + 4096 * 8192 + 64 * 8192) * 2) as f64;
    assert_eq!(gemm.flops, Some(2.0 * per_launch_flops));
    assert_eq!(gemm.bytes, Some(2.0 * per_launch_bytes));
    assert_eq!(gemm.shape_source.as_deref(), Some("input-dims"));
    assert_eq!(gemm.shaped_launches, 2);
    assert_eq!(gemm.dtype.as_deref(), Some("bf16"));
    // 128 blocks on 132 SMs: under-filled, whatever the 40 µs.
    assert_eq!(gemm.bound, "under-filled");
    assert_eq!(gemm.under_filled_launches, 2);
    // No device peaks from the trace alone: no percentage.
    assert_eq!(gemm.pct_of_peak, None);
    let reduce = rows[1].roofline.as_ref().unwrap();
    assert_eq!((reduce.flops, reduce.shaped_launches), (None, 0));
    assert_eq!(reduce.bound, "latency");
    let lonely = rows[2].roofline.as_ref().unwrap();
    assert_eq!(
        (lonely.flops, lonely.bound.as_str()),
        (None, "under-filled")
    );
    assert!(stages[0].sol.is_none(), "no roof, no SOL");
}

#[test]
fn attention_takes_the_sums_of_the_step_around_its_launch_and_the_stage_gets_its_sol() {
    let (trace, linked) = traced(&[
        (
            "fmha",
            "vllm::unified_attention_with_output",
            1,
            50_000,
            Some("[[64, 32, 128], [64, 8, 128], [64, 8, 128]]"),
            [32, 64, 1],
        ),
        ("gemm_a", "aten::mm", 2, 40_000, Some(MM_DIMS), [64, 4, 1]),
    ]);
    let roof = h100ish();
    let stages = attach(
        vec![report_with(&["fmha", "gemm_a"])],
        rooflines(&trace, &linked, &roof),
        &roof,
    );
    let fmha = stages[0].kernels[0].roofline.as_ref().unwrap();
    // 32 heads * 256 * (2*4096 - 4096) pairs; Q, O: 64*32*128, K, V: 64*8*128, bf16.
    assert_eq!(fmha.flops, Some(32.0 * 256.0 * 4096.0));
    assert_eq!(
        fmha.bytes,
        Some(((64 * 32 * 256 + 64 * 8 * 256) * 2) as f64)
    );
    assert_eq!(fmha.shape_source.as_deref(), Some("step-annotation"));
    assert_eq!(fmha.bound, "memory");
    let gemm = stages[0].kernels[1].roofline.as_ref().unwrap();
    let flops = 2.0 * 64.0 * 8192.0 * 4096.0;
    let bytes = ((64 * 4096 + 4096 * 8192 + 64 * 8192) * 2) as f64;
    // Intensity 64-ish FLOP/B, under the ridge 989/3.35 = 295: memory-bound.
    assert_eq!(gemm.bound, "memory");
    let sol_s = bytes / 3.35e12;
    let pct = gemm.pct_of_peak.unwrap();
    assert!((pct - 100.0 * sol_s / 40e-6).abs() < 1e-9, "{pct}");
    assert!((gemm.tflops_per_s.unwrap() - flops / 40e-6 / 1e12).abs() < 1e-9);
    let sol = stages[0].sol.as_ref().unwrap();
    assert!((sol.measured_us - 90.0).abs() < 1e-9, "{}", sol.measured_us);
    let fmha_sol_us = 1e6 * (((64 * 32 * 256 + 64 * 8 * 256) * 2) as f64 / 3.35e12);
    assert!((sol.sol_us - (sol_s * 1e6 + fmha_sol_us)).abs() < 1e-9);
    assert!((sol.covered_pct - 100.0).abs() < 1e-9);
    assert_eq!(sol.gap.below_roof_top.len(), 2);
    assert_eq!(sol.gap.below_roof_top[0].kernel, "fmha");
    assert!((sol.gap.below_roof_us - (90.0 - sol.sol_us)).abs() < 1e-9);
}

#[test]
fn a_scaled_mm_writes_the_output_dtype_its_cpu_op_records() {
    let dims = "[[16, 4096], [4096, 1024], [], [], [], [], [], []]";
    let types = "[\"c10::Float8_e4m3fn\", \"c10::Float8_e4m3fn\", \"float\", \"float\", \"\", \"\", \"Scalar\", \"Scalar\"]";
    let (mut trace, mut linked) = traced(&[
        ("fp8_gemm", "aten::_scaled_mm", 1, 40_000, None, [132, 1, 1]),
        (
            "fp8_gemm_2",
            "aten::_scaled_mm",
            2,
            40_000,
            None,
            [132, 1, 1],
        ),
    ]);
    for site in &mut linked.sites {
        site.input_dims = Some(trace.strings.intern(dims));
        site.input_types = Some(trace.strings.intern(types));
    }
    // The first op asks for a float (6) output; the second records no Concrete Inputs.
    let concrete = trace
        .strings
        .intern("[\"\", \"\", \"\", \"\", \"\", \"\", \"6\", \"False\"]");
    let mut first = trace.cpu_ops.at(0);
    first.concrete_inputs = Some(concrete);
    trace.cpu_ops.set(0, first);
    let roof = roof_of(trace.meta.devices.first(), None);
    let stages = rooflines(&trace, &linked, &roof);
    let rows = &stages[0].1.rows;
    let ab = 16 * 4096 + 4096 * 1024;
    assert_eq!(rows["fp8_gemm"].bytes, ab + 16 * 1024 * 4);
    assert_eq!(rows["fp8_gemm_2"].bytes, ab + 16 * 1024 * 2);
}

#[test]
fn a_site_aligned_from_the_mapping_trace_lends_no_shapes() {
    // Two launches of one shape; the second's site came from the mapping trace, whose
    // step need not have had this replay's tokens.
    let (trace, mut linked) = traced(&[
        ("gemm_a", "aten::mm", 1, 40_000, Some(MM_DIMS), [64, 2, 1]),
        ("gemm_a", "aten::mm", 2, 40_000, Some(MM_DIMS), [64, 2, 1]),
    ]);
    linked.sites[1].source = SiteSource::Mapping;
    let roof = roof_of(trace.meta.devices.first(), None);
    let stages = attach(
        vec![report_with(&["gemm_a"])],
        rooflines(&trace, &linked, &roof),
        &roof,
    );
    let gemm = stages[0].kernels[0].roofline.as_ref().unwrap();
    let per_launch_flops = 2.0 * 64.0 * 8192.0 * 4096.0;
    assert_eq!(gemm.flops, Some(per_launch_flops));
    assert_eq!(gemm.shaped_launches, 1);
}
