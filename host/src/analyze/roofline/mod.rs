//! The roofline: per kernel row, the FLOPs and bytes its launches must do, how fast it
//! did them against the device's roofs and what bounds it; per stage, the speed of light
//! against the measured time, and where the difference goes.
//!
//! ```text
//! GPU op --site--> innermost CPU op, its Input Dims / Input type   (trace::link)
//!        --catalog/roofline.toml--> formula and argument positions (catalog::roofline)
//!        --shapes::cost (+ the step annotation's sq/sk sums)--> FLOPs, bytes
//!        --summed per (stage, canonical kernel name)--> KernelRoofline, StageSol
//! ```
//!
//! One pass over the same GPU ops as the kernel table (the busiest GPU pid of each
//! trace), with shapes parsed once per distinct (CPU op, dims, types) text, so a launch
//! costs a few hash lookups and no allocation. A CPU op that launches several kernels
//! charges its FLOPs and bytes to the first one (the others get no shape): its cost is
//! the op's, and counting it per kernel would multiply it. Sums are exact integers
//! (`u128` FLOPs and bytes, `i128` ns); rates are computed from them at the end.

pub mod config_shapes;
pub mod formulas;
pub mod roof;
pub mod shapes;
pub mod steps;
#[cfg(test)]
mod tests;

use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::HashMap;

use crate::analyze::kernels::{busiest_gpu_pid, StagedTrace};
use crate::catalog::roofline::{OpFormula, RooflineOps};
use crate::report::model::{KernelRoofline, SolGap, SolLoss, StageReport, StageSol};
use crate::trace::event::{GpuKind, Sym, Trace};
use crate::trace::link::SiteSource;
use crate::trace::names::canonical_name;
use crate::trace::stage::Stage;
pub use config_shapes::ModelInputs;
use config_shapes::{config_shapes, ConfigShapes};
use roof::{bound, BoundFacts};
pub use roof::{roof_of, Roof};
use shapes::{parse_args, Arg, Context, DtypeClass, LaunchCost};
use steps::StepIndex;

/// How many kernel rows the SOL gap names.
const LOSS_TOP: usize = 3;

/// Where a row's shapes came from (`KernelRoofline::shape_source`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ShapeSource {
    InputDims,
    StepAnnotation,
    ModelConfig,
    KinetoBytes,
}

impl ShapeSource {
    fn as_str(self) -> &'static str {
        match self {
            ShapeSource::InputDims => "input-dims",
            ShapeSource::StepAnnotation => "step-annotation",
            ShapeSource::ModelConfig => "model-config",
            ShapeSource::KinetoBytes => "kineto-bytes",
        }
    }
}

/// One kernel row while its launches are summed.
#[derive(Clone, Debug, Default)]
struct RowSums {
    total_ns: i128,
    launches: u64,
    geometry_ns: i128,
    under_filled_ns: i128,
    under_filled_launches: u64,
    shaped_ns: i128,
    shaped_launches: u64,
    flops: u128,
    bytes: u128,
    /// Shaped time per dtype class (index of `CLASSES`, the last slot: none).
    class_ns: [i128; CLASSES.len() + 1],
    dims_ns: i128,
    annotation_ns: i128,
    /// Shaped time whose shapes came from the model config.
    config_ns: i128,
    /// A memcpy/memset row: bytes from Kineto's `bytes` arg, outside the SOL line
    /// (host copies run over the host link, not HBM, and the SOL is over kernels).
    copy: bool,
}

const CLASSES: [DtypeClass; 6] = [
    DtypeClass::Fp32,
    DtypeClass::Bf16,
    DtypeClass::Fp16,
    DtypeClass::Fp8,
    DtypeClass::Fp4,
    DtypeClass::Int8,
];

fn class_slot(class: Option<DtypeClass>) -> usize {
    class
        .and_then(|c| CLASSES.iter().position(|&x| x == c))
        .unwrap_or(CLASSES.len())
}

/// One stage's rows, by canonical kernel name.
#[derive(Clone, Debug, Default)]
pub struct StageRoofline {
    rows: HashMap<String, RowSums>,
    /// Stage GPU time (all ops of the covered pid), for `covered_pct`.
    total_ns: i128,
}

