//! Linking every GPU op to where it was launched.
//!
//! ```text
//! GPU op --correlation--> runtime call (cudaLaunchKernel, hipGraphLaunch, ...)
//!                            |--External id / containment--> cpu_op on the launching thread
//!                            '--time containment at the launch--> Python frames on that thread
//! ```
//!
//! A GPU op without a runtime call (legacy traces) falls back to the cpu_op of its own
//! External id. Kernels replayed from a CUDA/HIP graph all carry the correlation of the
//! one graph launch, so they resolve to the graph launch's site.
//!
//! Frame and op nesting come from time containment on one thread, found by one sweep
//! per thread over intervals sorted by start (O(n log n)), never by scanning.
//!
//! Correlation and External ids are numbered per process, so in a trace merged from
//! several processes (SGLang's merger keeps every rank's events, their pids labelled
//! `[TP01] 4242`) two ranks reuse the same ids. They are matched within the kernel's
//! process: the launching process a GPU track (its pid) belongs to is the one whose
//! calls carry the track's correlations where only one process has them; a track with no
//! such correlation belongs to the process whose pid text shares the longest start with
//! its own (`[TP01] 1` with `[TP01] 4242`), if exactly one does. A kernel whose process
//! stays unknown takes the latest call at or before it across processes, ties broken by
//! pid text, so the result never depends on event order. A correlation repeated inside
//! one process is a collision: the latest call at or before the kernel wins, and the
//! collisions are counted for the notes.

use rustc_hash::FxHashMap;
use rustc_hash::FxHashMap as HashMap;

use crate::trace::event::{Ns, Sym, Trace};

/// Index into [`Linked::stacks`].
pub type StackId = u32;

/// Timestamps come from microsecond floats; allow one nanosecond of rounding.
const TOLERANCE_NS: Ns = 1;

/// Runtime calls that replay a captured graph.
const GRAPH_LAUNCHES: &[&str] = &["cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch"];

/// Where a GPU op's launch site (stack, CPU op, input shapes) was taken from. `link`
/// gives `Eager` or `GraphLaunch`; resolving graph replays (a capture trace, the mapping
/// trace, graph node ids) replaces a replayed kernel's site and says which source did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum SiteSource {
    /// Launched by its own runtime call (or its legacy cpu_op).
    #[default]
    Eager,
    /// Replayed from a graph, charged to the graph launch (nothing better known).
    GraphLaunch,
    /// The launch recorded for this node in a capture trace.
    Capture,
    /// The kernel aligned to it in the mapping trace (graphs off).
    Mapping,
    /// A graph node id in the kernel's args, joined to the capture.
    GraphNode,
}

impl SiteSource {
    /// The JSON spelling (`launch_site_source`).
    pub fn as_str(self) -> &'static str {
        match self {
            SiteSource::Eager => "eager",
            SiteSource::GraphLaunch => "graph-launch",
            SiteSource::Capture => "capture",
            SiteSource::Mapping => "mapping",
            SiteSource::GraphNode => "graph-node",
        }
    }
}

/// How a replayed kernel was paired with its mapping-trace counterpart
/// (`analyze::graph::align` decides it); decides the pair's confidence.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PairKind {
    /// Equal canonical names.
    Exact,
    /// Different names of one family (another GEMM tile, another norm variant).
    Family,
    /// A fused kernel and one of the kernels it stands for (see `align`'s docs).
    Fused,
}

impl PairKind {
    /// Every kind, in the order per-kind sums keep them.
    pub const ALL: [PairKind; 3] = [PairKind::Exact, PairKind::Family, PairKind::Fused];

    /// How sure the pair is, in (0, 1].
    pub fn confidence(self) -> f64 {
        match self {
            PairKind::Exact => 1.0,
            PairKind::Family => 0.5,
            PairKind::Fused => 0.4,
        }
    }

    /// The word reports and notes use.
    pub fn as_str(self) -> &'static str {
        match self {
            PairKind::Exact => "exact",
            PairKind::Family => "family",
            PairKind::Fused => "fused",
        }
    }

    /// The JSON spelling (`matched_by`): a fused kernel stands for split ones and back.
    pub fn matched_by(self) -> &'static str {
        match self {
            PairKind::Exact => "exact",
            PairKind::Family => "family",
            PairKind::Fused => "fused-split",
        }
    }
}

/// Where one GPU op came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchSite {
    /// Index into `trace.runtime` of the launching call.
    pub runtime: Option<u32>,
    /// Name of the CPU op that launched it; for graph replays, the graph launch's name.
    pub cpu_op: Option<Sym>,
    /// Python frames active at the launch.
    pub stack: Option<StackId>,
    /// Replayed from a CUDA/HIP graph.
    pub graph_replay: bool,
    /// CPU time of the launch (the runtime call's start, or the legacy cpu_op's).
    pub launch_ts: Option<Ns>,
    /// Which source the stack, CPU op and shapes come from.
    pub source: SiteSource,
    /// The launching CPU op's `Input Dims` / `Input type` JSON text, when known.
    pub input_dims: Option<Sym>,
    pub input_types: Option<Sym>,
    /// How the site's mapping-trace kernel was paired with it (`SiteSource::Mapping`).
    pub mapping_pair: Option<PairKind>,
}

/// What linking achieved, for the report's notes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkCounts {
    /// GPU ops with a launch site (a runtime call, or a cpu_op in legacy traces).
    pub linked: u64,
    /// GPU ops whose correlation matched no runtime call.
    pub no_launch: u64,
    /// GPU ops with no Python frame active at their launch.
    pub no_stack: u64,
    /// GPU ops replayed from a graph.
    pub graph_replays: u64,
}

/// The launch site of every GPU op of one trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Linked {
    /// Parallel to `trace.gpu_ops`.
    pub sites: Vec<LaunchSite>,
    /// [`StackId`] -> Python frame names, outer..inner. Identical stacks are stored once.
    pub stacks: Vec<Vec<Sym>>,
    pub counts: LinkCounts,
    /// GPU ops whose correlation several runtime calls of their process share.
    pub collisions: u64,
}

/// The note for [`Linked::collisions`], when there are any.
pub fn collision_note(linked: &Linked) -> Option<String> {
    match linked.collisions {
        0 => None,
        1 => Some(
            "1 GPU op matched a correlation id that several runtime calls of its process share \
             (the latest call at or before it was taken)"
                .to_string(),
        ),
        n => Some(format!(
            "{n} GPU ops matched a correlation id that several runtime calls of their process \
             share (the latest call at or before each was taken)"
        )),
    }
}

impl Linked {
    pub fn stack(&self, id: StackId) -> &[Sym] {
        &self.stacks[id as usize]
    }
}

/// Whether a runtime call replays a graph (`cudaGraphLaunch`, `cudaGraphLaunch_v10000`,
/// `hipGraphLaunch`, `cuGraphLaunch`).
pub fn is_graph_launch(name: &str) -> bool {
    GRAPH_LAUNCHES.iter().any(|g| name.starts_with(g))
}

