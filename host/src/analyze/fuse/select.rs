//! From hits to the rows of the table: a fusion row's hits become a [`Candidate`] when
//! they match the stage (steps 3-4 of the module docs of [`super`]), and the greedy,
//! row-consuming [`select`] keeps the candidates that still match once better ones have
//! claimed their kernel rows or launch sites. [`Conclusion`] and [`confidence`] say what
//! an accepted candidate means.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use super::facts::GateState;
use super::haystack::{Hit, RuleHits};
use crate::catalog::fusions::Status;
use crate::report::model::KernelRow;

/// A rule that matched a stage (its gates passed, and an active hit or a hit in every
/// split group), before selection.
#[derive(Clone, Debug)]
pub struct Candidate<'r> {
    pub hits: RuleHits<'r>,
    pub related_rows: Vec<usize>,
    pub related_us: f64,
    pub share_pct: f64,
}

/// The rules (their hits, [`super::stage_hits`]) that match the stage, gates applied,
/// thresholds applied.
pub(crate) fn candidates<'r>(
    hits: Vec<RuleHits<'r>>,
    kernels: &[KernelRow],
    stage_total_us: f64,
) -> Vec<Candidate<'r>> {
    if stage_total_us <= 0.0 {
        return Vec::new();
    }
    hits.into_iter()
        .filter(|hits| hits.gate != GateState::Failed)
        .filter_map(|hits| candidate(hits, kernels, stage_total_us))
        .collect()
}

/// `hits` as a match of the stage, or `None`: no active hit and a
/// split group unseen, no GPU time, or a split-only match below the row's `min_share`.
fn candidate<'r>(
    mut hits: RuleHits<'r>,
    kernels: &[KernelRow],
    stage_total_us: f64,
) -> Option<Candidate<'r>> {
    link_sites(&mut hits, kernels);
    if hits.active.is_empty() && !hits.all_groups_seen() {
        return None;
    }
    let related = hits.related();
    let related_rows: Vec<usize> = related.iter().map(|(h, _)| h.row).collect();
    let related_us: f64 = related
        .iter()
        .map(|(h, _)| h.weight(&kernels[h.row]) * kernels[h.row].gpu_time_us)
        .sum();
    let share_pct = 100.0 * related_us / stage_total_us;
    if related_us <= 0.0 || (hits.active.is_empty() && share_pct < hits.rule.min_share) {
        return None;
    }
    Some(Candidate {
        hits,
        related_rows,
        related_us,
        share_pct,
    })
}

/// Limits the hits of every `same_site_as` group to the launch sites its anchor group's
/// hits count, dropping rows with none. Run on every (re-)evaluation, so the anchor is
/// always the set of hits the candidate still holds.
fn link_sites(hits: &mut RuleHits<'_>, kernels: &[KernelRow]) {
    for (i, group) in hits.rule.split.iter().enumerate() {
        let Some(anchor) = group.anchor else {
            continue;
        };
        let anchor_sites: HashSet<&str> = hits.groups[anchor]
            .iter()
            .flat_map(|h| h.counted_sites(&kernels[h.row]))
            .map(|s| s.location.as_str())
            .filter(|l| *l != crate::analyze::kernels::UNRESOLVED)
            .collect();
        let mut linked = std::mem::take(&mut hits.groups[i]);
        for hit in &mut linked {
            let row = &kernels[hit.row];
            let shared: Vec<usize> = (0..row.python_locations.len())
                .filter(|j| hit.sites.as_ref().is_none_or(|own| own.contains(j)))
                .filter(|&j| anchor_sites.contains(row.python_locations[j].location.as_str()))
                .collect();
            hit.sites = Some(shared);
        }
        linked.retain(|h| h.sites.as_ref().is_some_and(|s| !s.is_empty()));
        hits.groups[i] = linked;
    }
}

