//! The scope join of mapping+formal mode: each kernel row of the swept (formal) trace
//! gets its Python scope from the mapping trace (CUDA graphs off), never from formal
//! launch sites (the predecessor let the formal trace's full launch counts outvote the
//! sampled mapping evidence).
//!
//! **Single-trace mode** ([`Mapping::Own`]): the swept trace is its own mapping, and a
//! row's scope is its own dominant location, exactly the one the kernel table shows for
//! the same canonical name (graph-replayed kernels at their graph launch). Nothing is
//! borrowed from another kernel: a base-name join there once gave
//! `elementwise_kernel_manual_unroll<128, 8, …>` (72 graph replays) the location of
//! `<128, 4, …>` (1 eager launch).
//!
//! **Mapping+formal mode** ([`Mapping::Other`]), first hit wins:
//! 1. the canonical kernel name;
//! 2. the *base name*: the canonical name without template arguments and a leading
//!    `void ` (graph capture and eager runs may pick other template instances), when
//!    all mapping kernels of that base name have one location;
//! 3. the family and the formal kernel's own Python location, when the formal kernel
//!    was launched eagerly and the mapping trace has a kernel of that family there;
//! 4. the family alone, when every mapping kernel of that family has one location.
//!
//! Otherwise the scope is unmapped. [`Join`] says which step matched; the stage notes
//! count rows per step.

use rustc_hash::FxHashMap as HashMap;

use super::{RowTotals, StageOps};
use crate::analyze::kernels::StagedTrace;
use crate::analyze::location::StackSites;
use crate::catalog::FamilyRules;
use crate::trace::event::{Ns, Sym};
use crate::trace::names::canonical_name;

/// Where a row's Python scope came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Join {
    Name,
    BaseName,
    FamilyLocation,
    Family,
    Unmapped,
}

/// A kernel's Python scope from the mapping side.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Scope {
    pub(super) location: String,
    pub(super) launch_op: Option<String>,
}

/// Which trace a stage's scopes come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Mapping {
    /// Single-trace mode: the swept trace itself; a row keeps its own identity.
    Own,
    /// Mapping+formal mode: a trace of another run (graphs off), joined by name and
    /// the fallbacks of the module docs.
    Other,
}

/// Kernel -> Python scope over one mapping stage (see the module docs for the join).
#[derive(Debug)]
pub(super) struct ScopeMap {
    mapping: Mapping,
    by_name: HashMap<String, Scope>,
    by_base: HashMap<String, Scope>,
    by_family_location: HashMap<(String, String), Scope>,
    /// Family -> its one location; `None` when the family has several.
    by_family: HashMap<String, Option<Scope>>,
    /// Mapping ops replayed from graphs (they carry no per-kernel scope).
    pub(super) graph_replays: u64,
    pub(super) ops: u64,
}

#[derive(Default)]
struct SiteTotals {
    locations: HashMap<String, Ns>,
    launch_ops: HashMap<String, u64>,
}

impl SiteTotals {
    fn scope(&self) -> Option<Scope> {
        let location = self
            .locations
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?
            .0
            .clone();
        let launch_op = self
            .launch_ops
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(op, _)| op.clone());
        Some(Scope {
            location,
            launch_op,
        })
    }
}

