//! The timeline's rules on small hand-built traces: each step's parts sum to its wall
//! time, `busy + idle = span`, and each idle nanosecond goes to the cause the rules name
//! (launch-bound eager launches, sync waits, CUDA and HIP graph replays, HIP launch
//! APIs, host gaps between steps charged to the Python frame that ran).

use super::*;
use crate::catalog::load_families;
use crate::catalog::steps::builtin_with_engines;
use crate::report::model::StageTimeline;
use crate::testutil::TraceFixture;
use crate::trace::link::link;
use crate::trace::stage::{StageSignal, StageSplit};

/// The timeline of a trace whose every op is in decode.
fn timeline_of(fixture: &TraceFixture) -> StageTimeline {
    let trace = fixture.build();
    let linked = link(&trace);
    let split = StageSplit {
        stages: vec![Stage::Decode; trace.gpu_ops.len()],
        signal: StageSignal::Path,
        notes: Vec::new(),
    };
    let staged = [StagedTrace {
        trace: &trace,
        linked: &linked,
        split: &split,
    }];
    let families = load_families(None).expect("built-in families");
    let steps = builtin_with_engines();
    let mut timelines = stage_timelines(
        &staged,
        &Locator::default(),
        &families,
        &TimelineOptions {
            top_gaps: 5,
            steps: &steps,
        },
    );
    assert_eq!(timelines.len(), 1);
    let (stage, timeline) = timelines.remove(0);
    assert_eq!(stage, Stage::Decode);
    assert_exact(&timeline);
    timeline
}

/// busy + idle = span, the causes sum to idle, each step's parts to its wall (µs of
/// exact ns, so compared to the nanosecond).
fn assert_exact(t: &StageTimeline) {
    let ns = |us: f64| (us * 1000.0).round() as i64;
    assert_eq!(ns(t.busy_us) + ns(t.idle_us), ns(t.span_us), "{t:?}");
    let c = &t.idle_by_cause;
    assert_eq!(
        ns(c.launch_us) + ns(c.sync_us) + ns(c.graph_us) + ns(c.host_us),
        ns(t.idle_us)
    );
    for s in &t.steps {
        let parts = [
            s.compute_us,
            s.exposed_comm_us,
            s.memcpy_us,
            s.launch_idle_us,
            s.sync_idle_us,
            s.graph_gap_us,
            s.host_gap_us,
        ];
        assert_eq!(
            parts.iter().map(|&p| ns(p)).sum::<i64>(),
            ns(s.wall_us),
            "{s:?}"
        );
    }
}

/// Two eager steps with the scheduler's host gap between them.
fn eager_two_steps() -> TraceFixture {
    let mut b = TraceFixture::new();
    b.annotation("step[DECODE bs=1]", 0, 10_000, false);
    b.annotation("step[DECODE bs=1]", 60_000, 10_000, false);
    b.runtime("cudaLaunchKernel", 1_000, 500, 1, 1, None);
    b.kernel("gemm_a", 2_000, 1_000, Some(1), None);
    b.runtime("cudaLaunchKernel", 5_000, 400, 1, 2, None);
    b.kernel("gemm_b", 5_500, 1_000, Some(2), None);
    // The scheduler between the steps.
    b.frame("/app/engine/scheduler.py(10): schedule", 6_600, 53_900, 1);
    b.runtime("cudaLaunchKernel", 61_000, 300, 1, 3, None);
    b.kernel("gemm_c", 61_500, 1_000, Some(3), None);
    b
}

