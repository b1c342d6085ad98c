//! Builds a big trace for benchmarks by tiling a real one.
//!
//! ```text
//! cargo run --release -p llm-triage --example tile_trace -- --size-mb 1000 --out big.json.gz \
//!     [--json big.json] [--source FILE] [--layout python|source]
//! ```
//!
//! Copies of the source's events follow each other in time, each with its `ts` and every
//! linking id shifted (see `support/tile.rs`), until the JSON holds `--size-mb` million
//! bytes. `--layout python` (the default) writes each event on one line with Python's
//! `json.dumps` spacing, about as dense as torch.profiler's own output; `source` keeps
//! the source's bytes (the B200 trace is indented by 4: half the events per MB). The
//! output is gzip at the fast level (`zcat` speed hardly depends on it), plus
//! the plain JSON with `--json`. Prints one line: `json_bytes gz_bytes copies events`.
//! The default source is the B200 vLLM trace in `shared/traces`.

#[path = "support/tile.rs"]
mod tile;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        let i = args.iter().position(|a| a == name)?;
        args.get(i + 1).cloned()
    };
    let size_mb: f64 = flag("--size-mb")
        .map(|v| v.parse().expect("--size-mb takes a number"))
        .unwrap_or(1000.0);
    let out = PathBuf::from(flag("--out").expect("--out FILE.json.gz is required"));
    let json = flag("--json").map(PathBuf::from);
    let source = flag("--source").map_or_else(default_source, PathBuf::from);
    let layout = flag("--layout").map_or(tile::Layout::Python, |l| {
        tile::Layout::parse(&l).expect("--layout is python or source")
    });
    let tiled = tile::tile(
        &source,
        layout,
        (size_mb * 1e6) as u64,
        &out,
        json.as_deref(),
    );
    println!(
        "{} {} {} {}",
        tiled.json_bytes, tiled.gz_bytes, tiled.copies, tiled.events
    );
}

fn default_source() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/traces/AMD-AGI__TraceLens__eager_trace.json.gz"
    ))
}
