//! Helpers for reading [`TraceEvidence`] by path components, so plugins never test bare
//! substrings (`nanovllm/engine/` must not count as `vllm/`). Plain Rust, not part of the
//! ABI: plugins compile them into themselves.
//!
//! Two helpers read conventions that several engines share rather than one engine's own:
//! [`execute_annotation_stage`] (vLLM's `execute_…context_…_generation_…` step
//! annotations, which some SGLang builds write too; [`new_cached_annotation_stage`] for
//! current vLLM's `execute_new_…_cached_…`) and [`stage_of_file_name`] (the stage
//! token of SGLang-family trace file names, TokenSpeed's included). Plugins outside this
//! repository call them, so they are frozen API: what they return for a name changes
//! only with a new major version; a new convention gets a new function.

use crate::{score, Claim, Counted, StageHint, TraceEvidence};
use std::fmt::Write as _;

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

/// The source-frames signal every engine plugin gives: the python frames whose file lies
/// under one of the directory runs `roots` (a file under two of them counts once),
/// shown as `<n> python frames under <label>` and scored [`score::SOURCE_FRAMES`] plus
/// their share of all frames. `None` when no frame lies there.
///
/// `source_frames_signal(evidence, &[&["lmdeploy", "pytorch"]], "lmdeploy/pytorch/")`
/// gives `30 python frames under lmdeploy/pytorch/`.
pub fn source_frames_signal(
    evidence: &TraceEvidence,
    roots: &[&[&str]],
    label: &str,
) -> Option<Signal> {
    source_frames_signal_with_kernel_lib(evidence, roots, label, &[], "")
}

