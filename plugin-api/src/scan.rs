//! Helpers for reading [`TraceEvidence`] by path components, so plugins never test bare
//! substrings (`nanovllm/engine/` must not count as `vllm/`). Plain Rust, not part of the
//! ABI: plugins compile them into themselves.

use crate::{Claim, Counted, StageHint, TraceEvidence};

/// The non-empty components of a path, split on `/` and `\\`.
pub fn components(path: &str) -> impl DoubleEndedIterator<Item = &str> {
    path.split(['/', '\\']).filter(|c| !c.is_empty())
}

/// True when `path` holds the directory components `dirs` in a row, followed by at least
/// one more component (so `dirs` are directories, not the file name).
/// `has_dir_run("/x/sglang/srt/a.py", &["sglang", "srt"])` is true;
/// `has_dir_run("nanovllm/engine/a.py", &["vllm"])` is false.
pub fn has_dir_run(path: &str, dirs: &[&str]) -> bool {
    if dirs.is_empty() {
        return false;
    }
    let parts: Vec<&str> = components(path).collect();
    // The window must leave at least one component (the file) after it.
    parts.len() > dirs.len()
        && parts[..parts.len() - 1]
            .windows(dirs.len())
            .any(|w| w == dirs)
}

/// Python frames (summed counts) whose file lies under the directory run `dirs`.
pub fn frames_under(evidence: &TraceEvidence, dirs: &[&str]) -> u64 {
    evidence
        .python_files
        .iter()
        .filter(|f| has_dir_run(f.text.as_str(), dirs))
        .map(|f| f.count)
        .sum()
}

/// All python frames the evidence lists.
pub fn total_frames(evidence: &TraceEvidence) -> u64 {
    evidence.python_files.iter().map(|f| f.count).sum()
}

/// Summed counts of the entries whose text satisfies `pred`.
pub fn count_where(items: &[Counted], pred: impl Fn(&str) -> bool) -> u64 {
    items
        .iter()
        .filter(|c| pred(c.text.as_str()))
        .map(|c| c.count)
        .sum()
}

/// The bounded part of a score: `part / total` in thousandths, at least 1 when `part > 0`,
/// at most 999. Shares make claims from different plugins comparable: the engine whose
/// code holds more of the trace's frames outranks one that is merely imported.
pub fn share_points(part: u64, total: u64) -> u32 {
    if part == 0 || total == 0 {
        return 0;
    }
    let points = (part.min(total) as u128 * 999 / total as u128) as u32;
    points.clamp(1, 999)
}

/// The bounded part of a score from a plain count: at most 999.
pub fn bounded(count: u64) -> u32 {
    count.min(999) as u32
}

/// `count` and `noun`, the noun with an `s` unless the count is one:
/// `counted_noun(1, "python frame")` is `1 python frame`.
pub fn counted_noun(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// The file-name part of a path.
pub fn file_name(path: &str) -> &str {
    components(path).next_back().unwrap_or("")
}

/// One piece of detection evidence with the score it earns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    pub score: u32,
    /// Human readable, e.g. `4562 python frames under vllm/`.
    pub evidence: String,
}

/// The claim of the strongest signal, carrying every signal's evidence, strongest first.
/// `None` when there is no signal.
pub fn best_claim(signals: impl IntoIterator<Item = Signal>) -> Option<Claim> {
    let mut signals: Vec<Signal> = signals.into_iter().collect();
    signals.sort_by_key(|s| std::cmp::Reverse(s.score));
    let top = signals.first()?.score;
    Some(Claim {
        score: top,
        evidence: signals.into_iter().map(|s| s.evidence.into()).collect(),
    })
}

