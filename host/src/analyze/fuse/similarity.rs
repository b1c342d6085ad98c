//! Similarity notes: at most one per stage, when a kernel cluster resembles a known
//! fusion without matching it. Heuristic by design and kept out of the fuse table (the
//! predecessor left such notes to the human reader and kept them out of its tables), but
//! deterministic: the same trace and catalog give the same note.
//!
//! A catalog row that applies to the engine, whose gates did not fail, that is not in
//! the table and had no active hit, is *close* in one of two shapes:
//!
//! * **partial split**: at least 2 of its (3 or more) split groups are seen on kernel
//!   rows no table row claimed. Base level `medium` when at least two thirds of the
//!   groups are seen, else `low`.
//! * **reordered fused name**: a kernel name holds every token of an active kernel
//!   pattern of 3 or more tokens, but not in order (`fused_rms_norm_add_kernel` against
//!   `fused add rms norm kernel`). Base level `low`.
//!
//! Then one level up when the seen kernels share a launch context (a Python source file,
//! or a CPU op other than a graph launch: the producer feeds the consumer in one place),
//! and one level down when a gate could not be evaluated (TP size or model unknown).
//! Levels: 3 high, 2 medium, 1 low, below 1 no note. The note's share is what matched:
//! for a partial split the share of its smallest seen part (the parts fuse with each
//! other, so a broad group cannot inflate a tiny one), and it must reach the row's
//! `min_share`. The note kept is the highest level, then the largest share of
//! groups seen, then the largest GPU share; ties keep catalog order.
//!
//! It lives with the fuse table because a near miss is read off the same matcher: the
//! rule hits of [`super::haystack`] over the same haystacks.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::facts::GateState;
use super::haystack::RuleHits;
use crate::catalog::FusionRule;
use crate::report::model::{FusionRow, KernelRow, SimilarityNote};
use crate::trace::names::{short_name, SHORT_ARGS_MAX};

/// CPU ops that say nothing about the launch context (every replayed kernel has them).
const CONTEXT_FREE_OPS: &[&str] = &["cudaGraphLaunch", "hipGraphLaunch"];

#[derive(Clone, Debug)]
struct Scored {
    level: i32,
    seen_ratio: f64,
    share_pct: f64,
    note: SimilarityNote,
}

/// The stage's similarity note, if any kernel cluster is close to a catalog row; `stage_hits`
/// are the matches of the rules that apply ([`super::stage_hits`]).
pub(crate) fn note_of(
    stage_hits: &[RuleHits<'_>],
    kernels: &[KernelRow],
    stage_total_us: f64,
    table: &[FusionRow],
) -> Option<SimilarityNote> {
    if stage_total_us <= 0.0 {
        return None;
    }
    let in_table: HashSet<&str> = table.iter().map(|r| r.id.as_str()).collect();
    let claimed: HashSet<&str> = table
        .iter()
        .flat_map(|r| r.evidence.iter().map(|e| e.kernel.as_str()))
        .collect();
    let free = |row: usize| !claimed.contains(kernels[row].name.as_str());

    // Each kernel name's tokens, made once for every rule: tokenising per rule cost
    // (rules x distinct names) allocations, 60x the triage time with 20k distinct names.
    let name_tokens: OnceCell<Vec<Vec<String>>> = OnceCell::new();
    let mut best: Option<Scored> = None;
    for hits in stage_hits {
        let rule = hits.rule;
        if in_table.contains(rule.id.as_str()) {
            continue;
        }
        if hits.gate == GateState::Failed || !hits.active.is_empty() {
            continue;
        }
        let gate_penalty = i32::from(matches!(hits.gate, GateState::Unknown(_)));
        let scored = partial_split(hits, kernels, &free, stage_total_us).or_else(|| {
            let tokens = name_tokens.get_or_init(|| {
                kernels
                    .iter()
                    .map(|k| crate::catalog::pattern::tokens(&k.name))
                    .collect()
            });
            reordered_name(rule, kernels, tokens, &free, stage_total_us)
        });
        let Some(mut scored) = scored else {
            continue;
        };
        scored.level -= gate_penalty;
        if let GateState::Unknown(why) = &hits.gate {
            let _ = write!(scored.note.reason, "; {why}");
        }
        if scored.level < 1 || scored.share_pct < rule.min_share {
            continue;
        }
        scored.note.level = level_name(scored.level).to_string();
        let better = match &best {
            None => true,
            Some(b) => {
                (scored.level, scored.seen_ratio, scored.share_pct)
                    > (b.level, b.seen_ratio, b.share_pct)
            }
        };
        if better {
            best = Some(scored);
        }
    }
    best.map(|b| b.note)
}

fn level_name(level: i32) -> &'static str {
    match level {
        l if l >= 3 => "high",
        2 => "medium",
        _ => "low",
    }
}

fn share_of(rows: &[usize], kernels: &[KernelRow], total_us: f64) -> f64 {
    100.0 * rows.iter().map(|&r| kernels[r].gpu_time_us).sum::<f64>() / total_us
}

