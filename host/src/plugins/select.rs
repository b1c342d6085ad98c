//! Choosing the engine for a triage.
//!
//! An explicit `--framework NAME` (or alias) always wins. `auto` asks every plugin about
//! every trace and takes the single strongest claim; no claim, or two engines tied at the
//! top score, is refused with the evidence that was seen. There is no default engine: the
//! predecessor analysed unknown traces as SGLang, which produced confident nonsense.
//! A named engine is still asked about the traces, like every other: when another
//! engine's claim is stronger, the name is honoured with a warning naming that evidence.

use std::collections::HashMap;

use llm_triage_plugin_api::{scan, TraceEvidence};

use super::load::normalize_name;
use super::{Claim, Engine, PluginSet};
use crate::error::TriageError;

/// The chosen engine and why.
#[derive(Debug)]
pub struct Selection<'a> {
    pub engine: &'a Engine,
    /// Human-readable reasons, shown in the report header.
    pub decided_by: Vec<String>,
    /// With `--framework NAME`: one line when the traces' evidence points to another engine.
    pub warning: Option<String>,
}

/// How many entries of each evidence list a refusal message shows.
const SHOWN: usize = 3;

pub fn select<'a>(
    set: &'a PluginSet,
    framework: &str,
    evidence: &[TraceEvidence],
) -> Result<Selection<'a>, TriageError> {
    let wanted = normalize_name(framework);
    if wanted.is_empty() || wanted == "auto" {
        return auto_select(set, evidence);
    }
    match set.find(&wanted) {
        Some(engine) => Ok(Selection {
            engine,
            decided_by: vec![format!("--framework {}", framework.trim())],
            warning: contrary_evidence(set, engine, framework.trim(), evidence),
        }),
        None => Err(TriageError::Usage(format!(
            "unknown framework {:?}; known: {}, or auto",
            framework.trim(),
            known_names(set)
        ))),
    }
}

/// The warning for a named engine that another engine's claim outscores. A plugin whose
/// detection fails gives no claim here: the user chose the engine, and only its plugin
/// runs the triage.
fn contrary_evidence(
    set: &PluginSet,
    named: &Engine,
    framework: &str,
    evidence: &[TraceEvidence],
) -> Option<String> {
    let claim_of = |engine: &Engine| strongest_claim(engine, evidence).ok().flatten();
    let own = claim_of(named);
    let own_score = own.as_ref().map_or(0, |c| c.score);
    let mut stronger: Option<(&Engine, Claim)> = None;
    for engine in set.engines.iter().filter(|e| !std::ptr::eq(*e, named)) {
        let Some(claim) = claim_of(engine) else {
            continue;
        };
        let best = stronger.as_ref().map_or(own_score, |(_, c)| c.score);
        if claim.score > best {
            stronger = Some((engine, claim));
        }
    }
    let (other, claim) = stronger?;
    let own = match own {
        Some(c) => format!("{} scores it {}", named.manifest.display_name, c.score),
        None => format!("{} does not recognise it", named.manifest.display_name),
    };
    Some(format!(
        "--framework {framework} is honoured, but the trace's evidence points to {} (score {}: {}); {own}",
        other.manifest.display_name,
        claim.score,
        claim.evidence.join("; ")
    ))
}

/// `sglang (sgl), vllm, …` for messages.
pub fn known_names(set: &PluginSet) -> String {
    if set.engines.is_empty() {
        return "(no plugins loaded)".to_string();
    }
    let names: Vec<String> = set
        .engines
        .iter()
        .map(|e| match e.manifest.aliases.as_slice() {
            [] => e.manifest.name.clone(),
            aliases => format!("{} ({})", e.manifest.name, aliases.join(", ")),
        })
        .collect();
    names.join(", ")
}

fn auto_select<'a>(
    set: &'a PluginSet,
    evidence: &[TraceEvidence],
) -> Result<Selection<'a>, TriageError> {
    let mut claims: Vec<(&Engine, Claim)> = Vec::new();
    for engine in &set.engines {
        if let Some(claim) = strongest_claim(engine, evidence)? {
            claims.push((engine, claim));
        }
    }
    // Strongest first; equal scores keep search order (only for display: a tie refuses).
    claims.sort_by_key(|(_, claim)| std::cmp::Reverse(claim.score));
    let Some((top_engine, top)) = claims.first() else {
        return Err(TriageError::FrameworkRefused(format!(
            "no engine plugin recognised {} ({}); {}",
            describe_inputs(evidence),
            describe_evidence(evidence),
            advice(set)
        )));
    };
    let tied: Vec<&(&Engine, Claim)> = claims
        .iter()
        .filter(|(_, c)| c.score == top.score)
        .collect();
    if tied.len() > 1 {
        let lines: Vec<String> = tied
            .iter()
            .map(|(e, c)| {
                format!(
                    "{} (score {}): {}",
                    e.manifest.name,
                    c.score,
                    c.evidence.join("; ")
                )
            })
            .collect();
        return Err(TriageError::FrameworkRefused(format!(
            "{} engines claim {} equally strongly: {} ({}); {}",
            tied.len(),
            describe_inputs(evidence),
            lines.join(" vs "),
            describe_evidence(evidence),
            advice(set)
        )));
    }
    let mut decided_by = top.evidence.clone();
    if let Some((runner_up, claim)) = claims.get(1) {
        decided_by.push(format!(
            "weaker claim: {} (score {} < {}): {}",
            runner_up.manifest.display_name,
            claim.score,
            top.score,
            claim.evidence.first().map(String::as_str).unwrap_or("")
        ));
    }
    Ok(Selection {
        engine: top_engine,
        decided_by,
        warning: None,
    })
}

