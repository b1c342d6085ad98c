//! Structure-aware: documents of plausible and wrong trace events. Valid JSON (with
//! Python's NaN) never fails to read, unless it holds no events; every event is counted.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llm_triage_fuzz::events::{render, Doc};

fuzz_target!(|doc: Doc| {
    let text = render(&doc);
    let trace = llm_triage_fuzz::check_trace_bytes(text.as_bytes());
    let objects = doc
        .events
        .iter()
        .filter(|e| e.not_an_object.is_none())
        .count();
    match trace {
        Some(trace) => assert_eq!(trace.event_count as usize, doc.events.len()),
        None => assert!(
            doc.events.is_empty() || objects == 0,
            "valid document refused: {text}"
        ),
    }
});
