//! The analyses end to end over the real shared traces: linking, stage split, locations
//! and the kernel table.
//!
//! Expected numbers come from an independent Python recount of each file (exact ns from
//! the decimal text; correlation -> runtime call -> frames containing the launch).

use llm_triage_plugin_api::scan;

use crate::analyze::kernels::{kernel_tables, KernelTableOptions, StagedTrace};
use crate::analyze::location::Locator;
use crate::catalog::load_families;
use crate::plugins::{Attribution, WrapperFrame};
use crate::report::model::StageReport;
use crate::testutil::shared_trace_path;
use crate::trace::event::Trace;
use crate::trace::link::{link, LinkCounts, Linked};
use crate::trace::read::read_trace;
use crate::trace::stage::{split, stage_from_path, Stage, StageHint, StageSignal, StageSplit};

fn wrappers(list: &[(&str, &str)]) -> Attribution {
    Attribution {
        source_roots: Default::default(),
        wrapper_frames: list
            .iter()
            .map(|&(path, function)| WrapperFrame {
                path_contains: path.into(),
                function: function.into(),
            })
            .collect(),
    }
}

/// The vLLM plugin's attribution (plugins/vllm), restated.
fn vllm_attribution() -> Attribution {
    Attribution {
        source_roots: vec!["vllm/".to_string()],
        ..wrappers(&[
            ("vllm/compilation/cuda_graph.py", ""),
            ("vllm/compilation/cuda_piecewise_backend.py", ""),
            ("vllm/compilation/piecewise_backend.py", ""),
            ("vllm/compilation/decorators.py", ""),
            ("vllm/compilation/wrapper.py", ""),
            ("vllm/model_executor/parameter.py", ""),
            ("vllm/v1/worker/gpu_model_runner.py", "_model_forward"),
        ])
    }
}

/// A kernel row as the B200 test reads it: name prefix, GPU time, launches, family, and
/// its largest site's location and module.
type TopRow<'a> = (&'a str, f64, u64, &'a str, &'a str, Option<&'a str>);

/// The SGLang plugin's attribution (plugins/sglang), restated.
fn sglang_attribution() -> Attribution {
    Attribution {
        source_roots: ["python/sglang/", "sglang_omni/", "sglang/", "sgl_kernel/"]
            .map(String::from)
            .into(),
        ..wrappers(&[
            ("sglang/srt/model_executor/cuda_graph_runner", "replay"),
            ("sglang/srt/model_executor/runner/", "replay"),
            ("sglang/srt/compilation/", ""),
            ("sglang/srt/model_executor/compilation/", ""),
            ("sglang/srt/utils/kernel_shape_profiler.py", ""),
            ("sgl_kernel/", ""),
            ("sglang/jit_kernel/", ""),
            (
                "sglang/srt/distributed/device_communicators/pynccl_wrapper.py",
                "",
            ),
            ("sglang/srt/layers/quantization/", "apply"),
        ])
    }
}

/// SGLang `step[EXTEND ...]` / `step[DECODE ...]` and vLLM `execute_...` annotations.
fn annotation_hint(name: &str) -> StageHint {
    if name.starts_with("step[DECODE") {
        StageHint::Decode
    } else if name.starts_with("step[EXTEND") {
        StageHint::Extend
    } else {
        scan::execute_annotation_stage(name).into()
    }
}

struct Analysed {
    trace: Trace,
    linked: Linked,
    split: StageSplit,
}

fn analyse(name: &str, path_stage: Stage) -> Analysed {
    let trace = read_trace(&shared_trace_path(name), &mut |_| {}).expect("shared trace reads");
    let linked = link(&trace);
    let split = split(&trace, &linked, path_stage, &mut annotation_hint);
    Analysed {
        trace,
        linked,
        split,
    }
}

fn tables(a: &Analysed, attribution: &Attribution) -> Vec<StageReport> {
    let input = StagedTrace {
        trace: &a.trace,
        linked: &a.linked,
        split: &a.split,
    };
    kernel_tables(
        &[input],
        &Locator::new(attribution),
        &load_families(None).unwrap(),
        &KernelTableOptions::default(),
    )
}

