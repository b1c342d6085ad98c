//! The overlap-opportunity table: which kernels run exposed (no other stream
//! busy) and could be overlapped or fused, and which are already hidden.
//!
//! ```text
//! formal trace --stage ops--> exposure sweep (sweep.rs) --per kernel row--> candidates
//! mapping trace --link + Locator--> kernel -> Python scope --join (scope.rs)--> rows + dep risk
//! ```
//!
//! **Single-trace mode** sweeps the trace itself and takes each row's scope from the
//! same row's own launches, as the kernel table does (a kernel replayed from a CUDA
//! graph is placed at the graph launch). **Mapping+formal mode** sweeps the formal trace
//! (production config, graphs on) and takes each kernel's Python scope from the mapping
//! trace (graphs off) only: formal launch sites never outvote it (in the
//! predecessor the formal trace's full launch counts outweighed the sampled mapping
//! evidence, so graph-on traces showed the graph-launch scope).
//!
//! How a row finds its Python scope (by name, base name, family and location, family) is
//! the scope join in `scope.rs`.

mod notes;
mod scope;
pub(crate) mod sweep;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::analyze::kernels::{busiest_gpu_pid, StagedTrace};
use crate::analyze::location::{Locator, StackSites};
use crate::catalog::overlap::KnownPaths;
use crate::catalog::FamilyRules;
use crate::report::model::{OverlapPartner, OverlapRow, OverlapStage};
use crate::trace::event::{ns_to_us, Ns, Sym, Trace};
use crate::trace::names::canonical_name;
use crate::trace::stage::Stage;
use notes::{stage_notes, StageNoteFacts};
use scope::{Join, Mapping, Scope, ScopeMap};
use sweep::{sweep, Category, Sweep, SweepOp};

/// How many rows a stage shows.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct OverlapOptions {
    /// Drop rows below this share of the stage's busy time (the predecessor's 1.0 %).
    pub min_share_pct: f64,
    /// Keep only the first N rows (0 = all), before the share cut.
    pub limit: usize,
}

impl Default for OverlapOptions {
    fn default() -> Self {
        OverlapOptions {
            min_share_pct: 1.0,
            limit: 0,
        }
    }
}

/// The traces and rules one overlap analysis reads.
pub(crate) struct OverlapInputs<'a> {
    /// Traces whose times are swept (single-trace mode: the input; else the formal set).
    pub formal: &'a [StagedTrace<'a>],
    /// The formal engine's locator, placing each stack once for every analysis that asks.
    pub formal_sites: &'a StackSites<'a>,
    /// Mapping+formal mode: the traces scopes come from, and their engine's locator.
    pub mapping: Option<(&'a [StagedTrace<'a>], &'a Locator)>,
    pub families: &'a FamilyRules,
    pub known: &'a KnownPaths,
    /// Plugin name of the (formal) engine, for known-path rows.
    pub engine: &'a str,
}

/// One stage's overlap rows and what the sweep measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StageOverlap {
    pub stage: Stage,
    pub rows: Vec<OverlapRow>,
    pub measured: OverlapStage,
}

/// Row candidates need at least this much GPU time (µs), as in the predecessor.
const MIN_CANDIDATE_US: f64 = 5.0;
/// A headroom candidate runs exposed at least this share of its time.
const HEADROOM_EXCLUSIVE_RATIO: f64 = 0.45;
/// A low-roi-hidden candidate is hidden at least this share of its time.
const LOW_ROI_HIDDEN_RATIO: f64 = 0.65;
/// Candidates of each verdict per stage.
const CANDIDATES_PER_VERDICT: usize = 5;
/// Partners listed per row.
const PARTNERS_SHOWN: usize = 3;
/// The streams other than the busiest are negligible when they hold less than this share
/// of the stage's GPU op time: a serving trace's side stream that carries a handful of
/// copies hides nothing, and counting it as a second stream made every row read
/// "exclusive 100%" (docs/report-labels.md).
pub(crate) const NEGLIGIBLE_OTHER_STREAMS_PCT: f64 = 1.0;

