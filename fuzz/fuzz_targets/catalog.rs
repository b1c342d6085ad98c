//! The catalog loaders (kernel families, fusion rows, overlap paths) on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    llm_triage_fuzz::check_catalog_text(bytes);
});