/// How much of a launch site [`link_in_scope`] finds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkScope {
    /// Everything: runtime call, launch time, graph replay, cpu_op, shapes, Python stack.
    Full,
    /// The launch only (runtime call, launch time, graph replay, source, and a legacy
    /// op's cpu_op): what a digest rank's stage split, timelines and stretches read
    /// (`triage::Depth::Digest`). The two sweeps over every CPU op and Python frame of
    /// the launching threads are skipped, so sites keep no stack and an eager launch no
    /// cpu_op or shapes.
    Launches,
}

/// Links every GPU op of `trace` to its runtime call, cpu_op and Python stack.
pub fn link(trace: &Trace) -> Linked {
    link_in_scope(trace, LinkScope::Full)
}

/// [`link`], finding only what `scope` asks for; the fields it finds are the same.
pub fn link_in_scope(trace: &Trace, scope: LinkScope) -> Linked {
    let (ops_by_external, (runtime_of, collisions)) = match scope {
        LinkScope::Full => full_link_inputs(trace),
        LinkScope::Launches => {
            // Only legacy ops (no runtime call) ask for a cpu_op: by their own External id.
            let runtime_of = runtime_calls_of_ops(trace);
            let legacy = trace
                .gpu_ops
                .iter()
                .zip(&runtime_of.0)
                .filter(|(_, r)| r.is_none())
                .map(|(op, _)| op.external_id);
            (index_cpu_ops_by_external_id(trace, legacy), runtime_of)
        }
    };

    let mut launches = Launches::with_capacity(trace.gpu_ops.len());
    let mut no_launch = 0;
    for (op, runtime) in trace.gpu_ops.iter().zip(&runtime_of) {
        no_launch += u64::from(runtime.is_none());
        match *runtime {
            Some(r) => launch_of_call(
                trace,
                &ops_by_external,
                r,
                op.external_id,
                scope,
                &mut launches,
            ),
            None => legacy_launch_of_op(
                trace,
                &ops_by_external,
                op.external_id,
                op.ts,
                &mut launches,
            ),
        }
    }
    drop((runtime_of, ops_by_external));
    let (sites, stacks) = match scope {
        LinkScope::Full => finish_sites(trace, launches),
        LinkScope::Launches => (launches.sites, Vec::new()),
    };

    let mut counts = LinkCounts {
        no_launch,
        ..LinkCounts::default()
    };
    for site in &sites {
        counts.linked += u64::from(site.runtime.is_some() || site.cpu_op.is_some());
        counts.no_stack += u64::from(site.stack.is_none());
        counts.graph_replays += u64::from(site.graph_replay);
    }
    Linked {
        sites,
        stacks,
        counts,
        collisions,
    }
}

/// The cpu_ops by External id (on a second core) and each GPU op's runtime call. The
/// ids looked up are a launching call's or an op's own: every call's and op's id is a
/// superset of them, known before the calls are chosen (an id nobody looks up changes
/// no lookup).
fn full_link_inputs(trace: &Trace) -> (OpsByExternalId, (Vec<Option<u32>>, u64)) {
    std::thread::scope(|scope| {
        let index = scope.spawn(|| {
            let calls = (0..trace.runtime.len()).map(|c| trace.runtime.external_id(c));
            let ops = trace.gpu_ops.iter().map(|op| op.external_id);
            index_cpu_ops_by_external_id(trace, calls.chain(ops))
        });
        let runtime_of = runtime_calls_of_ops(trace);
        let index = index
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (index, runtime_of)
    })
}

/// Links runtime calls themselves (indices into `trace.runtime`) to their cpu_op, shapes
/// and Python stack, by the same rules as [`link`]: a graph-capture trace's launch calls
/// are its graph's nodes, and no kernel of theirs ran to link from. `sites` is parallel
/// to `calls`; `counts.linked` counts calls with a cpu_op, `no_stack` those without a
/// Python frame.
pub fn link_launches(trace: &Trace, calls: &[u32]) -> Linked {
    let wanted = calls.iter().map(|&c| trace.runtime.external_id(c as usize));
    let ops_by_external = index_cpu_ops_by_external_id(trace, wanted);
    let mut launches = Launches::with_capacity(calls.len());
    for &c in calls {
        launch_of_call(
            trace,
            &ops_by_external,
            c,
            None,
            LinkScope::Full,
            &mut launches,
        );
    }
    let (sites, stacks) = finish_sites(trace, launches);
    let counts = LinkCounts {
        linked: sites.iter().filter(|s| s.cpu_op.is_some()).count() as u64,
        no_stack: sites.iter().filter(|s| s.stack.is_none()).count() as u64,
        ..LinkCounts::default()
    };
    Linked {
        sites,
        stacks,
        counts,
        collisions: 0,
    }
}

/// The launches before their cpu_op and stack are chosen, as parallel lists (no list of
/// structs beside the sites: at a million kernels that was the link's largest transient):
/// each site so far, where and when it happened on the CPU, and the cpu_op its External
/// id names (before the containment check).
struct Launches {
    sites: Vec<LaunchSite>,
    points: Vec<Option<(Thread, Ns)>>,
    external_ops: Vec<Option<u32>>,
}