/// A stage whose streams other than the busiest one are negligible: it is treated as one
/// stream, and the note says so with these numbers.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct MainStream {
    pub(super) label: String,
    pub(super) streams: usize,
    pub(super) other_ops: u64,
    /// Share of the stage's summed GPU op time on the other streams.
    pub(super) other_pct: f64,
}

/// The main stream of a stage with two or more streams whose others are negligible.
fn negligible_other_streams(swept: &SweptStage) -> Option<MainStream> {
    if swept.measured.streams < 2 {
        return None;
    }
    let mut per_stream: Vec<(Ns, u64)> = vec![(0, 0); swept.stream_labels.len()];
    for op in &swept.ops {
        let entry = &mut per_stream[op.stream as usize];
        entry.0 += op.dur();
        entry.1 += 1;
    }
    let total: Ns = per_stream.iter().map(|s| s.0).sum();
    // The busiest stream; the first one on a tie.
    let (main, &(main_time, main_ops)) =
        per_stream
            .iter()
            .enumerate()
            .reduce(|best, s| if s.1 .0 > best.1 .0 { s } else { best })?;
    let other_pct = percent(total - main_time, total);
    (other_pct < NEGLIGIBLE_OTHER_STREAMS_PCT).then(|| MainStream {
        label: swept.stream_labels[main].clone(),
        streams: swept.measured.streams,
        other_ops: swept.ops.len() as u64 - main_ops,
        other_pct,
    })
}

/// The overlap table of every stage the formal traces cover, in stage order. Stage `all`
/// is left out when another stage is present (it holds ops outside every stage window).
pub(crate) fn overlap_tables(
    inputs: &OverlapInputs<'_>,
    opts: &OverlapOptions,
) -> Vec<StageOverlap> {
    let formal_stages = stage_ops(inputs.formal);
    let mapping_stages = inputs.mapping.map(|(traces, _)| stage_ops(traces));
    let present: Vec<Stage> = formal_stages.keys().copied().collect();
    present
        .iter()
        .filter(|&&stage| stage != Stage::All || present.len() == 1)
        .map(|&stage| {
            let formal = &formal_stages[&stage];
            let scopes = match (&mapping_stages, inputs.mapping) {
                (Some(stages), Some((traces, locator))) => pick_stage(stages, stage).map(|ops| {
                    let sites = StackSites::new(locator);
                    ScopeMap::build(traces, ops, &sites, inputs.families, Mapping::Other)
                }),
                _ => Some(ScopeMap::build(
                    inputs.formal,
                    formal,
                    inputs.formal_sites,
                    inputs.families,
                    Mapping::Own,
                )),
            };
            stage_overlap(inputs, stage, formal, scopes.as_ref(), opts)
        })
        .collect()
}

/// The GPU ops of one stage: one trace (the first with ops in the stage) and the
/// indices of its ops there, on the trace's busiest GPU pid.
#[derive(Clone, Debug)]
struct StageOps {
    trace: usize,
    ops: Vec<u32>,
    notes: Vec<String>,
}

