//! Replayed kernels take the launch site of the graph node they replay.
//!
//! A graph replay is the set of GPU ops carrying one graph launch's correlation. The
//! launch's batch size and mode come from the engine's step annotation around it on the
//! CPU (SGLang `step[DECODE bs=32]`, vLLM `execute_<N>_…`); the captured graph of that
//! size (and mode, when the step names one) is the replay's graph, and the replay's
//! kernels, in GPU start order, are paired with its nodes by a global alignment over
//! canonical kernel names (`align`, through [`pair_in_order`]). A paired kernel's site
//! becomes the node's: its stack, CPU op and input shapes, with `source = Capture`; the
//! launch call and time stay the replay's
//! (the stage split and the timeline read those). Kernels left unpaired keep the graph
//! launch site, and the summary says how much GPU time that is.
//!
//! The capture's strings are interned into the formal trace's interner: `resolve` takes
//! the trace by value and returns it with its interner extended, so every `Sym` of the
//! new `Linked` reads through the one trace the tables already hold.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::analyze::graph::align::{align, NodeKey};
use crate::analyze::graph::capture::{CapturedGraph, GraphNode};
use crate::trace::event::{Ns, Sym, Trace};
use crate::trace::link::{Linked, SiteSource, StackId};
use crate::trace::names::canonical_name;

/// What resolving graph replays achieved, for the notes. Times are exact nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResolveSummary {
    /// Graph replays (graph launches with kernels) and their GPU ops' time.
    pub replays: u64,
    pub replayed_ops: u64,
    pub replayed_ns: i128,
    /// GPU ops that took a captured node's site, and their time.
    pub resolved_ops: u64,
    pub resolved_ns: i128,
    /// Replays no captured graph fits (size/mode), and their ops' time.
    pub replays_without_graph: u64,
    pub without_graph_ns: i128,
    /// Ops of fitted replays that paired with no node, and their time.
    pub unpaired_ops: u64,
    pub unpaired_ns: i128,
    /// Sizes of the replays no graph fits, ascending, each once (`None`: no size found).
    pub sizes_without_graph: Vec<Option<u32>>,
}

/// `trace` with its interner extended by the capture's strings, and `linked` with every
/// paired replayed kernel's site taken from its graph node.
pub(crate) fn resolve_replays(
    mut trace: Trace,
    mut linked: Linked,
    graphs: &[CapturedGraph],
) -> (Trace, Linked, ResolveSummary) {
    let mut summary = ResolveSummary::default();
    // Each replay: the graph launch call and its GPU ops (ordered by call, so the
    // result never depends on a hash order).
    let mut replays: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, site) in linked.sites.iter().enumerate() {
        if let (true, SiteSource::GraphLaunch, Some(r)) =
            (site.graph_replay, site.source, site.runtime)
        {
            replays.entry(r).or_default().push(i as u32);
        }
    }
    if replays.is_empty() {
        return (trace, linked, summary);
    }
    let steps = StepAnnotations::of(&trace);
    let node_names: Vec<Vec<Option<String>>> = graphs
        .iter()
        .map(|g| {
            g.nodes
                .iter()
                .map(|n| n.kernel.as_deref().map(canonical_name))
                .collect()
        })
        .collect();
    // The interned site of each (graph, node) used so far: replays repeat one graph.
    let mut node_sites: HashMap<(usize, usize), NodeSite> = HashMap::default();
    for (r, mut ops) in replays {
        ops.sort_by_key(|&i| (trace.gpu_ops.ts(i as usize), i));
        let durs: Vec<i128> = ops
            .iter()
            .map(|&i| i128::from(trace.gpu_ops.at(i as usize).dur))
            .collect();
        let replay_ns: i128 = durs.iter().sum();
        summary.replays += 1;
        summary.replayed_ops += ops.len() as u64;
        summary.replayed_ns += replay_ns;
        let call = trace.runtime.at(r as usize);
        let step = steps.around(call.pid, call.ts);
        let fitting = graphs.iter().enumerate().filter(|(_, g)| {
            step.is_some_and(|(size, mode)| {
                g.size == size && mode.is_none_or(|m| m.eq_ignore_ascii_case(&g.mode))
            })
        });
        let names: Vec<String> = ops
            .iter()
            .map(|&i| canonical_name(trace.name(trace.gpu_ops.at(i as usize).name)))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        // Of several graphs that fit, the one most kernels pair with (first on a tie).
        let mut best: Option<(usize, Vec<Option<usize>>, usize)> = None;
        for (g, _) in fitting {
            let nodes: Vec<Option<&str>> = node_names[g].iter().map(|n| n.as_deref()).collect();
            let pairs = pair_in_order(&names, &nodes);
            let paired = pairs.iter().flatten().count();
            if best.as_ref().is_none_or(|(_, _, most)| paired > *most) {
                best = Some((g, pairs, paired));
            }
        }
        let Some((g, pairs, _)) = best else {
            summary.replays_without_graph += 1;
            summary.without_graph_ns += replay_ns;
            summary.sizes_without_graph.push(step.map(|(size, _)| size));
            continue;
        };
        for ((&op, pair), dur) in ops.iter().zip(pairs).zip(durs) {
            let Some(n) = pair else {
                summary.unpaired_ops += 1;
                summary.unpaired_ns += dur;
                continue;
            };
            let node = *node_sites
                .entry((g, n))
                .or_insert_with(|| intern_node(&mut trace, &mut linked, &graphs[g].nodes[n]));
            let site = &mut linked.sites[op as usize];
            site.stack = node.stack;
            site.cpu_op = node.cpu_op;
            site.input_dims = node.input_dims;
            site.input_types = node.input_types;
            site.source = SiteSource::Capture;
            summary.resolved_ops += 1;
            summary.resolved_ns += dur;
        }
    }
    summary.sizes_without_graph.sort_unstable();
    summary.sizes_without_graph.dedup();
    (trace, linked, summary)
}