/// Greedy, row-consuming selection with `subsumes` (ordering in the module
/// docs). Unlike the predecessor, a match that shares kernel rows with an accepted one is
/// not dropped outright: it is re-evaluated on its unclaimed rows and kept when it still
/// matches, so one broad match cannot hide another (in the predecessor one false positive
/// consumed the rows of a true match).
pub(crate) fn select<'r>(
    mut found: Vec<Candidate<'r>>,
    kernels: &[KernelRow],
    stage_total_us: f64,
) -> Vec<Candidate<'r>> {
    // A stable sort keeps catalog order among equal keys.
    found.sort_by(|a, b| {
        let key = |c: &Candidate| {
            (
                c.hits.rule.priority,
                c.hits.rule.span(),
                c.related_rows.len(),
            )
        };
        key(b)
            .cmp(&key(a))
            .then(b.related_us.total_cmp(&a.related_us))
    });
    let mut blocked: HashSet<&str> = HashSet::new();
    let mut claims = Claims::default();
    let mut accepted = Vec::new();
    for found in found {
        let rule = found.hits.rule;
        if blocked.contains(rule.id.as_str()) {
            continue;
        }
        let candidate = if found.related_rows.iter().any(|r| claims.touches(*r)) {
            let mut hits = found.hits;
            let left = |list: &mut Vec<Hit>| {
                *list = list
                    .drain(..)
                    .filter_map(|h| claims.unclaimed(h, kernels))
                    .collect();
            };
            left(&mut hits.active);
            hits.groups.iter_mut().for_each(left);
            match candidate(hits, kernels, stage_total_us) {
                Some(c) => c,
                None => continue,
            }
        } else {
            found
        };
        for (hit, _) in candidate.hits.related() {
            claims.claim(hit);
        }
        blocked.extend(rule.subsumes.iter().map(String::as_str));
        accepted.push(candidate);
    }
    accepted
}

/// The kernel rows, or launch sites of rows, that accepted fuse rows already counted.
/// Sites matter: a location pattern claims only some launches of a kernel row, and the
/// rest (an RMSNorm launched from the layer norm, not from `apply_qk_norm`) stays free.
#[derive(Default)]
struct Claims {
    /// Row -> `None` when the whole row is claimed, else the claimed site indices.
    rows: HashMap<usize, Option<HashSet<usize>>>,
}

impl Claims {
    fn touches(&self, row: usize) -> bool {
        self.rows.contains_key(&row)
    }

    fn claim(&mut self, hit: &Hit) {
        match (&hit.sites, self.rows.entry(hit.row)) {
            (None, entry) => {
                entry.insert_entry(None);
            }
            (Some(sites), Entry::Vacant(v)) => {
                v.insert(Some(sites.iter().copied().collect()));
            }
            (Some(sites), Entry::Occupied(mut o)) => {
                if let Some(claimed) = o.get_mut() {
                    claimed.extend(sites.iter().copied());
                }
            }
        }
    }

    /// `hit` limited to the sites nobody claimed, or `None` when nothing is left.
    fn unclaimed(&self, mut hit: Hit, kernels: &[KernelRow]) -> Option<Hit> {
        match self.rows.get(&hit.row) {
            None => Some(hit),
            Some(None) => None,
            Some(Some(claimed)) => {
                let own: Vec<usize> = match hit.sites.take() {
                    Some(sites) => sites,
                    None => (0..kernels[hit.row].python_locations.len()).collect(),
                };
                let left: Vec<usize> = own.into_iter().filter(|i| !claimed.contains(i)).collect();
                (!left.is_empty()).then(|| {
                    hit.sites = Some(left);
                    hit
                })
            }
        }
    }
}

/// What a user can do with a fuse row.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Conclusion {
    /// The fused kernel (or its op/location) ran in this trace.
    Present,
    /// The engine has the fused path, but the split kernels ran instead.
    NotFired,
    /// The split kernels ran, but on this platform the fused path launches them too
    /// (`split_ambiguous_on`): kernel names cannot tell whether it fired.
    Undecided,
    /// The fused path exists only upstream or in another engine.
    UpstreamOnly,
    /// An open upstream pull request adds the fused path.
    OpenPr,
}

impl Conclusion {
    pub(crate) fn of(hits: &RuleHits<'_>) -> Conclusion {
        if !hits.active.is_empty() {
            return Conclusion::Present;
        }
        match hits.rule.status {
            Status::Mainline if hits.split_ambiguity.is_some() => Conclusion::Undecided,
            Status::Mainline => Conclusion::NotFired,
            Status::Upstream => Conclusion::UpstreamOnly,
            Status::Inflight => Conclusion::OpenPr,
        }
    }

    /// The name a report row gives the conclusion (`FusionRow::conclusion`).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Conclusion::Present => "present",
            Conclusion::NotFired => "not-fired",
            Conclusion::Undecided => "undecided",
            Conclusion::UpstreamOnly => "upstream-only",
            Conclusion::OpenPr => "open-pr",
        }
    }
}

/// `Confirmed` or `Candidate` (module docs, step 5).
pub(crate) fn confidence(candidate: &Candidate<'_>) -> &'static str {
    let hits = &candidate.hits;
    let specific = !hits.active.is_empty() || candidate.share_pct >= hits.rule.likely_share;
    let decided = Conclusion::of(hits) != Conclusion::Undecided;
    if specific && decided && hits.gate == GateState::Passed {
        "Confirmed"
    } else {
        "Candidate"
    }
}
