//! The end-to-end tests: black-box runs of the real `llm-triage` binary and the real
//! plugins, as a user runs them. One test binary (as ripgrep's `tests/tests.rs` and
//! nextest's `integration-tests/tests/integration/main.rs`), so the suite links once and
//! every module shares `util` without a blanket `allow(dead_code)`.
//!
//! A new group of tests is one `mod NAME;` line below and a file `NAME.rs` beside this one
//! (or in the group's directory, declared in its `mod.rs`), starting with `//!` saying
//! what it proves and `use crate::util::…` for the helpers.
//!
//! All tests run as threads of this one process. A test must not change what the process
//! shares: no `std::env::set_var` or `set_current_dir` (give the environment and the
//! directory to the child `Command`), no fixed scratch paths (use a `tempfile::tempdir()`
//! of its own), no fixed ports (bind port 0).

mod util;

mod bad_input;
mod capture;
mod catalog_validate;
mod cli;
mod cli_output;
mod companion;
mod device;
mod diff;
mod display_names;
mod engine_fixtures;
mod ep_imbalance;
mod faults;
mod fuse_shared_traces;
mod graph_capture_sites;
mod graph_mapping;
mod hostile;
mod html_report;
mod layers;
mod overlap;
mod perf_identity;
mod ranks;
mod roofline;
mod roofline_config;
mod shared_traces;
mod timeline;
mod timeline_truth;
mod trace_identity;
mod untrusted_text;
