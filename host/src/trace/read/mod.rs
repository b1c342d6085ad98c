//! Streaming reader: one pass from the file's bytes to a compact [`Trace`].
//!
//! Why not a JSON tree: a torch.profiler trace is one JSON document whose `traceEvents`
//! array holds millions of small objects, and a tree of it costs about 6x the file size
//! in memory (the predecessor's failure). Instead the reader walks the top-level
//! structure over a window of text blocks and reads each event in place into a borrowed
//! `RawEvent` holding just the fields later steps use, in three tiers:
//!
//! 1. the hand-written scanner of `scan.rs` takes the common shape (no escapes in kept
//!    strings, integer ids, number times) in one strict pass; it declines anything
//!    serde might read differently;
//! 2. serde (`RawEvent`'s derived `Deserialize`) takes what it declines, skipping
//!    unused fields without allocating; [`read_trace_reference`] uses only this tier,
//!    and tests hold the two to identical traces and reports;
//! 3. elements that are not plain event objects (scalars, invalid JSON, Python's
//!    `NaN`) go through a small iterative scanner that finds their byte span
//!    (string/escape state and bracket depth, memchr-accelerated) so they can be
//!    counted or reported.
//!
//! Memory grows with the retained records, never with the document, nor with one
//! value in it: an event past 8 MiB is read member by member (`large.rs`), values the
//! reader keeps are capped (`build::MAX_VALUE_BYTES`, counted by field when an event is
//! skipped for one), and values it does not keep stream past unbuffered. The file is read
//! (and gzip inflated) and UTF-8-checked on its own thread, which hands over text blocks
//! (and gets them back for reuse); the parser reads each block where it lies, copying
//! only the few KiB around each block's end (`stream.rs`).
//!
//! What is kept (the predecessor's event classes, chosen by `cat`): GPU kernels, memcpys and
//! memsets; runtime/driver calls that carry a `correlation` (every one: `cudaMemcpyAsync`
//! launches memcpys); CPU ops; Python frames; user and GPU-user annotations; the
//! `process_name` / `thread_name` metadata. Everything else is counted and dropped.
//! Optional facts ride along: a GPU op's and a launch call's `grid`/`block`, a GPU op's
//! `blocks per SM`, a memcpy's or memset's `bytes`, a launch call's `kernel`, a CPU op's `Input Dims`/`Input type`/
//! `Concrete Inputs` (compact JSON text, interned), `deviceProperties[]`. Both tiers hand
//! them over as JSON text and `optional.rs` types them; a value of the wrong type is
//! absent, and one past the size limit is left out (counted in
//! `SkipCounts::oversized_fields`) while its event is kept.
//!
//! Times are converted to integer nanoseconds from the number's decimal text, never via
//! `f64`, so sums of `dur` are exact. `NaN`/`Infinity` literals that Python writes into
//! JSON are read as absent values. A kept event without a usable `ts`/`dur` (absent,
//! `NaN`, negative) is dropped and counted in `skipped.bad_time`, whatever its class
//! (the predecessor read a missing CPU-side `ts` as 0, which misplaces frames); a GPU op
//! with `dur == 0` is counted in `skipped.zero_duration`.
//!
//! The files, in the order a read goes through them: `source.rs` opens the file (and
//! reads and inflates it on its own thread); `stream.rs` holds the window over the text
//! blocks and the failures; `document.rs` walks the document and tries the tiers on each event;
//! `scan.rs` (tier 1) and `raw.rs` (the event type serde fills, tier 2) read one event;
//! `time.rs` turns number text into exact values; `build.rs` turns events into the
//! [`Trace`], with `optional.rs` typing the optional `args` facts and `devices.rs` the
//! `deviceProperties`; `large.rs` reads an event too large to hold; `surrogate.rs`
//! repairs lone UTF-16 surrogate escapes serde refuses. This file holds the entry points.