#[test]
fn eager_steps_split_into_launch_idle_and_the_host_gap_goes_to_the_python_frame() {
    let t = timeline_of(&eager_two_steps());

    assert_eq!(t.step_source, "step[...] annotations");
    assert_eq!((t.span_us, t.busy_us, t.idle_us), (60.5, 3.0, 57.5));
    assert_eq!(t.idle_by_cause.launch_us, 3.0);
    assert_eq!(t.idle_by_cause.host_us, 54.5);
    assert_eq!(
        (t.idle_inside_steps_us, t.idle_outside_steps_us),
        (3.0, 54.5)
    );
    let steps: Vec<(f64, f64, f64, f64, f64)> = t
        .steps
        .iter()
        .map(|s| {
            (
                s.start_us,
                s.wall_us,
                s.compute_us,
                s.launch_idle_us,
                s.host_gap_us,
            )
        })
        .collect();
    // Step 0 from its first launch (1.0 µs, before the span starts); step 1 from step
    // 0's last GPU end, its host gap first.
    assert_eq!(
        steps,
        [(1.0, 5.5, 2.0, 3.5, 0.0), (6.5, 56.0, 1.0, 0.5, 54.5)]
    );

    let top = &t.top_gaps[0];
    assert_eq!((top.start_us, top.dur_us), (6.5, 55.0));
    assert_eq!(
        (top.before.as_str(), top.after.as_str()),
        ("gemm_b", "gemm_c")
    );
    assert_eq!(top.cause, "host");
    assert_eq!(
        top.host_activity[0].location,
        "app/engine/scheduler.py:10 schedule"
    );
    assert_eq!(top.host_activity[0].share_pct, 100.0 * 53_900.0 / 55_000.0);
    assert_eq!(t.top_gaps[1].cause, "launch");
    // Histogram: the 2.5 µs and 55 µs gaps.
    let bins: Vec<(u64, f64)> = t.histogram.iter().map(|b| (b.count, b.total_us)).collect();
    assert_eq!(
        bins,
        [(1, 2.5), (0, 0.0), (1, 55.0), (0, 0.0), (0, 0.0), (0, 0.0)]
    );
}

#[test]
fn a_hip_blocking_copy_during_the_gap_is_sync_and_hip_launch_apis_are_launches() {
    let mut b = TraceFixture::new();
    b.runtime("hipExtModuleLaunchKernel", 0, 50, 1, 1, None);
    b.kernel("Cijk_Alik_Bljk_gemm", 100, 100, Some(1), None);
    // Launched at 300, but it waits on the GPU until 10.3 µs while the host blocks in a
    // device-to-host copy from 0.4 µs.
    b.runtime("hipLaunchKernel", 300, 10, 1, 2, None);
    b.kernel(
        "resolve_future_token_ids_kernel",
        10_300,
        100,
        Some(2),
        None,
    );
    b.runtime("hipMemcpyWithStream", 400, 10_100, 1, 3, None);
    b.cpu_op("aten::copy_", 390, 10_200, 1, None);
    b.gpu_op_on(
        "gpu",
        "Memcpy DtoH (Device -> Pinned)",
        10_400,
        50,
        Some(3),
        None,
    );
    let t = timeline_of(&b);

    assert_eq!(t.step_source, "whole stage");
    // The launch at 0 precedes the first GPU op at 0.1 µs.
    assert_eq!(
        t.notes,
        [
            "no step markers or graph launches: the whole stage is one step",
            "the first step starts 0.100 µs before the stage's first GPU op (at its first \
             launch): its wall time counts them as idle, the span does not"
        ]
    );
    assert_eq!(t.idle_by_cause.sync_us, 9.9);
    assert_eq!(t.idle_by_cause.launch_us, 0.2);
    let top = &t.top_gaps[0];
    assert_eq!((top.dur_us, top.cause.as_str()), (10.1, "sync"));
    let activity: Vec<&str> = top
        .host_activity
        .iter()
        .map(|a| a.location.as_str())
        .collect();
    assert_eq!(activity, ["aten::copy_", "hipMemcpyWithStream"]);
    let s = &t.steps[0];
    // From the first launch (0) to the copy's end: 0.1 µs before the first kernel runs.
    assert_eq!((s.start_us, s.wall_us), (0.0, 10.45));
    assert_eq!((s.compute_us, s.memcpy_us), (0.2, 0.05));
    assert_eq!((s.launch_idle_us, s.sync_idle_us), (0.3, 9.9));
}

fn graph_replay(launch_api: &str) -> StageTimeline {
    let mut b = TraceFixture::new();
    b.runtime(launch_api, 1_000, 50, 1, 7, None);
    // One launch, three replayed kernels; 0.1 µs of nothing inside the replay.
    b.kernel("rmsnorm_kernel", 1_100, 100, Some(7), None);
    b.kernel("gemm_kernel", 1_300, 100, Some(7), None);
    b.kernel("attention_kernel", 1_400, 100, Some(7), None);
    // A second replay, launched after the first drained: launch-bound.
    b.runtime(launch_api, 2_000, 50, 1, 8, None);
    b.kernel("rmsnorm_kernel", 2_100, 100, Some(8), None);
    timeline_of(&b)
}