/// What the notes say of graph replays: how much replayed GPU time took a captured
/// node's site and how much kept the graph launch; with no capture trace at all, how to
/// record one. Nothing when the trace replays no graph.
pub(crate) fn replay_notes(summary: &ResolveSummary, graphs: usize) -> Vec<String> {
    if summary.replays == 0 {
        return Vec::new();
    }
    if graphs == 0 {
        return vec![HOW_TO_CAPTURE.to_string()];
    }
    let ms = |ns: i128| ns as f64 / 1e6;
    let pct = |ns: i128| {
        if summary.replayed_ns == 0 {
            0.0
        } else {
            100.0 * ns as f64 / summary.replayed_ns as f64
        }
    };
    let mut notes = vec![format!(
        "graph replays: {} of {} replayed GPU ops ({:.1}% of their {:.2} ms GPU time) took the \
         launch site recorded in a capture trace",
        summary.resolved_ops,
        summary.replayed_ops,
        pct(summary.resolved_ns),
        ms(summary.replayed_ns)
    )];
    if summary.unpaired_ops > 0 {
        notes.push(format!(
            "graph replays: {} replayed GPU ops ({:.2} ms, {:.1}% of graph-replayed GPU time) \
             matched no captured node and keep the graph launch site",
            summary.unpaired_ops,
            ms(summary.unpaired_ns),
            pct(summary.unpaired_ns)
        ));
    }
    if summary.replays_without_graph > 0 {
        let sizes: Vec<String> = summary
            .sizes_without_graph
            .iter()
            .map(|s| s.map_or("unknown".to_string(), |s| s.to_string()))
            .collect();
        notes.push(format!(
            "graph replays: {} replays ({:.2} ms, {:.1}% of graph-replayed GPU time) found no \
             captured graph of their size and mode (sizes {}) and keep the graph launch site",
            summary.replays_without_graph,
            ms(summary.without_graph_ns),
            pct(summary.without_graph_ns),
            sizes.join(", ")
        ));
    }
    notes
}