/// The stage of a vLLM-style step annotation
/// `execute_[<batch>_]context_<c>(…)_generation_<g>(…)`, where `c` counts prefill
/// requests and `g` decode requests: only `c` -> Extend, only `g` -> Decode, both -> Mixed.
pub fn execute_annotation_stage(name: &str) -> StageHint {
    let Some(rest) = name.strip_prefix("execute_") else {
        return StageHint::Unknown;
    };
    let number_after = |key: &str| -> Option<u64> {
        let at = rest.find(key)? + key.len();
        let digits: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    match (number_after("context_"), number_after(")_generation_")) {
        (Some(c), Some(g)) => match (c > 0, g > 0) {
            (true, false) => StageHint::Extend,
            (false, true) => StageHint::Decode,
            (true, true) => StageHint::Mixed,
            (false, false) => StageHint::Unknown,
        },
        _ => StageHint::Unknown,
    }
}

/// The stage token in an SGLang-family trace file name (`…-TP-0-EXTEND.trace.json.gz`,
/// or the `<prefix>-prefill-…` of stage-separated captures); the last stage token wins.
pub fn stage_of_file_name(name: &str) -> StageHint {
    name.split(['-', '.', '_'])
        .rev()
        .find_map(|token| match token.to_ascii_uppercase().as_str() {
            "EXTEND" | "PREFILL" => Some(StageHint::Extend),
            "DECODE" => Some(StageHint::Decode),
            "MIXED" => Some(StageHint::Mixed),
            _ => None,
        })
        .unwrap_or(StageHint::Unknown)
}

/// True for an annotation name of the `execute_…context_…_generation_…` form (digits
/// may already be collapsed to `N`).
pub fn is_execute_annotation(name: &str) -> bool {
    name.starts_with("execute_") && name.contains("context_") && name.contains(")_generation_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_runs_are_whole_components() {
        assert!(has_dir_run("vllm/v1/worker/gpu_model_runner.py", &["vllm"]));
        assert!(has_dir_run(
            "/sgl/python/sglang/srt/x.py",
            &["sglang", "srt"]
        ));
        assert!(has_dir_run("C:\\py\\vllm\\x.py", &["vllm"]));
        assert!(!has_dir_run("nanovllm/engine/llm_engine.py", &["vllm"]));
        assert!(!has_dir_run("vllm_utils/x.py", &["vllm"]));
        // A file named like the package is not the package directory.
        assert!(!has_dir_run("/bench/vllm", &["vllm"]));
        assert!(!has_dir_run("sglang/x.py", &[]));
    }

    #[test]
    fn the_last_stage_token_of_a_file_name_wins() {
        let stage = stage_of_file_name;
        assert_eq!(stage("1761.5-TP-0-EXTEND.trace.json.gz"), StageHint::Extend);
        assert_eq!(stage("run-prefill-TP-3.trace.json.gz"), StageHint::Extend);
        assert_eq!(stage("1761.5-TP-0-decode.trace.json"), StageHint::Decode);
        assert_eq!(stage("x_MIXED.trace.json"), StageHint::Mixed);
        assert_eq!(stage("prefill-run-DECODE.json"), StageHint::Decode);
        // Whole tokens only: `decoder` and `extended` are not stages.
        assert_eq!(stage("decoder-extended-TP-0.json"), StageHint::Unknown);
    }

    #[test]
    fn shares_are_bounded() {
        assert_eq!(share_points(0, 10), 0);
        assert_eq!(share_points(1, 1_000_000), 1);
        assert_eq!(share_points(5, 10), 499);
        assert_eq!(share_points(10, 10), 999);
        assert_eq!(bounded(5000), 999);
        assert_eq!(file_name("/a/b/c.trace.json.gz"), "c.trace.json.gz");
        assert_eq!(counted_noun(1, "python frame"), "1 python frame");
        assert_eq!(counted_noun(0, "python frame"), "0 python frames");
    }

    #[test]
    fn execute_annotations() {
        // The two forms seen in shared/traces (vLLM eager prefill, vLLM/SGLang decode).
        let prefill = "execute_context_1(888_788544)_generation_0(0)";
        let decode =
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)";
        assert_eq!(execute_annotation_stage(prefill), StageHint::Extend);
        assert_eq!(execute_annotation_stage(decode), StageHint::Decode);
        assert_eq!(
            execute_annotation_stage("execute_context_2(10_20)_generation_3(3)"),
            StageHint::Mixed
        );
        assert_eq!(
            execute_annotation_stage("execute_model"),
            StageHint::Unknown
        );
        assert!(is_execute_annotation(
            "execute_N_context_N(sqNskN)_generation_N(sqN)"
        ));
        assert!(!is_execute_annotation("execute_model"));
    }

    #[test]
    fn strongest_signal_leads() {
        let claim = best_claim([
            Signal {
                score: 1005,
                evidence: "weak".into(),
            },
            Signal {
                score: 2100,
                evidence: "strong".into(),
            },
        ])
        .unwrap();
        assert_eq!(claim.score, 2100);
        assert_eq!(claim.evidence[0].as_str(), "strong");
        assert_eq!(claim.evidence.len(), 2);
        assert!(best_claim([]).is_none());
    }
}