#[test]
fn gaps_inside_cuda_and_hip_graph_replays_are_graph_gaps_and_each_launch_starts_a_step() {
    for api in ["cudaGraphLaunch", "hipGraphLaunch"] {
        let t = graph_replay(api);
        assert_eq!(t.step_source, "graph launches", "{api}");
        assert_eq!(t.steps.len(), 2, "{api}");
        assert_eq!(t.steps[0].label, format!("{api} #1"));
        // Replay 1: the lead-in after the launch and the in-graph gap are graph time.
        assert_eq!(
            (
                t.steps[0].wall_us,
                t.steps[0].compute_us,
                t.steps[0].graph_gap_us
            ),
            (0.5, 0.3, 0.2),
            "{api}"
        );
        // Between the replays: 0.5 µs before the second launch (host gap), then 0.1 µs
        // of the second graph starting.
        assert_eq!(
            (
                t.steps[1].host_gap_us,
                t.steps[1].graph_gap_us,
                t.steps[1].wall_us
            ),
            (0.5, 0.1, 0.7),
            "{api}"
        );
        assert_eq!(t.idle_by_cause.graph_us, 0.2, "{api}");
        assert_eq!(t.idle_by_cause.host_us, 0.5, "{api}");
        assert_eq!(t.top_gaps[0].cause, "host", "{api}");
        assert_eq!(t.top_gaps[1].cause, "graph", "{api}");
    }
}

#[test]
fn communication_under_compute_is_not_exposed() {
    let mut b = TraceFixture::new();
    b.runtime("cudaLaunchKernel", 0, 10, 1, 1, None);
    b.kernel(
        "ncclDevKernel_AllReduce_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        100,
        300,
        Some(1),
        None,
    );
    b.runtime("cudaLaunchKernel", 20, 10, 1, 2, None);
    b.gpu_op_on("gpu", "nvjet_tst_64x64_gemm", 200, 100, Some(2), None);
    let t = timeline_of(&b);
    let s = &t.steps[0];
    assert_eq!((s.compute_us, s.exposed_comm_us), (0.1, 0.2));
    assert_eq!(s.launch_idle_us, 0.1);
}

#[test]
fn marker_kinds_are_told_apart() {
    let catalog = builtin_with_engines();
    let kind = |name| {
        catalog
            .marker_of(name)
            .map(|m| format!("{} annotations", catalog.markers[m].shown_as))
    };
    assert_eq!(
        kind("step[DECODE bs=32]"),
        Some("step[...] annotations".to_string())
    );
    assert_eq!(
        kind("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"),
        Some("execute_... annotations".to_string())
    );
    assert_eq!(
        kind("execute_context_1(888_788544)_generation_0(0)"),
        Some("execute_... annotations".to_string())
    );
    assert_eq!(
        kind("ProfilerStep#6"),
        Some("ProfilerStep annotations".to_string())
    );
    assert_eq!(kind("execute_model"), None);
    assert_eq!(kind("capture_32_DECODE"), None);
}

#[test]
fn without_markers_each_outermost_forward_call_of_the_engine_is_a_step() {
    let mut b = TraceFixture::new();
    let call = "vllm/v1/worker/gpu_model_runner.py(2907): execute_model";
    b.frame(call, 0, 10_000, 1);
    // A recursive call inside the first is not a step of its own.
    b.frame(call, 2_000, 1_000, 1);
    b.frame(call, 20_000, 10_000, 1);
    b.runtime("cudaLaunchKernel", 1_000, 500, 1, 1, None);
    b.kernel("gemm_a", 2_000, 1_000, Some(1), None);
    b.runtime("cudaLaunchKernel", 2_500, 300, 1, 2, None);
    b.kernel("gemm_b", 3_000, 1_000, Some(2), None);
    b.runtime("cudaLaunchKernel", 21_000, 300, 1, 3, None);
    b.kernel("gemm_c", 22_000, 1_000, Some(3), None);
    // Launched outside every forward call: in no step.
    b.runtime("cudaLaunchKernel", 40_000, 300, 1, 4, None);
    b.kernel("gemm_d", 41_000, 1_000, Some(4), None);
    let t = timeline_of(&b);
    assert_eq!(t.step_source, "forward calls");
    let steps: Vec<(&str, f64)> = t
        .steps
        .iter()
        .map(|s| (s.label.as_str(), s.start_us))
        .collect();
    assert_eq!(steps, [(call, 1.0), (call, 4.0)], "{t:?}");
    assert!(
        t.notes.iter().any(|n| n.starts_with("1 GPU ops (0.001 ms) were launched outside every forward call")),
        "{:?}",
        t.notes
    );
}