mod ahead;
mod build;
mod devices;
mod document;
mod gzip;
mod large;
mod optional;
mod raw;
mod scan;
mod source;
mod stream;
mod surrogate;
mod time;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::TriageError;
use crate::trace::event::Trace;
use build::TraceSink;
use document::read_document;
use source::open_source;
use stream::{ByteStream, CHUNK};

/// Reads one trace file (`.json` or gzip-compressed, detected by its magic bytes).
///
/// `progress` is called now and then with the number of file bytes (compressed, for a
/// gzip file) consumed so far, and once at the end.
///
/// With `LLM_TRIAGE_READER=reference` in the environment it reads like
/// [`read_trace_reference`]: tests check that both give byte-identical reports.
pub fn read_trace(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<Trace, TriageError> {
    read_trace_scoped(path, progress, ReadScope::Full)
}

/// [`read_trace`] keeping only what `scope` needs.
pub fn read_trace_scoped(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    scope: ReadScope,
) -> Result<Trace, TriageError> {
    read_trace_until_stopped(path, progress, scope, false, &AtomicBool::new(false))
}

/// [`read_trace_scoped`] for a read beside others that keep every core busy already
/// (`--all-ranks`, `ranks::Reading::beside_others`): no scan-ahead thread, which would
/// add only its hand-off there. What is read is the same (`ahead.rs`).
pub fn read_trace_beside_others(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    scope: ReadScope,
) -> Result<Trace, TriageError> {
    read_trace_until_stopped(path, progress, scope, true, &AtomicBool::new(false))
}

/// [`read_trace_scoped`], or with `beside_others` [`read_trace_beside_others`], given up
/// at its next block (1 MiB) once `stop` is set: the caller does other work of the same
/// run meanwhile, and that failing makes the read pointless (`triage` loads the catalog
/// beside it).
pub fn read_trace_until_stopped(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    scope: ReadScope,
    beside_others: bool,
    stop: &AtomicBool,
) -> Result<Trace, TriageError> {
    read_scanning(
        path,
        progress,
        CHUNK,
        parser_from_env(),
        scope,
        !beside_others,
        stop,
    )
    .0
}

/// The fast parser, or the reference one with `LLM_TRIAGE_READER=reference`.
fn parser_from_env() -> EventParser {
    match std::env::var_os("LLM_TRIAGE_READER") {
        Some(v) if v == "reference" => EventParser::Reference,
        _ => EventParser::Fast,
    }
}

/// [`read_trace`] with serde parsing every event: the straightforward path, slower,
/// which the fast scanner must always agree with.
pub fn read_trace_reference(
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<Trace, TriageError> {
    read_trace_with(path, progress, CHUNK, EventParser::Reference)
}

/// How much of each event a read keeps.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ReadScope {
    /// Everything the report's tables use.
    #[default]
    Full,
    /// What a rank digest reads (`--all-ranks`' ranks but the reference,
    /// `triage::Depth::Digest`): CPU ops keep no `Input Dims`/`Input type`/`Concrete
    /// Inputs` (their oversize and lone-surrogate counts stay exact), and the scanner
    /// skips by brackets and quotes, unchecked, the values nothing reads: the `args` of
    /// Python frames and of events that are not `X` or `M`, unknown `args` members and
    /// the shapes. So such a read may take a file whose skipped values are malformed (or
    /// repeat a key) where the full read refuses it or counts the event malformed.
    Digest,
}

/// Which parser reads the event objects.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum EventParser {
    /// The hand-written scanner (`scan.rs`) for the common shape, serde for the rest.
    Fast,
    /// serde for every event.
    Reference,
}

/// [`read_trace`] with a chosen refill size (tests use tiny ones to cross every boundary)
/// and parser.
fn read_trace_with(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    chunk: usize,
    parser: EventParser,
) -> Result<Trace, TriageError> {
    read_trace_counted(path, progress, chunk, parser).0
}

