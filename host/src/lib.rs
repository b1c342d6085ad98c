//! llm-triage: one report from a torch.profiler trace of an LLM serving engine.
//!
//! The data flow, one module per step (see `shared/design/ARCHITECTURE.md`):
//!
//! ```text
//! inputs --trace::discover--> TraceSet --trace::read--> Trace --trace::link--> Linked
//!        --plugins::select--> Engine  --trace::stage--> StageSplit
//!        --analyze--> Report --report::render--> markdown | text | json
//! ```
pub mod analyze;
pub mod bundle;
pub mod capture;
pub mod catalog;
pub mod checks;
pub mod cli;
pub mod commands;
pub mod dates;
pub mod error;
pub mod exit;
pub mod output;
pub mod plugins;
pub mod report;
#[cfg(test)]
pub(crate) mod testutil;
pub mod tools;
pub mod trace;
pub mod triage;
