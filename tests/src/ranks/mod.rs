//! Multi-rank fixtures: one SGLang decode capture of a TP run, one trace file per rank
//! (`<id>-TP-<r>-DECODE.trace.json.gz`, as SGLang names them), written with each rank's
//! own clock (an offset of up to ±5 ms) and with lateness injected on chosen ranks
//! before chosen all-reduces, and `ground_truth.json` beside them.
//!
//! Every step runs `layers` x (RMSNorm, row GEMM, all-reduce), eager (one launch per
//! kernel, NCCL all-reduce) or replayed from one CUDA graph (custom all-reduce). An
//! all-reduce synchronises the ranks: on every rank it ends at the same true instant
//! (within [`END_JITTER_NS`]), so a rank that arrives late makes every other rank wait
//! inside the kernel. The lateness has one of three causes ([`Cause`]): a slower GEMM
//! before the collective, a late launch (the host idles before the step's first launch),
//! or Python work in a known engine frame before that launch. The ground truth holds,
//! per rank, its clock offset against rank 0; per collective, every rank's true arrival
//! and measured duration; per injected lateness, the step, rank, amount, cause and what
//! a correct analysis names (the kernel, the launch call or the frame's location).

mod ep;
mod spoiled;
mod writer;

pub use ep::{ep_runs, EpSpec};
pub use spoiled::{spoil_events, Spoiled};

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// What made a rank late.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The GEMM right before the collective ran longer by the lateness.
    SlowGemm,
    /// The step's first launch (`cudaLaunchKernel`, or the `cudaGraphLaunch`) came late
    /// with the host in no frame of its own.
    LaunchGap,
    /// The host ran an engine Python frame for the lateness before the step's launch.
    Python,
}

impl Cause {
    /// The `cause` a correct report gives.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::SlowGemm => "kernels",
            Cause::LaunchGap => "launch",
            Cause::Python => "python",
        }
    }
}

/// One injected lateness: `rank` arrives `ns` late at collective `ordinal` (0-based
/// within the step) of `step`. Host causes act before the step's first launch, so they
/// go with ordinal 0.
#[derive(Clone, Debug)]
pub struct Lateness {
    pub step: usize,
    pub ordinal: usize,
    pub rank: u32,
    pub ns: u64,
    pub cause: Cause,
}

/// One multi-rank run.
#[derive(Clone, Debug)]
pub struct RankRun {
    /// Directory name under the output directory.
    pub name: &'static str,
    pub ranks: u32,
    pub steps: usize,
    pub layers: usize,
    pub graph_replay: bool,
    /// Each rank's clock minus the true clock, in ns (|offset| <= 5 ms).
    pub offsets_ns: Vec<i64>,
    pub lateness: Vec<Lateness>,
    pub seed: u64,
    /// Per rank, the steps its profiler missed at the start (its trace begins with step
    /// `start_steps[r]`; empty: every rank saw every step). The reference rank, 0, starts
    /// first, so the report's steps are the run's.
    pub start_steps: Vec<usize>,
    /// Expert parallelism: each layer's collective is an all-to-all-v with skewed
    /// per-peer split sizes instead of the all-reduce (`ep.rs`).
    pub ep: Option<EpSpec>,
}

/// Arrival and end spread of collectives nobody is late for, at most.
pub const END_JITTER_NS: u64 = 300;

/// File name of the ground truth beside the traces.
pub const TRUTH_FILE: &str = "ground_truth.json";