/// How a read went, for tests of its speed-ups.
#[derive(Default)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "read by the reader's tests only")
)]
struct ReadCounts {
    /// Text bytes copied between buffers (`ByteStream::copied`).
    copied: u64,
    /// Events the parser took from the scan-ahead thread (`ahead.rs`).
    scanned_ahead: u64,
    /// Events the parser's own scan read (`ByteStream::scanned_here`).
    scanned_here: u64,
    /// Text bytes read where the file's mapping holds them (`ByteStream::mapped`).
    mapped: u64,
    /// Blocks the parser received (`ByteStream::blocks`).
    blocks: u64,
    /// Scan lists the scan-ahead thread made (`TextBlocks::scan_lists_made`).
    scan_lists_made: u64,
}

/// [`read_trace_with`], and its [`ReadCounts`].
fn read_trace_counted(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    chunk: usize,
    parser: EventParser,
) -> (Result<Trace, TriageError>, ReadCounts) {
    read_in_scope(path, progress, chunk, parser, ReadScope::Full)
}

/// [`read_trace_counted`] keeping only what `scope` needs.
fn read_in_scope(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    chunk: usize,
    parser: EventParser,
    scope: ReadScope,
) -> (Result<Trace, TriageError>, ReadCounts) {
    let never = AtomicBool::new(false);
    read_scanning(path, progress, chunk, parser, scope, true, &never)
}

/// [`read_in_scope`], with a scan-ahead thread only if `ahead_wanted` (and the scope
/// has one), given up once `stop` is set.
fn read_scanning(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    chunk: usize,
    parser: EventParser,
    scope: ReadScope,
    ahead_wanted: bool,
    stop: &AtomicBool,
) -> (Result<Trace, TriageError>, ReadCounts) {
    let source = match open_source(path) {
        Ok(source) => source,
        Err(e) => return (Err(e), ReadCounts::default()),
    };
    // A digest read runs beside other ranks' reads (`ranks`), which keep the cores busy
    // already: a scan-ahead thread would add only its hand-off.
    let scan_ahead =
        (ahead_wanted && parser == EventParser::Fast && scope == ReadScope::Full).then_some(scope);
    let mut stream = ByteStream::new(source, progress, chunk, scan_ahead, stop);
    let mut sink = TraceSink::new(path, parser, scope);
    let outcome = read_document(&mut stream, &mut sink);
    let json_bytes = stream.end_offset();
    let compressed = stream.consumed.load(Ordering::Relaxed);
    (stream.progress)(compressed);
    let outcome = outcome.map_err(|fail| TriageError::input(path, fail.message(&stream)));
    let counts = ReadCounts {
        copied: stream.copied.load(Ordering::Relaxed),
        scanned_ahead: stream.scanned_ahead,
        scanned_here: stream.scanned_here,
        mapped: stream.mapped,
        blocks: stream.blocks,
        scan_lists_made: stream.scan_lists_made(),
    };
    drop(stream);
    (
        outcome.and_then(|()| finish_trace(path, sink, json_bytes)),
        counts,
    )
}

/// The sink's trace, or the error of a file that held no events worth the name.
fn finish_trace(path: &Path, sink: TraceSink, json_bytes: u64) -> Result<Trace, TriageError> {
    let mut trace = sink.finish();
    trace.json_bytes = json_bytes;
    if trace.event_count == 0 {
        return Err(TriageError::input(
            path,
            "not a torch.profiler trace: it holds no events",
        ));
    }
    if trace.event_count > 0 && trace.skipped.malformed == trace.event_count {
        return Err(TriageError::input(
            path,
            format!(
                "not a torch.profiler trace: none of its {} events is a well-formed event object \
                 (each is not an object, is invalid JSON, or has a field of the wrong type)",
                trace.event_count
            ),
        ));
    }
    Ok(trace)
}

#[cfg(test)]
mod tests;
