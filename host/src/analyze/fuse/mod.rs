//! The fuse-pattern table: which known kernel fusions a stage shows, fused or split.
//!
//! A catalog row ([`FusionRule`], loaded by [`crate::catalog`]) describes a fusion by
//! *active* evidence (the fused kernel, its CPU op or its Python location) and *split*
//! groups (the kernels the unfused path runs instead). Matching is deterministic and
//! token-aware (the kernel-family tokenizer, [`crate::catalog::pattern::tokens`]): a
//! pattern is a run of whole tokens or an anchored regex, never a substring of compacted
//! text, and hash-like path segments (torch.compile / Inductor / Triton cache paths) are
//! removed from locations and CPU ops before matching, so `wk` can never hit a cache hash
//! (the predecessor matched keywords as substrings of compacted text, and so reported
//! "DSV3.2 indexer: Confirmed" on unrelated models).
//!
//! For one stage ([`fuse_table`]):
//!
//! 1. Only rows of the selected engine's origin, plus `torch`, apply.
//! 2. Gates: `devices` against the GPU platform ([`RunFacts::device`]); `min_tp`
//!    against the TP size ([`RunFacts::tp`]); `models_include` / `models_exclude`
//!    against the model names ([`RunFacts::models`]). A failed gate drops the row (a
//!    path that cannot exist on this platform never "did not fire"); a gate that cannot
//!    be evaluated (no platform, TP size or model name) keeps it but caps it at
//!    `Candidate`.
//! 3. `active` = kernel rows any active pattern matches; group *i* = rows any pattern of
//!    split group *i* matches. The row needs an active hit, or a hit in every group.
//! 4. related = active, then each group, de-duplicated; a split-only row below its
//!    `min_share` is dropped.
//! 5. Conclusion: `present` on an active hit; else by status, except that a mainline
//!    row whose fused path launches the split kernels too on this platform
//!    (`split_ambiguous_on`, or the platform unknown) is `undecided`.
//! 6. Confidence: `Confirmed` when every gate was evaluated, the conclusion is not
//!    `undecided`, and either the fused path was seen (active hit) or the split kernels
//!    reach `likely_share`; else `Candidate`.
//!
//! Selection (greedy and row-consuming, as in the predecessor): matches are sorted by
//! priority, then
//! span (number of split groups, at least 1 with active patterns), then number of related
//! kernel rows, then related GPU time, all descending; equal keys keep catalog order. In
//! that order a match is skipped when an accepted match subsumes its id; one that shares
//! kernel rows (or, for location and same-site hits, launch sites) with accepted matches
//! is re-evaluated on what is left and kept if it still matches. Accepted rows below the
//! report's share bar are dropped; the rest keep the greedy order.
//!
//! Time: a kernel row holds every launch of one name; a location-pattern hit or a
//! `same_site_as` group counts only the launches at its sites ([`haystack::Hit::sites`]).
//!
//! By phase: [`facts`] (model and TP size, gates), [`haystack`] (what a kernel row
//! offers the matcher, and every hit of a row), [`mod@select`] (candidates, greedy
//! selection, conclusion and confidence), this file (the report rows), and
//! [`similarity`] (near misses, from the same hits). The rows themselves are catalog
//! data ([`crate::catalog::fusions`]).

pub(crate) mod facts;
pub mod haystack;
mod platform;
pub(crate) mod select;
pub(crate) mod similarity;
#[cfg(test)]
mod tests;

use crate::catalog::FusionRule;
use crate::report::model::{FusionEvidence, FusionRow, KernelRow, StageReport};
use facts::GateState;
pub use facts::{run_facts, RunFacts};
use haystack::{rule_hits, Haystack, Part, RuleHits};
use select::{candidates, confidence, select, Candidate, Conclusion};

/// What the fuse analysis of one stage needs besides its kernel rows.
#[derive(Clone, Debug)]
pub struct FuseInput<'a> {
    /// The selected engine's name (`sglang`, `vllm`, ...): rows of this origin apply.
    pub engine: &'a str,
    pub facts: &'a RunFacts,
    /// Accepted rows below this share of the stage are dropped (the report's bar).
    pub min_share_pct: f64,
}

/// Fills `fusions` and `similarity` of every stage. `every_row` holds each stage's
/// kernel rows before any share cut or limit (the matcher sees small kernels too);
/// stages pair up by label.
pub fn attach_fusions(
    mut stages: Vec<StageReport>,
    every_row: &[StageReport],
    rules: &[FusionRule],
    input: &FuseInput<'_>,
) -> Vec<StageReport> {
    for stage in &mut stages {
        let Some(all) = every_row.iter().find(|s| s.stage == stage.stage) else {
            continue;
        };
        // The table and the similarity note read the same matches, made once.
        let hits = stage_hits(rules, &all.kernels, input);
        let total_us = all.total_gpu_time_us;
        stage.fusions = table_of(hits.clone(), &all.kernels, total_us, input);
        stage.similarity = similarity::note_of(&hits, &all.kernels, total_us, &stage.fusions)
            .into_iter()
            .collect();
        stage
            .notes
            .extend(model_gate_note(rules, &stage.fusions, input.facts));
    }
    stages
}

