//! Throughput and memory of the streaming trace reader on a big trace.
//!
//! Run (release build; the numbers mean nothing unoptimised):
//!
//! ```text
//! cargo run --release -p llm-triage --example bench_read -- [--size-mb 200] [--source FILE] [--layout python|source] [--keep DIR]
//! ```
//!
//! A file it kept (`--keep DIR`) is read alone by `bench_read --child DIR/big.json
//! [--digest | --one-thread]`; `--digest` reads it as `--all-ranks` reads a rank it only
//! digests (lean, no scan-ahead thread), `--one-thread` in full with no scan-ahead thread.
//! Those two are the reads to put under `valgrind --tool=callgrind`: with all the parsing
//! on one thread, their instruction counts are the same every run.
//!
//! It tiles a real trace (default `shared/traces/AMD-AGI__TraceLens__eager_trace.json.gz`)
//! into a temporary `big.json` of about `--size-mb` million bytes, shifting timestamps and
//! linking ids per copy (`support/tile.rs`), and a gzip copy `big.json.gz`. Each file is then read by a child process (so its peak RSS,
//! `VmHWM`, counts the reader alone), which prints MB/s of uncompressed JSON and peak RSS
//! as a fraction of the JSON size. `zcat` time, when `zcat` exists, is the reference for
//! the gzip file.

#[path = "support/tile.rs"]
mod tile;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use llm_triage::trace::read::{read_trace, read_trace_beside_others, ReadScope};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if (3..=4).contains(&args.len()) && args[1] == "--child" {
        let scope = match args.get(3).map(String::as_str) {
            None => None,
            Some("--digest") => Some(ReadScope::Digest),
            Some("--one-thread") => Some(ReadScope::Full),
            Some(other) => {
                panic!("--child FILE takes --digest, --one-thread or nothing, not {other}")
            }
        };
        child(Path::new(&args[2]), scope);
        return;
    }
    let size_mb: u64 = flag(&args, "--size-mb")
        .map(|v| v.parse().expect("--size-mb takes a number"))
        .unwrap_or(200);
    let source = flag(&args, "--source")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/traces/AMD-AGI__TraceLens__eager_trace.json.gz"
            ))
        });

    let layout = flag(&args, "--layout").map_or(tile::Layout::Python, |l| {
        tile::Layout::parse(l).expect("--layout is python or source")
    });
    let temp = tempfile::tempdir().expect("temp dir");
    // --keep DIR leaves the files there (for profiling the child: `bench_read --child F
    // [--digest]`).
    let dir = flag(&args, "--keep").map_or_else(|| temp.path().to_path_buf(), PathBuf::from);
    let json = dir.join("big.json");
    let started = Instant::now();
    let gz = dir.join("big.json.gz");
    let tiled = tile::tile(&source, layout, size_mb * 1_000_000, &gz, Some(&json));
    let (json_bytes, gz_bytes) = (tiled.json_bytes, tiled.gz_bytes);
    println!(
        "built {} ({:.1} MB JSON, {:.1} MB gzip; {} events, {} copies) from {} in {:.1}s",
        json.display(),
        mb(json_bytes),
        mb(gz_bytes),
        tiled.events,
        tiled.copies,
        source.display(),
        started.elapsed().as_secs_f64()
    );

    let exe = std::env::current_exe().expect("current exe");
    for path in [&json, &gz] {
        for _ in 0..2 {
            let out = Command::new(&exe)
                .arg("--child")
                .arg(path)
                .output()
                .expect("run child");
            print!("{}", String::from_utf8_lossy(&out.stdout));
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let started = Instant::now();
    let zcat = Command::new("sh")
        .arg("-c")
        .arg(format!("zcat '{}' > /dev/null", gz.display()))
        .status();
    if matches!(zcat, Ok(s) if s.success()) {
        let secs = started.elapsed().as_secs_f64();
        println!(
            "zcat big.json.gz > /dev/null: {secs:.2}s ({:.0} MB/s of JSON)",
            mb(json_bytes) / secs
        );
    }
}

/// Reads one file and reports (run in a child so VmHWM is the reader's alone): as one
/// trace is read, or with `scope` as `--all-ranks` reads a rank beside others (no
/// scan-ahead thread; `--digest`: a digest rank's lean read). Single-threaded but for
/// the file's own thread, such a read's instruction count is the same from run to run:
/// `valgrind --tool=callgrind bench_read --child big.json --digest` is how the digest
/// read's cost was followed (an `--all-ranks` run's count moves with its threads'
/// schedule).
fn child(path: &Path, scope: Option<ReadScope>) {
    let started = Instant::now();
    let trace = match scope {
        None => read_trace(path, &mut |_| {}),
        Some(scope) => read_trace_beside_others(path, &mut |_| {}, scope),
    }
    .unwrap_or_else(|e| panic!("{e}"));
    let secs = started.elapsed().as_secs_f64();
    let peak = peak_rss_bytes();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    println!(
        "{name}: {:.1} MB JSON in {secs:.2}s = {:.0} MB/s; peak RSS {:.1} MB = {:.2}x JSON; \
         {} events, {} GPU ops, {} py frames, {} cpu ops, {} runtime",
        mb(trace.json_bytes),
        mb(trace.json_bytes) / secs,
        mb(peak),
        peak as f64 / trace.json_bytes as f64,
        trace.event_count,
        trace.gpu_ops.len(),
        trace.py_frames.len(),
        trace.cpu_ops.len(),
        trace.runtime.len(),
    );
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).map(String::as_str)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// `VmHWM` of /proc/self/status, in bytes.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