/// Stage -> its ops, for a set of traces. Several traces in one stage (ranks, repeated
/// captures) are not mixed: their clocks differ. The others are named in a note.
fn stage_ops(traces: &[StagedTrace<'_>]) -> BTreeMap<Stage, StageOps> {
    let mut stages: BTreeMap<Stage, StageOps> = BTreeMap::new();
    for (t, input) in traces.iter().enumerate() {
        let Some(pid) = busiest_gpu_pid(input.trace) else {
            continue;
        };
        let mut mine: BTreeMap<Stage, Vec<u32>> = BTreeMap::new();
        let mut other_pids: BTreeMap<Sym, u64> = BTreeMap::new();
        for (i, op) in input.trace.gpu_ops.iter().enumerate() {
            if op.pid != pid {
                *other_pids.entry(op.pid).or_default() += 1;
                continue;
            }
            let stage = input.split.stages.get(i).copied().unwrap_or(Stage::All);
            mine.entry(stage).or_default().push(i as u32);
        }
        for (stage, ops) in mine {
            match stages.get_mut(&stage) {
                Some(existing) => existing.notes.push(format!(
                    "{}: {} GPU ops of this stage not swept (the overlap table covers one trace per stage: {})",
                    file_name(input.trace),
                    ops.len(),
                    file_name(traces[existing.trace].trace)
                )),
                None => {
                    let notes = other_pids
                        .iter()
                        .map(|(&other, &count)| {
                            format!(
                                "{}: GPU pid {} left out of the sweep ({count} GPU ops); it covers GPU pid {}",
                                file_name(input.trace),
                                input.trace.name(other),
                                input.trace.name(pid)
                            )
                        })
                        .collect();
                    stages.insert(stage, StageOps { trace: t, ops, notes });
                }
            }
        }
    }
    stages
}

/// The mapping stage for a formal stage, paired as the predecessor paired them: the same
/// stage, else `all`, else
/// the only one.
fn pick_stage(stages: &BTreeMap<Stage, StageOps>, stage: Stage) -> Option<&StageOps> {
    stages
        .get(&stage)
        .or_else(|| stages.get(&Stage::All))
        .or_else(|| {
            (stages.len() == 1)
                .then(|| stages.values().next())
                .flatten()
        })
}

fn file_name(trace: &Trace) -> String {
    trace
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| trace.path.display().to_string())
}

/// One kernel row while the stage is being summed.
#[derive(Clone, Debug, Default)]
struct RowTotals {
    name: String,
    family: String,
    category: Option<Category>,
    raw_names: Vec<String>,
    total: Ns,
    hidden: Ns,
    hidden_by_compute: Ns,
    same_stream: Ns,
    same_stream_ops: u64,
    /// Position (in the stage's op list) of the first longest op.
    representative: usize,
    graph_replays: u64,
    count: u64,
    /// Eager launch locations of this row in the swept trace -> time.
    formal_sites: HashMap<String, Ns>,
}

impl RowTotals {
    fn category(&self) -> Category {
        self.category.unwrap_or(Category::Other)
    }
}

/// One stage's table: sweep its ops, join every row's scope, pick and rank the candidate
/// rows, cut them to the options, and say what the reader must know in notes.
fn stage_overlap(
    inputs: &OverlapInputs<'_>,
    stage: Stage,
    formal: &StageOps,
    scopes: Option<&ScopeMap>,
    opts: &OverlapOptions,
) -> StageOverlap {
    let swept = index_and_sweep(inputs, formal);
    // Scopes for every row (neighbours need theirs too).
    let joined: Vec<(Option<&Scope>, Join)> = swept
        .rows
        .iter()
        .map(|row| match scopes {
            Some(map) => map.lookup(row),
            None => (None, Join::Unmapped),
        })
        .collect();
    let busy_us = ns_to_us(swept.measured.busy);
    let main_stream = negligible_other_streams(&swept);
    let mut shown = if main_stream.is_some() {
        Vec::new()
    } else {
        candidate_rows(inputs, &swept, &joined, opts)
    };
    let below_bar = cut(&mut shown, busy_us, opts);

    let measured = &swept.measured;
    let notes = stage_notes(StageNoteFacts {
        formal,
        rows: &swept.rows,
        joined: &joined,
        measured,
        stream_labels: &swept.stream_labels,
        mapping_mode: inputs.mapping.is_some(),
        scopes,
        below_bar,
        opts,
        main_stream: main_stream.as_ref(),
    });
    StageOverlap {
        stage,
        rows: shown,
        measured: OverlapStage {
            stage: stage.label().to_string(),
            busy_us,
            overlapped_us: ns_to_us(measured.overlapped),
            idle_us: ns_to_us(measured.idle),
            same_stream_overlap_us: ns_to_us(measured.same_stream),
            streams: measured.streams,
            effectively_one_stream: main_stream.is_some(),
            notes,
        },
    }
}

/// A stage's ops as the sweep saw them, and what it measured.
struct SweptStage {
    /// One row per canonical kernel name, in first-seen order, with its sweep totals.
    rows: Vec<RowTotals>,
    /// The stage's ops in stage order, with dense row and stream indices.
    ops: Vec<SweepOp>,
    /// The label of each dense stream index (`stream 7`, `thread 12`).
    stream_labels: Vec<String>,
    measured: Sweep,
}