/// How to give graph-replayed kernels their own sites: the engines' capture profiling.
pub(crate) const HOW_TO_CAPTURE: &str = "graph-replayed kernels are charged to their graph \
     launch; to see each one's own launch site, CPU op and input shapes, profile the graph \
     capture too (SGLang: --enable-profile-cuda-graph writes capture_traces/bs_<bs>_rank<r>.json.gz; \
     vLLM: capture_torch_profiler in the profiler config writes \
     capture_traces/graph_capture_rank_<r>.<ts>.pt.trace.json.gz) and pass it with \
     --capture-input, or keep capture_traces/ beside the trace";

/// A graph node's site in the formal trace's terms.
#[derive(Copy, Clone)]
struct NodeSite {
    stack: Option<StackId>,
    cpu_op: Option<Sym>,
    input_dims: Option<Sym>,
    input_types: Option<Sym>,
}

fn intern_node(trace: &mut Trace, linked: &mut Linked, node: &GraphNode) -> NodeSite {
    let strings = &mut trace.strings;
    let stack = (!node.stack.is_empty()).then(|| {
        let frames: Vec<Sym> = node.stack.iter().map(|f| strings.intern(f)).collect();
        linked.stacks.push(frames);
        (linked.stacks.len() - 1) as StackId
    });
    let mut text = |t: &Option<String>| t.as_deref().map(|t| strings.intern(t));
    NodeSite {
        stack,
        cpu_op: text(&node.cpu_op),
        input_dims: text(&node.input_dims),
        input_types: text(&node.input_types),
    }
}

/// The CPU annotations that name a step's size, by start: where a graph launch finds
/// the step it replays for.
struct StepAnnotations {
    /// (pid, start, end, size, mode), sorted by start.
    steps: Vec<(Sym, Ns, Ns, u32, Option<String>)>,
}

/// How far back from a launch the search for its enclosing step looks: steps follow one
/// another, so the enclosing one is among the last few that started before it.
const STEP_LOOKBACK: usize = 64;

impl StepAnnotations {
    fn of(trace: &Trace) -> Self {
        let mut steps: Vec<_> = trace
            .annotations
            .iter()
            .filter(|a| !a.on_gpu)
            .filter_map(|a| {
                let (size, mode) = step_size_and_mode(trace.name(a.name))?;
                Some((
                    a.pid,
                    a.ts,
                    a.ts.saturating_add(a.dur),
                    size,
                    mode.map(str::to_string),
                ))
            })
            .collect();
        steps.sort_by_key(|s| s.1);
        StepAnnotations { steps }
    }

    /// The size and mode of the innermost step of process `pid` around time `t`.
    fn around(&self, pid: Sym, t: Ns) -> Option<(u32, Option<&str>)> {
        let started = self.steps.partition_point(|s| s.1 <= t);
        self.steps[..started]
            .iter()
            .rev()
            .take(STEP_LOOKBACK)
            .find(|s| s.0 == pid && t <= s.2)
            .map(|s| (s.3, s.4.as_deref()))
    }
}

/// The size and mode a step annotation names: `step[DECODE bs=32]` -> (32, `DECODE`),
/// vLLM's `execute_32_context_0(…)_generation_32(…)` -> (32, none).
pub(crate) fn step_size_and_mode(name: &str) -> Option<(u32, Option<&str>)> {
    if let Some(inner) = name.strip_prefix("step[").and_then(|r| r.strip_suffix(']')) {
        let mut words = inner.split(' ');
        let mode = words.next().filter(|m| !m.is_empty() && !m.contains('='));
        let size = inner
            .split(' ')
            .find_map(|w| w.strip_prefix("bs="))
            .and_then(|n| n.parse().ok())?;
        return Some((size, mode));
    }
    let rest = name.strip_prefix("execute_")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.as_bytes().get(digits) != Some(&b'_') {
        return None;
    }
    Some((rest[..digits].parse().ok()?, None))
}

/// The name an unnamed node is aligned under: no canonical kernel name is empty, so the
/// aligner leaves such a node without a counterpart.
const UNNAMED_NODE: &str = "";