/// The per-launch cost cache of one trace: (CPU op, dims, types, step, the output
/// element size its Concrete Inputs record) -> cost.
type CostKey = (Sym, Sym, Sym, Option<usize>, Option<u64>);

/// The `Concrete Inputs` of the CPU ops whose formula reads one (a GEMM row's
/// `out_dtype`), by (process, External id): empty, at the cost of a few lookups, for a
/// trace that runs none of them.
fn out_dtype_inputs(trace: &Trace, ops: &RooflineOps) -> FxHashMap<(Sym, u64), Sym> {
    let names: FxHashSet<Sym> = ops
        .rows
        .iter()
        .filter(|r| {
            matches!(
                r.formula,
                OpFormula::Gemm {
                    out_dtype: Some(_),
                    ..
                }
            )
        })
        .flat_map(|r| r.cpu_ops.iter())
        .filter_map(|name| trace.strings.lookup(name))
        .collect();
    if names.is_empty() {
        return FxHashMap::default();
    }
    trace
        .cpu_ops
        .iter()
        .filter(|op| names.contains(&op.name))
        .filter_map(|op| Some(((op.pid, op.external_id?), op.concrete_inputs?)))
        .collect()
}

/// Sums every stage's roofline facts over the same GPU ops as the kernel table; the
/// notes say what the model config shaped, or why it could not.
pub fn stage_rooflines(
    inputs: &[StagedTrace<'_>],
    ops: &RooflineOps,
    roof: &Roof,
    model: &ModelInputs<'_>,
) -> (Vec<(Stage, StageRoofline)>, Vec<String>) {
    let mut stages: HashMap<Stage, StageRoofline> = HashMap::new();
    let mut used = ConfigUse::default();
    for input in inputs {
        used.add(sum_trace(input, ops, roof, model, &mut stages));
    }
    let mut ordered: Vec<(Stage, StageRoofline)> = stages.into_iter().collect();
    ordered.sort_by_key(|(stage, _)| stage.order());
    (ordered, used.notes(model))
}

/// What the model-config shapes did over the run's traces.
#[derive(Copy, Clone, Debug, Default)]
struct ConfigUse {
    gemm_launches: u64,
    attention_launches: u64,
    steps_skipped: u64,
    /// The largest TP size used (the traces of one run share it).
    tp: u64,
}

impl ConfigUse {
    fn add(&mut self, other: ConfigUse) {
        self.gemm_launches += other.gemm_launches;
        self.attention_launches += other.attention_launches;
        self.steps_skipped += other.steps_skipped;
        self.tp = self.tp.max(other.tp);
    }

    fn notes(&self, model: &ModelInputs<'_>) -> Vec<String> {
        let Some(shape) = model.shape else {
            return Vec::new();
        };
        let missing = shape.missing_for_gemms();
        if !missing.is_empty() {
            return vec![format!(
                "roofline: model config {} lacks {}: launches without Input Dims keep no shapes",
                shape.source,
                missing.join(", ")
            )];
        }
        let mut notes = Vec::new();
        if self.gemm_launches + self.attention_launches > 0 {
            let tp_from = if model.tp.is_some() {
                "server args"
            } else {
                "the trace's world size, else 1"
            };
            notes.push(format!(
                "roofline: model config {} (TP {} from {tp_from}) shaped {} GEMM launches \
                 (qkv, o_proj, gate_up, down per layer in launch order, then lm_head) and {} \
                 attention launches without Input Dims",
                shape.source, self.tp, self.gemm_launches, self.attention_launches
            ));
        }
        if self.steps_skipped > 0 {
            notes.push(format!(
                "roofline: model config {}: {} step(s) whose GEMM kernels are not 4 per layer \
                 x {} layers (+ lm_head) keep no model-config GEMM shapes",
                shape.source,
                self.steps_skipped,
                shape.layers.unwrap_or(0)
            ));
        }
        notes
    }
}

fn sum_trace(
    input: &StagedTrace<'_>,
    ops: &RooflineOps,
    roof: &Roof,
    model: &ModelInputs<'_>,
    stages: &mut HashMap<Stage, StageRoofline>,
) -> ConfigUse {
    let StagedTrace {
        trace,
        linked,
        split,
    } = *input;
    let Some(gpu_pid) = busiest_gpu_pid(trace) else {
        return ConfigUse::default();
    };
    let step_index = StepIndex::new(trace);
    let from_config = config_shapes(trace, linked, gpu_pid, model, &step_index);
    let mut used = ConfigUse {
        steps_skipped: from_config.steps_skipped,
        tp: from_config.tp,
        ..ConfigUse::default()
    };
    let ranks = u64::from(trace.meta.world_size.unwrap_or(1));
    let mut canonical_of: FxHashMap<Sym, String> = FxHashMap::default();
    let mut row_of_op: FxHashMap<Sym, Option<usize>> = FxHashMap::default();
    let mut args_of: FxHashMap<(Sym, Sym), Option<Vec<Option<Arg>>>> = FxHashMap::default();
    let mut cost_of: FxHashMap<CostKey, Option<LaunchCost>> = FxHashMap::default();
    // CPU op launches (process, External id) whose cost a kernel already carries.
    let mut charged: FxHashSet<(Sym, u64)> = FxHashSet::default();
    let concrete_of = out_dtype_inputs(trace, ops);
    for (i, op) in trace.gpu_ops.iter().enumerate() {
        if op.pid != gpu_pid {
            continue;
        }
        let stage = split.stages.get(i).copied().unwrap_or(Stage::All);
        let acc = stages.entry(stage).or_default();
        acc.total_ns += i128::from(op.dur);
        if op.kind != GpuKind::Kernel && op.bytes.is_none() {
            continue;
        }
        let canonical = canonical_of
            .entry(op.name)
            .or_insert_with(|| canonical_name(trace.name(op.name)));
        if !acc.rows.contains_key(canonical.as_str()) {
            acc.rows.insert(canonical.clone(), RowSums::default());
        }
        let Some(row) = acc.rows.get_mut(canonical.as_str()) else {
            continue;
        };
        let dur = i128::from(op.dur);
        if let Some(bytes) = op.bytes.filter(|_| op.kind != GpuKind::Kernel) {
            // A copy: what it moved is what Kineto counted; no arithmetic.
            row.copy = true;
            row.total_ns += dur;
            row.launches += 1;
            row.shaped_ns += dur;
            row.shaped_launches += 1;
            row.bytes += u128::from(bytes.get());
            row.class_ns[class_slot(None)] += dur;
            continue;
        }
        row.total_ns += dur;
        row.launches += 1;
        if let Some(under) = roof.under_filled(op.grid, op.blocks_per_sm) {
            row.geometry_ns += dur;
            if under {
                row.under_filled_ns += dur;
                row.under_filled_launches += 1;
            }
        }

        let Some(site) = linked.sites.get(i) else {
            continue;
        };
        // A site aligned from the mapping trace carries the shapes of the mapping run's
        // step, whose tokens need not be this replay's (a prefill mapping step for a
        // decode replay gave GEMMs at 35x the peak): such launches take the config's.
        let shapes = (site.source != SiteSource::Mapping).then_some((
            site.cpu_op,
            site.input_dims,
            site.input_types,
        ));
        let Some((Some(cpu_op), Some(dims), Some(types))) = shapes else {
            // No Input Dims: the model config's shapes, where it gives some.
            add_config_cost(row, dur, i, &from_config, &mut used);
            continue;
        };
        let Some(row_index) = *row_of_op.entry(cpu_op).or_insert_with(|| {
            ops.rows
                .iter()
                .position(|r| r.cpu_ops.iter().any(|c| c == trace.name(cpu_op)))
        }) else {
            continue;
        };
        let formula = &ops.rows[row_index].formula;
        // An eager op's later kernels: its cost went to its first.
        let external = (site.source == SiteSource::Eager)
            .then(|| {
                site.runtime
                    .and_then(|r| trace.runtime.get(r as usize))
                    .and_then(|call| Some((call.pid, call.external_id?)))
            })
            .flatten();
        if let Some(key) = external {
            if !charged.insert(key) {
                continue;
            }
        }
        // The output dtype the op's Concrete Inputs record, where its row reads one.
        let out_bytes = match formula {
            OpFormula::Gemm {
                out_dtype: Some(at),
                ..
            } => external
                .and_then(|key| concrete_of.get(&key))
                .and_then(|&c| shapes::out_dtype_bytes(trace.name(c), *at)),
            _ => None,
        };
        let is_attention = matches!(formula, OpFormula::Attention { .. });
        let step = if is_attention {
            site.launch_ts.and_then(|ts| step_index.position_at(ts))
        } else {
            None
        };
        let launch = *cost_of
            .entry((cpu_op, dims, types, step, out_bytes))
            .or_insert_with(|| {
                let args = args_of
                    .entry((dims, types))
                    .or_insert_with(|| parse_args(trace.name(dims), trace.name(types)));
                let ctx = Context {
                    step: step.and_then(|s| step_index.get(s)),
                    ranks,
                    out_bytes,
                };
                args.as_deref()
                    .and_then(|args| shapes::cost(formula, args, &ctx))
            });
        let Some(launch) = launch else {
            continue;
        };
        row.shaped_ns += dur;
        row.shaped_launches += 1;
        row.flops += launch.cost.flops;
        row.bytes += launch.cost.bytes;
        row.class_ns[class_slot(launch.class)] += dur;
        if is_attention {
            row.annotation_ns += dur;
        } else {
            row.dims_ns += dur;
        }
    }
    used
}

/// Charges launch `op` its model-config cost, when the config gives it one.
fn add_config_cost(
    row: &mut RowSums,
    dur: i128,
    op: usize,
    from_config: &ConfigShapes,
    used: &mut ConfigUse,
) {
    let Some(launch) = from_config.costs.get(&op) else {
        return;
    };
    row.shaped_ns += dur;
    row.shaped_launches += 1;
    row.flops += launch.cost.flops;
    row.bytes += launch.cost.bytes;
    row.class_ns[class_slot(launch.class)] += dur;
    row.config_ns += dur;
    if from_config.attention.contains(&op) {
        used.attention_launches += 1;
    } else {
        used.gemm_launches += 1;
    }
}

/// A finished row: its report figures and its SOL time.
struct FinishedRow {
    roofline: KernelRoofline,
    /// SOL time of the shaped launches, when the device roof is known.
    sol_s: Option<f64>,
    /// A memcpy/memset row: its % of peak is shown, but it is not in the SOL line.
    copy: bool,
    shaped_ns: i128,
}

fn finish_row(row: &RowSums, roof: &Roof) -> FinishedRow {
    let shaped = row.shaped_launches > 0;
    let flops = shaped.then_some(row.flops as f64);
    let bytes = shaped.then_some(row.bytes as f64);
    let seconds = row.shaped_ns as f64 / 1e9;
    let class = {
        let (slot, ns) = row
            .class_ns
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or((CLASSES.len(), 0), |(slot, ns)| (slot, *ns));
        (ns > 0).then(|| CLASSES.get(slot).copied()).flatten()
    };
    let rate = |amount: Option<f64>| amount.filter(|_| seconds > 0.0).map(|a| a / seconds / 1e12);
    let sol_s = match (flops, bytes) {
        (Some(f), Some(b)) => roof.sol_seconds(f, b, class),
        _ => None,
    };
    let facts = BoundFacts {
        total_ns: row.total_ns,
        launches: row.launches,
        geometry_ns: row.geometry_ns,
        under_filled_ns: row.under_filled_ns,
        flops,
        bytes,
        class,
    };
    let source = if !shaped {
        None
    } else if row.copy {
        Some(ShapeSource::KinetoBytes)
    } else if row.config_ns > row.dims_ns && row.config_ns > row.annotation_ns {
        Some(ShapeSource::ModelConfig)
    } else if row.annotation_ns > row.dims_ns {
        Some(ShapeSource::StepAnnotation)
    } else {
        Some(ShapeSource::InputDims)
    };
    FinishedRow {
        roofline: KernelRoofline {
            flops,
            bytes,
            intensity: match (flops, bytes) {
                (Some(f), Some(b)) if b > 0.0 => Some(f / b),
                _ => None,
            },
            tflops_per_s: rate(flops),
            tb_per_s: rate(bytes),
            pct_of_peak: sol_s.filter(|_| seconds > 0.0).map(|s| 100.0 * s / seconds),
            bound: bound(&facts, roof).to_string(),
            shape_source: source.map(|s| s.as_str().to_string()),
            dtype: class.map(|c| c.as_str().to_string()),
            shaped_launches: row.shaped_launches,
            under_filled_launches: row.under_filled_launches,
        },
        sol_s,
        copy: row.copy,
        shaped_ns: row.shaped_ns,
    }
}

impl StageRoofline {
    /// The stage's SOL line; `None` without a roof for any shaped row.
    fn sol(&self, finished: &[(&String, FinishedRow)], report: &StageReport) -> Option<StageSol> {
        let with_sol: Vec<(&String, f64, i128, f64)> = finished
            .iter()
            .filter(|(_, f)| !f.copy)
            .filter_map(|(name, f)| {
                Some((
                    *name,
                    f.sol_s?,
                    f.shaped_ns,
                    f.roofline.pct_of_peak.unwrap_or(0.0),
                ))
            })
            .collect();
        if with_sol.is_empty() {
            return None;
        }
        let sol_us: f64 = with_sol.iter().map(|(_, s, _, _)| s * 1e6).sum();
        let measured_ns: i128 = with_sol.iter().map(|(_, _, ns, _)| ns).sum();
        let measured_us = measured_ns as f64 / 1000.0;
        let mut losses: Vec<SolLoss> = with_sol
            .iter()
            .map(|&(name, s, ns, pct)| SolLoss {
                kernel: name.clone(),
                lost_us: (ns as f64 / 1000.0 - s * 1e6).max(0.0),
                pct_of_peak: pct,
            })
            .collect();
        losses.sort_by(|a, b| {
            b.lost_us
                .total_cmp(&a.lost_us)
                .then_with(|| a.kernel.cmp(&b.kernel))
        });
        losses.truncate(LOSS_TOP);
        let timeline = report.timeline.as_ref();
        Some(StageSol {
            sol_us,
            measured_us,
            sol_pct: if measured_us > 0.0 {
                100.0 * sol_us / measured_us
            } else {
                0.0
            },
            covered_pct: if self.total_ns > 0 {
                100.0 * measured_ns as f64 / self.total_ns as f64
            } else {
                0.0
            },
            gap: SolGap {
                idle_us: timeline.map_or(0.0, |t| t.idle_us),
                below_roof_us: (measured_us - sol_us).max(0.0),
                below_roof_top: losses,
                exposed_comm_us: timeline
                    .map_or(0.0, |t| t.steps.iter().map(|s| s.exposed_comm_us).sum()),
                unshaped_us: (self.total_ns - measured_ns) as f64 / 1000.0,
            },
        })
    }
}

/// Puts each stage's roofline onto its report: every kernel row with a shape or a known
/// geometry gets its figures, and the stage its SOL line.
pub fn attach(
    mut stages: Vec<StageReport>,
    rooflines: Vec<(Stage, StageRoofline)>,
    roof: &Roof,
) -> Vec<StageReport> {
    for (stage, roofline) in rooflines {
        let Some(report) = stages.iter_mut().find(|s| s.stage == stage.label()) else {
            continue;
        };
        let mut names: Vec<&String> = roofline.rows.keys().collect();
        names.sort();
        let finished: Vec<(&String, FinishedRow)> = names
            .into_iter()
            .map(|name| (name, finish_row(&roofline.rows[name], roof)))
            .collect();
        for row in &mut report.kernels {
            let Some((_, f)) = finished.iter().find(|(name, _)| **name == row.name) else {
                continue;
            };
            let sums = &roofline.rows[&row.name];
            if sums.shaped_launches > 0 || sums.geometry_ns > 0 {
                row.roofline = Some(f.roofline.clone());
            }
        }
        report.sol = roofline.sol(&finished, report);
    }
    stages
}