#[test]
fn a_first_step_that_starts_before_the_span_says_so_in_a_note() {
    let mut b = TraceFixture::new();
    b.annotation("step[DECODE bs=1]", 0, 10_000, false);
    b.runtime("cudaLaunchKernel", 1_000, 500, 1, 1, None);
    b.kernel("gemm_a", 3_500, 1_000, Some(1), None);
    b.runtime("cudaLaunchKernel", 2_000, 400, 1, 2, None);
    b.kernel("gemm_b", 4_500, 1_000, Some(2), None);
    let t = timeline_of(&b);
    // The span is the GPU ops' (3.5-5.5 µs); the step runs from its first launch (1 µs),
    // so its wall time is 2.5 µs longer than the span, all of it idle before the span.
    assert_eq!(
        (t.span_us, t.steps[0].start_us, t.steps[0].wall_us),
        (2.0, 1.0, 4.5)
    );
    assert_eq!(t.steps[0].launch_idle_us, 2.5);
    let note = "the first step starts 2.500 µs before the stage's first GPU op (at its first \
                launch): its wall time counts them as idle, the span does not";
    assert!(t.notes.iter().any(|n| n == note), "{:?}", t.notes);
}

#[test]
fn a_step_that_starts_with_its_first_gpu_op_has_no_such_note() {
    // An op whose launch is unrecorded starts its step at the op itself.
    let mut b = TraceFixture::new();
    b.annotation("step[DECODE bs=1]", 0, 10_000, false);
    b.kernel("gemm_a", 3_500, 1_000, None, None);
    let t = timeline_of(&b);
    assert_eq!(t.steps[0].start_us, 3.5);
    assert!(
        t.notes
            .iter()
            .all(|n| !n.contains("before the stage's first GPU op")),
        "{:?}",
        t.notes
    );
}

#[test]
fn the_representative_step_is_the_median_step_drawn_op_by_op_with_its_gaps_by_cause() {
    let t = timeline_of(&eager_two_steps());
    let rep = t
        .representative_step
        .as_ref()
        .expect("a representative step");
    // Walls 5.5 and 56 µs: the lower median is step 0.
    assert_eq!((rep.step, rep.start_us, rep.wall_us), (0, 1.0, 5.5));
    assert_eq!(rep.lanes.len(), 1);
    assert_eq!(rep.lanes[0].stream, "7");
    let ops: Vec<(f64, f64, &str)> = rep.lanes[0]
        .ops
        .iter()
        .map(|o| (o.offset_us, o.dur_us, rep.names[o.name].as_str()))
        .collect();
    assert_eq!(ops, [(1.0, 1.0, "gemm_a"), (4.5, 1.0, "gemm_b")]);
    let gaps: Vec<(f64, f64, &str)> = rep
        .gaps
        .iter()
        .map(|g| (g.offset_us, g.dur_us, g.cause.as_str()))
        .collect();
    assert_eq!(gaps, [(0.0, 1.0, "launch"), (2.0, 2.5, "launch")]);
    // The gaps are the step's idle time, exactly.
    let step = &t.steps[rep.step];
    let idle = step.launch_idle_us + step.sync_idle_us + step.graph_gap_us + step.host_gap_us;
    assert_eq!(rep.gaps.iter().map(|g| g.dur_us).sum::<f64>(), idle);
    assert_eq!(rep.ops_left_out, 0);
}
