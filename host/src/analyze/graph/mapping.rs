//! Mapping+formal mode: each graph-replayed kernel of the formal trace takes the launch
//! site of the mapping trace's kernel (CUDA graphs off) it aligns with.
//!
//! A replay is the GPU ops carrying one graph launch's correlation, in GPU start order.
//! Replays with the same canonical kernel sequence are one graph and share one
//! alignment. The mapping side is cut into steps by its step annotations (SGLang
//! `step[…]`, vLLM `execute_…`, torch `ProfilerStep#`, the most specific kind present;
//! else the whole trace is one step): the eager GPU ops of the busiest GPU whose launch
//! falls inside the step, in GPU start order. Each graph is aligned ([`super::align`])
//! with the few mapping steps that share most kernel names with it
//! ([`CANDIDATE_STEPS`]), and the best alignment score wins (the earlier step on a tie).
//!
//! An aligned replayed kernel gets its counterpart's stack, CPU op and input shapes,
//! with `source = SiteSource::Mapping`; its launch call and time stay the replay's (the
//! stage split and the timeline read those). A site already resolved from a capture (any
//! source but `GraphLaunch`) wins and is kept. Unmatched kernels keep the graph launch
//! site; the summary says how much GPU time that is, and how sure the pairs are.
//!
//! The mapping trace's strings are interned into the formal trace's interner: the trace
//! is taken by value and returned with its interner extended, so every `Sym` of the new
//! `Linked` reads through the one trace the tables hold.

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write as _;

use super::align::{Alignment, AlignmentCache, NodeKey, NodeMatch, PairKind};
use crate::analyze::kernels::busiest_gpu_pid;
use crate::catalog::FamilyRules;
use crate::trace::event::{Ns, Sym, Trace};
use crate::trace::link::{Linked, SiteSource, StackId};
use crate::trace::names::canonical_name;

/// How many mapping steps (those sharing most kernel names with a graph) are aligned
/// with it in full.
pub(crate) const CANDIDATE_STEPS: usize = 3;

/// What resolving replays from the mapping trace achieved, for the notes. Times are
/// exact nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MappingSummary {
    /// Graph replays (graph launches with GPU ops) and their distinct kernel sequences.
    pub replays: u64,
    pub graphs: u64,
    /// Alignments computed (graphs x candidate steps, each pair once).
    pub alignments: u64,
    /// Replayed GPU ops and their time.
    pub replayed_ops: u64,
    pub replayed_ns: i128,
    /// Replayed ops that took a mapping kernel's site, and their time, by pair kind
    /// (exact name, same family, fused).
    pub resolved_ops: [u64; 3],
    pub resolved_ns: [i128; 3],
    /// Replayed ops whose site had come from a capture already (kept).
    pub kept_ops: u64,
    /// Replayed ops with no counterpart in the mapping trace, and their time: they keep
    /// the graph launch site.
    pub unmatched_ops: u64,
    pub unmatched_ns: i128,
}

impl MappingSummary {
    fn add(&mut self, other: &MappingSummary) {
        self.replays += other.replays;
        self.graphs += other.graphs;
        self.alignments += other.alignments;
        self.replayed_ops += other.replayed_ops;
        self.replayed_ns += other.replayed_ns;
        for k in 0..3 {
            self.resolved_ops[k] += other.resolved_ops[k];
            self.resolved_ns[k] += other.resolved_ns[k];
        }
        self.kept_ops += other.kept_ops;
        self.unmatched_ops += other.unmatched_ops;
        self.unmatched_ns += other.unmatched_ns;
    }
}

fn kind_index(kind: PairKind) -> usize {
    match kind {
        PairKind::Exact => 0,
        PairKind::Family => 1,
        PairKind::Fused => 2,
    }
}

