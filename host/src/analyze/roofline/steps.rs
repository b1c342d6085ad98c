//! The step annotations that carry attention's sq/sk sums, and which one a launch falls
//! in. Two spellings carry them:
//!
//! * vLLM: `execute_<N>_context_<R>(sq<a>sk<b>sqsq<c>sqsk<d>)_generation_<R>(sq..sk..sqsq..sqsk..)`,
//!   and the older `execute_context_<R>(<sq>_<sqsq>)_generation_<R>(<sq>)` (no prefix
//!   cache: `sk = sq`, `sqsk = sqsq`; usable only when no generation request ran, since
//!   it gives decode no key counts);
//! * SGLang: `step[MODE bs=.. c_sq=.. c_sk=.. c_sqsq=.. c_sqsk=.. g_sq=.. ...]`, where an
//!   `EXTEND` step may leave `c_sq` to `toks=`.
//!
//! A step without the sums (`step[EXTEND bs=15 toks=15360]`, `step[DECODE bs=32]`) gives
//! attention no FLOPs: the key counts of paged requests are known only at run time.

use crate::analyze::roofline::formulas::StepCounts;
use crate::trace::event::{Ns, Trace};

/// Parses a step annotation's sums; `None` when the name carries none.
pub fn step_counts(name: &str) -> Option<StepCounts> {
    if name.starts_with("execute_") {
        vllm_counts(name)
    } else if name.starts_with("step[") {
        sglang_counts(name)
    } else {
        None
    }
}

fn vllm_counts(name: &str) -> Option<StepCounts> {
    let (context, generation) = name.split_once("_generation_")?;
    let c = paren_numbers(context)?;
    let g = paren_numbers(generation)?;
    match (c.as_slice(), g.as_slice()) {
        ([c_sq, c_sk, c_sqsq, c_sqsk], [g_sq, g_sk, g_sqsq, g_sqsk]) => Some(StepCounts {
            c_sq: *c_sq,
            c_sk: *c_sk,
            c_sqsq: *c_sqsq,
            c_sqsk: *c_sqsk,
            g_sq: *g_sq,
            g_sk: *g_sk,
            g_sqsq: *g_sqsq,
            g_sqsk: *g_sqsk,
        }),
        ([c_sq, c_sqsq], [0]) => Some(StepCounts {
            c_sq: *c_sq,
            c_sk: *c_sq,
            c_sqsq: *c_sqsq,
            c_sqsk: *c_sqsq,
            ..StepCounts::default()
        }),
        _ => None,
    }
}

/// The numbers inside the last `(...)` of `part`: `sq1sk2sqsq3sqsk4` gives 1, 2, 3, 4
/// (only in that order of labels), `888_788544` gives 888, 788544.
fn paren_numbers(part: &str) -> Option<Vec<u64>> {
    let open = part.rfind('(')?;
    let inner = part[open + 1..].split(')').next()?;
    if let Some(rest) = inner.strip_prefix("sq") {
        let (sq, rest) = rest.split_once("sk")?;
        let (sk, rest) = rest.split_once("sqsq")?;
        let (sqsq, sqsk) = rest.split_once("sqsk")?;
        return [sq, sk, sqsq, sqsk]
            .iter()
            .map(|n| n.parse().ok())
            .collect();
    }
    inner.split('_').map(|n| n.parse().ok()).collect()
}

fn sglang_counts(name: &str) -> Option<StepCounts> {
    let body = name.strip_prefix("step[")?.strip_suffix(']')?;
    let mut counts = StepCounts::default();
    let mut toks = None;
    let mut seen = 0u32;
    for field in body.split_whitespace().skip(1) {
        let Some((key, value)) = field.split_once('=') else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        let slot = match key {
            "toks" => {
                toks = Some(value);
                continue;
            }
            "c_sq" => &mut counts.c_sq,
            "c_sk" => &mut counts.c_sk,
            "c_sqsq" => &mut counts.c_sqsq,
            "c_sqsk" => &mut counts.c_sqsk,
            "g_sq" => &mut counts.g_sq,
            "g_sk" => &mut counts.g_sk,
            "g_sqsq" => &mut counts.g_sqsq,
            "g_sqsk" => &mut counts.g_sqsk,
            _ => continue,
        };
        *slot = value;
        seen += 1;
    }
    let has_sums = counts.c_sqsk > 0 || counts.g_sqsk > 0 || counts.c_sqsq > 0;
    if seen == 0 || !has_sums {
        return None;
    }
    if counts.c_sq == 0 && counts.c_sqsk > 0 {
        counts.c_sq = toks.unwrap_or(0);
    }
    if counts.g_sq == 0 && counts.g_sqsk > 0 {
        counts.g_sq = counts.g_sqsq;
    }
    Some(counts)
}

/// The tokens a step runs through its GEMMs and the requests it samples (one lm_head
/// row each), for the model-config shapes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StepTokens {
    pub tokens: u64,
    pub requests: u64,
}

