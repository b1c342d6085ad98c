//! Lays out every rank of a run together on one true clock, layer by layer (an
//! all-reduce ends when its last rank has arrived, plus the transfer), and writes each
//! rank's events on its own clock (true time plus its offset).

use std::fmt::Write as _;
use std::path::Path;

use super::ep::{comms_args, ALL_TO_ALL_RAW};
use super::{
    Cause, CollectiveTruth, RankRun, RankTruth, StepLabels, StragglerTruth, END_JITTER_NS,
};
use crate::engines::{profile, Profile, GRAPH_REPLAY};
use crate::{
    events_and_end, file_name, frame_name, json_str, us, Engine, Frame, GpuOpEvent, HostTrack, Rng,
    StageKind, CPU_PID, GPU_PID,
};

const STREAM: u64 = 7;
/// The true clock's start, in ns.
pub(super) const EPOCH_NS: u64 = 1_700_000_000_000_000;
/// Between the previous step's GPU end (the host syncs on it) and the next step.
const STEP_GAP_NS: u64 = 20_000;
/// From a launch call's start to the earliest its kernel can start (eager).
const LAUNCH_LATENCY_NS: u64 = 4_000;
/// From a graph launch to its first node, and between graph nodes.
const GRAPH_START_NS: u64 = 6_000;
const NODE_GAP_NS: u64 = 1_000;

const NORM_RAW: &str = "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)";
/// The row GEMM before each all-reduce (its canonical name is the raw one).
pub const GEMM: &str = "nvjet_tst_128x64_64x6_1x1_v_bz_coopA_TNT";
const NCCL_AR_RAW: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const CUSTOM_AR_RAW: &str = "void cross_device_reduce_2stage<__nv_bfloat16, 2>(RankData*, RankSignals, Signal*, __nv_bfloat16*, int, int)";

/// The Python frame host-side lateness runs in (SGLang's scheduler preparing a decode
/// batch), and the location a report names for it.
const PREPARE: Frame = Frame {
    path: "managers/schedule_batch.py",
    line: 1702,
    func: "prepare_for_decode",
};
const EVENT_LOOP: Frame = Frame {
    path: "managers/scheduler.py",
    line: 1014,
    func: "event_loop_normal",
};

struct Rank {
    host: HostTrack,
    offset: i64,
    /// When the rank's stream is free again, true clock.
    gpu_free: u64,
}

impl Rank {
    /// A true time on this rank's clock.
    fn clock(&self, true_ns: u64) -> u64 {
        (true_ns as i64 + self.offset) as u64
    }

    fn true_time(&self, clock_ns: u64) -> u64 {
        (clock_ns as i64 - self.offset) as u64
    }
}

/// One op of a step on one rank, as the layout needs it.
#[derive(Clone, Copy)]
struct Launched {
    raw: &'static str,
    /// The earliest the op may start (true clock).
    floor: u64,
    correlation: u64,
    external: Option<u64>,
    launch_start: u64,
}

