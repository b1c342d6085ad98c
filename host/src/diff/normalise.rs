//! Per-step normalisation: how many steps each side's stage figures are averaged over,
//! exact integer division with the rounding made explicit, and what the steps ran (batch,
//! tokens, context) from their labels, so two runs of different workloads are compared
//! per step (and per token where both give token counts) with the difference said.

use crate::report::{StageReport, Step, Workload};

/// `total / count` rounded to the nearest nanosecond, halves away from zero. `count` is
/// at least 1.
pub(crate) fn per_step(total_ns: i64, count: usize) -> i64 {
    let n = count.max(1) as i64;
    let (q, r) = (total_ns / n, total_ns % n);
    if 2 * r.abs() >= n {
        q + total_ns.signum()
    } else {
        q
    }
}

/// Exact nanoseconds of a report time. Report times are exact nanoseconds written as
/// `ns / 1000`, which converts back exactly (a unit test holds the round trip).
pub(crate) fn ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

/// Microseconds of exact nanoseconds, as report times are written.
pub(crate) fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// The steps a stage's figures are averaged over: its timeline's steps; none without a
/// timeline or without steps (then the stage's GPU time is compared as one step).
pub(crate) fn steps(stage: &StageReport) -> &[Step] {
    stage.timeline.as_ref().map_or(&[], |t| t.steps.as_slice())
}

/// What one step's label says it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct StepLoad {
    batch: Option<u64>,
    tokens: Option<u64>,
    context: Option<u64>,
}

/// The workload of a stage's steps, averaged over the steps whose label gives each fact.
pub(crate) fn workload(steps: &[Step]) -> Workload {
    let loads: Vec<StepLoad> = steps.iter().map(|s| step_load(&s.label)).collect();
    let mean = |values: Vec<u64>| -> Option<f64> {
        (!values.is_empty()).then(|| values.iter().sum::<u64>() as f64 / values.len() as f64)
    };
    let tokens: Vec<u64> = loads.iter().filter_map(|l| l.tokens).collect();
    Workload {
        batch_mean: mean(loads.iter().filter_map(|l| l.batch).collect()),
        tokens_mean: mean(tokens.clone()),
        context_mean: mean(loads.iter().filter_map(|l| l.context).collect()),
        steps_with_tokens: tokens.len(),
        tokens_total: tokens.iter().sum(),
    }
}

/// SGLang's `step[DECODE bs=32]` / `step[EXTEND bs=15 toks=15360]`; vLLM's
/// `execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)`
/// (requests, then per phase the sums of query and KV lengths) and its older
/// `execute_context_1(888_788544)_generation_0(0)` (query sum, then its square sum).
fn step_load(label: &str) -> StepLoad {
    if let Some(rest) = label.find("execute_").map(|at| &label[at..]) {
        return vllm_load(rest);
    }
    let field = |name: &str| {
        label
            .split([' ', '[', ']', ','])
            .find_map(|part| part.strip_prefix(name)?.parse::<u64>().ok())
    };
    StepLoad {
        batch: field("bs="),
        tokens: field("toks=").or_else(|| field("tokens=")),
        context: None,
    }
}

fn vllm_load(label: &str) -> StepLoad {
    let mut load = StepLoad::default();
    let mut requests = None;
    for phase in ["context_", "generation_"] {
        let Some(at) = label.find(phase) else {
            continue;
        };
        let rest = &label[at + phase.len()..];
        let count = leading_number(rest);
        if let Some(c) = count {
            requests = Some(requests.unwrap_or(0) + c);
        }
        let inside = rest
            .split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(i, _)| i);
        let Some(inside) = inside else {
            continue;
        };
        let (tokens, context) = match inside.strip_prefix("sq") {
            Some(sums) => (
                leading_number(sums),
                sums.split_once("sk").and_then(|(_, r)| leading_number(r)),
            ),
            None => (leading_number(inside), None),
        };
        if let Some(t) = tokens {
            load.tokens = Some(load.tokens.unwrap_or(0) + t);
        }
        if let Some(c) = context {
            load.context = Some(load.context.unwrap_or(0) + c);
        }
    }
    // `execute_32_...`: the total request count comes first when given.
    let total = label.strip_prefix("execute_").and_then(leading_number);
    load.batch = total.or(requests);
    load
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: &str = &text[..text.bytes().take_while(u8::is_ascii_digit).count()];
    digits.parse().ok()
}

/// Whether two workloads differ enough to say so: batch or tokens per step more than
/// 1% apart, or known on one side only.
pub(crate) fn workloads_differ(base: &Workload, new: &Workload) -> bool {
    let apart = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() > 0.01 * a.abs().max(b.abs()),
        (None, None) => false,
        _ => true,
    };
    apart(base.batch_mean, new.batch_mean) || apart(base.tokens_mean, new.tokens_mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_step_rounds_half_away_from_zero() {
        assert_eq!(per_step(10, 4), 3); // 2.5
        assert_eq!(per_step(9, 4), 2); // 2.25
        assert_eq!(per_step(-10, 4), -3);
        assert_eq!(per_step(-9, 4), -2);
        assert_eq!(per_step(7, 0), 7);
        assert_eq!(per_step(0, 3), 0);
    }

    #[test]
    fn report_microseconds_convert_back_to_their_nanoseconds() {
        // As the renderers write them: exact ns / 1000, through JSON text and back.
        for ns_value in [
            0i64,
            1,
            999,
            1001,
            123_456_789,
            4_909_914_216_512_886,
            -7_305,
        ] {
            let text = serde_json::to_string(&us(ns_value)).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(ns(back), ns_value, "{text}");
        }
    }

    #[test]
    fn labels_give_batch_tokens_and_context() {
        assert_eq!(
            step_load("step[DECODE bs=32]"),
            StepLoad {
                batch: Some(32),
                tokens: None,
                context: None
            }
        );
        assert_eq!(
            step_load("step[EXTEND bs=15 toks=15360]"),
            StepLoad {
                batch: Some(15),
                tokens: Some(15360),
                context: None
            }
        );
        assert_eq!(
            step_load(
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"
            ),
            StepLoad {
                batch: Some(32),
                tokens: Some(32),
                context: Some(55086)
            }
        );
        assert_eq!(
            step_load("execute_context_1(888_788544)_generation_0(0)"),
            StepLoad {
                batch: Some(1),
                tokens: Some(888),
                context: None
            }
        );
        assert_eq!(step_load("ProfilerStep#3"), StepLoad::default());
    }

    #[test]
    fn workload_means_over_the_steps_that_say() {
        let step = |label: &str| Step {
            label: label.to_string(),
            ..Step::default()
        };
        let w = workload(&[
            step("step[EXTEND bs=2 toks=256]"),
            step("step[EXTEND bs=4 toks=512]"),
            step("whole stage"),
        ]);
        assert_eq!(w.batch_mean, Some(3.0));
        assert_eq!(w.tokens_mean, Some(384.0));
        assert_eq!(w.steps_with_tokens, 2);
        assert_eq!(w.tokens_total, 768);
        let other = Workload {
            batch_mean: Some(3.02),
            tokens_mean: Some(384.0),
            ..Workload::default()
        };
        assert!(!workloads_differ(&w, &other));
        let bigger = Workload {
            batch_mean: Some(6.0),
            ..other
        };
        assert!(workloads_differ(&w, &bigger));
    }
}
