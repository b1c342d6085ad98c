//! The model's decoder layers and the roles of its kernels, per stage:
//! (traces, stage split, catalog) -> `report::model::{StageLayers, RoleRow}`.
//!
//! ```text
//! stage's steps (the timeline's, analyze::timeline::stage_steps)
//!   per step: kernels in GPU start order --period--> prologue | layer x count | epilogue
//!   steps with the stage's most common (count, period): per-layer times summed
//! stage's GPU ops --roles (catalog/roles.toml)--> time, share and launches per role
//! ```
//!
//! Layers come from the kernel sequence alone, so they are found in eager traces and
//! inside graph replays alike; roles use the launch stack's `nn.Module:` frames where the
//! launch site has them (eager launches, or replayed kernels whose capture is known) and
//! the kernel family otherwise. Every time is an exact sum of integer nanoseconds:
//! layers + prologue + epilogue = the counted steps' kernel time.

mod period;
mod roles;

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use crate::analyze::kernels::{busiest_gpu_pid, StagedTrace};
use crate::analyze::timeline::stage_steps;
use crate::catalog::{FamilyRules, RoleRules, StepCatalog};
use crate::report::model::{LayerRole, LayerRow, RoleRow, StageLayers, StageReport};
use crate::trace::event::{GpuKind, Sym};
use crate::trace::model_config::LayerCount;
use crate::trace::names::canonical_name;
use crate::trace::stage::Stage;

use period::{find_period, Kernel};
use roles::RoleLabels;

/// Exact sums of durations (i128: no hostile trace overflows them).
type SumNs = i128;

/// A layer this far (as a fraction) from the median layer time is an outlier.
const OUTLIER_FRACTION: f64 = 0.25;

/// What the layer analysis reads besides the traces.
#[derive(Copy, Clone, Debug)]
pub(crate) struct LayerInputs<'a> {
    pub families: &'a FamilyRules,
    pub roles: &'a RoleRules,
    /// Step boundaries, as the timeline uses them.
    pub steps: &'a StepCatalog,
    /// `num_hidden_layers` of the model, when known.
    pub expected: Option<&'a LayerCount>,
}

/// One stage's layers (if any step repeats a layer) and role table.
#[derive(Clone, Debug, Default)]
pub(crate) struct StageParts {
    pub layers: Option<StageLayers>,
    pub roles: Vec<RoleRow>,
    /// Per kernel-table row (canonical name), the role of the most of its GPU time, when
    /// that is not the fallback (`KernelRow.role`).
    pub kernel_roles: HashMap<String, String>,
}

/// One step split into layers, in exact ns.
#[derive(Clone, Debug)]
struct StepLayers {
    count: usize,
    period: usize,
    prologue_kernels: usize,
    epilogue_kernels: usize,
    prologue: SumNs,
    epilogue: SumNs,
    graph_replay: SumNs,
    layers: Vec<SumNs>,
    /// Per layer, its kernel time per role (indexed by the catalog's role order).
    layer_roles: Vec<Vec<SumNs>>,
    moe: Vec<bool>,
}

/// Per stage, everything the traces of that stage contributed.
#[derive(Default)]
struct StageAccumulator {
    steps: Vec<StepLayers>,
    /// Steps with no repeating stretch.
    no_period: usize,
    /// GPU time and launches per role.
    roles: Vec<(SumNs, u64)>,
    /// GPU time per role of each canonical kernel name (indexed by role).
    kernel_roles: HashMap<String, Vec<SumNs>>,
    total: SumNs,
}

