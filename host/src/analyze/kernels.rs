//! The kernel table: per stage, GPU time by canonical kernel name, with family, launch
//! count, Python launch sites and CPU ops (the predecessor's kernel table and columns).
//!
//! Times are summed in integer nanoseconds, so a row's `gpu_time_us` is exact; streams
//! that overlap add up (a stage total is GPU busy time summed over streams).

use rustc_hash::FxHashMap as HashMap;

use crate::analyze::location::{Locator, Site, StackSites};
use crate::catalog::FamilyRules;
use crate::report::model::{KernelRow, LaunchShare, SiteShare, StageReport};
use crate::trace::event::{Sym, Trace};

/// Sums of durations: i128, so no hostile trace of huge durations can overflow them
/// (one i64 `dur` fits; three 5e18 ns ones do not).
type SumNs = i128;
use crate::trace::link::{Linked, PairKind, SiteSource, StackId};

/// Every [`SiteSource`], in the order a row's per-source sums keep them.
const SOURCES: [SiteSource; 5] = [
    SiteSource::Eager,
    SiteSource::GraphLaunch,
    SiteSource::Capture,
    SiteSource::Mapping,
    SiteSource::GraphNode,
];
use crate::trace::names::{canonical_name, short_name, SHORT_ARGS_MAX};
use crate::trace::stage::{Stage, StageSplit};

/// The location text of a launch site with no Python location.
pub const UNRESOLVED: &str = "unresolved";

/// How many rows a stage shows.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct KernelTableOptions {
    /// Hide rows below this share of their stage's GPU time (per row, after `limit`).
    pub min_share_pct: f64,
    /// Keep only the top N rows (0 = all).
    pub limit: usize,
}

impl Default for KernelTableOptions {
    fn default() -> Self {
        KernelTableOptions {
            min_share_pct: 1.0,
            limit: 0,
        }
    }
}

/// One trace with its links and stage split; several may feed one stage.
#[derive(Copy, Clone, Debug)]
pub struct StagedTrace<'a> {
    pub trace: &'a Trace,
    pub linked: &'a Linked,
    pub split: &'a StageSplit,
}