/// Dense row and stream indices, then the sweep, then each row's totals from it.
fn index_and_sweep(inputs: &OverlapInputs<'_>, formal: &StageOps) -> SweptStage {
    let staged = &inputs.formal[formal.trace];
    let trace = staged.trace;
    let mut row_of_name: HashMap<Sym, u32> = HashMap::default();
    let mut row_of_canonical: HashMap<String, u32> = HashMap::default();
    let mut rows: Vec<RowTotals> = Vec::new();
    let mut stream_of: HashMap<(Sym, StreamKey), u32> = HashMap::default();
    let mut stream_labels: Vec<String> = Vec::new();
    let mut sweep_ops: Vec<SweepOp> = Vec::with_capacity(formal.ops.len());
    // Per op only numbers are hashed: a stack's location is named once, as an index
    // into `locations`, and each row sums its time per location index; the names and the
    // raw names (each raw name joins its row when first seen, and a trace's interner
    // gives one name one Sym) are Strings once per distinct value, not once per op.
    let mut location_cache: HashMap<u32, Option<u32>> = HashMap::default();
    let mut location_of_name: HashMap<String, u32> = HashMap::default();
    let mut locations: Vec<String> = Vec::new();
    let mut site_times: Vec<HashMap<u32, Ns>> = Vec::new();
    for &i in &formal.ops {
        let op = trace.gpu_ops.at(i as usize);
        let row = *row_of_name.entry(op.name).or_insert_with(|| {
            let raw = trace.name(op.name);
            let canonical = canonical_name(raw);
            let row = *row_of_canonical
                .entry(canonical.clone())
                .or_insert_with(|| {
                    let family = inputs.families.family_of(&canonical).to_string();
                    rows.push(RowTotals {
                        category: Some(Category::of_family(&family)),
                        family,
                        name: canonical,
                        ..RowTotals::default()
                    });
                    site_times.push(HashMap::default());
                    rows.len() as u32 - 1
                });
            rows[row as usize].raw_names.push(raw.to_string());
            row
        });
        let key = (op.pid, stream_key(&op));
        let stream = *stream_of.entry(key).or_insert_with(|| {
            stream_labels.push(stream_label(trace, &op));
            stream_labels.len() as u32 - 1
        });
        let totals = &mut rows[row as usize];
        let site = staged.linked.sites.get(i as usize);
        if site.is_some_and(|s| s.graph_replay) {
            totals.graph_replays += 1;
        } else if let Some(id) = site.and_then(|s| s.stack) {
            let location = *location_cache.entry(id).or_insert_with(|| {
                let name = inputs.formal_sites.location(trace, staged.linked, id)?;
                Some(*location_of_name.entry(name).or_insert_with_key(|name| {
                    locations.push(name.clone());
                    locations.len() as u32 - 1
                }))
            });
            if let Some(location) = location {
                *site_times[row as usize].entry(location).or_default() += op.dur;
            }
        }
        sweep_ops.push(SweepOp {
            start: op.ts,
            end: op.end(),
            stream,
            row,
            category: totals.category(),
        });
    }
    for (totals, times) in rows.iter_mut().zip(site_times) {
        totals.formal_sites = times
            .into_iter()
            .map(|(location, ns)| (locations[location as usize].clone(), ns))
            .collect();
    }
    let measured = sweep(&sweep_ops);
    add_exposure(&mut rows, &sweep_ops, &measured);
    SweptStage {
        rows,
        ops: sweep_ops,
        stream_labels,
        measured,
    }
}

/// Sums each op's exposure into its row and picks the row's representative op.
fn add_exposure(rows: &mut [RowTotals], ops: &[SweepOp], measured: &Sweep) {
    for (position, (op, exposure)) in ops.iter().zip(&measured.ops).enumerate() {
        let totals = &mut rows[op.row as usize];
        let dur = op.dur();
        if totals.count == 0 || dur > ops[totals.representative].dur() {
            totals.representative = position;
        }
        totals.count += 1;
        totals.total += dur;
        totals.hidden += exposure.hidden;
        totals.hidden_by_compute += exposure.hidden_by_compute;
        totals.same_stream += exposure.same_stream;
        totals.same_stream_ops += u64::from(exposure.same_stream > 0);
    }
}