/// A step annotation's token and request counts: SGLang `step[MODE bs=R toks=T ...]`
/// (`toks`, else `c_sq + g_sq`, else a `DECODE` step's `bs`: one token per request);
/// vLLM `execute_<T>_context_<R>(...)_generation_<R>(...)` and the older
/// `execute_context_<R>(<sq>...)_generation_<R>(<sq>)` (tokens: the sq of both).
pub fn step_tokens(name: &str) -> Option<StepTokens> {
    if let Some(body) = name.strip_prefix("step[") {
        let body = body.strip_suffix(']')?;
        let mode = body.split_whitespace().next()?;
        let field = |key: &str| {
            body.split_whitespace()
                .filter_map(|f| f.split_once('='))
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.parse::<u64>().ok())
        };
        let requests = field("bs")?;
        let sums = field("c_sq").unwrap_or(0) + field("g_sq").unwrap_or(0);
        let tokens = field("toks")
            .or((sums > 0).then_some(sums))
            .or((mode == "DECODE").then_some(requests))?;
        return Some(StepTokens { tokens, requests });
    }
    let rest = name.strip_prefix("execute_")?;
    let (context, generation) = rest.split_once("_generation_")?;
    let context = context.split_once("context_").map_or(context, |(_, c)| c);
    let count = |part: &str| -> Option<(u64, u64)> {
        let (requests, inner) = part.split_once('(')?;
        let inner = inner.strip_prefix("sq").unwrap_or(inner);
        let sq: String = inner.chars().take_while(char::is_ascii_digit).collect();
        Some((requests.parse().ok()?, sq.parse().ok()?))
    };
    let (c_requests, c_tokens) = count(context)?;
    let (g_requests, g_tokens) = count(generation)?;
    Some(StepTokens {
        tokens: c_tokens + g_tokens,
        requests: c_requests + g_requests,
    })
}

/// A trace's annotations that carry sums, by CPU start time.
#[derive(Clone, Debug, Default)]
pub struct StepIndex {
    /// (start, end, counts), sorted by start.
    steps: Vec<(Ns, Ns, StepCounts)>,
}

impl StepIndex {
    pub fn new(trace: &Trace) -> StepIndex {
        let mut steps: Vec<(Ns, Ns, StepCounts)> = trace
            .annotations
            .iter()
            .filter(|a| !a.on_gpu)
            .filter_map(|a| {
                let counts = step_counts(trace.name(a.name))?;
                Some((a.ts, a.ts.saturating_add(a.dur), counts))
            })
            .collect();
        steps.sort_by_key(|&(start, end, _)| (start, end));
        StepIndex { steps }
    }

    /// The index of the latest-starting annotation that holds CPU time `at`.
    pub fn position_at(&self, at: Ns) -> Option<usize> {
        let after = self.steps.partition_point(|&(start, _, _)| start <= at);
        self.steps[..after]
            .iter()
            .rposition(|&(_, end, _)| end >= at)
    }

    /// The counts of annotation `index` (from [`StepIndex::position_at`]).
    pub fn get(&self, index: usize) -> Option<&StepCounts> {
        self.steps.get(index).map(|(_, _, counts)| counts)
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vllm_detailed_annotation_gives_both_phases() {
        let c = step_counts(
            "execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640)_generation_0(sq0sk0sqsq0sqsk0)",
        )
        .unwrap();
        assert_eq!(
            c,
            StepCounts {
                c_sq: 15360,
                c_sk: 15360,
                c_sqsq: 15_728_640,
                c_sqsk: 15_728_640,
                ..StepCounts::default()
            }
        );
        let d = step_counts(
            "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk131072sqsq64sqsk131072)",
        )
        .unwrap();
        assert_eq!((d.g_sq, d.g_sk, d.g_sqsk), (64, 131_072, 131_072));
    }

    #[test]
    fn the_older_vllm_annotation_counts_only_a_prefill_without_decode() {
        let c = step_counts("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert_eq!(
            (c.c_sq, c.c_sk, c.c_sqsq, c.c_sqsk),
            (888, 888, 788_544, 788_544)
        );
        assert_eq!(step_counts("execute_context_0(0)_generation_64(64)"), None);
        assert_eq!(
            step_counts("execute_context_2(14721)_generation_0(0)"),
            None
        );
    }

    #[test]
    fn step_tokens_read_both_engines_spellings() {
        let t = |tokens, requests| Some(StepTokens { tokens, requests });
        assert_eq!(step_tokens("step[DECODE bs=32]"), t(32, 32));
        assert_eq!(step_tokens("step[EXTEND bs=15 toks=15360]"), t(15360, 15));
        assert_eq!(
            step_tokens("step[MIXED bs=2 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12]"),
            t(6, 2)
        );
        assert_eq!(step_tokens("step[EXTEND bs=2]"), None);
        assert_eq!(
            step_tokens(
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"
            ),
            t(32, 32)
        );
        assert_eq!(
            step_tokens("execute_context_1(888_788544)_generation_0(0)"),
            t(888, 1)
        );
        assert_eq!(step_tokens("ProfilerStep#3"), None);
    }

    #[test]
    fn sglang_steps_give_counts_only_with_their_sums() {
        let c = step_counts("step[EXTEND bs=2 toks=12 c_sqsq=80 c_sqsk=120 c_sk=20]").unwrap();
        assert_eq!((c.c_sq, c.c_sk, c.c_sqsq, c.c_sqsk), (12, 20, 80, 120));
        let m = step_counts(
            "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]",
        )
        .unwrap();
        assert_eq!((m.c_sq, m.g_sq, m.g_sk, m.g_sqsk), (5, 1, 12, 12));
        assert_eq!(step_counts("step[EXTEND bs=15 toks=15360]"), None);
        assert_eq!(step_counts("step[DECODE bs=32]"), None);
        assert_eq!(step_counts("ProfilerStep#3"), None);
    }
}