/// The kernel table of every stage present, in stage order (extend, decode, all).
pub fn kernel_tables(
    inputs: &[StagedTrace<'_>],
    locator: &Locator,
    families: &FamilyRules,
    opts: &KernelTableOptions,
) -> Vec<StageReport> {
    accumulate_stages(inputs, &StackSites::new(locator))
        .into_iter()
        .map(|(stage, acc)| acc.finish(families).into_report(stage, opts))
        .collect()
}

/// The cut tables of [`kernel_tables`] and, from the same sums, every row of every
/// stage: the fuse matcher needs the small split kernels the cut hides.
pub fn kernel_tables_with_every_row<'a>(
    inputs: &[StagedTrace<'a>],
    sites: &StackSites<'a>,
    families: &FamilyRules,
    opts: &KernelTableOptions,
) -> (Vec<StageReport>, Vec<StageReport>) {
    let uncut = KernelTableOptions {
        min_share_pct: 0.0,
        limit: 0,
    };
    accumulate_stages(inputs, sites)
        .into_iter()
        .map(|(stage, acc)| {
            // Rows finished once for both tables: finishing (the family match) is the
            // cost per distinct kernel name, and a trace may hold a million names.
            let finished = acc.finish(families);
            let every = finished.clone().into_report(stage, &uncut);
            (finished.into_report(stage, opts), every)
        })
        .unzip()
}

/// Sums every trace's GPU ops into per-stage rows, in stage order.
fn accumulate_stages<'a>(
    inputs: &[StagedTrace<'a>],
    sites: &StackSites<'a>,
) -> Vec<(Stage, StageAccumulator)> {
    let mut stages: HashMap<Stage, StageAccumulator> = HashMap::default();
    for input in inputs {
        accumulate_trace(input, sites, &mut stages);
    }
    let mut ordered: Vec<(Stage, StageAccumulator)> = stages.into_iter().collect();
    ordered.sort_by_key(|(stage, _)| stage.order());
    ordered
}

/// One kernel row while it is being summed.
#[derive(Clone, Default)]
struct RowAccumulator {
    /// Order of first appearance in the stage, to break time ties.
    first_seen: usize,
    total_ns: SumNs,
    launches: u64,
    raw_names: Vec<String>,
    /// GPU time by launch site: in all, and by [`SiteSource`] (in [`SOURCES`] order).
    site_ns: HashMap<Site, (SumNs, [SumNs; SOURCES.len()])>,
    /// GPU time resolved from the mapping trace, by [`PairKind`] (in `PairKind::ALL` order).
    mapping_ns: [SumNs; PairKind::ALL.len()],
    /// GPU time by the launching op's `Input Dims` text.
    dims_ns: HashMap<String, SumNs>,
    cpu_op_counts: HashMap<String, u64>,
    /// GPU time by launch site, then by CPU op ("" for none): the fuse matcher counts
    /// only the launches whose op a pattern does not exclude.
    site_op_ns: HashMap<Site, HashMap<String, SumNs>>,
}

#[derive(Clone, Default)]
struct StageAccumulator {
    total_ns: SumNs,
    rows: HashMap<String, RowAccumulator>,
    unresolved_ns: SumNs,
    unlinked: u64,
    graph_replays: u64,
    notes: Vec<String>,
}

/// The GPU pid every table covers: the one with the most GPU time (first seen on a tie).
pub fn busiest_gpu_pid(trace: &Trace) -> Option<Sym> {
    choose_gpu_pid(trace).map(|(pid, _)| pid)
}

/// The GPU pid a trace's table covers: the one with the most GPU time (first seen on a
/// tie), and a note for each other GPU pid left out.
fn choose_gpu_pid(trace: &Trace) -> Option<(Sym, Vec<String>)> {
    let mut per_pid: Vec<(Sym, SumNs, u64)> = Vec::new();
    for op in &trace.gpu_ops {
        match per_pid.iter_mut().find(|(pid, _, _)| *pid == op.pid) {
            Some(entry) => {
                entry.1 += SumNs::from(op.dur);
                entry.2 += 1;
            }
            None => per_pid.push((op.pid, SumNs::from(op.dur), 1)),
        }
    }
    let &(chosen, _, _) = per_pid
        .iter()
        .reduce(|best, x| if x.1 > best.1 { x } else { best })?;
    let notes = per_pid
        .iter()
        .filter(|(pid, _, _)| *pid != chosen)
        .map(|&(pid, ns, count)| {
            format!(
                "{}: GPU pid {} left out ({count} GPU ops, {:.2} ms); the table covers GPU pid {}",
                trace.path.display(),
                trace.name(pid),
                ns as f64 / 1e6,
                trace.name(chosen)
            )
        })
        .collect();
    Some((chosen, notes))
}

fn accumulate_trace<'a>(
    input: &StagedTrace<'a>,
    sites: &StackSites<'a>,
    stages: &mut HashMap<Stage, StageAccumulator>,
) {
    let StagedTrace {
        trace,
        linked,
        split,
    } = *input;
    let Some((gpu_pid, pid_notes)) = choose_gpu_pid(trace) else {
        return;
    };
    let mut canonical_of: HashMap<Sym, String> = HashMap::default();
    let mut site_of: HashMap<StackId, Option<Site>> = HashMap::default();
    let unresolved = Site {
        location: UNRESOLVED.to_string(),
        module: None,
        launch_frame: None,
    };
    let mut touched: Vec<Stage> = Vec::new();
    for (i, op) in trace.gpu_ops.iter().enumerate() {
        if op.pid != gpu_pid {
            continue;
        }
        let stage = split.stages.get(i).copied().unwrap_or(Stage::All);
        let site = linked.sites.get(i).cloned().unwrap_or_default();
        if !touched.contains(&stage) {
            touched.push(stage);
        }
        let acc = stages.entry(stage).or_default();
        acc.total_ns += SumNs::from(op.dur);
        acc.unlinked += u64::from(site.runtime.is_none() && site.cpu_op.is_none());
        // Replays resolved to their own site (a capture, the mapping) are told apart by
        // their source; this note is for those still charged to the graph launch.
        acc.graph_replays += u64::from(site.source == SiteSource::GraphLaunch);

        let canonical = canonical_of
            .entry(op.name)
            .or_insert_with(|| canonical_name(trace.name(op.name)));
        let location: Option<&Site> = match site.stack {
            Some(id) => site_of
                .entry(id)
                .or_insert_with(|| sites.site(trace, linked, id))
                .as_ref(),
            None => None,
        };
        if location.is_none() {
            acc.unresolved_ns += SumNs::from(op.dur);
        }
        // Look up before inserting: one String allocation per row, not per op.
        if !acc.rows.contains_key(canonical.as_str()) {
            let first_seen = acc.rows.len();
            let row = RowAccumulator {
                first_seen,
                ..Default::default()
            };
            acc.rows.insert(canonical.clone(), row);
        }
        let Some(row) = acc.rows.get_mut(canonical.as_str()) else {
            continue;
        };
        row.total_ns += SumNs::from(op.dur);
        row.launches += 1;
        let raw = trace.name(op.name);
        if !row.raw_names.iter().any(|r| r == raw) {
            row.raw_names.push(raw.to_string());
        }
        let location = location.unwrap_or(&unresolved);
        let source = SOURCES.iter().position(|&s| s == site.source).unwrap_or(0);
        match row.site_ns.get_mut(location) {
            Some((ns, by_source)) => {
                *ns += SumNs::from(op.dur);
                by_source[source] += SumNs::from(op.dur);
            }
            None => {
                let mut by_source = [0; SOURCES.len()];
                by_source[source] = SumNs::from(op.dur);
                row.site_ns
                    .insert(location.clone(), (SumNs::from(op.dur), by_source));
            }
        }
        if let Some(kind) = site.mapping_pair {
            if let Some(k) = PairKind::ALL.iter().position(|&p| p == kind) {
                row.mapping_ns[k] += SumNs::from(op.dur);
            }
        }
        if let Some(dims) = site.input_dims {
            add_to(&mut row.dims_ns, trace.name(dims), SumNs::from(op.dur));
        }
        if let Some(cpu_op) = site.cpu_op {
            add_to(&mut row.cpu_op_counts, trace.name(cpu_op), 1);
        }
        if !row.site_op_ns.contains_key(location) {
            row.site_op_ns.insert(location.clone(), HashMap::default());
        }
        if let Some(ops) = row.site_op_ns.get_mut(location) {
            let cpu_op = site.cpu_op.map_or("", |c| trace.name(c));
            add_to(ops, cpu_op, SumNs::from(op.dur));
        }
    }
    // Notes about this trace go to every stage it fed; the split's notes concern
    // kernels left in `all`, or (a stage from the file name) the one stage it names.
    for stage in touched {
        let acc = stages.entry(stage).or_default();
        acc.notes.extend(pid_notes.iter().cloned());
        if stage == Stage::All || split.signal == crate::trace::stage::StageSignal::Path {
            acc.notes.extend(split.notes.iter().cloned());
        }
    }
}

