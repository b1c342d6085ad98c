//! Where a triage's memory goes: the records one trace keeps, and the heap at each step.
//!
//! Run (release build; the numbers mean nothing unoptimised):
//!
//! ```text
//! cargo run --release -p llm-triage --example memory_profile -- FILE [--framework vllm]
//! ```
//!
//! A counting allocator wraps the system one, so every figure is bytes the program asked
//! for (not pages the kernel mapped: RSS adds the binary, the stacks and allocator slack).
//! It reads FILE, prints each record table's length, its bytes in use and its capacity,
//! and the heap's live and peak bytes after the read and after the link; then it drops
//! both and runs the whole triage (`--format json` to a temporary file), and prints the peak of
//! that run: the difference from the read's peak is what linking, staging and the
//! analyses hold on top of the records.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use clap::Parser;
use llm_triage::cli::Cli;
use llm_triage::trace::event::{Annotation, Trace};
use llm_triage::trace::link::{link, LaunchSite, Linked};
use llm_triage::trace::read::read_trace;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, LIVE, PEAK};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mb(bytes: usize) -> String {
    format!("{:8.1} MB", bytes as f64 / 1e6)
}

/// One table's line: length, bytes in use, bytes reserved.
fn table<T>(name: &str, v: &Vec<T>) {
    let size = size_of::<T>();
    println!(
        "  {name:<22} {:>10} x {size:>3} B = {}  (capacity {})",
        v.len(),
        mb(v.len() * size),
        mb(v.capacity() * size)
    );
}

/// A compact table's line: length, bytes held (capacity included), bytes per record.
fn compact(name: &str, len: usize, bytes: usize) {
    println!(
        "  {name:<22} {len:>10} records    {}  ({:.1} B each, capacity included)",
        mb(bytes),
        bytes as f64 / len.max(1) as f64
    );
}

fn records(trace: &Trace) {
    compact("gpu_ops", trace.gpu_ops.len(), trace.gpu_ops.heap_bytes());
    compact("runtime", trace.runtime.len(), trace.runtime.heap_bytes());
    compact("cpu_ops", trace.cpu_ops.len(), trace.cpu_ops.heap_bytes());
    compact(
        "py_frames",
        trace.py_frames.len(),
        trace.py_frames.heap_bytes(),
    );
    table::<Annotation>("annotations", &trace.annotations);
    let strings = trace.strings.len();
    let text: usize = (0..strings as u32)
        .map(|i| trace.name(llm_triage::trace::event::Sym(i)).len())
        .sum();
    println!(
        "  strings                {strings:>10} distinct, {} of text",
        mb(text)
    );
}

fn linked(linked: &Linked) {
    table::<LaunchSite>("sites", &linked.sites);
    let frames: usize = linked.stacks.iter().map(Vec::len).sum();
    println!(
        "  stacks                 {:>10} distinct, {frames} frames in all",
        linked.stacks.len()
    );
}

/// A `/proc/self/status` figure (`VmRSS`, `VmHWM`), in bytes.
fn status_bytes(key: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn heap(when: &str) {
    println!(
        "heap {when:<20} live {}  peak {}   RSS {}  peak RSS {}",
        mb(LIVE.load(Ordering::Relaxed)),
        mb(PEAK.load(Ordering::Relaxed)),
        mb(status_bytes("VmRSS")),
        mb(status_bytes("VmHWM")),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(file) = args.get(1).map(PathBuf::from) else {
        eprintln!("usage: memory_profile FILE [--framework NAME]");
        std::process::exit(2);
    };
    let framework = args
        .iter()
        .position(|a| a == "--framework")
        .and_then(|i| args.get(i + 1))
        .map_or("auto", String::as_str);

    heap("at start");
    let trace = read_trace(&file, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "read {}: {} of JSON, {} events",
        file.display(),
        mb(trace.json_bytes as usize),
        trace.event_count
    );
    records(&trace);
    heap("after read");
    let links = link(&trace);
    linked(&links);
    heap("after link");
    drop(links);
    drop(trace);
    heap("after dropping both");

    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("memory_profile.{}.json", std::process::id()));
    // The plugins beside the binaries (target/release), which the example's own
    // directory (target/release/examples) does not hold.
    let exe = std::env::current_exe().expect("current exe");
    let plugin_dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let cli = Cli::parse_from([
        "llm-triage",
        "--plugin-dir",
        &plugin_dir.to_string_lossy(),
        "--framework",
        framework,
        "--input",
        &file.to_string_lossy(),
        "--format",
        "json",
        "--output",
        &out.to_string_lossy(),
    ]);
    llm_triage::commands::triage::exec(&cli.triage, &cli.global)
        .unwrap_or_else(|e| panic!("{}", e.one_line()));
    heap("whole triage");
    let _ = std::fs::remove_file(&out);
}