/// The candidate rows in candidate order, each with its priority, dependency risk,
/// partners and known path; a row is shown once, and headroom rows at P5 not at all.
fn candidate_rows(
    inputs: &OverlapInputs<'_>,
    swept: &SweptStage,
    joined: &[(Option<&Scope>, Join)],
    opts: &OverlapOptions,
) -> Vec<OverlapRow> {
    let SweptStage {
        rows,
        ops,
        measured,
        ..
    } = swept;
    let neighbours = Neighbours::new(ops);
    // One busy stream: nothing overlaps, and the stage says so in one line instead.
    let candidates = if measured.streams >= 2 {
        candidates(rows)
    } else {
        Vec::new()
    };
    let mut used: Vec<u32> = Vec::new();
    let mut assembled: Vec<OverlapRow> = Vec::new();
    for (row, verdict) in candidates {
        if used.contains(&row) {
            continue;
        }
        let totals = &rows[row as usize];
        let share = percent(totals.total, measured.busy);
        let (dep, dep_reason) = dep_risk(row, totals, rows, ops, &neighbours, joined);
        let (priority, recommendation) = priority(share, verdict, dep, totals.category(), opts);
        if verdict == Verdict::Headroom && priority == "P5" {
            continue;
        }
        used.push(row);
        let scope = joined[row as usize].0;
        let python_scope = scope.map(|s| s.location.clone());
        let known_path = inputs
            .known
            .find(
                inputs.engine,
                totals.category().label(),
                &totals.name,
                python_scope.as_deref(),
            )
            .map(|p| p.id.clone());
        assembled.push(OverlapRow {
            kernel: totals.name.clone(),
            raw_names: totals.raw_names.clone(),
            verdict: verdict.label().to_string(),
            priority: priority.to_string(),
            python_scope,
            hidden_us: ns_to_us(totals.hidden),
            exclusive_us: ns_to_us(totals.total - totals.hidden),
            hidden_by_compute_us: ns_to_us(totals.hidden_by_compute),
            total_us: ns_to_us(totals.total),
            overlaps_with: partners(row, measured, rows),
            dep_risk: dep.label().to_string(),
            dep_reason,
            recommendation: recommendation.to_string(),
            known_path,
        });
    }
    assembled
}

/// The row limit first, then the share bar; returns how many rows the bar hid.
fn cut(rows: &mut Vec<OverlapRow>, busy_us: f64, opts: &OverlapOptions) -> usize {
    if opts.limit > 0 {
        rows.truncate(opts.limit);
    }
    let before = rows.len();
    rows.retain(|r| 100.0 * r.total_us / busy_us.max(f64::MIN_POSITIVE) >= opts.min_share_pct);
    before - rows.len()
}

/// A stream's identity within a pid: `args.stream` when present (stream 0 is a real
/// stream; the predecessor read 0 as absent and fell back to the thread), else the thread
/// the trace put the op on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum StreamKey {
    Id(i64),
    Thread(Sym),
}

fn stream_key(op: &crate::trace::event::GpuOp) -> StreamKey {
    match op.stream {
        Some(id) => StreamKey::Id(id),
        None => StreamKey::Thread(op.tid),
    }
}

fn stream_label(trace: &Trace, op: &crate::trace::event::GpuOp) -> String {
    match op.stream {
        Some(id) => format!("stream {id}"),
        None => format!("thread {}", trace.name(op.tid)),
    }
}

fn percent(part: Ns, whole: Ns) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Verdict {
    Headroom,
    LowRoiHidden,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Headroom => "headroom",
            Verdict::LowRoiHidden => "low-roi-hidden",
        }
    }
}

