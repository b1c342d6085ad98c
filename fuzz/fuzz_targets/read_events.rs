//! Structure-aware: documents of plausible and wrong trace events. Valid JSON (with
//! Python's NaN) is read with every event counted, or refused only for holding no event
//! it can use.
//!
//! With `LLM_TRIAGE_FUZZ_RENDER=DIR`, each input's rendered document is also written to
//! DIR (named by its length and a hash), so corpus inputs can become plain trace seeds for
//! `fuzz/regressions/read/`, which CI replays without the fuzz crate.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llm_triage_fuzz::events::{render, Doc};

fuzz_target!(|doc: Doc| {
    let text = render(&doc);
    if let Some(dir) = std::env::var_os("LLM_TRIAGE_FUZZ_RENDER") {
        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let name = format!("events-{}-{hash:016x}.json", text.len());
        let _ = std::fs::write(std::path::Path::new(&dir).join(name), &text);
    }
    match llm_triage_fuzz::check_trace_bytes_or_error(text.as_bytes()) {
        Ok(trace) => assert_eq!(trace.event_count as usize, doc.events.len()),
        Err(error) => assert!(
            error.contains("holds no events") || error.contains("none of its"),
            "valid document refused: {error}: {text}"
        ),
    }
});