/// Rows of different groups launched from one Python file or under one CPU op.
fn shared_context(groups: &[Vec<usize>], kernels: &[KernelRow]) -> Option<String> {
    let contexts = |rows: &[usize]| -> HashSet<String> {
        let mut out = HashSet::new();
        for &r in rows {
            for site in &kernels[r].python_locations {
                if let Some((path, _)) = site.location.split_once(':') {
                    out.insert(format!("Python file {path}"));
                }
            }
            for op in &kernels[r].cpu_ops {
                if !CONTEXT_FREE_OPS.contains(&op.as_str()) {
                    out.insert(format!("CPU op {op}"));
                }
            }
        }
        out
    };
    let sets: Vec<HashSet<String>> = groups.iter().map(|g| contexts(g)).collect();
    // The first pair of groups (i, then j, in order) that share a context, and their
    // smallest common one. Found through each context's groups, not by comparing every
    // pair: a reordered name makes each matching row a group of its own, and 20k rows
    // made 200M pairs. When group i is reached, none of its contexts was in an earlier
    // group (that group would have paired with i), so each list is looked at twice.
    let mut groups_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for (g, set) in sets.iter().enumerate() {
        for context in set {
            groups_of.entry(context.as_str()).or_default().push(g);
        }
    }
    for (i, a) in sets.iter().enumerate() {
        let later = a
            .iter()
            .filter_map(|c| groups_of[c.as_str()].iter().copied().find(|&g| g > i))
            .min();
        if let Some(j) = later {
            let mut common: Vec<&String> = a.intersection(&sets[j]).collect();
            common.sort();
            return common.first().map(|c| (*c).clone());
        }
    }
    None
}

fn partial_split(
    hits: &RuleHits<'_>,
    kernels: &[KernelRow],
    free: &impl Fn(usize) -> bool,
    total_us: f64,
) -> Option<Scored> {
    let rule = hits.rule;
    let n = rule.split.len();
    if n < 3 {
        return None;
    }
    let seen: Vec<(usize, Vec<usize>)> = hits
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (i, g.iter().map(|h| h.row).filter(|&r| free(r)).collect()))
        .filter(|(_, rows): &(usize, Vec<usize>)| !rows.is_empty())
        .collect();
    let k = seen.len();
    if k < 2 || k == n {
        return None;
    }
    let mut level = if 3 * k >= 2 * n { 2 } else { 1 };
    let groups: Vec<Vec<usize>> = seen.iter().map(|(_, rows)| rows.clone()).collect();
    let context = shared_context(&groups, kernels);
    level += i32::from(context.is_some());
    // The near miss is only as large as its smallest seen part: the parts fuse with each
    // other, so a GEMM group that matches every GEMM of the stage cannot lend its time
    // to a 0.1% all-gather (the AsyncTP note once claimed 80.3% on such a pairing).
    let share_pct = groups
        .iter()
        .map(|rows| share_of(rows, kernels, total_us))
        .fold(f64::INFINITY, f64::min);
    let parts: Vec<String> = seen
        .iter()
        .map(|(i, rows)| {
            format!(
                "{} {} {:.1}%",
                rule.split[*i].name,
                short_name(&kernels[rows[0]].name, SHORT_ARGS_MAX),
                share_of(rows, kernels, total_us)
            )
        })
        .collect();
    let missing: Vec<&str> = (0..n)
        .filter(|i| !seen.iter().any(|(j, _)| j == i))
        .map(|i| rule.split[i].name.as_str())
        .collect();
    let mut reason = format!(
        "{k} of {n} parts of the unfused path seen ({}), no {}; the smallest seen part takes {share_pct:.1}% of stage GPU time",
        parts.join(", "),
        missing.join(", ")
    );
    if let Some(context) = context {
        let _ = write!(reason, "; launched together from {context}");
    }
    Some(Scored {
        level,
        seen_ratio: k as f64 / n as f64,
        share_pct,
        note: note(rule, reason),
    })
}