/// The layers and roles of every stage present, in stage order.
pub(crate) fn stage_layers(
    inputs: &[StagedTrace<'_>],
    options: &LayerInputs<'_>,
) -> Vec<(Stage, StageParts)> {
    let mut stages: Vec<(Stage, StageAccumulator)> = Vec::new();
    for input in inputs {
        add_trace(input, options, &mut stages);
    }
    stages.sort_by_key(|(stage, _)| stage.order());
    stages
        .into_iter()
        .map(|(stage, acc)| (stage, finish(acc, options)))
        .collect()
}

/// Puts each stage's layers and roles on its report.
pub(crate) fn attach(
    mut stages: Vec<StageReport>,
    parts: Vec<(Stage, StageParts)>,
) -> Vec<StageReport> {
    for (stage, part) in parts {
        if let Some(report) = stages.iter_mut().find(|s| s.stage == stage.label()) {
            report.layers = part.layers;
            report.roles = part.roles;
            for row in &mut report.kernels {
                row.role = part.kernel_roles.get(&row.name).cloned();
            }
        }
    }
    stages
}

fn accumulator(stages: &mut Vec<(Stage, StageAccumulator)>, stage: Stage) -> &mut StageAccumulator {
    let i = match stages.iter().position(|(s, _)| *s == stage) {
        Some(i) => i,
        None => {
            stages.push((stage, StageAccumulator::default()));
            stages.len() - 1
        }
    };
    &mut stages[i].1
}

/// Adds one trace's steps and role times to its stages.
fn add_trace(
    input: &StagedTrace<'_>,
    options: &LayerInputs<'_>,
    stages: &mut Vec<(Stage, StageAccumulator)>,
) {
    let StagedTrace {
        trace,
        linked,
        split,
    } = *input;
    let Some(gpu_pid) = busiest_gpu_pid(trace) else {
        return;
    };
    let mut labels = RoleLabels::new(trace, linked, options.families, options.roles);
    let role_count = options.roles.roles.len();

    // Roles over every GPU op the kernel table counts, so shares are of its total; per
    // name too (one entry per distinct name, not per op), for the kernel rows' roles.
    let mut name_roles: FxHashMap<(Stage, Sym), Vec<SumNs>> = FxHashMap::default();
    for (i, op) in trace.gpu_ops.iter().enumerate() {
        if op.pid != gpu_pid {
            continue;
        }
        let stage = split.stages.get(i).copied().unwrap_or(Stage::All);
        let role = labels.role(i);
        let acc = accumulator(stages, stage);
        if acc.roles.is_empty() {
            acc.roles = vec![(0, 0); role_count];
        }
        let slot = &mut acc.roles[role as usize];
        slot.0 += SumNs::from(op.dur);
        slot.1 += 1;
        acc.total += SumNs::from(op.dur);
        name_roles
            .entry((stage, op.name))
            .or_insert_with(|| vec![0; role_count])[role as usize] += SumNs::from(op.dur);
    }
    for ((stage, name), times) in name_roles {
        let acc = accumulator(stages, stage);
        let row = acc
            .kernel_roles
            .entry(canonical_name(trace.name(name)))
            .or_insert_with(|| vec![0; role_count]);
        for (sum, t) in row.iter_mut().zip(times) {
            *sum += t;
        }
    }

    let mut sequence = SequenceIds::default();
    for (stage, steps) in stage_steps(input, options.families, options.steps) {
        let acc = accumulator(stages, stage);
        for step in steps {
            let mut kernels: Vec<u32> = step
                .into_iter()
                .filter(|&op| trace.gpu_ops.at(op as usize).kind == GpuKind::Kernel)
                .collect();
            kernels.sort_by_key(|&op| (trace.gpu_ops.ts(op as usize), op));
            // Roles come from the (name, stack) cache: nothing is stored per op.
            let roles: Vec<u16> = kernels.iter().map(|&op| labels.role(op as usize)).collect();
            let seen: Vec<Kernel> = kernels
                .iter()
                .zip(&roles)
                .map(|(&op, &role)| {
                    let name = trace.gpu_ops.at(op as usize).name;
                    Kernel {
                        name: sequence.name_id(trace, name),
                        family: sequence.family_id(trace, name, options.families),
                        opens_layer: options.roles.layer_opens_with.contains(&role),
                    }
                })
                .collect();
            let Some(found) = find_period(&seen) else {
                acc.no_period += 1;
                continue;
            };
            let dur = |op: u32| SumNs::from(trace.gpu_ops.at(op as usize).dur);
            let replayed = |op: u32| {
                linked
                    .sites
                    .get(op as usize)
                    .is_some_and(|s| s.graph_replay)
            };
            let layers_end = found.start + found.count * found.period;
            let layers: Vec<&[u32]> = kernels[found.start..layers_end]
                .chunks(found.period)
                .collect();
            let layer_roles: Vec<&[u16]> = roles[found.start..layers_end]
                .chunks(found.period)
                .collect();
            let role_times = |layer: &[u32], of: &[u16]| {
                let mut times: Vec<SumNs> = vec![0; role_count];
                for (&op, &role) in layer.iter().zip(of) {
                    if let Some(t) = times.get_mut(role as usize) {
                        *t += dur(op);
                    }
                }
                times
            };
            acc.steps.push(StepLayers {
                count: found.count,
                period: found.period,
                prologue_kernels: found.start,
                epilogue_kernels: kernels.len() - layers_end,
                prologue: kernels[..found.start].iter().map(|&op| dur(op)).sum(),
                epilogue: kernels[layers_end..].iter().map(|&op| dur(op)).sum(),
                graph_replay: kernels
                    .iter()
                    .filter(|&&op| replayed(op))
                    .map(|&op| dur(op))
                    .sum(),
                moe: layer_roles
                    .iter()
                    .map(|layer| layer.iter().any(|r| options.roles.moe_roles.contains(r)))
                    .collect(),
                layers: layers
                    .iter()
                    .map(|layer| layer.iter().map(|&op| dur(op)).sum())
                    .collect(),
                layer_roles: layers
                    .iter()
                    .zip(&layer_roles)
                    .map(|(layer, of)| role_times(layer, of))
                    .collect(),
            });
        }
    }
}

/// Distinct-name and family ids of the kernels the period search compares.
#[derive(Default)]
struct SequenceIds {
    names: FxHashMap<Sym, u32>,
    canonical: FxHashMap<String, u32>,
    families: FxHashMap<Sym, Option<u32>>,
    family_names: Vec<String>,
}

impl SequenceIds {
    /// One id per canonical name, so two raw spellings of one kernel compare equal.
    fn name_id(&mut self, trace: &crate::trace::event::Trace, name: Sym) -> u32 {
        if let Some(&id) = self.names.get(&name) {
            return id;
        }
        let canonical = canonical_name(trace.name(name));
        let next = self.canonical.len() as u32;
        let id = *self.canonical.entry(canonical).or_insert(next);
        self.names.insert(name, id);
        id
    }

    fn family_id(
        &mut self,
        trace: &crate::trace::event::Trace,
        name: Sym,
        families: &FamilyRules,
    ) -> Option<u32> {
        if let Some(&id) = self.families.get(&name) {
            return id;
        }
        let family = families.family_of(trace.name(name));
        let id =
            (family != "other").then(
                || match self.family_names.iter().position(|f| f == family) {
                    Some(i) => i as u32,
                    None => {
                        self.family_names.push(family.to_string());
                        (self.family_names.len() - 1) as u32
                    }
                },
            );
        self.families.insert(name, id);
        id
    }
}

/// The stage's layer table and role table from what its traces contributed.
fn finish(acc: StageAccumulator, options: &LayerInputs<'_>) -> StageParts {
    StageParts {
        layers: layer_table(&acc, options),
        roles: role_table(&acc, options.roles),
        kernel_roles: kernel_roles(&acc, options.roles),
    }
}

/// Each name's role with the most time (ties: the catalog's role order), the fallback
/// left out.
fn kernel_roles(acc: &StageAccumulator, rules: &RoleRules) -> HashMap<String, String> {
    acc.kernel_roles
        .iter()
        .filter_map(|(name, times)| {
            let (role, _) = times
                .iter()
                .enumerate()
                .max_by_key(|&(role, &ns)| (ns, std::cmp::Reverse(role)))?;
            (role != rules.fallback() as usize)
                .then(|| (name.clone(), rules.name(role as u16).to_string()))
        })
        .collect()
}

fn role_table(acc: &StageAccumulator, rules: &RoleRules) -> Vec<RoleRow> {
    let only_fallback = acc
        .roles
        .iter()
        .enumerate()
        .all(|(role, &(_, launches))| launches == 0 || role == rules.fallback() as usize);
    if only_fallback {
        return Vec::new();
    }
    let mut rows: Vec<(usize, SumNs, u64)> = acc
        .roles
        .iter()
        .enumerate()
        .filter(|(_, &(_, launches))| launches > 0)
        .map(|(role, &(ns, launches))| (role, ns, launches))
        .collect();
    // Most time first; ties in the catalog's role order.
    rows.sort_by_key(|&(role, ns, _)| (std::cmp::Reverse(ns), role));
    rows.into_iter()
        .map(|(role, ns, launches)| RoleRow {
            role: rules.name(role as u16).to_string(),
            gpu_time_us: us(ns),
            share_pct: pct(ns, acc.total),
            launches,
        })
        .collect()
}

fn layer_table(acc: &StageAccumulator, options: &LayerInputs<'_>) -> Option<StageLayers> {
    // The most common (count, period); on a tie the one that covers more kernels, then
    // the first seen.
    let mut shapes: Vec<((usize, usize), usize)> = Vec::new();
    for step in &acc.steps {
        let shape = (step.count, step.period);
        match shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, n)) => *n += 1,
            None => shapes.push((shape, 1)),
        }
    }
    let &((count, period), _) = shapes
        .iter()
        .enumerate()
        .max_by_key(|&(i, &((c, p), n))| (n, c * p, std::cmp::Reverse(i)))?
        .1;
    let counted: Vec<&StepLayers> = acc
        .steps
        .iter()
        .filter(|s| (s.count, s.period) == (count, period))
        .collect();
    let mut per_layer: Vec<SumNs> = vec![0; count];
    let role_count = options.roles.roles.len();
    let mut per_layer_role: Vec<Vec<SumNs>> = vec![vec![0; role_count]; count];
    let mut moe = vec![false; count];
    let (mut prologue, mut epilogue, mut graph_replay) = (0, 0, 0);
    for step in &counted {
        for (i, ns) in step.layers.iter().enumerate() {
            per_layer[i] += ns;
            moe[i] |= step.moe[i];
            for (sum, ns) in per_layer_role[i].iter_mut().zip(&step.layer_roles[i]) {
                *sum += ns;
            }
        }
        prologue += step.prologue;
        epilogue += step.epilogue;
        graph_replay += step.graph_replay;
    }
    let total: SumNs = per_layer.iter().sum::<SumNs>() + prologue + epilogue;
    let median = median(&per_layer);
    let rows = per_layer
        .iter()
        .enumerate()
        .map(|(index, &ns)| LayerRow {
            index,
            gpu_time_us: us(ns),
            share_pct: pct(ns, total),
            position: match index {
                0 => "first",
                i if i + 1 == count => "last",
                _ => "middle",
            }
            .to_string(),
            kind: if moe[index] { "moe" } else { "dense" }.to_string(),
            outlier: median > 0.0 && (ns as f64 - median).abs() > OUTLIER_FRACTION * median,
            roles: per_layer_role[index]
                .iter()
                .enumerate()
                .filter(|&(_, &ns)| ns > 0)
                .map(|(role, &ns)| LayerRole {
                    role: options.roles.name(role as u16).to_string(),
                    gpu_time_us: us(ns),
                })
                .collect(),
        })
        .collect();
    let steps_left_out = acc.steps.len() - counted.len() + acc.no_period;
    let mut notes = Vec::new();
    if let Some(expected) = options.expected {
        if expected.count != count as u64 {
            notes.push(format!(
                "{count} layers found per step, but the model has {} (num_hidden_layers, {}): the repeating stretch is not one decoder layer each",
                expected.count, expected.source
            ));
        }
    }
    if steps_left_out > 0 {
        notes.push(format!(
            "{steps_left_out} steps left out of the layer table: no repeating stretch, or not {count} layers of {period} kernels"
        ));
    }
    let first = counted.first()?;
    Some(StageLayers {
        count,
        period_kernels: period,
        expected_count: options.expected.map(|e| e.count),
        expected_source: options.expected.map(|e| e.source.clone()),
        steps: counted.len(),
        steps_left_out,
        total_us: us(total),
        prologue_kernels: first.prologue_kernels,
        prologue_us: us(prologue),
        epilogue_kernels: first.epilogue_kernels,
        epilogue_us: us(epilogue),
        graph_replay_us: us(graph_replay),
        median_layer_us: median / 1000.0,
        rows,
        notes,
    })
}

/// Median in ns (the mean of the middle two for an even count).
fn median(values: &[SumNs]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2] as f64,
        n => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
    }
}

fn us(ns: SumNs) -> f64 {
    ns as f64 / 1000.0
}

fn pct(ns: SumNs, total: SumNs) -> f64 {
    if total > 0 {
        100.0 * ns as f64 / total as f64
    } else {
        0.0
    }
}
