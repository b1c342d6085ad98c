//! The ground truth of a diff pair and its `ground_truth.json` form. Every time is exact
//! integer ns; per-step figures are exact too, because every step runs the same
//! durations (only the host gap, which the first step has none of, differs by step).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub const FILE_NAME: &str = "ground_truth.json";

/// One step's wall time split as the timeline defines it (`stages[].timeline.steps[]`):
/// `wall = compute + exposed_comm + memcpy + launch_idle + host_gap`. One stream, no
/// overlap, no sync waits, no graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepParts {
    pub wall_ns: u64,
    pub compute_ns: u64,
    pub exposed_comm_ns: u64,
    pub memcpy_ns: u64,
    /// From the step's first launch call to its first GPU op (the launch in flight).
    pub launch_idle_ns: u64,
    /// From the previous step's last GPU op to this step's first launch (0 for step 0).
    pub host_gap_ns: u64,
}

/// One kernel name's (or one role's) GPU time over the whole stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTotal {
    /// The role a correct analysis gives it (`catalog/roles.toml`).
    pub role: String,
    /// The kernel family (`catalog/kernel-families.toml`), where the pair depends on it.
    pub family: Option<String>,
    pub ns: u64,
    pub count: u64,
}

/// What one side's trace holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideTruth {
    pub trace: PathBuf,
    /// `cuda` or `rocm`.
    pub platform: &'static str,
    pub batch_size: usize,
    pub tokens_per_step: usize,
    pub steps: Vec<StepParts>,
    /// By canonical kernel name (memcpy included, as the kernel table lists it).
    pub kernels: BTreeMap<String, KernelTotal>,
    /// By role: (ns, launches).
    pub roles: BTreeMap<String, (u64, u64)>,
}

impl SideTruth {
    pub fn wall_ns(&self) -> u64 {
        self.steps.iter().map(|s| s.wall_ns).sum()
    }

    /// The sum of one part over the steps.
    pub fn part_ns(&self, part: fn(&StepParts) -> u64) -> u64 {
        self.steps.iter().map(part).sum()
    }

    fn to_json(&self, dir: &Path) -> Value {
        let relative = self.trace.strip_prefix(dir).unwrap_or(&self.trace);
        json!({
            "trace": relative.display().to_string(),
            "platform": self.platform,
            "batch_size": self.batch_size,
            "tokens_per_step": self.tokens_per_step,
            "steps": self.steps.iter().map(|s| json!({
                "wall_ns": s.wall_ns,
                "compute_ns": s.compute_ns,
                "exposed_comm_ns": s.exposed_comm_ns,
                "memcpy_ns": s.memcpy_ns,
                "launch_idle_ns": s.launch_idle_ns,
                "host_gap_ns": s.host_gap_ns,
            })).collect::<Vec<_>>(),
            "kernels": self.kernels.iter().map(|(name, k)| json!({
                "name": name,
                "role": k.role,
                "family": k.family,
                "ns": k.ns,
                "count": k.count,
            })).collect::<Vec<_>>(),
            "roles": self.roles.iter().map(|(role, (ns, count))| json!({
                "role": role, "ns": ns, "count": count,
            })).collect::<Vec<_>>(),
        })
    }
}

/// A pair's two sides and what a correct diff says about them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairTruth {
    pub name: String,
    pub change: String,
    pub fusions_started: Vec<String>,
    pub fusions_stopped: Vec<String>,
    pub base: SideTruth,
    pub new: SideTruth,
}

/// A row of a diff: the base and new ns over the stage (divide by the steps for per step).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangedRow {
    pub key: String,
    pub base_ns: u64,
    pub new_ns: u64,
}

impl ChangedRow {
    pub fn delta_ns(&self) -> i64 {
        self.new_ns as i64 - self.base_ns as i64
    }

    /// `new`, `gone`, `faster`, `slower` or `same` (any change counts: the pairs change
    /// nothing by less than 5%).
    pub fn status(&self) -> &'static str {
        match (self.base_ns, self.new_ns) {
            (0, 0) => "same",
            (0, _) => "new",
            (_, 0) => "gone",
            (b, n) if n > b => "slower",
            (b, n) if n < b => "faster",
            _ => "same",
        }
    }
}

