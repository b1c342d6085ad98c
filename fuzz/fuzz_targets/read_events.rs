//! Structure-aware: documents of plausible and wrong trace events. Valid JSON (with
//! Python's NaN) is read with every event counted, or refused only for holding no event
//! it can use.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llm_triage_fuzz::events::{render, Doc};

fuzz_target!(|doc: Doc| {
    let text = render(&doc);
    match llm_triage_fuzz::check_trace_bytes_or_error(text.as_bytes()) {
        Ok(trace) => assert_eq!(trace.event_count as usize, doc.events.len()),
        Err(error) => assert!(
            error.contains("holds no events") || error.contains("none of its"),
            "valid document refused: {error}: {text}"
        ),
    }
});