/// [`source_frames_signal`] for an engine that also ships its kernels as a Python package
/// of their own (SGLang's `sgl_kernel`), under the directory run `kernel_lib`. Next to the
/// engine's own frames, the kernel library's frames add to the share and to the text
/// (`83 python frames under sglang/ (+12 under sgl_kernel/)`). Alone they are the
/// engine's kernels called from some other code, a weak hint: the
/// [`score::ANNOTATIONS`] tier, `<k> python frames under <kernel_label> but none under
/// <label>`.
pub fn source_frames_signal_with_kernel_lib(
    evidence: &TraceEvidence,
    roots: &[&[&str]],
    label: &str,
    kernel_lib: &[&str],
    kernel_label: &str,
) -> Option<Signal> {
    let total = total_frames(evidence);
    let own = count_where(&evidence.python_files, |path| {
        roots.iter().any(|dirs| has_dir_run(path, dirs))
    });
    let kernel_frames = frames_under(evidence, kernel_lib);
    if own > 0 {
        let mut text = format!("{} under {label}", counted_noun(own, "python frame"));
        if kernel_frames > 0 {
            let _ = write!(text, " (+{kernel_frames} under {kernel_label})");
        }
        return Some(Signal {
            score: score::SOURCE_FRAMES + share_points(own + kernel_frames, total),
            evidence: text,
        });
    }
    (kernel_frames > 0).then(|| Signal {
        score: score::ANNOTATIONS + share_points(kernel_frames, total),
        evidence: format!(
            "{} under {kernel_label} but none under {label}",
            counted_noun(kernel_frames, "python frame")
        ),
    })
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
/// The stage of current vLLM's step annotation `execute_new_<n>_cached_<m>`
/// (`Worker.annotate_profile`, vllm/v1/worker/gpu_worker.py): `n` requests scheduled
/// for the first time, which prefill, and `m` scheduled before, which decode or continue
/// a chunked prefill. So only `n > 0, m = 0` is known (Extend); a step with any cached
/// request is Unknown, as is any other name.
pub fn new_cached_annotation_stage(name: &str) -> StageHint {
    match name.strip_prefix("execute_new_").and_then(new_and_cached) {
        Some((new, 0)) if new > 0 => StageHint::Extend,
        _ => StageHint::Unknown,
    }
}

/// `<n>_cached_<m>` (the rest of `execute_new_<n>_cached_<m>`) as (n, m); `None` for
/// anything else, trailing text included.
fn new_and_cached(counts: &str) -> Option<(u64, u64)> {
    let (new, cached) = counts.split_once("_cached_")?;
    let number = |digits: &str| {
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse().ok())
            .flatten()
    };
    Some((number(new)?, number(cached)?))
}

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
    fn current_vllm_step_annotations_know_only_all_new_steps() {
        // vllm/v1/worker/gpu_worker.py: f"execute_new_{num_new}_cached_{num_cached}".
        assert_eq!(
            new_cached_annotation_stage("execute_new_4_cached_0"),
            StageHint::Extend
        );
        // The older convention's function keeps its answer for these names (frozen API).
        assert_eq!(
            execute_annotation_stage("execute_new_4_cached_0"),
            StageHint::Unknown
        );
        // Cached requests decode or continue a chunked prefill: not knowable.
        for name in [
            "execute_new_0_cached_32",
            "execute_new_2_cached_30",
            "execute_new_0_cached_0",
            "execute_new_4_cached_0x",
            "execute_new__cached_0",
            "execute_new_4",
            "execute_context_1(888_788544)_generation_0(0)",
        ] {
            assert_eq!(
                new_cached_annotation_stage(name),
                StageHint::Unknown,
                "{name}"
            );
        }
    }

    fn evidence(files: &[(&str, u64)]) -> TraceEvidence {
        TraceEvidence {
            python_files: crate::testing::counted(files),
            ..Default::default()
        }
    }

    #[test]
    fn source_frames_are_counted_under_whole_directory_runs() {
        let e = evidence(&[
            ("/opt/lmdeploy/pytorch/engine/model_agent/agent.py", 30),
            ("/opt/lmdeploy/serve/async_engine.py", 5),
            ("/opt/torch/nn/modules/module.py", 5),
        ]);
        let signal = source_frames_signal(&e, &[&["lmdeploy", "pytorch"]], "lmdeploy/pytorch/");
        assert_eq!(
            signal,
            Some(Signal {
                score: score::SOURCE_FRAMES + 749, // 30 * 999 / 40
                evidence: "30 python frames under lmdeploy/pytorch/".into(),
            })
        );
        let one = evidence(&[("vllm/v1/worker/gpu_model_runner.py", 1)]);
        let signal = source_frames_signal(&one, &[&["vllm"]], "vllm/").unwrap();
        assert_eq!(signal.evidence, "1 python frame under vllm/");
        assert_eq!(signal.score, score::SOURCE_FRAMES + 999);
        let nano = evidence(&[("nanovllm/engine/model_runner.py", 20)]);
        assert_eq!(source_frames_signal(&nano, &[&["vllm"]], "vllm/"), None);
        assert_eq!(
            source_frames_signal(&evidence(&[]), &[&["vllm"]], "vllm/"),
            None
        );
    }

    #[test]
    fn a_file_under_two_roots_counts_once() {
        let e = evidence(&[
            ("/ws/sglang/srt/managers/scheduler.py", 10),
            ("/ws/sglang_omni/pipeline.py", 5),
            ("/ws/sglang/sglang_omni/x.py", 2),
            ("torch/utils/_pytree.py", 83),
        ]);
        let roots: &[&[&str]] = &[&["sglang"], &["sglang_omni"]];
        let signal = source_frames_signal(&e, roots, "sglang/").unwrap();
        assert_eq!(signal.evidence, "17 python frames under sglang/");
        assert_eq!(signal.score, score::SOURCE_FRAMES + 169); // 17 * 999 / 100
    }

    #[test]
    fn a_kernel_library_adds_to_own_frames_and_alone_is_weak() {
        let roots: &[&[&str]] = &[&["sglang"]];
        let with = |files: &[(&str, u64)]| {
            source_frames_signal_with_kernel_lib(
                &evidence(files),
                roots,
                "sglang/",
                &["sgl_kernel"],
                "sgl_kernel/",
            )
        };
        let both = with(&[
            ("sglang/srt/layers/activation.py", 83),
            ("sgl_kernel/elementwise.py", 12),
            ("torch/nn/modules/module.py", 5),
        ])
        .unwrap();
        assert_eq!(
            both.evidence,
            "83 python frames under sglang/ (+12 under sgl_kernel/)"
        );
        assert_eq!(both.score, score::SOURCE_FRAMES + 949); // 95 * 999 / 100
        let alone = with(&[("sgl_kernel/elementwise.py", 10), ("vllm/x/y.py", 90)]).unwrap();
        assert_eq!(
            alone.evidence,
            "10 python frames under sgl_kernel/ but none under sglang/"
        );
        assert_eq!(alone.score, score::ANNOTATIONS + 99); // 10 * 999 / 100
        assert_eq!(with(&[("vllm/x/y.py", 90)]), None);
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
