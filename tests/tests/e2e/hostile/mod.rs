//! Hostile input through the real binary: broken and adversarial traces, times at the
//! edge of i64 nanoseconds, and the saved fuzz seeds. `support` holds the bounded run and
//! the failure shape that the `faults` tests use too.

pub(crate) mod support;

mod bundle_root;
mod distinct_names;
mod fuzz_regressions;
mod inputs;
mod memory;
mod overflow;
mod run_logs;
mod server_args;
mod surrogates;