/// The trace text of every rank and the run's ground truth (paths filled in), its step
/// markers labelled as `labels` says.
pub(super) fn write(run: &RankRun, dir: &Path, labels: StepLabels) -> (Vec<String>, RankTruth) {
    let profile = profile(Engine::Sglang);
    let mut rng = Rng::new(run.seed);
    let mut ranks: Vec<Rank> = run
        .offsets_ns
        .iter()
        .take(run.ranks as usize)
        .map(|&offset| Rank {
            host: HostTrack::new((EPOCH_NS as i64 + offset) as u64),
            offset,
            gpu_free: EPOCH_NS,
        })
        .collect();
    let mut truth = RankTruth {
        files: (0..run.ranks)
            .map(|r| {
                dir.join(file_name(
                    Engine::Sglang,
                    StageKind::Decode,
                    r,
                    run.seed,
                    true,
                ))
            })
            .collect(),
        offsets_vs_rank0_ns: ranks.iter().map(|r| r.offset - ranks[0].offset).collect(),
        step_labels: labels,
        ..RankTruth::default()
    };
    truth.first_steps = (0..ranks.len())
        .map(|r| run.start_steps.get(r).copied().unwrap_or(0))
        .collect();
    for (r, rank) in ranks.iter_mut().enumerate() {
        metadata(rank, &profile, r);
        rank.host.open_frame(frame_name(&profile, &EVENT_LOOP));
    }
    // Per rank, the events (by index) of the steps its profiler missed: pushed after the
    // metadata and before its first step (events are pushed step by step; the event loop
    // frame, pushed last, spans the whole trace and stays).
    let mut missed: Vec<std::ops::Range<usize>> = ranks
        .iter()
        .map(|r| r.host.events.len()..r.host.events.len())
        .collect();
    for step in 0..run.steps {
        for (r, rank) in ranks.iter().enumerate() {
            if step == truth.first_steps[r] {
                missed[r].end = rank.host.events.len();
            }
        }
        let launched: Vec<Vec<Launched>> = ranks
            .iter_mut()
            .enumerate()
            .map(|(r, rank)| host_step(run, &profile, rank, (step, labels), r as u32))
            .collect();
        gpu_step(run, &mut ranks, &launched, step, &mut rng, &mut truth);
    }
    for (rank, missed) in ranks.iter_mut().zip(missed) {
        rank.host.events.drain(missed);
        rank.host.close_frame(true);
    }
    for l in &run.lateness {
        truth.stragglers.push(StragglerTruth {
            step: l.step,
            ordinal: l.ordinal,
            rank: l.rank,
            late_ns: l.ns,
            cause: l.cause,
            detail: match l.cause {
                Cause::SlowGemm => GEMM.to_string(),
                Cause::LaunchGap if run.graph_replay => "cudaGraphLaunch".to_string(),
                Cause::LaunchGap => "cudaLaunchKernel".to_string(),
                Cause::Python => format!(
                    "{}{}:{} {}",
                    profile.location_prefix, PREPARE.path, PREPARE.line, PREPARE.func
                ),
            },
        });
    }
    truth.ep = super::ep::truth(run);
    let texts = ranks
        .iter()
        .zip(&truth.files)
        .enumerate()
        .map(|(r, (rank, path))| trace_text(run, r, path, &rank.host))
        .collect();
    (texts, truth)
}

fn metadata(rank: &mut Rank, profile: &Profile, r: usize) {
    let ts = us(rank.clock(EPOCH_NS));
    let meta = |pid: u64, tid: Option<u64>, what: &str, value: &str| {
        let tid = tid.map(|t| format!(", \"tid\": {t}")).unwrap_or_default();
        format!(
            "{{\"name\": \"{what}\", \"ph\": \"M\", \"ts\": {ts}, \"pid\": {pid}{tid}, \"args\": {{\"name\": {}}}}}",
            json_str(value)
        )
    };
    let process = profile.process_name.replace("TP0", &format!("TP{r}"));
    for json in [
        meta(CPU_PID, None, "process_name", &process),
        meta(CPU_PID, Some(CPU_PID), "thread_name", "python3"),
        meta(GPU_PID, None, "process_name", "python3"),
        meta(GPU_PID, Some(STREAM), "thread_name", "stream 7"),
    ] {
        rank.host.push(0, json);
    }
}