/// A note when rows of the fuse table are gated by model and nothing names the model (no
/// server args, no model class or model file in the trace): those rows stay Candidate, and
/// the user can fix that. Counts the table's own rows, not the catalog's.
pub(crate) fn model_gate_note(
    rules: &[FusionRule],
    fusions: &[FusionRow],
    facts: &RunFacts,
) -> Option<String> {
    if !facts.models.is_empty() {
        return None;
    }
    let gated = fusions
        .iter()
        .filter_map(|row| rules.iter().find(|r| r.id == row.id))
        .filter(|rule| !rule.gate.models_include.is_empty() || !rule.gate.models_exclude.is_empty())
        .count();
    (gated > 0).then(|| {
        format!(
            "{gated} fuse-table row(s) apply only to some models, and nothing names the model \
             (no server_args.json, no model class or model file in the trace): their model \
             gate is not evaluated, so they stay Candidate; put the capture's \
             server_args.json beside the trace"
        )
    })
}

/// The fuse table of one stage: matched, selected, cut at the share bar.
pub fn fuse_table(
    rules: &[FusionRule],
    kernels: &[KernelRow],
    stage_total_us: f64,
    input: &FuseInput<'_>,
) -> Vec<FusionRow> {
    table_of(
        stage_hits(rules, kernels, input),
        kernels,
        stage_total_us,
        input,
    )
}

/// Every kernel row each rule that applies to the engine matched, in catalog order.
pub(crate) fn stage_hits<'r>(
    rules: &'r [FusionRule],
    kernels: &[KernelRow],
    input: &FuseInput<'_>,
) -> Vec<RuleHits<'r>> {
    let haystacks: Vec<Haystack> = kernels.iter().map(Haystack::of).collect();
    rules
        .iter()
        .filter(|rule| rule.applies_to(input.engine))
        .map(|rule| rule_hits(rule, &haystacks, input.facts))
        .collect()
}

/// [`fuse_table`] from the stage's hits.
fn table_of(
    hits: Vec<RuleHits<'_>>,
    kernels: &[KernelRow],
    stage_total_us: f64,
    input: &FuseInput<'_>,
) -> Vec<FusionRow> {
    let found = candidates(hits, kernels, stage_total_us);
    select(found, kernels, stage_total_us)
        .iter()
        .filter(|c| c.share_pct >= input.min_share_pct)
        .map(|c| fusion_row(c, kernels))
        .collect()
}

/// The report row of an accepted candidate.
pub fn fusion_row(candidate: &Candidate<'_>, kernels: &[KernelRow]) -> FusionRow {
    let hits = &candidate.hits;
    let rule = hits.rule;
    let conclusion = Conclusion::of(hits);
    let evidence: Vec<FusionEvidence> = hits
        .related()
        .into_iter()
        .map(|(hit, part)| {
            let k = &kernels[hit.row];
            FusionEvidence {
                kernel: k.name.clone(),
                gpu_time_us: hit.weight(k) * k.gpu_time_us,
                share_pct: hit.weight(k) * k.share_pct,
                part: match part {
                    Part::Fused => "fused".to_string(),
                    Part::Split(name) => format!("split:{name}"),
                },
                field: hit.field.label().to_string(),
                pattern: hit.pattern.clone(),
            }
        })
        .collect();
    // Only the sites that were counted (location patterns, same-site groups).
    let mut python_locations: Vec<String> = Vec::new();
    let mut modules: Vec<String> = Vec::new();
    for (hit, _) in hits.related() {
        for site in hit.counted_sites(&kernels[hit.row]) {
            if !python_locations.contains(&site.location) {
                python_locations.push(site.location.clone());
            }
            if let Some(module) = site.module.as_ref().filter(|m| !modules.contains(m)) {
                modules.push(module.clone());
            }
        }
    }
    let mut gate_notes = Vec::new();
    if let GateState::Unknown(why) = &hits.gate {
        gate_notes.push(format!("Gate not evaluated: {why}."));
    }
    let rationale = std::iter::once(conclusion_sentence(candidate, conclusion))
        .chain(gate_notes.iter().cloned())
        .chain(std::iter::once(rule.rationale.clone()))
        .collect::<Vec<_>>()
        .join(" ");
    FusionRow {
        id: rule.id.clone(),
        label: rule.label.clone(),
        origin: rule.origin.clone(),
        status: rule.status.label().to_string(),
        pr: rule.pr,
        conclusion: conclusion.label().to_string(),
        confidence: confidence(candidate).to_string(),
        related_gpu_time_us: candidate.related_us,
        share_pct: candidate.share_pct,
        evidence,
        python_locations,
        modules,
        candidate_paths: rule.candidate_paths.clone(),
        checked_against: rule.checked_against.clone(),
        rationale,
    }
}

/// The sentence that says what the row means for this trace.
fn conclusion_sentence(candidate: &Candidate<'_>, conclusion: Conclusion) -> String {
    let rule = candidate.hits.rule;
    let share = format!("{:.1}%", candidate.share_pct);
    match conclusion {
        Conclusion::Present => format!(
            "The fused path is present in this trace ({share} related GPU time)."
        ),
        Conclusion::NotFired => format!(
            "The engine has this fused path but it did not fire: split kernels take {share} of GPU time."
        ),
        Conclusion::Undecided => format!(
            "Undecided: {}; split kernels take {share} of GPU time.",
            candidate.hits.split_ambiguity.as_deref().unwrap_or("kernel names cannot tell whether the fused path fired")
        ),
        Conclusion::UpstreamOnly => format!(
            "The fused path exists only upstream or in another engine; split kernels take {share} of GPU time here."
        ),
        Conclusion::OpenPr => format!(
            "An open upstream PR{} adds this fusion; split kernels take {share} of GPU time here.",
            rule.pr.map(|n| format!(" (#{n})")).unwrap_or_default()
        ),
    }
}