/// The 2-, 4- and 8-rank runs `make-fixtures --ranks` writes.
pub fn rank_runs() -> Vec<RankRun> {
    let late = |step, ordinal, rank, us: u64, cause| Lateness {
        step,
        ordinal,
        rank,
        ns: us * 1000,
        cause,
    };
    vec![
        RankRun {
            name: "tp2-eager",
            ranks: 2,
            steps: 6,
            layers: 3,
            graph_replay: false,
            offsets_ns: vec![1_234_567, -3_210_987],
            lateness: vec![
                late(1, 2, 1, 40, Cause::SlowGemm),
                late(3, 0, 0, 75, Cause::Python),
                late(4, 0, 1, 55, Cause::LaunchGap),
            ],
            seed: 21,
            start_steps: Vec::new(),
            ep: None,
        },
        RankRun {
            name: "tp4-graph",
            ranks: 4,
            steps: 8,
            layers: 4,
            graph_replay: true,
            offsets_ns: vec![-250_000, 4_999_001, -4_870_333, 2_000_017],
            lateness: vec![
                late(1, 0, 2, 120, Cause::LaunchGap),
                late(2, 3, 1, 30, Cause::SlowGemm),
                late(5, 0, 3, 90, Cause::Python),
                late(6, 1, 0, 25, Cause::SlowGemm),
            ],
            seed: 41,
            start_steps: Vec::new(),
            ep: None,
        },
        RankRun {
            name: "tp8-graph",
            ranks: 8,
            steps: 6,
            layers: 3,
            graph_replay: true,
            offsets_ns: vec![
                3_000_000, -1_000_111, 4_500_000, -4_999_999, 17, 2_222_222, -3_333_333, 999_999,
            ],
            lateness: vec![
                late(0, 1, 5, 60, Cause::SlowGemm),
                late(2, 0, 7, 200, Cause::Python),
                late(4, 0, 3, 45, Cause::LaunchGap),
            ],
            seed: 81,
            start_steps: Vec::new(),
            ep: None,
        },
        // Ranks 1 and 3 started profiling two steps and one step after the others.
        RankRun {
            name: "tp4-late-start",
            ranks: 4,
            steps: 8,
            layers: 3,
            graph_replay: false,
            offsets_ns: vec![2_100_000, -4_400_000, 350_000, 4_900_000],
            lateness: vec![
                late(3, 1, 1, 50, Cause::SlowGemm),
                late(5, 0, 3, 80, Cause::Python),
                late(6, 0, 2, 65, Cause::LaunchGap),
            ],
            seed: 43,
            start_steps: vec![0, 2, 0, 1],
            ep: None,
        },
    ]
}

/// How a run's step markers are labelled.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum StepLabels {
    /// The engine's own `step[DECODE bs=8]`: nothing in it tells one step from the next,
    /// so ranks whose profilers started on other steps are re-aligned by their
    /// collectives.
    #[default]
    Plain,
    /// vLLM-style `execute_8_context_0(…)_generation_8(sq8sk<ctx>sqsq8sqsk<ctx>)`, no
    /// `ProfilerStep#N`: the summed context `<ctx>` grows by the batch every step and is
    /// the same on every rank in one step, so it numbers the steps across ranks.
    ContextSums,
}

/// The run whose step markers carry a number that rises every step (and no
/// `ProfilerStep#N`), its ranks' profilers started on three different steps.
pub fn numbered_step_run() -> RankRun {
    let late = |step, ordinal, rank, us: u64, cause| Lateness {
        step,
        ordinal,
        rank,
        ns: us * 1000,
        cause,
    };
    RankRun {
        name: "tp4-late-start-numbered",
        ranks: 4,
        steps: 9,
        layers: 3,
        graph_replay: false,
        offsets_ns: vec![-1_700_000, 3_300_000, -4_950_000, 600_000],
        lateness: vec![
            late(3, 2, 2, 45, Cause::SlowGemm),
            late(5, 0, 1, 70, Cause::Python),
            late(7, 0, 3, 60, Cause::LaunchGap),
        ],
        seed: 47,
        start_steps: vec![0, 3, 1, 0],
        ep: None,
    }
}

/// What one run's traces hold, as `ground_truth.json` records it.
#[derive(Clone, Debug, Default)]
pub struct RankTruth {
    pub dir: PathBuf,
    /// Per rank: its trace file and its clock offset against rank 0's, in ns.
    pub files: Vec<PathBuf>,
    pub offsets_vs_rank0_ns: Vec<i64>,
    /// Per rank, the first step its trace holds ([`RankRun::start_steps`]).
    pub first_steps: Vec<usize>,
    /// Every all-reduce of the run; rank r's trace holds those from its first step on.
    pub collectives: Vec<CollectiveTruth>,
    pub stragglers: Vec<StragglerTruth>,
    /// An EP run's split sizes as a correct report sums them (`ep.rs`); null otherwise.
    pub ep: Value,
    /// How the steps are labelled (so what a correct report re-aligns them by).
    pub step_labels: StepLabels,
}

