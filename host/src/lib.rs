//! llm-triage: one report from a torch.profiler trace of an LLM serving engine.
//!
//! The data flow, one module per step (see `docs/architecture.md`, which also lists the
//! invariants):
//!
//! ```text
//! inputs --trace::discover--> TraceSet --trace::read--> Trace --trace::link--> Linked
//!        --plugins::select--> Engine  --trace::stage--> StageSplit
//!        --analyze--> Report --report::render--> markdown | text | json
//! ```
//!
//! Modules are `pub` only where the binary, `host/tests`, the fuzz targets or the examples
//! use them; everything else is crate-private, so the compiler reports dead code
//! (`unreachable_pub` keeps `pub` from creeping back on items nothing outside needs).
#![warn(unreachable_pub)]

pub mod analyze;
pub(crate) mod bundle;
pub(crate) mod capture;
pub mod catalog;
pub(crate) mod checks;
pub mod cli;
pub mod commands;
pub(crate) mod dates;
pub(crate) mod diff;
pub mod error;
pub mod exit;
pub(crate) mod output;
pub mod plugins;
pub(crate) mod ranks;
pub mod report;
#[cfg(test)]
pub(crate) mod testutil;
pub(crate) mod tools;
pub mod trace;
pub(crate) mod triage;
pub(crate) mod untrusted_file;
