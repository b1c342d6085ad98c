//! The document walk: the top level (an object with keys in any order, or a bare events
//! array), then each element of `traceEvents`, tried by the three tiers in turn: the
//! hand-written scanner in place, serde in place, and for anything else the span finder,
//! whose span the sink classifies or reports. Values of other top-level keys are
//! skipped as they stream past, so a huge one never sits in memory.

use super::build::{TraceSink, MAX_META_BYTES, MAX_VALUE_BYTES};
use super::large::read_large_event;
use super::raw::RawEvent;
use super::scan::{self, LeanScan, Scan};
use super::stream::{json_fail, ByteStream, Fail, CHUNK};
use super::{EventParser, ReadScope};

/// An event larger than this is not retried on the in-place fast path (see
/// `parse_event_in_place`).
const IN_PLACE_LIMIT: usize = 4 * CHUNK;

pub(super) fn read_document(stream: &mut ByteStream, sink: &mut TraceSink) -> Result<(), Fail> {
    if stream.peek_token()?.is_none() {
        return Err(Fail::NotTrace("the file is empty".into()));
    }
    // A UTF-8 byte-order mark is not JSON, but some writers emit it.
    if stream.unread().starts_with(&[0xef, 0xbb, 0xbf]) {
        stream.pos += 3;
    }
    match stream.peek_token()? {
        None => Err(Fail::NotTrace("the file is empty".into())),
        Some(b'{') => read_object(stream, sink),
        Some(b'[') => {
            sink.trace.meta.bare_list = true;
            read_events(stream, sink)?;
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
fn read_object(stream: &mut ByteStream, sink: &mut TraceSink) -> Result<(), Fail> {
    const CONTEXT: &str = "inside the top-level object";
    stream.expect(b'{', CONTEXT)?;
    let mut saw_events = false;
    if stream.peek_token()? == Some(b'}') {
        stream.pos += 1;
    } else {
        loop {
            let Some(key) = read_key(stream)? else {
                // Past the limit: no key the reader knows, so its value is skipped too.
                *sink
                    .trace
                    .skipped
                    .oversized_top_level
                    .entry("top-level key")
                    .or_default() += 1;
                stream.expect(b':', "after a top-level key")?;
                stream.value_span(false, CONTEXT)?;
                match stream.peek_token()? {
                    Some(b',') => {
                        stream.pos += 1;
                        continue;
                    }
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
            };
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
                    read_events(stream, sink)?;
                    saw_events = true;
                }
                "deviceProperties" | "distributedInfo" | "with_stack" => {
                    let start = stream.offset();
                    match stream.value_span_within(MAX_META_BYTES, CONTEXT)? {
                        Some(len) => {
                            let span = &stream.unread()[..len];
                            sink.read_meta_value(&key, span, start)?;
                            stream.pos += len;
                        }
                        None => {
                            let name = match key.as_str() {
                                "deviceProperties" => "deviceProperties",
                                "distributedInfo" => "distributedInfo",
                                _ => "with_stack",
                            };
                            *sink
                                .trace
                                .skipped
                                .oversized_top_level
                                .entry(name)
                                .or_default() += 1;
                            stream.value_span(false, CONTEXT)?;
                        }
                    }
                }
                _ => {
                    stream.value_span(false, CONTEXT)?;
                }
            }
            sink.trace.meta.keys.push(key);
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

/// A top-level key; `None` for one past [`MAX_VALUE_BYTES`], skipped unread.
fn read_key(stream: &mut ByteStream) -> Result<Option<String>, Fail> {
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
    let Some(len) = stream.value_span_within(MAX_VALUE_BYTES, CONTEXT)? else {
        stream.value_span(false, CONTEXT)?;
        return Ok(None);
    };
    let span = &stream.unread()[..len];
    let key: String = serde_json::from_slice(span).map_err(|e| json_fail(&e, span, start))?;
    stream.pos += len;
    Ok(Some(key))
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
fn read_events(stream: &mut ByteStream, sink: &mut TraceSink) -> Result<(), Fail> {
    const CONTEXT: &str = "inside the traceEvents array";
    stream.expect(b'[', CONTEXT)?;
    if stream.peek_token()? == Some(b']') {
        stream.pos += 1;
        return Ok(());
    }
    loop {
        let parsed = (sink.parser == EventParser::Fast && scan_event_in_place(stream, sink)?)
            || parse_event_in_place(stream, sink)?;
        if !parsed {
            let start = stream.offset();
            match stream.value_span_within(IN_PLACE_LIMIT, CONTEXT)? {
                Some(len) => {
                    let span = &stream.unread()[..len];
                    sink.add_element(span, start)?;
                    stream.pos += len;
                }
                // Too large to hold: an object is read member by member, anything else
                // (a huge string or array where an event should be) is no event.
                None if stream.peek_token()? == Some(b'{') => read_large_event(stream, sink)?,
                None => {
                    stream.value_span(false, CONTEXT)?;
                    sink.trace.event_count += 1;
                    sink.trace.skipped.malformed += 1;
                }
            }
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
fn scan_event_in_place(stream: &mut ByteStream, sink: &mut TraceSink) -> Result<bool, Fail> {
    loop {
        if stream.peek_token()? != Some(b'{') {
            return Ok(false);
        }
        // Scanned already, on the scan-ahead thread (`ahead.rs`). The events are matched
        // by reference here and below: moved out of their results, each (~580 bytes) was
        // copied once more.
        let ahead = match &stream.scanned_event() {
            Some((event, len)) => {
                sink.add_event(event);
                Some(*len)
            }
            None => None,
        };
        if let Some(len) = ahead {
            sink.trace.event_count += 1;
            stream.pos += len;
            return Ok(true);
        }
        let Some(text) = stream.unread_text() else {
            return Ok(false);
        };
        let scanned = match sink.scope {
            ReadScope::Full => scan_here(text, sink),
            ReadScope::Digest => scan_lean_here(text, sink),
        };
        let Some(scanned) = scanned else {
            return Ok(false);
        };
        match scanned {
            Ok(len) => {
                sink.trace.event_count += 1;
                stream.pos += len;
                stream.scanned_here += 1;
                return Ok(true);
            }
            // Each retry scans from the event's start again: past a few chunks (a huge
            // string inside), the linear scanner path takes over.
            Err(()) => {
                if stream.unread().len() > IN_PLACE_LIMIT || !stream.fill()? {
                    return Ok(false);
                }
            }
        }
    }
}

/// The event at the start of `text` read by the scanner into `sink`: its length, `Err`
/// for more text, `None` where the scanner declines it.
#[inline(always)]
fn scan_here(text: &str, sink: &mut TraceSink) -> Option<Result<usize, ()>> {
    match &scan::scan_event(text, sink.scope) {
        Scan::Event(event, len) => {
            sink.add_event(event);
            Some(Ok(*len))
        }
        Scan::Unusual => None,
        Scan::NeedMore => Some(Err(())),
    }
}

/// [`scan_here`] in a lean read: Python frames and CPU ops (most events) and dropped
/// events by their own shorter paths (`scan::scan_lean`), the rest as a full read takes
/// them. Out of line: inlined beside the full read's scan, it changed how that was
/// compiled (a full read took 2% more instructions).
#[inline(never)]
fn scan_lean_here(text: &str, sink: &mut TraceSink) -> Option<Result<usize, ()>> {
    match scan::scan_lean(text) {
        LeanScan::Frame(frame, len) => {
            sink.add_frame(&frame);
            Some(Ok(len))
        }
        LeanScan::CpuOp(op, external_id, len) => {
            sink.add_cpu_op(&op, external_id);
            Some(Ok(len))
        }
        LeanScan::Dropped(len) => Some(Ok(len)),
        LeanScan::NeedMore => Some(Err(())),
        LeanScan::Other => scan_here(text, sink),
    }
}

/// The serde path for an event object, a well-formed event object: serde parses it
/// straight from the buffer and reports where it ended, so the scanner never runs. An
/// object cut by the buffer's end is retried after a refill. Returns false, consuming
/// nothing, for anything else (not an object, invalid, `NaN`s, end of input): the
/// scanner path then finds its span and classifies it.
fn parse_event_in_place(stream: &mut ByteStream, sink: &mut TraceSink) -> Result<bool, Fail> {
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
                sink.trace.event_count += 1;
                sink.add_event(&event);
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