/// One all-reduce on every rank.
#[derive(Clone, Debug, Default)]
pub struct CollectiveTruth {
    pub step: usize,
    pub ordinal: usize,
    pub kernel: String,
    /// Per rank: when its kernel started (true clock, ns from the run's start) and how
    /// long it ran.
    pub arrival_ns: Vec<u64>,
    pub duration_ns: Vec<u64>,
}

/// One injected lateness and what a correct report says of it.
#[derive(Clone, Debug)]
pub struct StragglerTruth {
    pub step: usize,
    pub ordinal: usize,
    pub rank: u32,
    pub late_ns: u64,
    pub cause: Cause,
    /// The kernel's canonical name, the launch call, or the frame as `path:line function`.
    pub detail: String,
}

impl RankTruth {
    /// The first step every rank's trace holds: collectives before it ran on some ranks
    /// only.
    pub fn common_first_step(&self) -> usize {
        self.first_steps.iter().copied().max().unwrap_or(0)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "ranks": self.files.iter().zip(&self.offsets_vs_rank0_ns).enumerate().map(|(r, (f, o))| json!({
                "rank": r,
                "file": f.file_name().map(|n| n.to_string_lossy().into_owned()),
                "clock_offset_ns": o,
                "first_step": self.first_steps.get(r).copied().unwrap_or(0),
            })).collect::<Vec<_>>(),
            "step_labels": match self.step_labels {
                StepLabels::Plain => "plain",
                StepLabels::ContextSums => "context-sums",
            },
            "collectives": self.collectives.iter().map(|c| json!({
                "step": c.step,
                "ordinal": c.ordinal,
                "kernel": c.kernel,
                "arrival_ns": c.arrival_ns,
                "duration_ns": c.duration_ns,
            })).collect::<Vec<_>>(),
            "stragglers": self.stragglers.iter().map(|s| json!({
                "step": s.step,
                "ordinal": s.ordinal,
                "rank": s.rank,
                "late_ns": s.late_ns,
                "cause": s.cause.as_str(),
                "detail": s.detail,
            })).collect::<Vec<_>>(),
            "ep": self.ep,
        })
    }
}

/// Writes `run` into `dir`: one gzipped trace per rank and `ground_truth.json`.
pub fn write_run(dir: &Path, run: &RankRun) -> std::io::Result<RankTruth> {
    write_labelled_run(dir, run, StepLabels::Plain)
}

/// [`write_run`], the step markers labelled as `labels` says.
pub fn write_labelled_run(
    dir: &Path,
    run: &RankRun,
    labels: StepLabels,
) -> std::io::Result<RankTruth> {
    std::fs::create_dir_all(dir)?;
    let (texts, mut truth) = writer::write(run, dir, labels);
    for (path, text) in truth.files.iter().zip(texts) {
        let out = std::fs::File::create(path)?;
        let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
        std::io::Write::write_all(&mut encoder, text.as_bytes())?;
        encoder.finish()?;
    }
    truth.dir = dir.to_path_buf();
    let body = serde_json::to_string_pretty(&truth.to_json()).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(TRUTH_FILE), body + "\n")?;
    Ok(truth)
}

/// Writes every run of [`ep_runs`] as `dir/<run name>/…`.
pub fn write_ep_runs(dir: &Path) -> std::io::Result<Vec<RankTruth>> {
    ep_runs()
        .iter()
        .map(|r| write_run(&dir.join(r.name), r))
        .collect()
}

/// Writes every run of [`rank_runs`], then [`numbered_step_run`], as
/// `dir/<run name>/…`.
pub fn write_rank_runs(dir: &Path) -> std::io::Result<Vec<RankTruth>> {
    let mut truths = rank_runs()
        .iter()
        .map(|r| write_run(&dir.join(r.name), r))
        .collect::<std::io::Result<Vec<_>>>()?;
    let numbered = numbered_step_run();
    truths.push(write_labelled_run(
        &dir.join(numbered.name),
        &numbered,
        StepLabels::ContextSums,
    )?);
    Ok(truths)
}

#[cfg(test)]
mod tests;