/// Headroom candidates (non-compute first, then compute, each by weighted exclusive
/// time), then low-roi-hidden ones: the predecessor's candidate thresholds and weights.
fn candidates(rows: &[RowTotals]) -> Vec<(u32, Verdict)> {
    let us = |ns: Ns| ns_to_us(ns);
    let ratio = |part: Ns, total: Ns| {
        if total > 0 {
            part as f64 / total as f64
        } else {
            0.0
        }
    };
    let weight = |c: Category| match c {
        Category::Communication => 1.3,
        Category::Memory => 1.15,
        Category::Elementwise => 1.0,
        Category::Other => 0.8,
        Category::Compute => 0.35,
    };
    let by_weighted_exclusive = |list: &mut Vec<u32>| {
        list.sort_by(|&a, &b| {
            let key = |r: u32| {
                let row = &rows[r as usize];
                us(row.total - row.hidden) * weight(row.category())
            };
            key(b).total_cmp(&key(a)).then(a.cmp(&b))
        })
    };
    let mut primary: Vec<u32> = Vec::new();
    let mut fallback: Vec<u32> = Vec::new();
    let mut low_roi: Vec<u32> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if us(row.total) < MIN_CANDIDATE_US {
            continue;
        }
        if ratio(row.total - row.hidden, row.total) >= HEADROOM_EXCLUSIVE_RATIO {
            if row.category() == Category::Compute {
                fallback.push(i as u32);
            } else {
                primary.push(i as u32);
            }
        }
        if matches!(row.category(), Category::Elementwise | Category::Memory)
            && ratio(row.hidden, row.total) >= LOW_ROI_HIDDEN_RATIO
        {
            low_roi.push(i as u32);
        }
    }
    by_weighted_exclusive(&mut primary);
    by_weighted_exclusive(&mut fallback);
    low_roi.sort_by(|&a, &b| {
        let key = |r: u32| {
            let row = &rows[r as usize];
            let hidden = us(row.hidden);
            (
                hidden * (1.0 + us(row.hidden_by_compute) / hidden.max(1.0)),
                ratio(row.hidden, row.total),
            )
        };
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(a.cmp(&b))
    });
    primary
        .into_iter()
        .chain(fallback)
        .take(CANDIDATES_PER_VERDICT)
        .map(|r| (r, Verdict::Headroom))
        .chain(
            low_roi
                .into_iter()
                .take(CANDIDATES_PER_VERDICT)
                .map(|r| (r, Verdict::LowRoiHidden)),
        )
        .collect()
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum DepRisk {
    Low,
    High,
    Unclear,
}

impl DepRisk {
    fn label(self) -> &'static str {
        match self {
            DepRisk::Low => "low",
            DepRisk::High => "high",
            DepRisk::Unclear => "unclear",
        }
    }
}

/// Priority and recommendation, by the predecessor's table (its branches that no verdict
/// reaches for
/// other verdicts are left out).
fn priority(
    share_pct: f64,
    verdict: Verdict,
    dep: DepRisk,
    category: Category,
    opts: &OverlapOptions,
) -> (&'static str, &'static str) {
    if share_pct < opts.min_share_pct {
        return ("P5", "skip");
    }
    match (verdict, dep) {
        // A GEMM or attention kernel is not fused into its neighbours: the room it
        // leaves is for work on another stream beside it.
        (Verdict::Headroom, DepRisk::Low)
            if matches!(category, Category::Communication | Category::Compute) =>
        {
            ("P1", "try overlap")
        }
        (Verdict::Headroom, DepRisk::Low) => ("P1", "try fusion"),
        (Verdict::Headroom, _) => ("P2", "check deps"),
        (Verdict::LowRoiHidden, _) => ("P4", "skip"),
    }
}

/// The partners of a row, most time first.
fn partners(row: u32, measured: &Sweep, rows: &[RowTotals]) -> Vec<OverlapPartner> {
    let mut list: Vec<(u32, Ns)> = measured
        .partners
        .iter()
        .filter(|((r, _), _)| *r == row)
        .map(|(&(_, partner), &ns)| (partner, ns))
        .collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    list.into_iter()
        .take(PARTNERS_SHOWN)
        .map(|(partner, ns)| OverlapPartner {
            kernel: rows[partner as usize].name.clone(),
            overlap_us: ns_to_us(ns),
        })
        .collect()
}