#[test]
fn vllm_b200_eager_prefill_kernel_table() {
    let a = analyse("AMD-AGI__TraceLens__eager_trace.json.gz", Stage::All);
    assert_eq!(
        a.linked.counts,
        LinkCounts {
            linked: 929,
            no_launch: 0,
            no_stack: 0,
            graph_replays: 0
        }
    );
    // `execute_context_1(888_788544)_generation_0(0)` on both clocks: all prefill.
    assert_eq!(a.split.signal, StageSignal::Annotations);
    assert!(a.split.stages.iter().all(|&s| s == Stage::Extend));
    assert!(a.split.notes.is_empty(), "{:?}", a.split.notes);

    let reports = tables(&a, &vllm_attribution());
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.stage, "extend/prefill");
    assert_eq!(r.total_gpu_time_us, 11_665.760);
    // Each row's largest site: the gpt-oss model line and the module it called.
    let top: Vec<TopRow<'_>> = r
        .kernels
        .iter()
        .take(5)
        .map(|k| {
            (
                &k.name[..k.name.len().min(40)],
                k.gpu_time_us,
                k.launches,
                k.family.as_str(),
                k.python_locations[0].location.as_str(),
                k.python_locations[0].module.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        top,
        [
            (
                "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256",
                3_181.785,
                36,
                "moe",
                "vllm/model_executor/models/gpt_oss.py:179 forward",
                Some("FusedMoE"),
            ),
            (
                "void (anonymous namespace)::multimem_all",
                2_119.548,
                73,
                "communication",
                "vllm/model_executor/models/gpt_oss.py:179 forward",
                Some("FusedMoE"),
            ),
            (
                "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x2",
                2_033.052,
                36,
                "moe",
                "vllm/model_executor/models/gpt_oss.py:179 forward",
                Some("FusedMoE"),
            ),
            (
                "Memcpy DtoD (Device -> Device)",
                781.5,
                146,
                "memory",
                "vllm/model_executor/models/gpt_oss.py:130 forward",
                Some("RowParallelLinear"),
            ),
            (
                "std::enable_if<(((8)>(0)))&&vllm::_typeC",
                452.068,
                72,
                "norm",
                "vllm/model_executor/models/gpt_oss.py:221 forward",
                Some("RMSNorm"),
            ),
        ]
    );
    // Every located row resolves inside vLLM.
    for k in &r.kernels {
        for site in &k.python_locations {
            assert!(
                site.location.starts_with("vllm/"),
                "{}: {}",
                k.name,
                site.location
            );
        }
    }
    let copy = &r.kernels[5];
    assert!(
        copy.name.contains("direct_copy_kernel_cuda"),
        "{}",
        copy.name
    );
    assert_eq!(copy.gpu_time_us, 380.568);
    assert_eq!(copy.python_locations.len(), 2);
    // The MoE block's line that called FusedMoE; the layer function behind it stays
    // visible to fuse patterns as the launch frame.
    assert_eq!(
        copy.python_locations[0].location,
        "vllm/model_executor/models/gpt_oss.py:179 forward"
    );
    assert_eq!(copy.python_locations[0].module.as_deref(), Some("FusedMoE"));
    assert_eq!(
        copy.python_locations[0].launch_frame.as_deref(),
        Some("vllm/model_executor/layers/fused_moe/layer.py:1696 forward_native")
    );
    assert_eq!(
        copy.python_locations[0].share_pct,
        100.0 * 253_181.0 / 380_568.0
    );
    assert_eq!(
        copy.python_locations[1].location,
        "vllm/model_executor/models/gpt_oss.py:130 forward"
    );
}

#[test]
fn sglang_decode_graph_replays_resolve_to_the_graph_launch_site() {
    let name = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";
    let path_stage = stage_from_path(std::path::Path::new(name));
    assert_eq!(path_stage, Stage::Decode);
    let a = analyse(name, path_stage);
    assert_eq!(
        a.linked.counts,
        LinkCounts {
            linked: 558,
            no_launch: 0,
            no_stack: 0,
            graph_replays: 544
        }
    );
    let graph_op = a
        .linked
        .sites
        .iter()
        .position(|s| s.graph_replay)
        .expect("a replayed kernel");
    let site = &a.linked.sites[graph_op];
    assert_eq!(site.cpu_op.map(|s| a.trace.name(s)), Some("hipGraphLaunch"));
    let frames: Vec<&str> = a
        .linked
        .stack(site.stack.unwrap())
        .iter()
        .map(|&s| a.trace.name(s))
        .collect();
    assert_eq!(
        frames.last().copied(),
        Some("torch/cuda/graphs.py(139): replay")
    );

    let reports = tables(&a, &sglang_attribution());
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.stage, "decode");
    assert_eq!(r.total_gpu_time_us, 9_778.614);
    let top: Vec<(f64, u64, &str)> = r
        .kernels
        .iter()
        .take(3)
        .map(|k| (k.gpu_time_us, k.launches, k.family.as_str()))
        .collect();
    assert_eq!(
        top,
        [
            (2_417.659, 36, "gemm"),
            (1_949.556, 36, "attention"),
            (1_461.907, 36, "gemm")
        ]
    );
    for k in r.kernels.iter().take(5) {
        assert_eq!(
            k.python_locations[0].location,
            "python/sglang/srt/model_executor/model_runner.py:3194 _forward_raw",
            "{}",
            k.name
        );
        assert_eq!(k.cpu_ops, ["hipGraphLaunch"]);
    }
    assert!(r.notes.contains(
        &"544 GPU ops replayed from CUDA/HIP graphs: their location is the graph launch"
            .to_string()
    ));
}