/// `map[key] += amount`, allocating the key only when it is new.
fn add_to<T: std::ops::AddAssign + Default>(map: &mut HashMap<String, T>, key: &str, amount: T) {
    match map.get_mut(key) {
        Some(value) => *value += amount,
        None => {
            map.insert(key.to_string(), amount);
        }
    }
}

fn percent(part: SumNs, whole: SumNs) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// A stage's rows, finished and in table order, before any cut.
#[derive(Clone)]
struct FinishedStage {
    total_ns: SumNs,
    all_rows: Vec<KernelRow>,
    unresolved_ns: SumNs,
    unlinked: u64,
    graph_replays: u64,
    notes: Vec<String>,
}

impl StageAccumulator {
    fn finish(self, families: &FamilyRules) -> FinishedStage {
        let total = self.total_ns;
        let mut rows: Vec<(String, RowAccumulator)> = self.rows.into_iter().collect();
        rows.sort_by(|(_, a), (_, b)| {
            b.total_ns
                .cmp(&a.total_ns)
                .then(a.first_seen.cmp(&b.first_seen))
        });
        FinishedStage {
            total_ns: total,
            all_rows: rows
                .into_iter()
                .map(|(name, row)| finish_row(name, row, total, families))
                .collect(),
            unresolved_ns: self.unresolved_ns,
            unlinked: self.unlinked,
            graph_replays: self.graph_replays,
            notes: self.notes,
        }
    }
}