/// The engine's strongest claim over all traces of the run.
fn strongest_claim(
    engine: &Engine,
    evidence: &[TraceEvidence],
) -> Result<Option<Claim>, TriageError> {
    let mut best: Option<Claim> = None;
    for e in evidence {
        if let Some(claim) = engine.detect(e)? {
            if best.as_ref().is_none_or(|b| claim.score > b.score) {
                best = Some(claim);
            }
        }
    }
    Ok(best)
}

fn advice(set: &PluginSet) -> String {
    format!(
        "pass --framework NAME to analyse it anyway (known: {})",
        known_names(set)
    )
}

fn describe_inputs(evidence: &[TraceEvidence]) -> String {
    let names: Vec<&str> = evidence
        .iter()
        .map(|e| scan::file_name(e.file_path.as_str()))
        .collect();
    match names.as_slice() {
        [] => "the input (no traces)".to_string(),
        [one] => one.to_string(),
        many => many.join(", "),
    }
}

/// What the traces showed, compactly: python roots, annotations, processes and threads,
/// kernel samples, server args.
pub fn describe_evidence(evidence: &[TraceEvidence]) -> String {
    let mut roots: HashMap<String, u64> = HashMap::new();
    let mut annotations: HashMap<String, u64> = HashMap::new();
    let mut kernels: HashMap<String, u64> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut server_args = 0usize;
    for e in evidence {
        for f in e.python_files.iter() {
            *roots.entry(python_root(f.text.as_str())).or_default() += f.count;
        }
        for a in e.annotation_names.iter() {
            *annotations.entry(a.text.to_string()).or_default() += a.count;
        }
        for k in e.kernel_names.iter() {
            *kernels.entry(shorten(k.text.as_str(), 60)).or_default() += k.count;
        }
        for n in e.process_names.iter().chain(e.thread_names.iter()) {
            // Kineto's per-stream pseudo threads (`stream 7 `) say nothing about the engine.
            if is_gpu_stream_name(n.as_str()) {
                continue;
            }
            if !names.iter().any(|x| x == n.as_str()) {
                names.push(n.to_string());
            }
        }
        server_args = server_args.max(e.server_args.len());
    }
    let line = |label: &str, counts: HashMap<String, u64>| {
        let mut items: Vec<(String, u64)> = counts.into_iter().collect();
        items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let shown: Vec<String> = items
            .iter()
            .take(SHOWN)
            .map(|(t, c)| format!("{t} x{c}"))
            .collect();
        let more = items.len().saturating_sub(SHOWN);
        match (shown.is_empty(), more) {
            (true, _) => format!("{label}: none"),
            (false, 0) => format!("{label}: {}", shown.join(", ")),
            (false, n) => format!("{label}: {} (+{n} more)", shown.join(", ")),
        }
    };
    let mut lines = vec![
        line("evidence seen: python roots", roots),
        line("annotations", annotations),
        line("kernels", kernels),
    ];
    names.truncate(SHOWN);
    lines.push(if names.is_empty() {
        "process/thread names: none".to_string()
    } else {
        format!("process/thread names: {}", names.join(", "))
    });
    lines.push(if server_args == 0 {
        "server_args.json: none found".to_string()
    } else {
        format!("server_args.json: {server_args} keys, none that a plugin recognised")
    });
    // One line: errors are one line (see the README), however much evidence there is.
    lines.join("; ")
}

fn is_gpu_stream_name(name: &str) -> bool {
    name.trim()
        .strip_prefix("stream ")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A python file's package root: `torch/` for `torch/nn/modules/module.py`; for an
/// absolute path, the part after `site-packages/` or `dist-packages/` when present, else
/// the file's directory.
fn python_root(file: &str) -> String {
    let after_packages = ["site-packages/", "dist-packages/"]
        .iter()
        .filter_map(|m| file.rfind(m).map(|i| &file[i + m.len()..]))
        .next();
    let relative = after_packages.unwrap_or(file);
    if relative.starts_with('/') {
        return match relative.rfind('/') {
            Some(i) => relative[..=i].to_string(),
            None => relative.to_string(),
        };
    }
    match relative.find('/') {
        Some(i) => relative[..=i].to_string(),
        None => relative.to_string(),
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_roots() {
        assert_eq!(python_root("torch/nn/modules/module.py"), "torch/");
        assert_eq!(python_root("nanovllm/engine/llm_engine.py"), "nanovllm/");
        assert_eq!(
            python_root("/usr/lib/python3/dist-packages/transformers/models/qwen2/x.py"),
            "transformers/"
        );
        assert_eq!(python_root("/home/u/proj/run.py"), "/home/u/proj/");
        assert_eq!(python_root("inspect.py"), "inspect.py");
        assert!(is_gpu_stream_name("stream 7 "));
        assert!(!is_gpu_stream_name("stream_reader"));
    }

    #[test]
    fn evidence_description_lists_the_top_entries() {
        use llm_triage_plugin_api::Counted;
        let counted = |items: &[(&str, u64)]| {
            items
                .iter()
                .map(|(t, c)| Counted {
                    text: (*t).into(),
                    count: *c,
                })
                .collect()
        };
        let e = TraceEvidence {
            python_files: counted(&[
                ("torch/nn/modules/module.py", 1049),
                ("transformers/configuration_utils.py", 403),
                ("transformers/models/qwen2/modeling_qwen2.py", 196),
            ]),
            annotation_names: counted(&[("ProfilerStep#N", 2)]),
            ..Default::default()
        };
        let text = describe_evidence(&[e]);
        assert_eq!(
            text,
            "evidence seen: python roots: torch/ x1049, transformers/ x599; annotations: \
             ProfilerStep#N x2; kernels: none; process/thread names: none; \
             server_args.json: none found"
        );
    }
}