/// For each replayed kernel name, the index of the node it pairs with: the global
/// alignment of `align` over canonical names (nodes missing from the replay and kernels
/// without a node are left out). Unnamed nodes (CUDA launch calls do not name their
/// kernel) pair by position only when no node is named and the counts agree.
pub(crate) fn pair_in_order(replay: &[&str], nodes: &[Option<&str>]) -> Vec<Option<usize>> {
    if nodes.iter().all(Option::is_none) {
        return if nodes.len() == replay.len() {
            (0..replay.len()).map(Some).collect()
        } else {
            vec![None; replay.len()]
        };
    }
    // Names only: the family rules are the catalog's, and an exact name is what a
    // capture of the same run records.
    let query: Vec<NodeKey<'_>> = replay
        .iter()
        .map(|&name| NodeKey { name, family: None })
        .collect();
    let reference: Vec<NodeKey<'_>> = nodes
        .iter()
        .map(|n| NodeKey {
            name: n.unwrap_or(UNNAMED_NODE),
            family: None,
        })
        .collect();
    align(&query, &reference)
        .query
        .iter()
        .map(|m| m.other())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TraceFixture;
    use crate::trace::link::{link, SiteSource};

    fn node(kernel: Option<&str>, frame: &str, dims: Option<&str>) -> GraphNode {
        GraphNode {
            kernel: kernel.map(str::to_string),
            stack: vec![
                "python/sglang/srt/model_executor/cuda_graph_runner.py(400): capture".into(),
                frame.to_string(),
            ],
            cpu_op: Some("aten::mm".into()),
            input_dims: dims.map(str::to_string),
            input_types: None,
        }
    }

    fn graph(size: u32, mode: &str, nodes: Vec<GraphNode>) -> CapturedGraph {
        CapturedGraph {
            path: "/p/capture_traces/bs_32_rank0.json.gz".into(),
            annotation: format!("capture_{size}_{mode}"),
            size,
            mode: mode.to_string(),
            nodes,
            executed_launches: 0,
        }
    }

    #[test]
    fn step_annotations_name_the_size_and_mode() {
        assert_eq!(
            step_size_and_mode("step[DECODE bs=32]"),
            Some((32, Some("DECODE")))
        );
        assert_eq!(
            step_size_and_mode("step[EXTEND bs=15 toks=15360]"),
            Some((15, Some("EXTEND")))
        );
        assert_eq!(
            step_size_and_mode("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32)"),
            Some((32, None))
        );
        assert_eq!(step_size_and_mode("ProfilerStep#3"), None);
        assert_eq!(step_size_and_mode("execute_model"), None);
    }

    #[test]
    fn replay_pairs_in_order_by_name_skipping_missing_and_extra_nodes() {
        // Node 1 (`extra`) never replayed; replayed `new` has no node.
        let nodes = [
            Some("gemm(int)"),
            Some("extra"),
            Some("norm"),
            Some("gemm(float)"),
        ];
        let replay = ["gemm(int)", "norm", "new", "gemm(float)"];
        assert_eq!(
            pair_in_order(&replay, &nodes),
            [Some(0), Some(2), None, Some(3)]
        );
        // Unnamed nodes: by position when the counts agree, else not at all.
        assert_eq!(
            pair_in_order(&["a", "b"], &[None, None]),
            [Some(0), Some(1)]
        );
        assert_eq!(pair_in_order(&["a", "b"], &[None]), [None, None]);
    }

    /// Two replays of bs 32 and 8 inside their step annotations; captures of bs 32
    /// DECODE and bs 8 EXTEND: only the bs-32 replay fits (the bs-8 one asks for DECODE).
    fn replay_fixture() -> Trace {
        let mut b = TraceFixture::new();
        b.frame(
            "python/sglang/srt/model_executor/model_runner.py(3194): _forward_raw",
            0,
            90_000,
            1,
        );
        b.annotation("step[DECODE bs=32]", 0, 40_000, false);
        b.runtime("hipGraphLaunch", 1_000, 500, 1, 50, None);
        b.kernel("gemm(int)", 2_000, 100, Some(50), None);
        b.kernel("norm", 2_200, 30, Some(50), None);
        b.kernel("unknown_kernel", 2_300, 7, Some(50), None);
        b.annotation("step[DECODE bs=8]", 50_000, 40_000, false);
        b.runtime("hipGraphLaunch", 51_000, 500, 1, 60, None);
        b.kernel("gemm(int)", 52_000, 40, Some(60), None);
        // An eager kernel keeps its own site.
        b.cpu_op("aten::add", 60_000, 100, 1, Some(9));
        b.runtime("hipLaunchKernel", 60_010, 10, 1, 70, Some(9));
        b.kernel("add", 61_000, 5, Some(70), Some(9));
        b.build()
    }

    #[test]
    fn replays_take_the_site_of_the_captured_graph_of_their_size_and_mode() {
        let trace = replay_fixture();
        let linked = link(&trace);
        let graphs = [
            graph(
                32,
                "DECODE",
                vec![
                    node(
                        Some("gemm(int)"),
                        "python/sglang/srt/models/qwen3.py(263): forward",
                        Some("[[32, 4096]]"),
                    ),
                    node(
                        Some("norm"),
                        "python/sglang/srt/layers/layernorm.py(70): forward",
                        None,
                    ),
                ],
            ),
            graph(
                8,
                "EXTEND",
                vec![node(Some("gemm(int)"), "x.py(1): f", None)],
            ),
        ];
        let (trace, resolved, summary) = resolve_replays(trace, linked.clone(), &graphs);
        let frames = |i: usize| -> Vec<&str> {
            resolved
                .stack(resolved.sites[i].stack.unwrap())
                .iter()
                .map(|&s| trace.name(s))
                .collect()
        };
        let gemm = &resolved.sites[0];
        assert_eq!(gemm.source, SiteSource::Capture);
        assert!(gemm.graph_replay);
        // The launch stays the replay's: the stage split and timeline read it.
        assert_eq!(
            (gemm.runtime, gemm.launch_ts),
            (linked.sites[0].runtime, Some(1_000))
        );
        assert_eq!(
            frames(0).last(),
            Some(&"python/sglang/srt/models/qwen3.py(263): forward")
        );
        assert_eq!(gemm.cpu_op.map(|s| trace.name(s)), Some("aten::mm"));
        assert_eq!(gemm.input_dims.map(|s| trace.name(s)), Some("[[32, 4096]]"));
        assert_eq!(
            frames(1).last(),
            Some(&"python/sglang/srt/layers/layernorm.py(70): forward")
        );
        // Unpaired, and the replay no graph fits: the graph launch site, unchanged.
        assert_eq!(resolved.sites[2], linked.sites[2]);
        assert_eq!(resolved.sites[3], linked.sites[3]);
        assert_eq!(resolved.sites[3].source, SiteSource::GraphLaunch);
        // The eager kernel is untouched.
        assert_eq!(resolved.sites[4], linked.sites[4]);
        assert_eq!(
            summary,
            ResolveSummary {
                replays: 2,
                replayed_ops: 4,
                replayed_ns: 177,
                resolved_ops: 2,
                resolved_ns: 130,
                replays_without_graph: 1,
                without_graph_ns: 40,
                unpaired_ops: 1,
                unpaired_ns: 7,
                sizes_without_graph: vec![Some(8)],
            }
        );
    }

    #[test]
    fn a_step_without_a_mode_takes_any_mode_of_its_size() {
        let mut b = TraceFixture::new();
        b.annotation(
            "execute_16_context_0(sq0)_generation_16(sq16)",
            0,
            40_000,
            false,
        );
        b.runtime("cudaGraphLaunch", 1_000, 500, 1, 50, None);
        b.kernel("gemm", 2_000, 100, Some(50), None);
        let trace = b.build();
        let linked = link(&trace);
        let graphs = [
            graph(8, "FULL", vec![node(Some("gemm"), "vllm/a.py(1): f", None)]),
            graph(
                16,
                "FULL",
                vec![node(Some("gemm"), "vllm/b.py(2): g", None)],
            ),
        ];
        let (trace, resolved, summary) = resolve_replays(trace, linked, &graphs);
        let stack = resolved.stack(resolved.sites[0].stack.unwrap());
        assert_eq!(
            stack.last().map(|&s| trace.name(s)),
            Some("vllm/b.py(2): g")
        );
        assert_eq!(summary.resolved_ops, 1);
    }
}