/// Every formal trace with its replays resolved against all mapping traces' steps (a
/// mapping file per stage is usual; the best-fitting step wins wherever it is), and the
/// note that says what came of it.
pub(crate) fn resolve_traces(
    traces: Vec<Trace>,
    linked: Vec<Linked>,
    mapping: &[Trace],
    mapping_linked: &[Linked],
    families: &FamilyRules,
) -> (Vec<Trace>, Vec<Linked>, Option<String>) {
    let sides: Vec<(&Trace, &Linked)> = mapping.iter().zip(mapping_linked).collect();
    let mut total = MappingSummary::default();
    let mut out_traces = Vec::with_capacity(traces.len());
    let mut out_linked = Vec::with_capacity(linked.len());
    for (trace, linked) in traces.into_iter().zip(linked) {
        let (trace, linked, summary) = resolve_from_mapping(trace, linked, &sides, families);
        total.add(&summary);
        out_traces.push(trace);
        out_linked.push(linked);
    }
    (out_traces, out_linked, mapping_note(&total))
}

/// One formal trace with every aligned replayed kernel's site taken from the mapping
/// kernel it aligns with (see the module docs).
pub(crate) fn resolve_from_mapping(
    mut trace: Trace,
    mut linked: Linked,
    mapping: &[(&Trace, &Linked)],
    families: &FamilyRules,
) -> (Trace, Linked, MappingSummary) {
    let mut summary = MappingSummary::default();
    let replays = replays(&trace, &linked);
    if replays.is_empty() {
        return (trace, linked, summary);
    }
    let mut names = NameTable::default();
    let steps: Vec<Step> = mapping
        .iter()
        .enumerate()
        .flat_map(|(side, (m, ml))| mapping_steps(m, ml, side))
        .collect();
    let step_ids: Vec<Vec<u32>> = steps
        .iter()
        .map(|s| names.ids(1 + s.side, mapping[s.side].0, &s.ops))
        .collect();
    // Graphs: replays with one kernel sequence.
    let mut graph_of: HashMap<Vec<u32>, usize> = HashMap::default();
    let mut graphs: Vec<(Vec<u32>, Option<StepAlignment>)> = Vec::new();
    let mut replay_graph = Vec::with_capacity(replays.len());
    for ops in &replays {
        let ids = names.ids(0, &trace, ops);
        let next = graphs.len();
        let g = *graph_of.entry(ids.clone()).or_insert(next);
        if g == next {
            graphs.push((ids, None));
        }
        replay_graph.push(g);
    }
    let families_of: Vec<Option<String>> = names
        .names
        .iter()
        .map(|n| known_family(families, n))
        .collect();
    let mut cache: AlignmentCache<(usize, usize)> = AlignmentCache::default();
    for (g, (ids, best)) in graphs.iter_mut().enumerate() {
        let query = names.keys(ids, &families_of);
        for s in candidate_steps(ids, &step_ids) {
            let reference = names.keys(&step_ids[s], &families_of);
            let alignment = cache.align((g, s), &query, &reference);
            if best.as_ref().is_none_or(|(_, b)| alignment.score > b.score) {
                *best = Some((s, alignment.clone()));
            }
        }
    }
    summary.alignments = cache.computed;
    summary.graphs = graphs.len() as u64;
    summary.replays = replays.len() as u64;

    let mut import = Import::new(&linked);
    for (ops, &g) in replays.iter().zip(&replay_graph) {
        let best = graphs[g].1.as_ref();
        for (q, &op) in ops.iter().enumerate() {
            let dur = i128::from(trace.gpu_ops.at(op as usize).dur);
            summary.replayed_ops += 1;
            summary.replayed_ns += dur;
            if linked.sites[op as usize].source != SiteSource::GraphLaunch {
                summary.kept_ops += 1;
                continue;
            }
            let pair = best.and_then(|(s, a)| match a.query[q] {
                NodeMatch::Matched { other, kind } => Some((&steps[*s], other, kind)),
                NodeMatch::Unmatched(_) => None,
            });
            let Some((step, other, kind)) = pair else {
                summary.unmatched_ops += 1;
                summary.unmatched_ns += dur;
                continue;
            };
            let (m_trace, m_linked) = mapping[step.side];
            let m_site = &m_linked.sites[step.ops[other] as usize];
            let from = Side {
                index: step.side,
                trace: m_trace,
            };
            let cpu_op = m_site.cpu_op.map(|s| import.sym(&mut trace, from, s));
            let input_dims = m_site.input_dims.map(|s| import.sym(&mut trace, from, s));
            let input_types = m_site.input_types.map(|s| import.sym(&mut trace, from, s));
            let stack = m_site.stack.map(|id| {
                import.stack(&mut trace, &mut linked.stacks, from, m_linked.stack(id), id)
            });
            let site = &mut linked.sites[op as usize];
            site.cpu_op = cpu_op;
            site.input_dims = input_dims;
            site.input_types = input_types;
            site.stack = stack;
            site.source = SiteSource::Mapping;
            site.mapping_pair = Some(kind);
            summary.resolved_ops[kind_index(kind)] += 1;
            summary.resolved_ns[kind_index(kind)] += dur;
        }
    }
    (trace, linked, summary)
}

