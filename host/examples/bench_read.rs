//! Throughput and memory of the streaming trace reader on a big trace.
//!
//! Run (release build; the numbers mean nothing unoptimised):
//!
//! ```text
//! cargo run --release -p llm-triage --example bench_read -- [--size-mb 200] [--source FILE] [--keep DIR]
//! ```
//!
//! It tiles a real trace (default `shared/traces/AMD-AGI__TraceLens__eager_trace.json.gz`)
//! into a temporary `big.json` of about `--size-mb` MB, shifting timestamps per copy, and a
//! gzip copy `big.json.gz`. Each file is then read by a child process (so its peak RSS,
//! `VmHWM`, counts the reader alone), which prints MB/s of uncompressed JSON and peak RSS
//! as a fraction of the JSON size. `zcat` time, when `zcat` exists, is the reference for
//! the gzip file.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use llm_triage::trace::read::read_trace;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--child" {
        child(Path::new(&args[2]));
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

    let temp = tempfile::tempdir().expect("temp dir");
    // --keep DIR leaves the files there (for profiling the child: `bench_read --child F`).
    let dir = flag(&args, "--keep").map_or_else(|| temp.path().to_path_buf(), PathBuf::from);
    let json = dir.join("big.json");
    let started = Instant::now();
    let json_bytes = write_tiled(&source, &json, size_mb << 20);
    let gz = dir.join("big.json.gz");
    compress(&json, &gz);
    let gz_bytes = std::fs::metadata(&gz).map(|m| m.len()).unwrap_or(0);
    println!(
        "built {} ({:.1} MB JSON, {:.1} MB gzip) from {} in {:.1}s",
        json.display(),
        mb(json_bytes),
        mb(gz_bytes),
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

/// Reads one file and reports (run in a child so VmHWM is the reader's alone).
fn child(path: &Path) {
    let started = Instant::now();
    let trace = read_trace(path, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
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
    bytes as f64 / (1 << 20) as f64
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

/// Writes copies of `source`'s events, each shifted past the previous copy's end, until
/// the file holds about `target` bytes. Returns the bytes written.
fn write_tiled(source: &Path, out: &Path, target: u64) -> u64 {
    let mut text = Vec::new();
    let file = File::open(source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let mut reader: Box<dyn Read> = if source.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    reader.read_to_end(&mut text).expect("read source");
    let doc: serde_json::Value = serde_json::from_slice(&text).expect("source is JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let times = events.iter().filter_map(|e| {
        let ts = e.get("ts")?.as_f64()?;
        Some((
            ts,
            ts + e.get("dur").and_then(|d| d.as_f64()).unwrap_or(0.0),
        ))
    });
    let (first, last) = times.fold((f64::MAX, f64::MIN), |(lo, hi), (s, e)| {
        (lo.min(s), hi.max(e))
    });
    let span = (last - first).ceil() + 1000.0;

    let mut w = BufWriter::with_capacity(1 << 20, File::create(out).expect("create big.json"));
    w.write_all(b"{").unwrap();
    if let Some(object) = doc.as_object() {
        for (key, value) in object.iter().filter(|(k, _)| *k != "traceEvents") {
            serde_json::to_writer(&mut w, key).unwrap();
            w.write_all(b": ").unwrap();
            serde_json::to_writer(&mut w, value).unwrap();
            w.write_all(b",\n").unwrap();
        }
    }
    w.write_all(b"\"traceEvents\": [\n").unwrap();
    let mut first_event = true;
    let mut written = 0u64;
    for copy in 0.. {
        if written >= target {
            break;
        }
        let shift = span * copy as f64;
        for event in events {
            let mut event = event.clone();
            if let Some(ts) = event.get("ts").and_then(|t| t.as_f64()) {
                // Three decimals, as Kineto writes them.
                let shifted = ((ts + shift) * 1000.0).round() / 1000.0;
                event["ts"] = serde_json::json!(shifted);
            }
            if !first_event {
                w.write_all(b",\n").unwrap();
            }
            first_event = false;
            let bytes = serde_json::to_vec(&event).unwrap();
            written += bytes.len() as u64 + 2;
            w.write_all(&bytes).unwrap();
        }
    }
    w.write_all(b"\n]}\n").unwrap();
    w.flush().unwrap();
    std::fs::metadata(out).map(|m| m.len()).unwrap_or(0)
}

fn compress(from: &Path, to: &Path) {
    let mut input = File::open(from).expect("open big.json");
    let out = BufWriter::new(File::create(to).expect("create big.json.gz"));
    let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::new(6));
    std::io::copy(&mut input, &mut enc).expect("compress");
    enc.finish().expect("finish gzip");
}
