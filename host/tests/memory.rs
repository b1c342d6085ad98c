//! The memory a read trace holds, measured with a counting allocator (issue 22: a
//! triage's peak RSS at most 0.10x the JSON). This binary holds one test, so no other
//! test allocates while it counts.
//!
//! What it bounds, on the real TraceLens eager trace (14 MB of JSON, 15,000 Python frames,
//! 4,800 CPU ops, the shape of the 1 GB benchmark, which tiles it): the heap the read
//! `Trace` keeps, as a fraction of the JSON size. The records are what grows with the
//! trace; the bound leaves room for what a file this small still shows of the fixed
//! costs (the interner's strings).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use llm_triage::trace::link::link;
use llm_triage::trace::read::read_trace;

#[path = "../examples/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, LIVE, PEAK};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_read_trace_keeps_a_small_fraction_of_its_json() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/traces/AMD-AGI__TraceLens__eager_trace.json.gz"
    ));
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let trace = read_trace(&path, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let json = trace.json_bytes as f64;
    let kept = (LIVE.load(Ordering::Relaxed) - before) as f64 / json;
    let read_peak = (PEAK.load(Ordering::Relaxed) - before) as f64 / json;
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    let linked = link(&trace);
    let link_peak = (PEAK.load(Ordering::Relaxed) - live) as f64 / json;
    println!(
        "kept {kept:.4}x, read peak {read_peak:.4}x, link adds up to {link_peak:.4}x the JSON"
    );
    assert!(linked.sites.len() == trace.gpu_ops.len() && trace.py_frames.len() > 10_000);
    // What the records cost once read: the part of a triage that grows with the trace
    // (0.116x as plain structs; 0.071x with compact frames and CPU ops).
    assert!(kept <= 0.085, "the read trace keeps {kept:.4}x its JSON");
    // Linking on top of them: its indexes and the sites, at their peak.
    // (0.031x with a pending-launch struct per kernel and lists grown by doubling.)
    assert!(
        link_peak <= 0.028,
        "linking adds up to {link_peak:.4}x the JSON"
    );
}