/// The host side of one step on one rank: the injected host lateness, the step marker,
/// the engine's frames and the launches. Returns the step's ops in launch order.
fn host_step(
    run: &RankRun,
    profile: &Profile,
    rank: &mut Rank,
    (step, labels): (usize, StepLabels),
    r: u32,
) -> Vec<Launched> {
    let start = rank.true_time(rank.host.cpu).max(rank.gpu_free) + STEP_GAP_NS;
    rank.host.cpu = rank.clock(start);
    for late in run
        .lateness
        .iter()
        .filter(|l| l.step == step && l.rank == r)
    {
        match late.cause {
            Cause::SlowGemm => {}
            Cause::LaunchGap => rank.host.cpu += late.ns,
            Cause::Python => {
                // open_frame and close_frame add 400 + 300 ns of their own.
                rank.host.open_frame(frame_name(profile, &PREPARE));
                rank.host.cpu += late.ns - 700;
                rank.host.close_frame(true);
            }
        }
    }
    let marker_start = rank.host.cpu;
    rank.host.cpu += 1_000;
    for frame in (profile.outer)(StageKind::Decode) {
        rank.host.open_frame(frame_name(profile, &frame));
    }
    let mut ops = Vec::new();
    if run.graph_replay {
        rank.host
            .open_frame(frame_name(profile, &profile.graph_runner));
        rank.host.open_frame(GRAPH_REPLAY.to_string());
        let correlation = rank.host.correlation();
        let launch = rank.host.cpu + 1_000;
        rank.host.push(
            launch,
            format!(
                "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": 12.000, \"args\": {{\"cbid\": 311, \"correlation\": {correlation}}}}}",
                us(launch)
            ),
        );
        rank.host.cpu = launch + 13_000;
        let floor = rank.true_time(launch) + GRAPH_START_NS;
        for _ in 0..run.layers {
            for raw in [NORM_RAW, GEMM, CUSTOM_AR_RAW] {
                ops.push(Launched {
                    raw,
                    floor,
                    correlation,
                    external: None,
                    launch_start: launch,
                });
            }
        }
    } else {
        // An EP run's collective is PyTorch's all-to-all-v record with its split sizes.
        let collective = match run.ep {
            Some(_) => (ALL_TO_ALL_RAW, "record_param_comms"),
            None => (NCCL_AR_RAW, "c10d::allreduce_"),
        };
        for layer in 0..run.layers {
            for (i, (raw, cpu_op)) in [
                (NORM_RAW, "sgl_kernel::fused_add_rmsnorm"),
                (GEMM, "aten::mm"),
                collective,
            ]
            .into_iter()
            .enumerate()
            {
                let extra = match i {
                    2 => comms_args(run, step, layer, r),
                    _ => String::new(),
                };
                ops.push(eager_launch(rank, raw, cpu_op, &extra));
            }
        }
    }
    while rank.host.open.len() > 1 {
        rank.host.close_frame(true);
    }
    rank.host.cpu += 1_000;
    let external = rank.host.external();
    let label = match labels {
        StepLabels::Plain => {
            (profile.step_annotation)(StageKind::Decode, BATCH).unwrap_or_default()
        }
        StepLabels::ContextSums => context_sums_label(step),
    };
    rank.host.push(
        marker_start,
        format!(
            "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}}}}}",
            json_str(&label),
            us(marker_start),
            us(rank.host.cpu - marker_start)
        ),
    );
    ops
}

/// Requests per decode step.
const BATCH: usize = 8;

/// Each request's context at the run's first step.
const FIRST_CONTEXT: usize = 517;

/// The vLLM-style marker of decode step `step` (as vLLM and some SGLang builds write it:
/// `execute_<tokens>_context_<requests>(sq…sk…sqsq…sqsk…)_generation_<requests>(…)`),
/// with the batch's summed query and context lengths: every request adds one token a
/// step, so the summed context grows by the batch each step, on every rank alike.
fn context_sums_label(step: usize) -> String {
    let context = BATCH * (FIRST_CONTEXT + step);
    format!(
        "execute_{BATCH}_context_0(sq0sk0sqsq0sqsk0)_generation_{BATCH}(sq{BATCH}sk{context}sqsq{BATCH}sqsk{context})"
    )
}

/// One eager kernel: the CPU op and its `cudaLaunchKernel`, 2 µs in all, so a step's
/// launches are all issued before its first all-reduce ends (a late host then delays
/// only the collective it was injected before).
/// `extra`: more args for the CPU op, after a comma (a collective's facts).
fn eager_launch(rank: &mut Rank, raw: &'static str, cpu_op: &str, extra: &str) -> Launched {
    let external = rank.host.external();
    let correlation = rank.host.correlation();
    let op_start = rank.host.cpu;
    let launch_start = op_start + 500;
    rank.host.cpu = launch_start + 1_500;
    rank.host.push(
        op_start,
        format!(
            "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": {}, \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {external}, \"Record function id\": 0{extra}}}}}",
            json_str(cpu_op),
            us(op_start),
            us(rank.host.cpu - op_start)
        ),
    );
    rank.host.push(
        launch_start,
        format!(
            "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {CPU_PID}, \"tid\": {CPU_PID}, \"ts\": {}, \"dur\": 1.000, \"args\": {{\"External id\": {external}, \"cbid\": 211, \"correlation\": {correlation}}}}}",
            us(launch_start)
        ),
    );
    Launched {
        raw,
        floor: rank.true_time(launch_start) + LAUNCH_LATENCY_NS,
        correlation,
        external: Some(external),
        launch_start,
    }
}

