//! The trace reader on raw bytes (plain JSON, or anything).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    llm_triage_fuzz::check_trace_bytes(bytes);
});