/// A graph's best mapping step (its index) and the alignment with it.
type StepAlignment = (usize, Alignment);

/// The family a kernel aligns by; `None` for names no rule claims.
fn known_family(families: &FamilyRules, canonical: &str) -> Option<String> {
    let family = families.family_of(canonical);
    (family != "other").then(|| family.to_string())
}

/// Each graph launch's GPU ops (a replay), in GPU start order; replays in launch order.
fn replays(trace: &Trace, linked: &Linked) -> Vec<Vec<u32>> {
    let mut by_launch: HashMap<u32, usize> = HashMap::default();
    let mut replays: Vec<(u32, Vec<u32>)> = Vec::new();
    for (i, site) in linked.sites.iter().enumerate() {
        let (true, Some(runtime)) = (site.graph_replay, site.runtime) else {
            continue;
        };
        let next = replays.len();
        let r = *by_launch.entry(runtime).or_insert(next);
        if r == next {
            replays.push((runtime, Vec::new()));
        }
        replays[r].1.push(i as u32);
    }
    replays.sort_by_key(|(runtime, _)| *runtime);
    replays
        .into_iter()
        .map(|(_, mut ops)| {
            ops.sort_by_key(|&op| (trace.gpu_ops.ts(op as usize), op));
            ops
        })
        .collect()
}

/// One step of a mapping trace: its eager GPU ops in GPU start order.
struct Step {
    /// Which mapping trace.
    side: usize,
    ops: Vec<u32>,
}

/// Step annotations, most specific kind first (as the timeline reads them).
fn marker_rank(name: &str) -> Option<u8> {
    if name.starts_with("step[") {
        Some(0)
    } else if name.starts_with("execute_") && name.contains("context_") {
        Some(1)
    } else if name.starts_with("ProfilerStep#") {
        Some(2)
    } else {
        None
    }
}

/// The steps of one mapping trace (see the module docs).
fn mapping_steps(trace: &Trace, linked: &Linked, side: usize) -> Vec<Step> {
    let Some(gpu) = busiest_gpu_pid(trace) else {
        return Vec::new();
    };
    let mut eager: Vec<u32> = (0..trace.gpu_ops.len() as u32)
        .filter(|&i| {
            let site = &linked.sites[i as usize];
            trace.gpu_ops.at(i as usize).pid == gpu
                && !site.graph_replay
                && site.launch_ts.is_some()
        })
        .collect();
    eager.sort_by_key(|&op| (trace.gpu_ops.ts(op as usize), op));
    let rank = trace
        .annotations
        .iter()
        .filter(|a| !a.on_gpu)
        .filter_map(|a| marker_rank(trace.name(a.name)))
        .min();
    let Some(rank) = rank else {
        return vec![Step { side, ops: eager }];
    };
    let mut windows: Vec<(Ns, Ns)> = trace
        .annotations
        .iter()
        .filter(|a| !a.on_gpu && marker_rank(trace.name(a.name)) == Some(rank))
        .map(|a| (a.ts, a.ts.saturating_add(a.dur)))
        .collect();
    windows.sort_unstable();
    let mut steps: Vec<Step> = windows
        .iter()
        .map(|_| Step {
            side,
            ops: Vec::new(),
        })
        .collect();
    for op in eager {
        let Some(launch) = linked.sites[op as usize].launch_ts else {
            continue;
        };
        // The last window starting at or before the launch, if it still holds it.
        let w = windows.partition_point(|&(start, _)| start <= launch);
        if w > 0 && launch <= windows[w - 1].1 {
            steps[w - 1].ops.push(op);
        }
    }
    steps.retain(|s| !s.ops.is_empty());
    steps
}