/// The rows of `base` and `new` keyed alike whose time differs, in key order.
fn changed(base: BTreeMap<String, u64>, new: BTreeMap<String, u64>) -> Vec<ChangedRow> {
    let mut keys: Vec<&String> = base.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|key| ChangedRow {
            key: key.clone(),
            base_ns: base.get(key).copied().unwrap_or(0),
            new_ns: new.get(key).copied().unwrap_or(0),
        })
        .filter(|row| row.base_ns != row.new_ns)
        .collect()
}

impl PairTruth {
    /// Kernel names whose stage time differs between the sides.
    pub fn changed_kernels(&self) -> Vec<ChangedRow> {
        let ns = |side: &SideTruth| {
            side.kernels
                .iter()
                .map(|(k, t)| (k.clone(), t.ns))
                .collect::<BTreeMap<_, _>>()
        };
        changed(ns(&self.base), ns(&self.new))
    }

    /// Roles whose stage time differs between the sides.
    pub fn changed_roles(&self) -> Vec<ChangedRow> {
        let ns = |side: &SideTruth| {
            side.roles
                .iter()
                .map(|(k, t)| (k.clone(), t.0))
                .collect::<BTreeMap<_, _>>()
        };
        changed(ns(&self.base), ns(&self.new))
    }

    /// Wall-time parts (`compute`, `exposed_comm`, `memcpy`, `launch_idle`, `host_gap`)
    /// whose stage total differs.
    pub fn changed_parts(&self) -> Vec<ChangedRow> {
        let parts = |side: &SideTruth| {
            PARTS
                .iter()
                .map(|(name, part)| (name.to_string(), side.part_ns(*part)))
                .collect::<BTreeMap<_, _>>()
        };
        changed(parts(&self.base), parts(&self.new))
    }

    pub fn to_json(&self, dir: &Path) -> Value {
        let rows = |rows: Vec<ChangedRow>| {
            rows.iter()
                .map(|r| {
                    json!({
                        "key": r.key,
                        "status": r.status(),
                        "base_ns": r.base_ns,
                        "new_ns": r.new_ns,
                        "delta_ns": r.delta_ns(),
                        "delta_ns_per_step": per_step(r.delta_ns(), self.base.steps.len()),
                    })
                })
                .collect::<Vec<_>>()
        };
        let steps = self.base.steps.len() as i64;
        let step_delta = self.new.wall_ns() as i64 - self.base.wall_ns() as i64;
        json!({
            "pair": self.name,
            "change": self.change,
            "stage": super::STAGE,
            "steps": steps,
            "exact": "every ns below is exact; per-step figures are the stage totals divided by steps",
            "step_wall_delta_ns": step_delta,
            "step_wall_delta_ns_per_step": per_step(step_delta, self.base.steps.len()),
            "changed_kernels": rows(self.changed_kernels()),
            "changed_roles": rows(self.changed_roles()),
            "changed_parts": rows(self.changed_parts()),
            "workload_differs": self.base.batch_size != self.new.batch_size
                || self.base.tokens_per_step != self.new.tokens_per_step,
            "fusions_started": self.fusions_started,
            "fusions_stopped": self.fusions_stopped,
            "base": self.base.to_json(dir),
            "new": self.new.to_json(dir),
        })
    }
}

/// `ns / steps`: an integer where it divides (every pair but a host gap over uneven
/// steps), else the exact quotient as a float.
fn per_step(ns: i64, steps: usize) -> Value {
    let steps = steps.max(1) as i64;
    if ns % steps == 0 {
        json!(ns / steps)
    } else {
        json!(ns as f64 / steps as f64)
    }
}

/// One part of a step's wall time.
pub type Part = fn(&StepParts) -> u64;

/// The wall-time parts by the name the timeline's step fields give them (without `_us`).
pub const PARTS: [(&str, Part); 5] = [
    ("compute", |s| s.compute_ns),
    ("exposed_comm", |s| s.exposed_comm_ns),
    ("memcpy", |s| s.memcpy_ns),
    ("launch_idle", |s| s.launch_idle_ns),
    ("host_gap", |s| s.host_gap_ns),
];