impl Launches {
    fn with_capacity(n: usize) -> Launches {
        Launches {
            sites: Vec::with_capacity(n),
            points: Vec::with_capacity(n),
            external_ops: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, site: LaunchSite, point: Option<(Thread, Ns)>, external_op: Option<u32>) {
        self.sites.push(site);
        self.points.push(point);
        self.external_ops.push(external_op);
    }
}

/// Adds the launch of runtime call `r`; `fallback_external` is the External id to use
/// when the call has none (a kernel's own). `LinkScope::Launches` looks for no cpu_op.
fn launch_of_call(
    trace: &Trace,
    ops_by_external: &OpsByExternalId,
    r: u32,
    fallback_external: Option<u64>,
    scope: LinkScope,
    launches: &mut Launches,
) {
    let call = trace.runtime.at(r as usize);
    let mut site = LaunchSite {
        runtime: Some(r),
        launch_ts: Some(call.ts),
        graph_replay: is_graph_launch(trace.name(call.name)),
        ..LaunchSite::default()
    };
    if site.graph_replay {
        site.cpu_op = Some(call.name);
        site.source = SiteSource::GraphLaunch;
    }
    let external = call
        .external_id
        .or(fallback_external)
        .filter(|_| scope == LinkScope::Full);
    let external_op = external.and_then(|id| {
        pick_cpu_op(
            trace,
            ops_by_external.get(id)?,
            (call.pid, call.tid),
            call.ts,
        )
    });
    launches.push(site, Some(((call.pid, call.tid), call.ts)), external_op);
}

/// Legacy traces: no runtime events, the op's External id names its cpu_op.
fn legacy_launch_of_op(
    trace: &Trace,
    ops_by_external: &OpsByExternalId,
    external_id: Option<u64>,
    op_ts: Ns,
    launches: &mut Launches,
) {
    let found = external_id.and_then(|id| {
        let cands = ops_by_external.get(id)?;
        nearest_start_at_or_before(cands, |&c| trace.cpu_ops.at(c as usize).ts, op_ts)
    });
    let Some(c) = found else {
        launches.push(LaunchSite::default(), None, None);
        return;
    };
    let cpu = trace.cpu_ops.at(c as usize);
    let site = LaunchSite {
        cpu_op: Some(cpu.name),
        input_dims: cpu.input_dims,
        input_types: cpu.input_types,
        launch_ts: Some(cpu.ts),
        ..LaunchSite::default()
    };
    // Probe inside the op, past its own start, where its frames are open.
    let point = ((cpu.pid, cpu.tid), cpu.ts + (cpu.dur / 2).min(1000));
    launches.push(site, Some(point), Some(c));
}

/// Chooses each pending launch's cpu_op (with its shapes) and Python stack: the sites,
/// and the interned stacks they point into.
fn finish_sites(trace: &Trace, launches: Launches) -> (Vec<LaunchSite>, Vec<Vec<Sym>>) {
    let Launches {
        mut sites,
        points: launch_points,
        external_ops,
    } = launches;
    // The Python stacks on a second core while the cpu_ops are chosen here: the two
    // sweeps are independent and each costs a pass over millions of intervals.
    let (innermost_ops, (stack_of, stacks)) = std::thread::scope(|scope| {
        let stacks = scope.spawn(|| python_stacks(trace, &launch_points));
        let innermost = innermost_cpu_ops(trace, &launch_points);
        let stacks = stacks
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (innermost, stacks)
    });
    // cpu_op: the External-id op when it contains the launch on the launching thread,
    // else the innermost op there that does, else the External-id op anyway.
    for (i, (site, stack)) in sites.iter_mut().zip(stack_of).enumerate() {
        site.stack = stack;
        if site.cpu_op.is_none() {
            let contains = |c: u32| {
                let cpu = trace.cpu_ops.at(c as usize);
                launch_points[i].is_some_and(|((pid, tid), t)| {
                    cpu.pid == pid && cpu.tid == tid && contains_time(cpu.ts, cpu.ts + cpu.dur, t)
                })
            };
            let chosen = match external_ops[i] {
                Some(c) if contains(c) => Some(c),
                other => innermost_ops[i].or(other),
            };
            let cpu = chosen.map(|c| trace.cpu_ops.at(c as usize));
            site.cpu_op = cpu.map(|op| op.name);
            site.input_dims = cpu.and_then(|op| op.input_dims);
            site.input_types = cpu.and_then(|op| op.input_types);
        }
    }
    (sites, stacks)
}

/// (pid, tid) of a CPU thread.
type Thread = (Sym, Sym);

fn contains_time(start: Ns, end: Ns, t: Ns) -> bool {
    start <= t + TOLERANCE_NS && t <= end + TOLERANCE_NS
}

/// The runtime call of each GPU op, by (process, correlation), and how many ops matched a
/// correlation repeated inside their process. When a correlation repeats, the call that
/// started last at or before the op wins (else the earliest one).
fn runtime_calls_of_ops(trace: &Trace) -> (Vec<Option<u32>>, u64) {
    let by_correlation = CallsByCorrelation::new(trace);
    let calls_of = |correlation: u64| by_correlation.calls_of(correlation);
    let owners = track_owners(trace, &calls_of);
    let mut collisions = 0;
    let runtime_of = trace
        .gpu_ops
        .iter()
        .map(|op| {
            let calls = calls_of(op.correlation?);
            let one_process = calls
                .first()
                .is_some_and(|&f| calls.iter().all(|&c| same_process(trace, f, c)));
            let own = if one_process {
                calls
            } else if let Some(&owner) = owners.get(&op.pid) {
                equal_range(calls, |&c| trace.runtime.pid(c as usize).cmp(&owner))
            } else {
                &[]
            };
            if own.is_empty() {
                return latest_across_processes(trace, calls, op.ts);
            }
            collisions += u64::from(own.len() > 1);
            nearest_start_at_or_before(own, |&c| trace.runtime.ts(c as usize), op.ts)
        })
        .collect();
    (runtime_of, collisions)
}

/// Call indices sorted by (correlation, process, start), equal keys in file order, with
/// each one's correlation beside it: a GPU op's calls are found by a binary search over
/// plain numbers, not over calls decoded from the compact table at every step (that
/// decoding was a sixth of the link).
struct CallsByCorrelation {
    calls: Vec<u32>,
    correlations: Vec<u64>,
}

impl CallsByCorrelation {
    fn new(trace: &Trace) -> CallsByCorrelation {
        let calls = &trace.runtime;
        // Each key decoded once; the index last, so the unstable sort orders equal keys as
        // a stable one would.
        let mut keyed: Vec<(u64, Sym, Ns, u32)> = (0..calls.len())
            .map(|c| (calls.correlation(c), calls.pid(c), calls.ts(c), c as u32))
            .collect();
        keyed.sort_unstable();
        CallsByCorrelation {
            correlations: keyed.iter().map(|k| k.0).collect(),
            calls: keyed.into_iter().map(|k| k.3).collect(),
        }
    }

    /// The calls of one correlation, by (process, start).
    fn calls_of(&self, correlation: u64) -> &[u32] {
        let start = self.correlations.partition_point(|&c| c < correlation);
        let len = self.correlations[start..].partition_point(|&c| c == correlation);
        &self.calls[start..start + len]
    }
}

fn same_process(trace: &Trace, a: u32, b: u32) -> bool {
    trace.runtime.pid(a as usize) == trace.runtime.pid(b as usize)
}

/// The launching process of each GPU track (GPU op pid), for traces with more than one
/// process that launches: by the correlations only one process has, else by the longest
/// shared start of the pid texts (when exactly one process has it). Empty for a trace with
/// one launching process, where every correlation is matched as it is.
fn track_owners<'c>(trace: &Trace, calls_of: &impl Fn(u64) -> &'c [u32]) -> HashMap<Sym, Sym> {
    // One pass, no allocation, for the usual trace of one process.
    let first = trace.runtime.first().map(|c| c.pid);
    if trace.runtime.iter().all(|c| Some(c.pid) == first) {
        return HashMap::default();
    }
    let mut processes: Vec<Sym> = trace.runtime.iter().map(|c| c.pid).collect();
    processes.sort_unstable();
    processes.dedup();
    // (track, process) -> correlations of the track that only that process has.
    let mut votes: HashMap<(Sym, Sym), u64> = HashMap::default();
    let mut tracks: Vec<Sym> = Vec::new();
    for op in &trace.gpu_ops {
        tracks.push(op.pid);
        let Some(correlation) = op.correlation else {
            continue;
        };
        let calls = calls_of(correlation);
        let Some(&first) = calls.first() else {
            continue;
        };
        if calls.iter().all(|&c| same_process(trace, first, c)) {
            *votes
                .entry((op.pid, trace.runtime.pid(first as usize)))
                .or_default() += 1;
        }
    }
    tracks.sort_unstable();
    tracks.dedup();
    let mut owners = HashMap::default();
    for track in tracks {
        let best = processes
            .iter()
            .map(|&p| (votes.get(&(track, p)).copied().unwrap_or(0), p))
            .filter(|(n, _)| *n > 0)
            .max_by(|a, b| a.0.cmp(&b.0).then(trace.name(b.1).cmp(trace.name(a.1))));
        let owner = match best {
            Some((_, process)) => Some(process),
            None => by_shared_start(trace, track, &processes),
        };
        if let Some(owner) = owner {
            owners.insert(track, owner);
        }
    }
    owners
}