/// The steps worth a full alignment with a graph: the [`CANDIDATE_STEPS`] sharing the
/// most kernel names with it (a multiset count, less the length difference), distinct
/// sequences only, earlier steps first on a tie.
fn candidate_steps(graph: &[u32], steps: &[Vec<u32>]) -> Vec<usize> {
    let mut sorted_graph = graph.to_vec();
    sorted_graph.sort_unstable();
    let mut seen: HashMap<&[u32], ()> = HashMap::default();
    let mut scored: Vec<(i64, usize)> = Vec::new();
    for (s, ids) in steps.iter().enumerate() {
        if seen.insert(ids, ()).is_some() {
            continue;
        }
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let shared = shared_count(&sorted_graph, &sorted) as i64;
        let length_gap = (graph.len() as i64 - ids.len() as i64).abs();
        scored.push((shared - length_gap, s));
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(CANDIDATE_STEPS)
        .map(|(_, s)| s)
        .collect()
}

/// How many elements two sorted lists share, counted with multiplicity.
fn shared_count(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Canonical kernel names of both sides as small shared ids.
#[derive(Default)]
struct NameTable {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    /// (side, raw name) -> id: each distinct raw name is made canonical once. Side 0 is
    /// the formal trace, 1 + i the i-th mapping trace.
    of_raw: HashMap<(usize, Sym), u32>,
}

impl NameTable {
    /// The ids of `ops` of `trace`, in order.
    fn ids(&mut self, side: usize, trace: &Trace, ops: &[u32]) -> Vec<u32> {
        ops.iter()
            .map(|&op| {
                let raw = trace.gpu_ops.at(op as usize).name;
                if let Some(&id) = self.of_raw.get(&(side, raw)) {
                    return id;
                }
                let canonical = canonical_name(trace.name(raw));
                let next = self.names.len() as u32;
                let id = *self.ids.entry(canonical.clone()).or_insert(next);
                if id == next {
                    self.names.push(canonical);
                }
                self.of_raw.insert((side, raw), id);
                id
            })
            .collect()
    }

    fn keys<'a>(&'a self, ids: &[u32], families: &'a [Option<String>]) -> Vec<NodeKey<'a>> {
        ids.iter()
            .map(|&id| NodeKey {
                name: &self.names[id as usize],
                family: families[id as usize].as_deref(),
            })
            .collect()
    }
}

/// Strings and stacks of a mapping trace carried into the formal trace, each once.
struct Import {
    syms: HashMap<(usize, Sym), Sym>,
    stacks: HashMap<(usize, StackId), StackId>,
    /// The formal stacks by their frames, so an imported stack equal to one already
    /// there is not stored twice.
    existing: HashMap<Vec<Sym>, StackId>,
}

impl Import {
    fn new(linked: &Linked) -> Import {
        let existing = linked
            .stacks
            .iter()
            .enumerate()
            .map(|(id, frames)| (frames.clone(), id as StackId))
            .collect();
        Import {
            syms: HashMap::default(),
            stacks: HashMap::default(),
            existing,
        }
    }

    fn sym(&mut self, into: &mut Trace, from: Side<'_>, sym: Sym) -> Sym {
        *self
            .syms
            .entry((from.index, sym))
            .or_insert_with(|| into.strings.intern(from.trace.name(sym)))
    }

    fn stack(
        &mut self,
        into: &mut Trace,
        stacks: &mut Vec<Vec<Sym>>,
        from: Side<'_>,
        frames: &[Sym],
        id: StackId,
    ) -> StackId {
        if let Some(&known) = self.stacks.get(&(from.index, id)) {
            return known;
        }
        let frames: Vec<Sym> = frames.iter().map(|&s| self.sym(into, from, s)).collect();
        let imported = *self.existing.entry(frames).or_insert_with_key(|frames| {
            stacks.push(frames.clone());
            (stacks.len() - 1) as StackId
        });
        self.stacks.insert((from.index, id), imported);
        imported
    }
}

/// One mapping trace and its place in the list (the key its strings are cached by).
#[derive(Copy, Clone)]
struct Side<'t> {
    index: usize,
    trace: &'t Trace,
}

/// Percent of `part` in `whole`, from exact totals.
fn percent(part: i128, whole: i128) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The note on what the mapping trace resolved; `None` when the formal trace replayed
/// no graph.
pub(crate) fn mapping_note(summary: &MappingSummary) -> Option<String> {
    if summary.replayed_ops == 0 {
        return None;
    }
    let resolved: u64 = summary.resolved_ops.iter().sum();
    let resolved_ns: i128 = summary.resolved_ns.iter().sum();
    let mut note = format!(
        "CUDA/HIP graph replays aligned to the mapping trace: {resolved} of {} replayed GPU \
         ops ({:.1}% of replayed GPU time, {} replays of {} graphs) took the launch site of \
         their mapping kernel (exact name {}, same family {}, fused {})",
        summary.replayed_ops,
        percent(resolved_ns, summary.replayed_ns),
        summary.replays,
        summary.graphs,
        summary.resolved_ops[0],
        summary.resolved_ops[1],
        summary.resolved_ops[2],
    );
    if summary.kept_ops > 0 {
        let _ = write!(note, "; {} kept their capture-trace site", summary.kept_ops);
    }
    let _ = write!(
        note,
        "; {} had no counterpart and stay at the graph launch ({:.1} µs, {:.1}% of replayed \
         GPU time)",
        summary.unmatched_ops,
        summary.unmatched_ns as f64 / 1000.0,
        percent(summary.unmatched_ns, summary.replayed_ns),
    );
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load_families;
    use crate::testutil::TraceFixture;
    use crate::trace::link::link;

    /// Kernels of one decode step, with the family each name gets.
    const STEP: [&str; 5] = [
        "rmsnorm_kernel",
        "gemm_qkv_kernel",
        "flash_attn_fwd",
        "gemm_o_kernel",
        "silu_and_mul_kernel",
    ];

    /// A mapping trace: per step an annotation `label`, and per kernel of `kernels` a
    /// Python frame `{file}({line}): forward`, a cpu_op `aten::op{line}` and its launch.
    fn mapping_trace(steps: &[(&str, &str, &[&str])]) -> (Trace, Linked) {
        let mut b = TraceFixture::new();
        let mut t = 0;
        let mut correlation = 1;
        for (label, file, kernels) in steps {
            let start = t;
            for (line, kernel) in kernels.iter().enumerate() {
                b.frame(&format!("{file}({line}): forward"), t, 100, 1);
                b.cpu_op(&format!("aten::op{line}"), t + 10, 50, 1, Some(correlation));
                b.runtime(
                    "cudaLaunchKernel",
                    t + 20,
                    10,
                    1,
                    correlation,
                    Some(correlation),
                );
                b.kernel(kernel, t + 30, 40, Some(correlation), None);
                correlation += 1;
                t += 100;
            }
            b.annotation(label, start, t - start, false);
            t += 1000;
        }
        let mut trace = b.build();
        let mut linked = link(&trace);
        // Shapes as the reader links them for eager launches.
        for (i, site) in linked.sites.iter_mut().enumerate() {
            site.input_dims = Some(trace.strings.intern(&format!("[[{i}, 4096]]")));
        }
        (trace, linked)
    }

    /// A formal trace: `replays` graph launches, each replaying `kernels` (durations 10 +
    /// index ns), under one Python frame.
    fn formal_trace(replays: usize, kernels: &[&str]) -> (Trace, Linked) {
        let mut b = TraceFixture::new();
        b.frame("runner.py(10): replay", 0, 1_000_000, 1);
        let mut t = 100;
        for r in 0..replays {
            let correlation = 900 + r as u64;
            b.runtime("cudaGraphLaunch", t, 20, 1, correlation, None);
            for (k, kernel) in kernels.iter().enumerate() {
                b.kernel(
                    kernel,
                    t + 50 + 20 * k as i64,
                    10 + k as i64,
                    Some(correlation),
                    None,
                );
            }
            t += 10_000;
        }
        let trace = b.build();
        let linked = link(&trace);
        (trace, linked)
    }

    fn frames(trace: &Trace, linked: &Linked, op: usize) -> Vec<String> {
        let id = linked.sites[op].stack.expect("stack");
        linked
            .stack(id)
            .iter()
            .map(|&s| trace.name(s).to_string())
            .collect()
    }

    fn families() -> FamilyRules {
        load_families(None).expect("built-in families")
    }

    #[test]
    fn replayed_kernels_take_the_site_of_their_aligned_mapping_kernel() {
        let (m_trace, m_linked) = mapping_trace(&[("step[DECODE bs=8]", "qwen3.py", &STEP)]);
        // The replay lacks the attention kernel and has an extra memset-like kernel.
        let replay = [STEP[0], STEP[1], "graph_only_extra", STEP[3], STEP[4]];
        let (trace, linked) = formal_trace(1, &replay);
        let before = linked.clone();
        let (trace, linked, summary) =
            resolve_from_mapping(trace, linked, &[(&m_trace, &m_linked)], &families());
        // Mapping kernel index of each replayed kernel (None: no counterpart).
        let want = [Some(0), Some(1), None, Some(3), Some(4)];
        for (op, want) in want.iter().enumerate() {
            let site = &linked.sites[op];
            match want {
                Some(m) => {
                    assert_eq!(site.source, SiteSource::Mapping, "op {op}");
                    assert_eq!(
                        frames(&trace, &linked, op),
                        [format!("qwen3.py({m}): forward")]
                    );
                    assert_eq!(
                        site.cpu_op.map(|s| trace.name(s)),
                        Some(format!("aten::op{m}").as_str())
                    );
                    let m_dims = m_linked.sites[*m].input_dims.map(|s| m_trace.name(s));
                    assert_eq!(site.input_dims.map(|s| trace.name(s)), m_dims);
                    // The replay's own launch call and time stay.
                    assert_eq!(site.runtime, before.sites[op].runtime);
                    assert_eq!(site.launch_ts, before.sites[op].launch_ts);
                    assert!(site.graph_replay);
                }
                None => assert_eq!(site, &before.sites[op], "op {op} keeps the graph launch"),
            }
        }
        // Recounted from the events: resolved and unmatched time.
        let dur = |op: usize| i128::from(trace.gpu_ops.at(op).dur);
        let resolved: i128 = [0, 1, 3, 4].iter().map(|&op| dur(op)).sum();
        assert_eq!(summary.resolved_ops, [4, 0, 0]);
        assert_eq!(summary.resolved_ns[0], resolved);
        assert_eq!(summary.unmatched_ops, 1);
        assert_eq!(summary.unmatched_ns, dur(2));
        assert_eq!(summary.replayed_ns, resolved + dur(2));
        assert_eq!(
            (summary.replays, summary.graphs, summary.alignments),
            (1, 1, 1)
        );
    }

    #[test]
    fn replays_of_one_graph_share_one_alignment() {
        let (m_trace, m_linked) = mapping_trace(&[("step[DECODE bs=8]", "qwen3.py", &STEP)]);
        let (trace, linked) = formal_trace(3, &STEP);
        let (trace, linked, summary) =
            resolve_from_mapping(trace, linked, &[(&m_trace, &m_linked)], &families());
        assert_eq!(
            (summary.replays, summary.graphs, summary.alignments),
            (3, 1, 1)
        );
        assert_eq!(summary.resolved_ops, [15, 0, 0]);
        for op in 0..15 {
            assert_eq!(
                frames(&trace, &linked, op),
                [format!("qwen3.py({}): forward", op % 5)]
            );
        }
        // One stack per mapping frame, stored once however many replays use it.
        assert_eq!(linked.stacks.len(), 1 + 5);
    }

    #[test]
    fn the_mapping_step_that_fits_the_graph_best_is_used() {
        let prefill: [&str; 4] = [
            "rmsnorm_kernel",
            "gemm_qkv_kernel",
            "flash_attn_prefill",
            "gemm_o_kernel",
        ];
        let (m_trace, m_linked) = mapping_trace(&[
            ("step[EXTEND bs=1]", "prefill.py", &prefill),
            ("step[DECODE bs=8]", "decode.py", &STEP),
        ]);
        let (trace, linked) = formal_trace(1, &STEP);
        let (trace, linked, summary) =
            resolve_from_mapping(trace, linked, &[(&m_trace, &m_linked)], &families());
        assert_eq!(summary.resolved_ops, [5, 0, 0]);
        for op in 0..5 {
            assert_eq!(
                frames(&trace, &linked, op),
                [format!("decode.py({op}): forward")]
            );
        }
    }

    #[test]
    fn a_site_already_resolved_from_a_capture_is_kept() {
        let (m_trace, m_linked) = mapping_trace(&[("step[DECODE bs=8]", "qwen3.py", &STEP)]);
        let (trace, mut linked) = formal_trace(1, &STEP);
        linked.sites[1].source = SiteSource::Capture;
        let kept = linked.sites[1].clone();
        let (_, linked, summary) =
            resolve_from_mapping(trace, linked, &[(&m_trace, &m_linked)], &families());
        assert_eq!(linked.sites[1], kept);
        assert_eq!(summary.kept_ops, 1);
        assert_eq!(summary.resolved_ops, [4, 0, 0]);
    }

    #[test]
    fn a_trace_without_replays_is_returned_as_it_was() {
        let (m_trace, m_linked) = mapping_trace(&[("step[DECODE bs=8]", "qwen3.py", &STEP)]);
        let (trace, linked) = (m_trace.clone(), m_linked.clone());
        let (trace, linked, summary) =
            resolve_from_mapping(trace, linked, &[(&m_trace, &m_linked)], &families());
        assert_eq!(trace, m_trace);
        assert_eq!(linked, m_linked);
        assert_eq!(summary, MappingSummary::default());
        assert_eq!(mapping_note(&summary), None);
    }

    #[test]
    fn the_note_says_how_much_replayed_time_stayed_at_the_graph_launch() {
        let summary = MappingSummary {
            replays: 2,
            graphs: 1,
            alignments: 1,
            replayed_ops: 10,
            replayed_ns: 4000,
            resolved_ops: [7, 1, 1],
            resolved_ns: [2800, 100, 100],
            kept_ops: 0,
            unmatched_ops: 1,
            unmatched_ns: 1000,
        };
        assert_eq!(
            mapping_note(&summary).as_deref(),
            Some(
                "CUDA/HIP graph replays aligned to the mapping trace: 9 of 10 replayed GPU ops \
                 (75.0% of replayed GPU time, 2 replays of 1 graphs) took the launch site of \
                 their mapping kernel (exact name 7, same family 1, fused 1); 1 had no \
                 counterpart and stay at the graph launch (1.0 µs, 25.0% of replayed GPU time)"
            )
        );
    }
}
