//! Builders for the evidence lists a plugin's unit tests hand-make, so each plugin need
//! not carry its own copy. Enabled by the `testing` feature, meant for a plugin's
//! `[dev-dependencies]`:
//!
//! ```toml
//! [dev-dependencies]
//! llm-triage-plugin-api = { version = "1.3", features = ["testing"] }
//! ```
//!
//! Plain Rust, not part of the ABI, and never compiled into a plugin library.

use abi_stable::std_types::RVec;

use crate::{Counted, KeyValue};

/// `[(text, count), …]` as the counted lists of [`TraceEvidence`](crate::TraceEvidence)
/// (`python_files`, `annotation_names`, `kernel_names`), in the order given.
pub fn counted(items: &[(&str, u64)]) -> RVec<Counted> {
    let one = |(text, count): &(&str, u64)| Counted {
        text: (*text).into(),
        count: *count,
    };
    items.iter().map(one).collect()
}

/// `[(key, value), …]` as `server_args` entries; each value is the JSON text of the
/// value (`"\"fcfs\""`, `"8192"`).
pub fn key_values(items: &[(&str, &str)]) -> RVec<KeyValue> {
    let one = |(key, value): &(&str, &str)| KeyValue {
        key: (*key).into(),
        value: (*value).into(),
    };
    items.iter().map(one).collect()
}
