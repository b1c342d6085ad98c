//! Streaming reader: one pass from the file's bytes to a compact [`Trace`].
//!
//! Why not a JSON tree: a torch.profiler trace is one JSON document whose `traceEvents`
//! array holds millions of small objects, and a tree of it costs about 6x the file size
//! in memory (the predecessor's failure). Instead the reader walks the top-level
//! structure over a rolling text buffer and reads each event in place into a borrowed
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
//! Memory grows with the retained records, never with the document. gzip is inflated
//! and UTF-8-checked on its own thread, which hands over text blocks (and gets them
//! back for reuse), so the parse thread copies each byte once.
//!
//! What is kept (see `shared/spec/analysis-behaviour.md` §3.1): GPU kernels, memcpys and
//! memsets; runtime/driver calls that carry a `correlation` (every one: `cudaMemcpyAsync`
//! launches memcpys); CPU ops; Python frames; user and GPU-user annotations; the
//! `process_name` / `thread_name` metadata. Everything else is counted and dropped.
//!
//! Times are converted to integer nanoseconds from the number's decimal text, never via
//! `f64`, so sums of `dur` are exact. `NaN`/`Infinity` literals that Python writes into
//! JSON are read as absent values. A kept event without a usable `ts`/`dur` (absent,
//! `NaN`, negative) is dropped and counted in `skipped.bad_time`, whatever its class
//! (the predecessor read a missing CPU-side `ts` as 0, which misplaces frames); a GPU op
//! with `dur == 0` is counted in `skipped.zero_duration`.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::error::TriageError;
use build::TraceBuilder;
use raw::RawEvent;
use scan::Scan;
use source::open_source;
use stream::{json_fail, ByteStream, Fail, CHUNK};

mod build;
mod raw;
mod scan;
mod source;
mod stream;
mod time;
use crate::trace::event::Trace;