impl FinishedStage {
    fn into_report(self, stage: Stage, opts: &KernelTableOptions) -> StageReport {
        let total = self.total_ns;
        let all_rows = self.all_rows;
        let summary = summary_line(&all_rows, total);
        let mut notes = self.notes;
        let limit = if opts.limit == 0 {
            all_rows.len()
        } else {
            opts.limit.min(all_rows.len())
        };
        let (kept, beyond_limit) = all_rows.split_at(limit);
        if !beyond_limit.is_empty() {
            notes.push(format!(
                "{} kernels beyond the top {} hidden ({:.1}% of stage time)",
                beyond_limit.len(),
                opts.limit,
                sum_share(beyond_limit)
            ));
        }
        let (shown, below): (Vec<KernelRow>, Vec<KernelRow>) = kept
            .iter()
            .cloned()
            .partition(|row| row.share_pct >= opts.min_share_pct);
        if !below.is_empty() {
            notes.push(format!(
                "{} kernels below {:.1}% hidden ({:.1}% of stage time)",
                below.len(),
                opts.min_share_pct,
                sum_share(&below)
            ));
        }
        if self.unresolved_ns > 0 {
            notes.push(format!(
                "{:.1}% of stage GPU time has no Python location (unresolved)",
                percent(self.unresolved_ns, total)
            ));
        }
        if self.unlinked > 0 {
            notes.push(format!(
                "{} GPU ops not linked to a launch (no runtime call or cpu_op)",
                self.unlinked
            ));
        }
        if self.graph_replays > 0 {
            notes.push(format!(
                "{} GPU ops replayed from CUDA/HIP graphs: their location is the graph launch",
                self.graph_replays
            ));
        }
        StageReport {
            stage: stage.label().to_string(),
            total_gpu_time_us: total as f64 / 1000.0,
            summary,
            kernels: shown,
            overlap: Vec::new(),
            fusions: Vec::new(),
            similarity: Vec::new(),
            timeline: None,
            sol: None,
            notes,
            layers: None,
            roles: Vec::new(),
        }
    }
}

/// A row's `matched_by` (the pair kind with the most mapping-resolved time; the first in
/// `PairKind::ALL` order on a tie) and `mapping_confidence` (the kinds' confidences
/// weighted by their time), or neither when no launch was resolved from the mapping.
fn mapping_pairs(ns: &[SumNs; PairKind::ALL.len()]) -> (Option<String>, Option<f64>) {
    let total: SumNs = ns.iter().sum();
    if total == 0 {
        return (None, None);
    }
    let most = (0..ns.len()).rev().max_by_key(|&k| ns[k]).unwrap_or(0);
    let weighted: f64 = PairKind::ALL
        .iter()
        .zip(ns)
        .map(|(kind, &t)| kind.confidence() * t as f64)
        .sum();
    (
        Some(PairKind::ALL[most].matched_by().to_string()),
        Some(weighted / total as f64),
    )
}

fn sum_share(rows: &[KernelRow]) -> f64 {
    rows.iter().map(|r| r.share_pct).sum()
}

fn finish_row(
    name: String,
    row: RowAccumulator,
    stage_ns: SumNs,
    families: &FamilyRules,
) -> KernelRow {
    // The source with the most of a site's time (first in SOURCES order on a tie).
    // Each site with the source of the most of its time (first in SOURCES order on a tie).
    let mut sites: Vec<(Site, SumNs, &'static str)> = row
        .site_ns
        .into_iter()
        .map(|(location, (ns, by_source))| {
            let best = (0..SOURCES.len())
                .rev()
                .max_by_key(|&s| by_source[s])
                .unwrap_or(0);
            (location, ns, SOURCES[best].as_str())
        })
        .collect();
    sites.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.location.cmp(&b.0.location))
            .then_with(|| a.0.module.cmp(&b.0.module))
            .then_with(|| a.0.launch_frame.cmp(&b.0.launch_frame))
    });
    let mut cpu_ops: Vec<(String, u64)> = row.cpu_op_counts.into_iter().collect();
    cpu_ops.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut launch_mix = Vec::new();
    for (site, (location, _, _)) in sites.iter().enumerate() {
        let Some(ops) = row.site_op_ns.get(location) else {
            continue;
        };
        let mut ops: Vec<(&String, &SumNs)> = ops.iter().collect();
        ops.sort();
        for (op, ns) in ops {
            launch_mix.push(LaunchShare {
                site,
                cpu_op: cpu_ops.iter().position(|(name, _)| name == op),
                share_pct: percent(*ns, row.total_ns),
            });
        }
    }
    let python_locations: Vec<SiteShare> = sites
        .into_iter()
        .map(|(site, ns, source)| SiteShare {
            launch_site_source: source.to_string(),
            share_pct: percent(ns, row.total_ns),
            location: site.location,
            module: site.module,
            launch_frame: site.launch_frame,
        })
        .collect();
    let input_dims = row
        .dims_ns
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(dims, _)| dims);
    let (matched_by, mapping_confidence) = mapping_pairs(&row.mapping_ns);
    KernelRow {
        family: families.family_of(&name).to_string(),
        matched_by,
        mapping_confidence,
        gpu_time_us: row.total_ns as f64 / 1000.0,
        share_pct: percent(row.total_ns, stage_ns),
        launches: row.launches,
        raw_names: row.raw_names,
        launch_site_source: python_locations.first().map_or_else(
            || SiteSource::Eager.as_str().to_string(),
            |s| s.launch_site_source.clone(),
        ),
        python_locations,
        input_dims,
        cpu_ops: cpu_ops.into_iter().map(|(op, _)| op).collect(),
        launch_mix,
        name,
        roofline: None,
        role: None,
    }
}