/// The one process whose pid text shares the longest non-empty start with the track's
/// (`[TP01] 4242` for `[TP01] 1`); `None` when none or several do.
fn by_shared_start(trace: &Trace, track: Sym, processes: &[Sym]) -> Option<Sym> {
    let text = trace.name(track);
    let shared = |p: Sym| {
        text.chars()
            .zip(trace.name(p).chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let longest = processes.iter().map(|&p| shared(p)).max()?;
    let mut best = processes.iter().filter(|&&p| shared(p) == longest);
    match (best.next(), best.next()) {
        (Some(&p), None) if longest > 0 => Some(p),
        _ => None,
    }
}

/// A kernel whose process is unknown: the latest call at or before it across every
/// process, else the earliest; ties by pid text, so event order never decides.
fn latest_across_processes(trace: &Trace, calls: &[u32], t: Ns) -> Option<u32> {
    let key = |&c: &u32| {
        let call = trace.runtime.at(c as usize);
        (call.ts, trace.name(call.pid))
    };
    let before = calls
        .iter()
        .filter(|&&c| trace.runtime.ts(c as usize) <= t + TOLERANCE_NS)
        .max_by(|a, b| {
            let (ta, pa) = key(a);
            let (tb, pb) = key(b);
            ta.cmp(&tb).then(pb.cmp(pa))
        });
    before
        .or_else(|| calls.iter().min_by(|a, b| key(a).cmp(&key(b))))
        .copied()
}

/// The run of `sorted` whose key compares equal (`order` gives key vs wanted).
fn equal_range(sorted: &[u32], order: impl Fn(&u32) -> std::cmp::Ordering) -> &[u32] {
    let start = sorted.partition_point(|i| order(i).is_lt());
    let len = sorted[start..].partition_point(|i| order(i).is_le());
    &sorted[start..start + len]
}

/// Among `sorted` (by start), the last that starts at or before `t`, else the first.
fn nearest_start_at_or_before(sorted: &[u32], start: impl Fn(&u32) -> Ns, t: Ns) -> Option<u32> {
    let after = sorted.partition_point(|c| start(c) <= t + TOLERANCE_NS);
    match after {
        0 => sorted.first().copied(),
        n => Some(sorted[n - 1]),
    }
}

/// The cpu_ops that carry an External id some launch asks for, sorted by (id, start),
/// with each one's id beside it (a lookup is a binary search over plain numbers, not
/// over CPU ops decoded at every step: that was a third of the link). Most cpu_ops
/// (views, slices) launch nothing, so they are left out.
struct OpsByExternalId {
    ops: Vec<u32>,
    ids: Vec<u64>,
}

impl OpsByExternalId {
    /// The cpu_ops with External id `id`, by start.
    fn get(&self, id: u64) -> Option<&[u32]> {
        let start = self.ids.partition_point(|&i| i < id);
        let len = self.ids[start..].partition_point(|&i| i == id);
        (len > 0).then(|| &self.ops[start..start + len])
    }
}

fn index_cpu_ops_by_external_id(
    trace: &Trace,
    wanted_ids: impl Iterator<Item = Option<u64>>,
) -> OpsByExternalId {
    let wanted = WantedIds::new(wanted_ids.flatten().collect());
    let mut is_wanted = wanted.lookup();
    let ops = &trace.cpu_ops;
    let mut keyed: Vec<(u64, Ns, u32)> = (0..ops.len())
        .filter_map(|c| {
            let id = ops.external_id(c).filter(|&id| is_wanted(id))?;
            Some((id, ops.ts(c), c as u32))
        })
        .collect();
    // Equal starts keep file order (the index is the last key), as the candidates
    // always had.
    keyed.sort_unstable();
    OpsByExternalId {
        ids: keyed.iter().map(|k| k.0).collect(),
        ops: keyed.into_iter().map(|k| k.2).collect(),
    }
}

/// The External ids the launches ask for. Every CPU op's id is looked up here (a
/// million at 1 GB), and ids count up through a trace (a tiled one: in runs far apart),
/// so those asked for usually crowd into a few ranges: then one bit each in pages of
/// [`WantedIds::PAGE_BITS`] ids, looked up by page (the last page found is kept, as
/// neighbouring ops' ids share one), instead of a hash set probed at random; the set
/// when the ids are too scattered for pages to pay.
enum WantedIds {
    Paged(FxHashMap<u64, Box<[u64]>>),
    Scattered(rustc_hash::FxHashSet<u64>),
}

impl WantedIds {
    /// Ids per page, a power of two: 512 bytes of bits.
    const PAGE_BITS: u64 = 1 << 12;
    /// Fewer wanted ids a page, on average, and the ids are scattered.
    const MIN_IDS_PER_PAGE: usize = 32;

    fn new(mut ids: Vec<u64>) -> WantedIds {
        ids.sort_unstable();
        ids.dedup();
        let mut pages: Vec<u64> = ids.iter().map(|id| id / Self::PAGE_BITS).collect();
        pages.dedup();
        if pages.len() * Self::MIN_IDS_PER_PAGE > ids.len() + Self::MIN_IDS_PER_PAGE {
            return WantedIds::Scattered(ids.into_iter().collect());
        }
        let mut paged: FxHashMap<u64, Box<[u64]>> = FxHashMap::default();
        for id in ids {
            let bits = paged
                .entry(id / Self::PAGE_BITS)
                .or_insert_with(|| vec![0; (Self::PAGE_BITS / 64) as usize].into());
            let k = id % Self::PAGE_BITS;
            bits[(k / 64) as usize] |= 1 << (k % 64);
        }
        WantedIds::Paged(paged)
    }

    /// A lookup that keeps the last page it found: `contains` for one pass in id order
    /// (mostly).
    fn lookup(&self) -> impl FnMut(u64) -> bool + '_ {
        let mut last: Option<(u64, &[u64])> = None;
        move |id| match self {
            WantedIds::Paged(pages) => {
                let page = id / Self::PAGE_BITS;
                let bits = match last {
                    Some((p, bits)) if p == page => bits,
                    _ => match pages.get(&page) {
                        Some(bits) => {
                            last = Some((page, bits));
                            bits
                        }
                        None => return false,
                    },
                };
                let k = id % Self::PAGE_BITS;
                bits[(k / 64) as usize] & (1 << (k % 64)) != 0
            }
            WantedIds::Scattered(set) => set.contains(&id),
        }
    }
}

/// The candidate on the launching thread that contains the launch, else the one of the
/// launching process that started last before it, else that process's first. External
/// ids are numbered per process: another process's op with the same id is never taken.
fn pick_cpu_op(trace: &Trace, candidates: &[u32], thread: Thread, t: Ns) -> Option<u32> {
    let on_thread_containing = candidates.iter().rev().copied().find(|&c| {
        let op = trace.cpu_ops.at(c as usize);
        (op.pid, op.tid) == thread && contains_time(op.ts, op.ts + op.dur, t)
    });
    if on_thread_containing.is_some() {
        return on_thread_containing;
    }
    let in_process = |c: &u32| trace.cpu_ops.at(*c as usize).pid == thread.0;
    let start = |c: &u32| trace.cpu_ops.at(*c as usize).ts;
    if candidates.iter().all(in_process) {
        return nearest_start_at_or_before(candidates, start, t);
    }
    let own: Vec<u32> = candidates.iter().copied().filter(in_process).collect();
    nearest_start_at_or_before(&own, start, t)
}

/// An open interval of the sweep: where it ends, and the event it came from.
#[derive(Copy, Clone, Debug)]
struct Interval {
    end: Ns,
    item: u32,
}

/// For each query `(thread, t)`, calls `visit(query index, active)` with the intervals
/// of that thread that contain `t`, outer..inner. `items` lists each thread's events
/// (in file order); `span` gives an event's (start, end).
///
/// Intervals on one thread nest (call stacks), so one sorted sweep with a stack finds
/// them: an interval that does not enclose a newer one has ended and is popped.
fn sweep_active(
    mut items: HashMap<Thread, Vec<u32>>,
    span: impl Fn(u32) -> (Ns, Ns),
    queries: &[Option<(Thread, Ns)>],
    mut visit: impl FnMut(usize, &[Interval]),
) {
    let mut queries_by_thread: HashMap<Thread, Vec<(Ns, usize)>> = HashMap::default();
    for (q, query) in queries.iter().enumerate() {
        if let Some((thread, t)) = *query {
            queries_by_thread.entry(thread).or_default().push((t, q));
        }
    }
    for (thread, mut queries) in queries_by_thread {
        let Some(mut thread_items) = items.remove(&thread) else {
            continue;
        };
        // Outer before inner when two start together; stable, so equal intervals keep
        // file order. Traces are mostly written in this order already.
        let key = |i: &u32| {
            let (start, end) = span(*i);
            (start, std::cmp::Reverse(end))
        };
        if !thread_items.is_sorted_by_key(key) {
            // The index breaks ties as a stable sort would (items are in index order),
            // without the stable sort's buffer of half the list.
            thread_items.sort_unstable_by_key(|i| (key(i), *i));
        }
        queries.sort_unstable();
        let mut stack: Vec<Interval> = Vec::new();
        let mut next = 0;
        for (t, q) in queries {
            while next < thread_items.len() {
                let item = thread_items[next];
                let (start, end) = span(item);
                if start > t + TOLERANCE_NS {
                    break;
                }
                while stack.last().is_some_and(|top| top.end < end) {
                    stack.pop();
                }
                stack.push(Interval { end, item });
                next += 1;
            }
            while stack.last().is_some_and(|top| top.end + TOLERANCE_NS < t) {
                stack.pop();
            }
            visit(q, &stack);
        }
    }
}

/// Each launching thread's events; other threads' are left out. `threads` is the
/// table's list of threads and `index_of` an event's index into it: events are grouped
/// by that small index, not by hashing each one's (pid, tid) (millions of frames).
fn items_on_launching_threads(
    count: usize,
    threads: &[Thread],
    index_of: impl Fn(usize) -> u32,
    points: &[Option<(Thread, Ns)>],
) -> HashMap<Thread, Vec<u32>> {
    let launching: rustc_hash::FxHashSet<Thread> =
        points.iter().flatten().map(|(thread, _)| *thread).collect();
    let launches = |k: usize| threads.get(k).is_some_and(|t| launching.contains(t));
    // Counted first, so each list is allocated once at its length: the frames' lists
    // are millions of entries, and growing them by doubling kept up to twice that.
    let mut lengths: Vec<Option<usize>> = (0..threads.len())
        .map(|k| launches(k).then_some(0))
        .collect();
    for i in 0..count {
        if let Some(Some(n)) = lengths.get_mut(index_of(i) as usize) {
            *n += 1;
        }
    }
    let mut lists: Vec<Option<Vec<u32>>> =
        lengths.iter().map(|n| n.map(Vec::with_capacity)).collect();
    for i in 0..count {
        if let Some(Some(list)) = lists.get_mut(index_of(i) as usize) {
            list.push(i as u32);
        }
    }
    threads
        .iter()
        .zip(lists)
        .filter_map(|(thread, list)| Some((*thread, list?)))
        .collect()
}

/// The innermost cpu_op containing each launch point.
fn innermost_cpu_ops(trace: &Trace, points: &[Option<(Thread, Ns)>]) -> Vec<Option<u32>> {
    let ops = &trace.cpu_ops;
    let items =
        items_on_launching_threads(ops.len(), ops.threads(), |i| ops.thread_index(i), points);
    let span = |i: u32| ops.span(i as usize);
    let mut innermost = vec![None; points.len()];
    sweep_active(items, span, points, |q, active| {
        innermost[q] = active.last().map(|iv| iv.item);
    });
    innermost
}

/// The Python stack at each launch point, interned: (stack per point, stacks).
fn python_stacks(
    trace: &Trace,
    points: &[Option<(Thread, Ns)>],
) -> (Vec<Option<StackId>>, Vec<Vec<Sym>>) {
    let frames = &trace.py_frames;
    let items = items_on_launching_threads(
        frames.len(),
        frames.threads(),
        |i| frames.thread_index(i),
        points,
    );
    let span = |i: u32| frames.span(i as usize);
    let mut ids: HashMap<Vec<Sym>, StackId> = HashMap::default();
    let mut stacks: Vec<Vec<Sym>> = Vec::new();
    let mut stack_of = vec![None; points.len()];
    // Kernels of one graph replay share a launch point: reuse the last answer.
    let mut last: Option<((Thread, Ns), Option<StackId>)> = None;
    sweep_active(items, span, points, |q, active| {
        if let (Some((point, id)), Some(now)) = (last, points[q]) {
            if point == now {
                stack_of[q] = id;
                return;
            }
        }
        if active.is_empty() {
            last = points[q].map(|p| (p, None));
            return;
        }
        let names: Vec<Sym> = active
            .iter()
            .map(|iv| frames.name(iv.item as usize))
            .collect();
        let id = *ids.entry(names).or_insert_with_key(|names| {
            stacks.push(names.clone());
            (stacks.len() - 1) as StackId
        });
        stack_of[q] = Some(id);
        last = points[q].map(|p| (p, Some(id)));
    });
    (stack_of, stacks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TraceFixture;

    fn frame_names(trace: &Trace, linked: &Linked, op: usize) -> Vec<String> {
        let id = linked.sites[op].stack.expect("stack");
        linked
            .stack(id)
            .iter()
            .map(|&s| trace.name(s).to_string())
            .collect()
    }

    #[test]
    fn kernel_links_to_launch_cpu_op_and_python_stack() {
        let mut b = TraceFixture::new();
        b.frame("a.py(1): outer", 0, 1000, 1);
        b.frame("b.py(2): inner", 100, 500, 1);
        b.frame("c.py(3): sibling", 700, 200, 1);
        b.cpu_op("aten::mm", 150, 300, 1, Some(7));
        b.runtime("cudaLaunchKernel", 200, 20, 1, 42, Some(7));
        b.kernel("gemm", 5000, 100, Some(42), Some(7));
        let trace = b.build();
        let linked = link(&trace);
        let site = &linked.sites[0];
        assert_eq!(site.runtime, Some(0));
        assert_eq!(site.launch_ts, Some(200));
        assert_eq!(site.cpu_op.map(|s| trace.name(s)), Some("aten::mm"));
        assert!(!site.graph_replay);
        assert_eq!(
            frame_names(&trace, &linked, 0),
            ["a.py(1): outer", "b.py(2): inner"]
        );
        assert_eq!(
            linked.counts,
            LinkCounts {
                linked: 1,
                no_launch: 0,
                no_stack: 0,
                graph_replays: 0
            }
        );
    }

    #[test]
    fn graph_replay_resolves_to_the_graph_launch_site() {
        let mut b = TraceFixture::new();
        b.frame("runner.py(10): replay", 0, 10_000, 1);
        b.frame("torch/cuda/graphs.py(139): replay", 10, 9_000, 1);
        b.runtime("hipGraphLaunch", 100, 2_000, 1, 9, None);
        b.kernel("k1", 3_000, 50, Some(9), None);
        b.kernel("k2", 3_100, 50, Some(9), None);
        b.kernel("k3", 3_200, 50, Some(10), None); // launch not captured
        let trace = b.build();
        let linked = link(&trace);
        for i in 0..2 {
            let site = &linked.sites[i];
            assert!(site.graph_replay);
            assert_eq!(site.cpu_op.map(|s| trace.name(s)), Some("hipGraphLaunch"));
            assert_eq!(site.launch_ts, Some(100));
            assert_eq!(
                frame_names(&trace, &linked, i),
                ["runner.py(10): replay", "torch/cuda/graphs.py(139): replay"]
            );
        }
        assert_eq!(linked.sites[0].stack, linked.sites[1].stack);
        assert_eq!(linked.stacks.len(), 1, "identical stacks are interned");
        assert_eq!(linked.sites[2], LaunchSite::default());
        assert_eq!(
            linked.counts,
            LinkCounts {
                linked: 2,
                no_launch: 1,
                no_stack: 1,
                graph_replays: 2
            }
        );
    }

    #[test]
    fn eager_sites_carry_their_cpu_ops_shapes_and_graph_replays_none() {
        let mut b = TraceFixture::new();
        b.cpu_op("aten::mm", 100, 300, 1, Some(7));
        b.runtime("cudaLaunchKernel", 200, 20, 1, 42, Some(7));
        b.kernel("gemm", 5000, 100, Some(42), Some(7));
        // No External id: the innermost op around the launch.
        b.cpu_op("aten::add", 1000, 300, 1, None);
        b.runtime("cudaLaunchKernel", 1100, 20, 1, 43, None);
        b.kernel("add", 5200, 100, Some(43), None);
        // A graph launch inside an op with shapes: the replayed kernel's shapes are not
        // that op's.
        b.cpu_op("aten::mm", 2000, 300, 1, Some(8));
        b.runtime("hipGraphLaunch", 2100, 20, 1, 44, Some(8));
        b.kernel("replayed", 5400, 100, Some(44), None);
        // Legacy: no runtime call, the External id names the op.
        b.cpu_op("conv", 3000, 300, 1, Some(11));
        b.kernel("legacy", 5600, 100, None, Some(11));
        let mut trace = b.build();
        let shapes = [
            ("[[1,2],[2,3]]", r#"["float","float"]"#),
            ("[[4]]", r#"["float"]"#),
            ("[[9,9],[9,9]]", r#"["float","float"]"#),
            ("[[1,3,8,8]]", r#"["float"]"#),
        ];
        for (i, (dims, types)) in shapes.into_iter().enumerate() {
            let mut op = trace.cpu_ops.at(i);
            op.input_dims = Some(trace.strings.intern(dims));
            op.input_types = Some(trace.strings.intern(types));
            trace.cpu_ops.set(i, op);
        }
        let linked = link(&trace);
        let got: Vec<(SiteSource, Option<&str>, Option<&str>)> = linked
            .sites
            .iter()
            .map(|s| {
                (
                    s.source,
                    s.input_dims.map(|d| trace.name(d)),
                    s.input_types.map(|d| trace.name(d)),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (SiteSource::Eager, Some(shapes[0].0), Some(shapes[0].1)),
                (SiteSource::Eager, Some(shapes[1].0), Some(shapes[1].1)),
                (SiteSource::GraphLaunch, None, None),
                (SiteSource::Eager, Some(shapes[3].0), Some(shapes[3].1)),
            ]
        );
    }

    #[test]
    fn shared_traces_eager_kernels_get_the_shapes_of_their_launching_op() {
        use crate::testutil::shared_trace_path;
        use crate::trace::read::read_trace;
        let path = shared_trace_path("AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz");
        let trace = read_trace(&path, &mut |_| {}).unwrap();
        let linked = link(&trace);
        // Each eager site's shapes are those of a CPU op of its name on the launching
        // thread that contains the launch (the op link chose).
        let mut with_dims = 0;
        for site in &linked.sites {
            let (Some(r), Some(name)) = (site.runtime, site.cpu_op) else {
                assert_eq!(site.input_dims, None);
                continue;
            };
            let call = trace.runtime.at(r as usize);
            let candidates: Vec<_> = trace
                .cpu_ops
                .iter()
                .filter(|c| c.name == name && c.pid == call.pid && c.tid == call.tid)
                .filter(|c| c.ts <= call.ts + 1 && call.ts <= c.ts + c.dur + 1)
                .collect();
            assert!(!candidates.is_empty());
            assert!(candidates
                .iter()
                .any(|c| (c.input_dims, c.input_types) == (site.input_dims, site.input_types)));
            with_dims += usize::from(site.input_dims.is_some());
        }
        let mm = linked
            .sites
            .iter()
            .filter(|s| s.cpu_op.is_some_and(|n| trace.name(n) == "aten::mm"));
        assert!(mm.clone().count() > 0);
        assert!(mm.clone().all(|s| s.input_dims.is_some()));
        assert!(with_dims > 400, "{with_dims}");

        let path = shared_trace_path("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
        let trace = read_trace(&path, &mut |_| {}).unwrap();
        let linked = link(&trace);
        let replays: Vec<_> = linked.sites.iter().filter(|s| s.graph_replay).collect();
        assert!(replays.len() > 500);
        assert!(replays
            .iter()
            .all(|s| s.source == SiteSource::GraphLaunch && s.input_dims.is_none()));
    }

    #[test]
    fn duplicate_correlation_takes_the_latest_call_before_the_kernel() {
        let mut b = TraceFixture::new();
        b.runtime("cudaLaunchKernel", 100, 10, 1, 5, None);
        b.runtime("cudaLaunchKernel", 900, 10, 1, 5, None);
        b.runtime("cudaLaunchKernel", 5000, 10, 1, 5, None);
        b.kernel("k", 1000, 10, Some(5), None);
        b.kernel("early", 50, 10, Some(5), None);
        let trace = b.build();
        let linked = link(&trace);
        assert_eq!(linked.sites[0].runtime, Some(1));
        // Nothing starts before it: the earliest call.
        assert_eq!(linked.sites[1].runtime, Some(0));
    }

    /// Issue 15 point 10: two processes of a merged trace (SGLang's merger labels every
    /// pid with its rank) number their correlations alike. Each kernel links to the launch
    /// of its own process, whatever the order of the events; only a repeat inside one
    /// process is a collision.
    #[test]
    fn correlations_are_matched_within_the_kernels_process_in_any_event_order() {
        type Add = fn(&mut TraceFixture);
        let rank0: [Add; 5] = [
            |b| {
                b.on_process("[TP00] 100");
                b.frame("rank0.py(1): forward", 0, 10_000, 1);
            },
            |b| {
                b.on_process("[TP00] 100");
                b.runtime("cudaLaunchKernel", 100, 10, 1, 1, None);
            },
            |b| {
                b.on_process("[TP00] 100");
                b.runtime("cudaLaunchKernel", 300, 10, 1, 2, None);
            },
            |b| {
                b.on_process("[TP00] 100");
                b.runtime("cudaLaunchKernel", 400, 10, 1, 3, None);
                b.runtime("cudaLaunchKernel", 500, 10, 1, 3, None);
            },
            |b| {
                b.gpu_op_on("[TP00] 0", "k1_rank0", 1000, 10, Some(1), None);
                b.gpu_op_on("[TP00] 0", "k2_rank0", 2000, 10, Some(2), None);
                b.gpu_op_on("[TP00] 0", "k3_rank0", 3000, 10, Some(3), None);
            },
        ];
        let rank1: [Add; 4] = [
            |b| {
                b.on_process("[TP01] 200");
                b.frame("rank1.py(2): forward", 0, 10_000, 1);
            },
            |b| {
                b.on_process("[TP01] 200");
                b.runtime("cudaLaunchKernel", 150, 10, 1, 1, None);
            },
            |b| {
                b.on_process("[TP01] 200");
                b.runtime("cudaLaunchKernel", 300, 10, 1, 2, None);
            },
            |b| {
                b.gpu_op_on("[TP01] 1", "k1_rank1", 1100, 10, Some(1), None);
                b.gpu_op_on("[TP01] 1", "k2_rank1", 2100, 10, Some(2), None);
            },
        ];
        let located = |adds: Vec<Add>| {
            let mut b = TraceFixture::new();
            for add in adds {
                add(&mut b);
            }
            let trace = b.build();
            let linked = link(&trace);
            let mut by_kernel: Vec<(String, Vec<String>)> = (0..trace.gpu_ops.len())
                .map(|i| {
                    let name = trace.name(trace.gpu_ops.at(i).name).to_string();
                    (name, frame_names(&trace, &linked, i))
                })
                .collect();
            by_kernel.sort();
            by_kernel
        };
        let forward: Vec<Add> = rank0.iter().chain(&rank1).copied().collect();
        let backward: Vec<Add> = forward.iter().rev().copied().collect();
        let interleaved: Vec<Add> = rank1.iter().chain(&rank0).copied().collect();
        let r0 = || vec!["rank0.py(1): forward".to_string()];
        let r1 = || vec!["rank1.py(2): forward".to_string()];
        let want = vec![
            ("k1_rank0".to_string(), r0()),
            ("k1_rank1".to_string(), r1()),
            ("k2_rank0".to_string(), r0()),
            ("k2_rank1".to_string(), r1()),
            ("k3_rank0".to_string(), r0()),
        ];
        for order in [forward, backward, interleaved] {
            assert_eq!(located(order), want);
        }
    }

    /// A correlation repeated inside one process is a collision, counted for the notes
    /// (the latest call at or before the kernel still wins); the same id in two processes
    /// is not.
    #[test]
    fn only_a_correlation_repeated_inside_one_process_is_a_collision() {
        let mut b = TraceFixture::new();
        b.on_process("[TP00] 100");
        b.runtime("cudaLaunchKernel", 100, 10, 1, 1, None);
        b.runtime("cudaLaunchKernel", 400, 10, 1, 3, None);
        b.runtime("cudaLaunchKernel", 500, 10, 1, 3, None);
        b.on_process("[TP01] 200");
        b.runtime("cudaLaunchKernel", 150, 10, 1, 1, None);
        b.gpu_op_on("[TP00] 0", "k1", 1000, 10, Some(1), None);
        b.gpu_op_on("[TP01] 1", "k1", 1100, 10, Some(1), None);
        b.gpu_op_on("[TP00] 0", "k3", 3000, 10, Some(3), None);
        let trace = b.build();
        let linked = link(&trace);
        let runtime: Vec<Option<u32>> = linked.sites.iter().map(|s| s.runtime).collect();
        assert_eq!(runtime, [Some(0), Some(3), Some(2)]);
        assert_eq!(linked.collisions, 1);
        assert_eq!(
            collision_note(&linked).as_deref(),
            Some(
                "1 GPU op matched a correlation id that several runtime calls of its process \
                 share (the latest call at or before it was taken)"
            )
        );
    }

    #[test]
    fn cpu_op_falls_back_to_innermost_op_containing_the_launch() {
        let mut b = TraceFixture::new();
        b.cpu_op("aten::linear", 0, 1000, 1, Some(1));
        b.cpu_op("aten::addmm", 100, 500, 1, Some(2));
        // The launch names an External id no cpu_op has.
        b.runtime("cudaLaunchKernel", 200, 10, 1, 3, Some(99));
        b.kernel("k", 2000, 10, Some(3), None);
        // External id of an op on another thread: the op on the launching thread wins.
        b.cpu_op("other", 0, 5000, 2, Some(4));
        b.runtime("cudaLaunchKernel", 300, 10, 1, 5, Some(4));
        b.kernel("k2", 2100, 10, Some(5), None);
        let trace = b.build();
        let linked = link(&trace);
        let op = |i: usize| linked.sites[i].cpu_op.map(|s| trace.name(s).to_string());
        assert_eq!(op(0).as_deref(), Some("aten::addmm"));
        assert_eq!(op(1).as_deref(), Some("aten::addmm"));
    }

    #[test]
    fn legacy_kernel_without_launch_uses_its_external_id_op() {
        let mut b = TraceFixture::new();
        b.frame("model.py(5): forward", 0, 1000, 1);
        b.cpu_op("aten::conv2d", 100, 400, 1, Some(11));
        b.kernel("conv", 2000, 10, None, Some(11));
        let trace = b.build();
        let linked = link(&trace);
        let site = &linked.sites[0];
        assert_eq!(site.cpu_op.map(|s| trace.name(s)), Some("aten::conv2d"));
        assert_eq!(site.launch_ts, Some(100));
        assert_eq!(frame_names(&trace, &linked, 0), ["model.py(5): forward"]);
        assert_eq!(linked.counts.linked, 1);
        assert_eq!(linked.counts.no_launch, 1);
    }

    /// A launches-only link (a digest rank's) finds every launch field as the full link
    /// does, on eager, graph-replayed, legacy, unlinked and colliding ops: it leaves out
    /// only the stacks and an eager launch's cpu_op and shapes.
    #[test]
    fn launches_only_link_agrees_with_the_full_link_on_every_launch_field() {
        let mut b = TraceFixture::new();
        b.frame("runner.py(10): replay", 0, 10_000, 1);
        b.cpu_op("aten::mm", 150, 300, 1, Some(7));
        b.runtime("cudaLaunchKernel", 200, 20, 1, 42, Some(7));
        b.runtime("cudaLaunchKernel", 600, 20, 1, 42, None); // correlation collision
        b.runtime("hipGraphLaunch", 1_000, 2_000, 1, 9, None);
        b.cpu_op("aten::conv2d", 4_000, 400, 1, Some(11));
        b.kernel("gemm", 5_000, 100, Some(42), Some(7));
        b.kernel("k1", 5_200, 50, Some(9), None);
        b.kernel("k2", 5_300, 50, Some(9), None);
        b.kernel("conv", 5_400, 10, None, Some(11)); // legacy: no runtime call
        b.kernel("lost", 5_500, 10, Some(77), None); // launch not captured
        let trace = b.build();
        let full = link(&trace);
        let lean = link_in_scope(&trace, LinkScope::Launches);
        assert!(lean.stacks.is_empty());
        assert_eq!(lean.collisions, full.collisions);
        assert_eq!(full.collisions, 1);
        assert_eq!(lean.counts.no_launch, full.counts.no_launch);
        assert_eq!(lean.counts.graph_replays, 2);
        let expected: Vec<LaunchSite> = full
            .sites
            .iter()
            .map(|site| {
                let eager_call = site.runtime.is_some() && !site.graph_replay;
                LaunchSite {
                    stack: None,
                    cpu_op: site.cpu_op.filter(|_| !eager_call),
                    input_dims: site.input_dims.filter(|_| !eager_call),
                    input_types: site.input_types.filter(|_| !eager_call),
                    ..site.clone()
                }
            })
            .collect();
        assert_eq!(lean.sites, expected);
        // The fixture reaches every kind of site the lean link must keep.
        assert!(full.sites[0].cpu_op.is_some() && lean.sites[0].cpu_op.is_none());
        assert_eq!(
            lean.sites[1].cpu_op.map(|s| trace.name(s)),
            Some("hipGraphLaunch")
        );
        assert_eq!(
            lean.sites[3].cpu_op.map(|s| trace.name(s)),
            Some("aten::conv2d")
        );
        assert_eq!(lean.sites[3].launch_ts, Some(4_000));
        assert_eq!(lean.sites[4], LaunchSite::default());
    }

    /// The paged bit set and the hash set answer alike, for ids crowded into runs far
    /// apart (a tiled trace's), scattered ones, page edges and the extremes.
    #[test]
    fn wanted_ids_pages_and_scattered_set_agree() {
        let page = WantedIds::PAGE_BITS;
        let crowded: Vec<u64> = (0..3u64)
            .flat_map(|run| (0..5_000u64).map(move |i| (run << 40) + 7 * i / 3))
            .chain([0, page - 1, page, u64::MAX])
            .collect();
        let scattered: Vec<u64> = (0..500u64).map(|i| i * 1_000_003 * page).collect();
        for (ids, paged) in [(crowded, true), (scattered, false)] {
            let wanted = WantedIds::new(ids.clone());
            assert_eq!(matches!(wanted, WantedIds::Paged(_)), paged);
            let set: rustc_hash::FxHashSet<u64> = ids.iter().copied().collect();
            let mut lookup = wanted.lookup();
            let probes = ids
                .iter()
                .flat_map(|&id| [id, id.wrapping_add(1), id.wrapping_sub(1)])
                .chain([1 << 40, (2 << 40) - 1, u64::MAX - 1]);
            for id in probes {
                assert_eq!(lookup(id), set.contains(&id), "id {id}");
            }
        }
        let none = WantedIds::new(Vec::new());
        assert!(!none.lookup()(0));
    }

    #[test]
    fn frames_of_other_threads_and_ended_frames_are_not_active() {
        let mut b = TraceFixture::new();
        b.frame("gone.py(1): done", 0, 50, 1);
        b.frame("other_thread.py(1): run", 0, 10_000, 2);
        b.frame("live.py(1): run", 60, 10_000, 1);
        b.frame("adjacent.py(1): next", 150, 100, 1);
        b.runtime("cudaLaunchKernel", 100, 10, 1, 1, None);
        b.runtime("cudaLaunchKernel", 200, 10, 1, 2, None);
        b.kernel("a", 1000, 10, Some(1), None);
        b.kernel("b", 1100, 10, Some(2), None);
        let trace = b.build();
        let linked = link(&trace);
        assert_eq!(frame_names(&trace, &linked, 0), ["live.py(1): run"]);
        assert_eq!(
            frame_names(&trace, &linked, 1),
            ["live.py(1): run", "adjacent.py(1): next"]
        );
    }
}