/// Reads one trace file (`.json` or gzip-compressed, detected by its magic bytes).
///
/// `progress` is called now and then with the number of file bytes (compressed, for a
/// gzip file) consumed so far, and once at the end.
///
/// With `LLM_TRIAGE_READER=reference` in the environment it reads like
/// [`read_trace_reference`]: tests check that both give byte-identical reports.
pub fn read_trace(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<Trace, TriageError> {
    let parser = match std::env::var_os("LLM_TRIAGE_READER") {
        Some(v) if v == "reference" => EventParser::Reference,
        _ => EventParser::Fast,
    };
    read_trace_with(path, progress, CHUNK, parser)
}

/// [`read_trace`] with serde parsing every event: the straightforward path, slower,
/// which the fast scanner must always agree with.
pub fn read_trace_reference(
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<Trace, TriageError> {
    read_trace_with(path, progress, CHUNK, EventParser::Reference)
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
    let source = open_source(path)?;
    let mut stream = ByteStream::new(source, progress, chunk);
    let mut builder = TraceBuilder::new(path, parser);
    let outcome = read_document(&mut stream, &mut builder);
    let json_bytes = stream.end_offset();
    let compressed = stream.consumed.load(Ordering::Relaxed);
    (stream.progress)(compressed);
    outcome.map_err(|fail| TriageError::input(path, fail.message(&stream)))?;
    let mut trace = builder.finish();
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

// ---------------------------------------------------------------------------------------
// The document structure

/// An event larger than this is not retried on the in-place fast path (see
/// `parse_event_in_place`).
const IN_PLACE_LIMIT: usize = 4 * CHUNK;

fn read_document(stream: &mut ByteStream, builder: &mut TraceBuilder) -> Result<(), Fail> {
    if stream.peek_token()?.is_none() {
        return Err(Fail::NotTrace("the file is empty".into()));
    }
    // A UTF-8 byte-order mark is not JSON, but some writers emit it.
    if stream.unread().starts_with(&[0xef, 0xbb, 0xbf]) {
        stream.pos += 3;
    }
    match stream.peek_token()? {
        None => Err(Fail::NotTrace("the file is empty".into())),
        Some(b'{') => read_object(stream, builder),
        Some(b'[') => {
            builder.trace.meta.bare_list = true;
            read_events(stream, builder)?;
            expect_end(stream)
        }
        Some(b) => {
            let what = match b {
                b'"' => "a string",
                b'-' | b'0'..=b'9' => "a number",
                b't' | b'f' => "a boolean",
                b'n' => "null",
                _ => {
                    return Err(Fail::Json {
                        offset: stream.offset(),
                        message: format!("unexpected byte 0x{b:02x} at the start of the document"),
                    })
                }
            };
            Err(Fail::NotTrace(format!(
                "the top level is {what}, not an object or array"
            )))
        }
    }
}

/// `{"traceEvents": [...], "deviceProperties": [...], ...}` with keys in any order.
fn read_object(stream: &mut ByteStream, builder: &mut TraceBuilder) -> Result<(), Fail> {
    const CONTEXT: &str = "inside the top-level object";
    stream.expect(b'{', CONTEXT)?;
    let mut saw_events = false;
    if stream.peek_token()? == Some(b'}') {
        stream.pos += 1;
    } else {
        loop {
            let key = read_key(stream)?;
            stream.expect(b':', "after a top-level key")?;
            match key.as_str() {
                "traceEvents" => {
                    match stream.peek_token()? {
                        Some(b'[') => {}
                        Some(_) => {
                            return Err(Fail::NotTrace("traceEvents is not an array".into()))
                        }
                        None => return Err(Fail::Truncated { context: CONTEXT }),
                    }
                    read_events(stream, builder)?;
                    saw_events = true;
                }
                "deviceProperties" | "distributedInfo" | "with_stack" => {
                    let start = stream.offset();
                    let len = stream.value_span(true, CONTEXT)?;
                    let span = &stream.unread()[..len];
                    builder.read_meta_value(&key, span, start)?;
                    stream.pos += len;
                }
                _ => {
                    stream.value_span(false, CONTEXT)?;
                }
            }
            builder.trace.meta.keys.push(key);
            match stream.peek_token()? {
                Some(b',') => stream.pos += 1,
                Some(b'}') => {
                    stream.pos += 1;
                    break;
                }
                Some(_) => {
                    return Err(Fail::Json {
                        offset: stream.offset(),
                        message: "expected ',' or '}' after a top-level value".into(),
                    })
                }
                None => return Err(Fail::Truncated { context: CONTEXT }),
            }
        }
    }
    expect_end(stream)?;
    if !saw_events {
        return Err(Fail::NotTrace(
            "top-level object has no traceEvents array".into(),
        ));
    }
    Ok(())
}

fn read_key(stream: &mut ByteStream) -> Result<String, Fail> {
    const CONTEXT: &str = "inside the top-level object";
    match stream.peek_token()? {
        Some(b'"') => {}
        Some(_) => {
            return Err(Fail::Json {
                offset: stream.offset(),
                message: "expected a string key in the top-level object".into(),
            })
        }
        None => return Err(Fail::Truncated { context: CONTEXT }),
    }
    let start = stream.offset();
    let len = stream.value_span(true, CONTEXT)?;
    let span = &stream.unread()[..len];
    let key: String = serde_json::from_slice(span).map_err(|e| json_fail(&e, span, start))?;
    stream.pos += len;
    Ok(key)
}

/// Only whitespace may follow the document.
fn expect_end(stream: &mut ByteStream) -> Result<(), Fail> {
    match stream.peek_token()? {
        None => Ok(()),
        Some(_) => Err(Fail::Json {
            offset: stream.offset(),
            message: "trailing characters after the document".into(),
        }),
    }
}

/// The events array, from its `[` to its `]`; each element is parsed on its own.
fn read_events(stream: &mut ByteStream, builder: &mut TraceBuilder) -> Result<(), Fail> {
    const CONTEXT: &str = "inside the traceEvents array";
    stream.expect(b'[', CONTEXT)?;
    if stream.peek_token()? == Some(b']') {
        stream.pos += 1;
        return Ok(());
    }
    loop {
        let parsed = (builder.parser == EventParser::Fast && scan_event_in_place(stream, builder)?)
            || parse_event_in_place(stream, builder)?;
        if !parsed {
            let start = stream.offset();
            let len = stream.value_span(true, CONTEXT)?;
            let span = &stream.unread()[..len];
            builder.add_element(span, start)?;
            stream.pos += len;
        }
        match stream.peek_token()? {
            Some(b',') => stream.pos += 1,
            Some(b']') => {
                stream.pos += 1;
                return Ok(());
            }
            Some(_) => {
                return Err(Fail::Json {
                    offset: stream.offset(),
                    message: "expected ',' or ']' after an event".into(),
                })
            }
            None => return Err(Fail::Truncated { context: CONTEXT }),
        }
    }
}

/// The fastest path, for the common event shape (see `scan.rs`): the hand-written
/// scanner reads it from the buffer. Returns false, consuming nothing, for anything it
/// declines; serde then reads the element.
fn scan_event_in_place(stream: &mut ByteStream, builder: &mut TraceBuilder) -> Result<bool, Fail> {
    loop {
        if stream.peek_token()? != Some(b'{') {
            return Ok(false);
        }
        let Some(text) = stream.unread_text() else {
            return Ok(false);
        };
        match scan::scan_event(text) {
            Scan::Event(event, len) => {
                builder.trace.event_count += 1;
                builder.add_event(event);
                stream.pos += len;
                return Ok(true);
            }
            Scan::Unusual => return Ok(false),
            // Each retry scans from the event's start again: past a few chunks (a huge
            // string inside), the linear scanner path takes over.
            Scan::NeedMore => {
                if stream.unread().len() > IN_PLACE_LIMIT || !stream.fill()? {
                    return Ok(false);
                }
            }
        }
    }
}

/// The serde path for an event object, a well-formed event object: serde parses it
/// straight from the buffer and reports where it ended, so the scanner never runs. An
/// object cut by the buffer's end is retried after a refill. Returns false, consuming
/// nothing, for anything else (not an object, invalid, `NaN`s, end of input): the
/// scanner path then finds its span and classifies it.
fn parse_event_in_place(stream: &mut ByteStream, builder: &mut TraceBuilder) -> Result<bool, Fail> {
    loop {
        if stream.peek_token()? != Some(b'{') {
            return Ok(false);
        }
        let Some(text) = stream.unread_text() else {
            return Ok(false);
        };
        let mut events = serde_json::Deserializer::from_str(text).into_iter::<RawEvent>();
        let needs_more = match events.next() {
            Some(Ok(event)) => {
                let len = events.byte_offset();
                builder.trace.event_count += 1;
                builder.add_event(event);
                stream.pos += len;
                return Ok(true);
            }
            Some(Err(e)) => e.classify() == serde_json::error::Category::Eof,
            None => true,
        };
        // Each retry parses the event from its start again: past a few chunks (a huge
        // string inside), the linear scanner path takes over.
        if !needs_more || stream.unread().len() > IN_PLACE_LIMIT || !stream.fill()? {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests;
