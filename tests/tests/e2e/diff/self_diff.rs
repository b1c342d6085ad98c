//! The waterfall adds up, in integer ns from the JSON's decimal text, on every stage of
//! every pair and of two shared traces diffed against each other: each side's rows sum to
//! its step time and the rows' deltas to the stage's delta. (A trace diffed against itself
//! is checked in `engine.rs`, against the triage's own steps.)

use llm_triage_tests::diff_pairs::pairs;

use super::support::{diff_stages, pair, Stage};
use crate::util::shared_trace;

/// Where `stage`'s waterfall does not add up exactly.
fn sum_errors(what: &str, stage: &Stage) -> Vec<String> {
    let mut wrong = Vec::new();
    let (base, new, delta) = stage.rows.iter().fold((0, 0, 0), |(b, n, d), r| {
        (b + r.base_ns, n + r.new_ns, d + r.delta_ns)
    });
    if delta != stage.delta_ns {
        wrong.push(format!(
            "{what} {}: rows' deltas sum to {delta} ns, the stage's delta is {} ns",
            stage.stage, stage.delta_ns
        ));
    }
    if stage.new_step_ns - stage.base_step_ns != stage.delta_ns {
        wrong.push(format!(
            "{what} {}: {} - {} != delta {} ns",
            stage.stage, stage.new_step_ns, stage.base_step_ns, stage.delta_ns
        ));
    }
    if (base, new) != (stage.base_step_ns, stage.new_step_ns) {
        wrong.push(format!(
            "{what} {}: rows sum to {base} / {new} ns, the steps are {} / {} ns",
            stage.stage, stage.base_step_ns, stage.new_step_ns
        ));
    }
    for r in &stage.rows {
        if r.new_ns - r.base_ns != r.delta_ns {
            wrong.push(format!(
                "{what} {}: row {r:?}: new - base != delta",
                stage.stage
            ));
        }
    }
    wrong
}

#[test]
fn every_waterfall_adds_up_exactly_in_ns() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs: Vec<(String, Vec<Stage>)> = pairs()
        .iter()
        .map(|spec| {
            let truth = pair(dir.path(), spec.name);
            let stages = diff_stages(&truth.base.trace, &truth.new.trace, &[]);
            (spec.name.to_string(), stages)
        })
        .collect();
    let cross = |base: &str, new: &str| -> (String, Vec<Stage>) {
        let (b, n) = (shared_trace(base), shared_trace(new));
        let stages = diff_stages(&b, &n, &[]);
        (format!("{base} -> {new}"), stages)
    };
    runs.push(cross(
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
    ));
    runs.push(cross(
        "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
        "AMD-AGI__TraceLens__eager_trace.json.gz",
    ));
    let mut wrong = Vec::new();
    for (what, stages) in &runs {
        assert!(!stages.is_empty(), "{what}: no stage");
        for stage in stages {
            wrong.extend(sum_errors(what, stage));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