#[test]
fn vllm_full_graph_decode_links_replays() {
    let a = analyse(
        "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
        Stage::All,
    );
    assert_eq!(
        a.linked.counts,
        LinkCounts {
            linked: 434,
            no_launch: 0,
            no_stack: 0,
            graph_replays: 421
        }
    );
}
#[test]
fn transformers_eager_trace_falls_back_to_model_frames() {
    // A plain transformers run: no engine frame, so the model's own module frame names
    // the site. 509 kernels were launched before the profiling window opened.
    let a = analyse(
        "AMD-AGI__TraceLens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        Stage::All,
    );
    assert_eq!(
        a.linked.counts,
        LinkCounts {
            linked: 1198,
            no_launch: 509,
            no_stack: 509,
            graph_replays: 0
        }
    );
    assert_eq!(a.split.signal, StageSignal::None);
    let reports = tables(&a, &sglang_attribution());
    let r = &reports[0];
    assert_eq!(r.stage, "all");
    assert_eq!(r.total_gpu_time_us, 45_647.3);
    let gemm = &r.kernels[0];
    assert_eq!((gemm.gpu_time_us, gemm.launches), (12_789.918, 241));
    let sites: Vec<(&str, f64)> = gemm
        .python_locations
        .iter()
        .map(|s| (s.location.as_str(), s.share_pct))
        .collect();
    assert_eq!(
        sites[..3],
        [
            (
                "transformers/models/qwen2/modeling_qwen2.py:56 forward",
                100.0 * 5_830_275.0 / 12_789_918.0
            ),
            ("unresolved", 100.0 * 3_935_211.0 / 12_789_918.0),
            (
                "transformers/models/qwen2/modeling_qwen2.py:150 forward",
                100.0 * 3_024_432.0 / 12_789_918.0
            ),
        ]
    );
    assert!(r
        .notes
        .contains(&"509 GPU ops not linked to a launch (no runtime call or cpu_op)".to_string()));
}

#[test]
fn legacy_schema_links_through_runtime_and_external_ids() {
    // The 2021 layout (Kernel/Runtime/Operator, no Python frames).
    let a = analyse("pytorch__kineto__worker0.pt.trace.json.gz", Stage::All);
    assert_eq!(
        a.linked.counts,
        LinkCounts {
            linked: 8853,
            no_launch: 765,
            no_stack: 9618,
            graph_replays: 0
        }
    );
}