impl ScopeMap {
    pub(super) fn build<'a>(
        traces: &[StagedTrace<'a>],
        stage: &StageOps,
        sites: &StackSites<'a>,
        families: &FamilyRules,
        mapping: Mapping,
    ) -> ScopeMap {
        let staged = &traces[stage.trace];
        let trace = staged.trace;
        let mut by_name: HashMap<String, SiteTotals> = HashMap::default();
        let mut canonical_of: HashMap<Sym, String> = HashMap::default();
        let mut location_of: HashMap<u32, Option<String>> = HashMap::default();
        let mut map = ScopeMap {
            mapping,
            by_name: HashMap::default(),
            by_base: HashMap::default(),
            by_family_location: HashMap::default(),
            by_family: HashMap::default(),
            graph_replays: 0,
            ops: 0,
        };
        // Per op only numbers are hashed ((name, stack) -> time, (name, launching op) ->
        // count); the Strings they stand for are joined once per distinct key after.
        let mut times: HashMap<(Sym, u32), Ns> = HashMap::default();
        let mut launches: HashMap<(Sym, Sym), u64> = HashMap::default();
        for &i in &stage.ops {
            let op = trace.gpu_ops.at(i as usize);
            map.ops += 1;
            let Some(site) = staged.linked.sites.get(i as usize) else {
                continue;
            };
            if site.graph_replay {
                map.graph_replays += 1;
                // Another run's graph launch says nothing of a kernel; the swept trace's
                // own is where the kernel table places the row, so it is the row's scope.
                if mapping == Mapping::Other {
                    continue;
                }
            }
            let Some(stack) = site.stack else { continue };
            let location = location_of
                .entry(stack)
                .or_insert_with(|| sites.location(trace, staged.linked, stack));
            if location.is_none() {
                continue;
            }
            *times.entry((op.name, stack)).or_default() += op.dur;
            if let Some(cpu_op) = site.cpu_op {
                *launches.entry((op.name, cpu_op)).or_default() += 1;
            }
        }
        let mut canonical = |name: Sym| {
            canonical_of
                .entry(name)
                .or_insert_with(|| canonical_name(trace.name(name)))
                .clone()
        };
        for ((name, stack), ns) in times {
            let totals = by_name.entry(canonical(name)).or_default();
            let location = location_of[&stack]
                .as_ref()
                .expect("timed stacks have a location");
            *totals.locations.entry(location.clone()).or_default() += ns;
        }
        for ((name, cpu_op), n) in launches {
            let totals = by_name.entry(canonical(name)).or_default();
            *totals
                .launch_ops
                .entry(trace.name(cpu_op).to_string())
                .or_default() += n;
        }
        let mut by_base: HashMap<String, SiteTotals> = HashMap::default();
        let mut by_family_location: HashMap<(String, String), SiteTotals> = HashMap::default();
        let mut family_locations: HashMap<String, SiteTotals> = HashMap::default();
        for (name, totals) in &by_name {
            let family = families.family_of(name).to_string();
            let merge = |into: &mut SiteTotals| {
                for (l, ns) in &totals.locations {
                    *into.locations.entry(l.clone()).or_default() += ns;
                }
                for (o, n) in &totals.launch_ops {
                    *into.launch_ops.entry(o.clone()).or_default() += n;
                }
            };
            merge(by_base.entry(base_name(name)).or_default());
            merge(family_locations.entry(family.clone()).or_default());
            for (location, ns) in &totals.locations {
                let entry = by_family_location
                    .entry((family.clone(), location.clone()))
                    .or_default();
                *entry.locations.entry(location.clone()).or_default() += ns;
                for (o, n) in &totals.launch_ops {
                    *entry.launch_ops.entry(o.clone()).or_default() += n;
                }
            }
        }
        map.by_family = family_locations
            .into_iter()
            .map(|(family, totals)| {
                let single = (totals.locations.len() == 1)
                    .then(|| totals.scope())
                    .flatten();
                (family, single)
            })
            .collect();
        map.by_name = scopes(by_name);
        // A base name stands for several template instances (`at::native::*_kernel`
        // covers every functor): only one with a single location is a safe join.
        by_base.retain(|_, totals| totals.locations.len() == 1);
        map.by_base = scopes(by_base);
        map.by_family_location = scopes(by_family_location);
        map
    }

    pub(super) fn lookup(&self, row: &RowTotals) -> (Option<&Scope>, Join) {
        if let Some(scope) = self.by_name.get(&row.name) {
            return (Some(scope), Join::Name);
        }
        if self.mapping == Mapping::Own {
            return (None, Join::Unmapped);
        }
        if let Some(scope) = self.by_base.get(&base_name(&row.name)) {
            return (Some(scope), Join::BaseName);
        }
        let formal_location = row
            .formal_sites
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(l, _)| l.clone());
        if let Some(location) = formal_location {
            if let Some(scope) = self.by_family_location.get(&(row.family.clone(), location)) {
                return (Some(scope), Join::FamilyLocation);
            }
        }
        if let Some(Some(scope)) = self.by_family.get(&row.family) {
            return (Some(scope), Join::Family);
        }
        (None, Join::Unmapped)
    }
}

/// Each key's dominant scope.
fn scopes<K: std::hash::Hash + Eq>(totals: HashMap<K, SiteTotals>) -> HashMap<K, Scope> {
    totals
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.scope()?)))
        .collect()
}

/// The canonical name without template argument lists and without a leading `void `:
/// `void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>` -> `flashinfer::norm::RMSNormKernel`.
fn base_name(canonical: &str) -> String {
    let mut out = String::with_capacity(canonical.len());
    let mut depth = 0usize;
    for c in canonical.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    let out = out.trim();
    out.strip_prefix("void ").unwrap_or(out).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_drop_template_arguments_and_void() {
        assert_eq!(
            base_name("void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>"),
            "flashinfer::norm::RMSNormKernel"
        );
        assert_eq!(base_name("void a<b<c>, d>::run<1>"), "a::run");
        assert_eq!(
            base_name("Memcpy DtoD (Device -> Device)"),
            "Memcpy DtoD (Device -> Device)"
        );
    }
}
