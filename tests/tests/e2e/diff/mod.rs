//! `llm-triage diff BASE NEW` (issue 20) against generated before/after pairs with known
//! changes (`make-fixtures --diff-pairs`, `llm_triage_tests::diff_pairs`) and the shared
//! traces: the pairs' ground truth against single triages of each side, every shared
//! trace diffed against itself, the waterfall's exact sums (decimal text to integer ns),
//! each injected change's row, size and status, the regression gate's exit 7, a saved JSON
//! report as a side, and a side that is neither trace nor report. `engine.rs` holds the
//! diff command's own checks on real traces and edited saved reports.

mod changes;
mod engine;
mod pairs_truth;
mod self_diff;
mod support;