/// Same-stream order of the swept ops: each op's previous and next op on its stream,
/// ordered by (start, end, position).
struct Neighbours {
    prev: Vec<Option<usize>>,
    next: Vec<Option<usize>>,
}

impl Neighbours {
    fn new(ops: &[SweepOp]) -> Self {
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| (ops[i].stream, ops[i].start, ops[i].end, i));
        let mut prev = vec![None; ops.len()];
        let mut next = vec![None; ops.len()];
        for pair in order.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if ops[a].stream == ops[b].stream {
                next[a] = Some(b);
                prev[b] = Some(a);
            }
        }
        Neighbours { prev, next }
    }
}

/// Dependency risk of a row from its representative op's same-stream neighbours
/// (the predecessor's rule): a side is risky when the gap is tight and the neighbour shares the
/// scope family, the launch op, or looks like a producer/consumer by category; it is
/// unclear when tight and a scope is unknown. The reason names the side, the
/// neighbour's family, the gap and which test fired, so "high" can be checked.
fn dep_risk(
    row: u32,
    totals: &RowTotals,
    rows: &[RowTotals],
    ops: &[SweepOp],
    neighbours: &Neighbours,
    joined: &[(Option<&Scope>, Join)],
) -> (DepRisk, String) {
    if totals.count == 0 {
        return (
            DepRisk::Unclear,
            "no op of this kernel was swept".to_string(),
        );
    }
    let cur = &ops[totals.representative];
    let tight_us = (0.15 * ns_to_us(cur.dur())).clamp(2.0, 20.0);
    let own_scope = joined[row as usize].0;
    let mut risky: Vec<String> = Vec::new();
    let mut unclear: Vec<String> = Vec::new();
    let sides = [
        neighbours.prev[totals.representative].map(|n| ("previous", n, cur.start - ops[n].end)),
        neighbours.next[totals.representative].map(|n| ("next", n, ops[n].start - cur.end)),
    ];
    for (side, n, gap) in sides.into_iter().flatten() {
        let gap_us = ns_to_us(gap.max(0));
        if gap_us > tight_us {
            continue;
        }
        let other = &ops[n];
        let other_scope = joined[other.row as usize].0;
        let same_family = match (own_scope, other_scope) {
            (Some(a), Some(b)) => same_scope_family(&a.location, &b.location),
            _ => false,
        };
        let same_launch = match (own_scope, other_scope) {
            (Some(a), Some(b)) => a.launch_op.is_some() && a.launch_op == b.launch_op,
            _ => false,
        };
        let other_category = rows[other.row as usize].category();
        let dependency_like = match cur.category {
            Category::Communication => other_category != Category::Communication,
            Category::Elementwise | Category::Memory => other_category != Category::Other,
            _ => false,
        };
        let neighbour = format!(
            "{side} op on the same stream ({}, {gap_us:.1} us gap)",
            rows[other.row as usize].family
        );
        let why = if same_family {
            Some("same Python scope family")
        } else if same_launch {
            Some("same launch op")
        } else if dependency_like {
            Some("producer/consumer by category")
        } else {
            None
        };
        if let Some(why) = why {
            risky.push(format!("{neighbour}: {why}"));
        } else if own_scope.is_none() || other_scope.is_none() {
            unclear.push(format!("{neighbour}: scope unknown"));
        }
    }
    if !risky.is_empty() {
        (DepRisk::High, risky.join("; "))
    } else if !unclear.is_empty() {
        (DepRisk::Unclear, unclear.join("; "))
    } else {
        (
            DepRisk::Low,
            format!("no dependent same-stream neighbour within {tight_us:.1} us"),
        )
    }
}

/// Two `path:line function` scopes are of one family when the paths or the function
/// names are equal (the predecessor's test, applied to the one scope format this tool
/// writes; it mixed two).
fn same_scope_family(a: &str, b: &str) -> bool {
    let split = |s: &str| -> (String, String) {
        let (head, function) = s.rsplit_once(' ').unwrap_or((s, ""));
        let path = head.rsplit_once(':').map_or(head, |(p, _)| p);
        (path.to_string(), function.to_string())
    };
    let (pa, fa) = split(a);
    let (pb, fb) = split(b);
    pa == pb || (!fa.is_empty() && fa == fb)
}