/// The GPU side of one step on every rank at once: each layer's norm and GEMM per rank,
/// then the all-reduce, which ends on every rank once the last one has arrived.
fn gpu_step(
    run: &RankRun,
    ranks: &mut [Rank],
    launched: &[Vec<Launched>],
    step: usize,
    rng: &mut Rng,
    truth: &mut RankTruth,
) {
    let gap = if run.graph_replay { NODE_GAP_NS } else { 500 };
    for layer in 0..run.layers {
        let norm_ns = rng.between((2_500, 4_000));
        let gemm_ns = rng.between((9_000, 22_000));
        let transfer_ns = rng.between((6_000, 11_000));
        let mut arrivals = Vec::new();
        for (r, rank) in ranks.iter_mut().enumerate() {
            let ops = &launched[r][layer * 3..layer * 3 + 3];
            let norm_start = (rank.gpu_free + gap).max(ops[0].floor);
            let norm_end = gpu_op(rank, &ops[0], norm_start, norm_ns);
            let slow: u64 = run
                .lateness
                .iter()
                .filter(|l| {
                    l.step == step
                        && l.ordinal == layer
                        && l.rank == r as u32
                        && l.cause == Cause::SlowGemm
                })
                .map(|l| l.ns)
                .sum();
            let gemm_start = (norm_end + gap).max(ops[1].floor);
            let gemm_dur = gemm_ns + rng.between((0, END_JITTER_NS / 2)) + slow;
            let gemm_end = gpu_op(rank, &ops[1], gemm_start, gemm_dur);
            arrivals.push((gemm_end + gap).max(ops[2].floor));
        }
        let last = arrivals.iter().copied().max().unwrap_or(0);
        let mut durations = Vec::new();
        for (r, rank) in ranks.iter_mut().enumerate() {
            let end = last + transfer_ns + rng.between((0, END_JITTER_NS / 2));
            let dur = end - arrivals[r];
            // Newer PyTorch copies the collective's facts onto its kernel.
            let comms = comms_args(run, step, layer, r as u32);
            gpu_op_with(rank, &launched[r][layer * 3 + 2], arrivals[r], dur, &comms);
            durations.push(dur);
        }
        truth.collectives.push(CollectiveTruth {
            step,
            ordinal: layer,
            kernel: launched[0][layer * 3 + 2].raw.to_string(),
            arrival_ns: arrivals.iter().map(|a| a - EPOCH_NS).collect(),
            duration_ns: durations,
        });
    }
}

/// Writes one kernel (true `start`) on `rank`'s clock; returns its true end.
fn gpu_op(rank: &mut Rank, op: &Launched, start: u64, dur: u64) -> u64 {
    gpu_op_with(rank, op, start, dur, "")
}

/// [`gpu_op`] with `extra` args after a comma.
fn gpu_op_with(rank: &mut Rank, op: &Launched, start: u64, dur: u64, extra: &str) -> u64 {
    let external = op
        .external
        .map(|e| format!("\"External id\": {e}, "))
        .unwrap_or_default();
    let correlation = op.correlation;
    let args = format!(
        "{external}\"device\": 0, \"stream\": {STREAM}, \"correlation\": {correlation}, \"registers per thread\": 128, \"shared memory\": 49152, \"grid\": [132, 1, 1], \"block\": [384, 1, 1]{extra}"
    );
    let start_clock = rank.clock(start);
    rank.host.push_gpu_op(&GpuOpEvent {
        cat: "kernel",
        name: op.raw,
        stream: STREAM,
        start: start_clock,
        dur,
        launch_start: op.launch_start,
        correlation,
        args: &args,
    });
    rank.gpu_free = start + dur;
    start + dur
}

fn trace_text(run: &RankRun, rank: usize, path: &Path, host: &HostTrack) -> String {
    let mut order: Vec<&crate::Event> = host.events.iter().collect();
    order.sort_by_key(|e| e.ts);
    let mut text = String::new();
    let _ = write!(
        text,
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": {rank}, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045411840, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {}}},\n  \"with_stack\": 1,\n  \"record_shapes\": 1,\n  \"cuda_runtime_version\": 12080,\n  \"trace_id\": \"{:016X}\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1761000000000000000,\n  \"traceEvents\": [\n",
        run.ranks,
        (run.seed + rank as u64).wrapping_mul(0x2545_F491_4F6C_DD1D)
    );
    events_and_end(&mut text, &order, path);
    text
}