fn reordered_name(
    rule: &FusionRule,
    kernels: &[KernelRow],
    name_tokens: &[Vec<String>],
    free: &impl Fn(usize) -> bool,
    total_us: f64,
) -> Option<Scored> {
    for pattern in &rule.active.kernel {
        let Some(matchers) = pattern.token_matchers().filter(|m| m.len() >= 3) else {
            continue;
        };
        let rows: Vec<usize> = (0..kernels.len())
            .filter(|&r| free(r))
            .filter(|&r| {
                let tokens = &name_tokens[r];
                matchers.iter().all(|m| tokens.iter().any(|t| m.matches(t)))
                    && !crate::catalog::pattern::appears_consecutively(matchers, tokens)
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let share_pct = share_of(&rows, kernels, total_us);
        let groups: Vec<Vec<usize>> = rows.iter().map(|&r| vec![r]).collect();
        let context = shared_context(&groups, kernels);
        let level = 1 + i32::from(context.is_some() && rows.len() > 1);
        let reason = format!(
            "{} has every token of the fused kernel pattern `{}` but not in that order; {share_pct:.1}% of stage GPU time",
            short_name(&kernels[rows[0]].name, SHORT_ARGS_MAX),
            pattern.text
        );
        return Some(Scored {
            level,
            seen_ratio: 0.0,
            share_pct,
            note: note(rule, reason),
        });
    }
    None
}

fn note(rule: &FusionRule, reason: String) -> SimilarityNote {
    SimilarityNote {
        level: String::new(),
        family_id: rule.id.clone(),
        family: rule.label.clone(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fuse::{fuse_table, stage_hits, FuseInput, RunFacts};
    use crate::catalog::parse_fusions;
    use crate::report::model::SiteShare;

    fn similarity_note(
        rules: &[FusionRule],
        kernels: &[KernelRow],
        stage_total_us: f64,
        input: &FuseInput<'_>,
        table: &[FusionRow],
    ) -> Option<SimilarityNote> {
        note_of(
            &stage_hits(rules, kernels, input),
            kernels,
            stage_total_us,
            table,
        )
    }

    fn kernel(name: &str, us: f64, location: &str) -> KernelRow {
        KernelRow {
            matched_by: None,
            mapping_confidence: None,
            name: name.to_string(),
            raw_names: vec![name.to_string()],
            family: "other".to_string(),
            gpu_time_us: us,
            share_pct: us,
            launches: 1,
            python_locations: vec![SiteShare {
                module: None,
                launch_frame: None,
                location: location.to_string(),
                share_pct: 100.0,
                launch_site_source: "graph-launch".to_string(),
            }],
            cpu_ops: vec!["cudaGraphLaunch".to_string()],
            launch_site_source: "graph-launch".to_string(),
            input_dims: None,
            launch_mix: Vec::new(),
            roofline: None,
            role: None,
        }
    }

    const ROWS: &str = r#"schema = 1
[[fusion]]
id = "sglang.chain"
label = "Norm + RoPE + cache"
origin = "sglang"
status = "mainline"
priority = 0
min_share = 0.5
likely_share = 3.0
subsumes = []
candidate_paths = ["python/sglang/x.py"]
rationale = "r"
checked_against = ["sgl-project/sglang@0000000000000000000000000000000000000000:x.py"]
[fusion.active]
kernel = ["fused add rms norm kernel"]
[[fusion.split]]
name = "norm"
kernel = ["rms norm kernel"]
[[fusion.split]]
name = "rope"
kernel = ["rotary embedding kernel"]
[[fusion.split]]
name = "cache"
kernel = ["store kvcache"]
"#;

    #[test]
    fn two_of_three_groups_from_one_file_is_a_high_note_and_deterministic() {
        let rules = parse_fusions(ROWS, "t.toml", "sglang").unwrap();
        let facts = RunFacts::default();
        let input = FuseInput {
            engine: "sglang",
            facts: &facts,
            min_share_pct: 1.0,
        };
        let kernels = [
            kernel(
                "void rms_norm_kernel<bf16>",
                3.0,
                "models/qwen3.py:10 forward",
            ),
            kernel(
                "void rotary_embedding_kernel<bf16>",
                2.0,
                "models/qwen3.py:12 forward",
            ),
        ];
        let table = fuse_table(&rules, &kernels, 100.0, &input);
        assert!(table.is_empty());
        let note = similarity_note(&rules, &kernels, 100.0, &input, &table).unwrap();
        assert_eq!(note.level, "high");
        assert_eq!(note.family_id, "sglang.chain");
        assert_eq!(
            note.reason,
            "2 of 3 parts of the unfused path seen (norm rms_norm_kernel<bf16> 3.0%, rope rotary_embedding_kernel<bf16> 2.0%), no cache; the smallest seen part takes 2.0% of stage GPU time; launched together from Python file models/qwen3.py"
        );
        // Different files: one level lower. A reordered fused name alone: low.
        let apart = [
            kernel("void rms_norm_kernel<bf16>", 3.0, "a.py:1 f"),
            kernel("void rotary_embedding_kernel<bf16>", 2.0, "b.py:2 g"),
        ];
        let note = similarity_note(&rules, &apart, 100.0, &input, &[]).unwrap();
        assert_eq!(note.level, "medium");
        let reordered = [kernel(
            "void fused_rms_norm_add_kernel<bf16>",
            2.0,
            "a.py:1 f",
        )];
        let note = similarity_note(&rules, &reordered, 100.0, &input, &[]).unwrap();
        assert_eq!(note.level, "low");
        assert!(
            note.reason
                .contains("`fused add rms norm kernel` but not in that order"),
            "{}",
            note.reason
        );
        // A broad part cannot lend its time to a tiny one: a 0.1% RoPE next to an 80%
        // norm is a 0.1% near miss, below the row's min_share, so no note.
        let lopsided = [
            kernel("void rms_norm_kernel<bf16>", 80.0, "a.py:1 f"),
            kernel("void rotary_embedding_kernel<bf16>", 0.1, "b.py:2 g"),
        ];
        assert_eq!(similarity_note(&rules, &lopsided, 100.0, &input, &[]), None);
        // One group alone says nothing.
        let one = [kernel("void rms_norm_kernel<bf16>", 3.0, "a.py:1 f")];
        assert_eq!(similarity_note(&rules, &one, 100.0, &input, &[]), None);
    }
}