/// Sets each stage's overlap rows on the kernel-table stages (matched by label) and
/// returns what the sweeps measured, in stage order.
pub(crate) fn attach(
    stages: Vec<crate::report::model::StageReport>,
    overlap: Vec<StageOverlap>,
) -> (Vec<crate::report::model::StageReport>, Vec<OverlapStage>) {
    let mut stages = stages;
    let mut measured = Vec::with_capacity(overlap.len());
    for stage_overlap in overlap {
        if let Some(report) = stages
            .iter_mut()
            .find(|s| s.stage == stage_overlap.measured.stage)
        {
            report.overlap = stage_overlap.rows;
        }
        measured.push(stage_overlap.measured);
    }
    (stages, measured)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14 point 7: a GEMM or attention kernel is not fused away; with room to
    /// overlap and no risky neighbour the advice is to overlap it.
    #[test]
    fn compute_kernels_are_never_told_to_try_fusion() {
        let opts = OverlapOptions::default();
        for dep in [DepRisk::Low, DepRisk::High, DepRisk::Unclear] {
            for verdict in [Verdict::Headroom, Verdict::LowRoiHidden] {
                let (_, recommendation) = priority(30.0, verdict, dep, Category::Compute, &opts);
                assert_ne!(recommendation, "try fusion", "{verdict:?} {dep:?}");
            }
        }
        let (p, r) = priority(
            30.0,
            Verdict::Headroom,
            DepRisk::Low,
            Category::Compute,
            &opts,
        );
        assert_eq!((p, r), ("P1", "try overlap"));
        // Elementwise work next to its producer is what fusion is for.
        let (_, r) = priority(
            30.0,
            Verdict::Headroom,
            DepRisk::Low,
            Category::Elementwise,
            &opts,
        );
        assert_eq!(r, "try fusion");
    }

    /// Issue 14 point 11: a dependency risk says which neighbour and which test made it.
    #[test]
    fn dependency_risk_names_its_neighbour_and_reason() {
        let row = |family: &str, category: Category| RowTotals {
            name: family.to_string(),
            family: family.to_string(),
            category: Some(category),
            count: 1,
            ..RowTotals::default()
        };
        let rows = vec![
            row("elementwise", Category::Elementwise),
            RowTotals {
                representative: 1,
                ..row("gemm", Category::Compute)
            },
        ];
        let op = |start: Ns, end: Ns, row: u32, category: Category| SweepOp {
            start,
            end,
            stream: 0,
            row,
            category,
        };
        // An elementwise op, then 1 us later a GEMM on the same stream.
        let ops = vec![
            op(0, 10_000, 0, Category::Elementwise),
            op(11_000, 50_000, 1, Category::Compute),
        ];
        let neighbours = Neighbours::new(&ops);
        let joined = vec![(None, Join::Unmapped), (None, Join::Unmapped)];
        let (risk, reason) = dep_risk(0, &rows[0], &rows, &ops, &neighbours, &joined);
        assert_eq!(risk, DepRisk::High);
        assert_eq!(
            reason,
            "next op on the same stream (gemm, 1.0 us gap): producer/consumer by category"
        );
        // The GEMM: its only neighbour is not a dependency by category, and no scope is
        // known, so the risk is unclear and says so.
        let (risk, reason) = dep_risk(1, &rows[1], &rows, &ops, &neighbours, &joined);
        assert_eq!(risk, DepRisk::Unclear);
        assert_eq!(
            reason,
            "previous op on the same stream (elementwise, 1.0 us gap): scope unknown"
        );
    }

    #[test]
    fn scope_families_compare_paths_or_functions() {
        assert!(same_scope_family(
            "python/sglang/srt/layers/linear.py:461 forward",
            "python/sglang/srt/layers/linear.py:1514 forward"
        ));
        assert!(same_scope_family(
            "a.py:1 forward_cuda",
            "b.py:2 forward_cuda"
        ));
        assert!(!same_scope_family("a.py:1 f", "b.py:2 g"));
    }
}