/// Longest kernel name the one-line summary shows.
const SUMMARY_NAME_MAX: usize = 64;

/// The short form of a kernel name, cut to [`SUMMARY_NAME_MAX`] characters with `…`.
fn summary_kernel_name(name: &str) -> String {
    let short = short_name(name, SHORT_ARGS_MAX);
    if short.chars().count() <= SUMMARY_NAME_MAX {
        return short;
    }
    let mut cut: String = short.chars().take(SUMMARY_NAME_MAX - 1).collect();
    cut.push('…');
    cut
}

/// "gemm 41.2%, attention 22.0%, communication 9.1% of 12.34 ms GPU time; top kernel
/// nvjet_... 27.0%": the three largest families and the largest kernel.
fn summary_line(rows: &[KernelRow], total_ns: SumNs) -> String {
    if rows.is_empty() {
        return "no GPU work in this stage".to_string();
    }
    let mut by_family: Vec<(&str, f64)> = Vec::new();
    for row in rows {
        match by_family.iter_mut().find(|(f, _)| *f == row.family) {
            Some(entry) => entry.1 += row.share_pct,
            None => by_family.push((&row.family, row.share_pct)),
        }
    }
    by_family.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let families: Vec<String> = by_family
        .iter()
        .take(3)
        .map(|(family, share)| format!("{family} {share:.1}%"))
        .collect();
    let top = &rows[0];
    format!(
        "{} of {:.2} ms GPU time; top kernel {} {:.1}%",
        families.join(", "),
        total_ns as f64 / 1e6,
        summary_kernel_name(&top.name),
        top.share_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load_families;
    use crate::plugins::Attribution;
    use crate::testutil::TraceFixture;
    use crate::trace::link::link;
    use crate::trace::stage::{split, StageHint};

    fn vllm_locator() -> Locator {
        Locator::new(&Attribution {
            source_roots: vec!["vllm/".to_string()],
            wrapper_frames: Default::default(),
        })
    }

    #[test]
    fn stack_sites_place_each_stack_as_the_locator_does_and_tell_two_links_apart() {
        let trace = sample_trace();
        let linked = link(&trace);
        // The same stacks in the other order: each id names another stack there.
        let mut reversed = linked.clone();
        reversed.stacks.reverse();
        let locator = vllm_locator();
        let sites = StackSites::new(&locator);
        let alone = |links: &Linked, id: StackId| {
            let frames: Vec<&str> = links.stack(id).iter().map(|&s| trace.name(s)).collect();
            locator.site(&frames)
        };
        let ids = 0..linked.stacks.len() as StackId;
        assert!(ids.len() >= 2, "{} stacks", ids.len());
        assert_ne!(alone(&linked, 0), alone(&reversed, 0));
        for round in 0..2 {
            for id in ids.clone() {
                for links in [&linked, &reversed] {
                    let placed = sites.site(&trace, links, id);
                    assert_eq!(placed, alone(links, id), "stack {id}, round {round}");
                }
            }
        }
    }

    fn tables(trace: &Trace, path_stage: Stage, opts: &KernelTableOptions) -> Vec<StageReport> {
        let linked = link(trace);
        let split = split(trace, &linked, path_stage, &mut |name: &str| {
            if name.contains("decode") {
                StageHint::Decode
            } else if name.contains("prefill") {
                StageHint::Extend
            } else {
                StageHint::Unknown
            }
        });
        let families = load_families(None).unwrap();
        kernel_tables(
            &[StagedTrace {
                trace,
                linked: &linked,
                split: &split,
            }],
            &vllm_locator(),
            &families,
            opts,
        )
    }

    /// Two GEMM launches from linear.py, one from a second site, an attention kernel
    /// and a small memset; times in ns.
    fn sample_trace() -> Trace {
        let mut b = TraceFixture::new();
        b.frame(
            "vllm/model_executor/layers/linear.py(510): forward",
            0,
            10_000,
            1,
        );
        b.cpu_op("aten::mm", 100, 1_000, 1, Some(1));
        b.with_shapes("[[2, 3], [3, 4]]", "[\"float\", \"float\"]");
        b.runtime("cudaLaunchKernel", 200, 50, 1, 10, Some(1));
        b.runtime("cudaLaunchKernel", 400, 50, 1, 11, Some(1));
        b.frame("vllm/attention/layer.py(300): forward", 20_000, 10_000, 1);
        b.cpu_op("aten::mm", 20_100, 1_000, 1, Some(2));
        b.runtime("cudaLaunchKernel", 20_200, 50, 1, 12, Some(2));
        b.cpu_op("vllm::unified_attention", 20_500, 1_000, 1, Some(3));
        b.runtime("cudaLaunchKernel", 20_600, 50, 1, 13, Some(3));
        b.kernel("void gemm_kernel<1>(float*)", 50_000, 3_000, Some(10), None);
        b.kernel("void gemm_kernel<1>(int*)", 54_000, 2_500, Some(11), None);
        b.kernel("void gemm_kernel<1>(float*)", 57_000, 1_500, Some(12), None);
        b.kernel("flash_fwd_kernel", 60_000, 2_980, Some(13), None);
        b.kernel("Memset (Device)", 63_000, 20, None, None);
        b.build()
    }

    #[test]
    fn rows_sum_exact_times_launches_sites_and_cpu_ops() {
        let reports = tables(
            &sample_trace(),
            Stage::Decode,
            &KernelTableOptions::default(),
        );
        assert_eq!(reports.len(), 1);
        let r = &reports[0];
        assert_eq!(r.stage, "decode");
        assert_eq!(r.total_gpu_time_us, 10.0);
        let gemm = &r.kernels[0];
        assert_eq!(gemm.name, "void gemm_kernel<1>");
        assert_eq!(
            gemm.raw_names,
            ["void gemm_kernel<1>(float*)", "void gemm_kernel<1>(int*)"]
        );
        assert_eq!(gemm.family, "gemm");
        assert_eq!(gemm.gpu_time_us, 7.0);
        assert_eq!(gemm.share_pct, 70.0);
        assert_eq!(gemm.launches, 3);
        assert_eq!(
            gemm.python_locations,
            [
                SiteShare {
                    module: None,
                    launch_frame: None,
                    location: "vllm/model_executor/layers/linear.py:510 forward".into(),
                    share_pct: 5_500.0 / 7_000.0 * 100.0,
                    launch_site_source: "eager".into(),
                },
                SiteShare {
                    module: None,
                    launch_frame: None,
                    location: "vllm/attention/layer.py:300 forward".into(),
                    share_pct: 1_500.0 / 7_000.0 * 100.0,
                    launch_site_source: "eager".into(),
                },
            ]
        );
        assert_eq!(gemm.cpu_ops, ["aten::mm"]);
        assert_eq!(gemm.launch_site_source, "eager");
        // The shapes of the launches with the most time (5.5 of 7 us); the second
        // site's op recorded none.
        assert_eq!(gemm.input_dims.as_deref(), Some("[[2, 3], [3, 4]]"));
        // Site by CPU op: both sites launched through aten::mm, time as the sites'.
        assert_eq!(
            gemm.launch_mix,
            [
                LaunchShare {
                    site: 0,
                    cpu_op: Some(0),
                    share_pct: 5_500.0 / 7_000.0 * 100.0
                },
                LaunchShare {
                    site: 1,
                    cpu_op: Some(0),
                    share_pct: 1_500.0 / 7_000.0 * 100.0
                },
            ]
        );
        let attention = &r.kernels[1];
        assert_eq!(attention.family, "attention");
        assert_eq!(attention.gpu_time_us, 2.98);
        assert_eq!(attention.cpu_ops, ["vllm::unified_attention"]);
        // The memset (0.2%) is below the 1% cut.
        assert_eq!(r.kernels.len(), 2);
        assert_eq!(
            r.notes,
            [
                "1 kernels below 1.0% hidden (0.2% of stage time)",
                "0.2% of stage GPU time has no Python location (unresolved)",
                "1 GPU ops not linked to a launch (no runtime call or cpu_op)",
            ]
        );
        assert_eq!(
            r.summary,
            "gemm 70.0%, attention 29.8%, memory 0.2% of 0.01 ms GPU time; top kernel gemm_kernel<1> 70.0%"
        );
    }

    #[test]
    fn summary_cuts_long_kernel_names() {
        let long = format!("Cijk_Alik_{}", "X".repeat(100));
        let cut = summary_kernel_name(&long);
        assert_eq!(cut.chars().count(), SUMMARY_NAME_MAX);
        assert!(
            cut.starts_with("Cijk_Alik_XX") && cut.ends_with('…'),
            "{cut}"
        );
        assert_eq!(summary_kernel_name("nvjet_tst_64x64"), "nvjet_tst_64x64");
    }

    #[test]
    fn limit_applies_before_the_share_cut() {
        let opts = KernelTableOptions {
            min_share_pct: 0.0,
            limit: 1,
        };
        let reports = tables(&sample_trace(), Stage::All, &opts);
        let r = &reports[0];
        assert_eq!(r.stage, "all");
        assert_eq!(r.kernels.len(), 1);
        // The split's note lands in the `all` section, first.
        assert_eq!(
            r.notes[..2],
            [
                "no stage markers found: prefill and decode are mixed in one section",
                "2 kernels beyond the top 1 hidden (30.0% of stage time)",
            ]
        );
    }

    #[test]
    fn stages_in_order_and_other_gpu_pids_left_out() {
        let mut b = TraceFixture::new();
        b.path("/t/x.json");
        b.annotation("decode step", 1_000, 1_000, true);
        b.annotation("prefill step", 5_000, 1_000, true);
        b.kernel("decode_k", 1_100, 300, None, None);
        b.kernel("prefill_k", 5_100, 500, None, None);
        b.gpu_op_on("gpu1", "other_gpu", 5_100, 100, None, None);
        let reports = tables(&b.build(), Stage::All, &KernelTableOptions::default());
        let labels: Vec<&str> = reports.iter().map(|r| r.stage.as_str()).collect();
        assert_eq!(labels, ["extend/prefill", "decode"]);
        assert_eq!(reports[0].kernels[0].name, "prefill_k");
        assert_eq!(reports[0].total_gpu_time_us, 0.5);
        assert_eq!(reports[1].kernels[0].name, "decode_k");
        assert!(reports[0].notes.contains(
            &"/t/x.json: GPU pid gpu1 left out (1 GPU ops, 0.00 ms); the table covers GPU pid gpu"
                .to_string()
        ));
    }

    #[test]
    fn graph_replays_count_each_kernel_and_share_the_launch_site() {
        let mut b = TraceFixture::new();
        b.frame(
            "vllm/v1/worker/gpu_model_runner.py(2000): execute_model",
            0,
            10_000,
            1,
        );
        b.runtime("cudaGraphLaunch", 100, 500, 1, 77, None);
        for i in 0..4 {
            b.kernel("nvjet_tst_64x64", 1_000 + i * 100, 50, Some(77), None);
        }
        let reports = tables(&b.build(), Stage::Decode, &KernelTableOptions::default());
        let row = &reports[0].kernels[0];
        assert_eq!(row.launches, 4);
        assert_eq!(row.gpu_time_us, 0.2);
        assert_eq!(row.cpu_ops, ["cudaGraphLaunch"]);
        assert_eq!(row.launch_site_source, "graph-launch");
        assert_eq!(row.python_locations[0].launch_site_source, "graph-launch");
        assert_eq!(row.input_dims, None);
        assert_eq!(
            row.python_locations[0].location,
            "vllm/v1/worker/gpu_model_runner.py:2000 execute_model"
        );
        assert_eq!(
            reports[0].notes,
            ["4 GPU ops replayed from CUDA/HIP graphs: their location is the graph launch"]
        );
    }
}
