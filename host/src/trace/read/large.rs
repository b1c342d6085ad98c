//! An event too large to hold: read member by member as it streams past, so memory stays
//! bounded by the values the reader keeps, not by the event.
//!
//! Why: the in-place tiers need the whole event in the buffer, and past
//! `IN_PLACE_LIMIT` (8 MiB) they give up. Holding the event anyway would let one 2 GB
//! string in a 2 MB `.json.gz` take 2 GB of memory. No real event comes near the limit
//! (the largest seen is a few KiB), so this path is for hostile or broken input.
//!
//! How: each member's key is read (a key past the value limit cannot be one the reader
//! knows and is skipped); a member the reader keeps has its value's text copied, up to
//! [`MAX_VALUE_BYTES`]; every other value is skipped by its span as it streams past
//! (`ByteStream::value_span(false, ..)`), holding nothing. `args` is walked the same way
//! one level down. The kept members are put back together as a small event object and
//! handed to `TraceSink::add_element`, so serde types them exactly as it would have the
//! whole event. A kept value past the limit skips the event, counted by field; an
//! optional fact past it (`OPTIONAL_ARGS`: shapes, geometry, a launch's kernel) is left
//! out and counted in `SkipCounts::oversized_fields` when the event is kept, as the
//! in-place tiers do.
//!
//! What this path does not do: check the JSON inside skipped values beyond the bracket
//! and string structure the span finder follows (serde would have refused, say, a bad
//! number deep inside a skipped array); and an error in a kept value names the event's
//! first byte, not the value's.

use super::build::{TraceSink, MAX_VALUE_BYTES};
use super::raw::OPTIONAL_ARGS;
use super::stream::{json_fail, ByteStream, Fail};

const CONTEXT: &str = "inside a large event";

/// The event fields the reader keeps, and the name a skip is counted under.
const EVENT_FIELDS: [(&str, &str); 8] = [
    ("name", "name"),
    ("ph", "ph"),
    ("cat", "cat"),
    ("ts", "ts"),
    ("dur", "dur"),
    ("pid", "pid"),
    ("tid", "tid"),
    ("args", "args"),
];

/// The `args` fields the reader keeps (see `RawArgs`); the optional facts of
/// [`OPTIONAL_ARGS`] are looked up after these.
const ARGS_FIELDS: [(&str, &str); 7] = [
    ("External id", "args.External id"),
    ("external id", "args.external id"),
    ("correlation", "args.correlation"),
    ("stream", "args.stream"),
    ("cuda_stream", "args.cuda_stream"),
    ("device", "args.device"),
    ("name", "args.name"),
];

/// Reads the event object at the stream's next token (which is `{`) and hands what it
/// keeps to `sink`.
pub(super) fn read_large_event(stream: &mut ByteStream, sink: &mut TraceSink) -> Result<(), Fail> {
    let start = stream.offset();
    let mut kept = Kept {
        text: Vec::new(),
        oversized: None,
        oversized_optional: Vec::new(),
    };
    kept.text.push(b'{');
    read_members(stream, &mut kept, &EVENT_FIELDS, true)?;
    kept.text.push(b'}');
    match kept.oversized {
        Some(field) => {
            sink.trace.event_count += 1;
            sink.skip_oversized(field);
            Ok(())
        }
        None => {
            // The optional facts left out are counted when the event is kept, as the
            // in-place tiers count theirs.
            sink.oversized_optional = kept.oversized_optional;
            let added = sink.add_element(&kept.text, start);
            sink.oversized_optional = Vec::new();
            added
        }
    }
}

/// The small event being put back together, the first kept field found too long, and
/// the optional `args` facts left out for their length.
struct Kept {
    text: Vec<u8>,
    oversized: Option<&'static str>,
    oversized_optional: Vec<&'static str>,
}

impl Kept {
    fn push_key(&mut self, key: &str) {
        if !matches!(self.text.last(), Some(b'{')) {
            self.text.push(b',');
        }
        // Kept keys are plain ASCII words; serde_json writes them as JSON strings.
        self.text
            .extend_from_slice(serde_json::to_string(key).unwrap_or_default().as_bytes());
        self.text.push(b':');
    }
}

/// The members of the object at the next token; `fields` are the ones kept, `top` says
/// whether `args` is walked one level down.
fn read_members(
    stream: &mut ByteStream,
    kept: &mut Kept,
    fields: &[(&str, &'static str)],
    top: bool,
) -> Result<(), Fail> {
    stream.expect(b'{', CONTEXT)?;
    if stream.peek_token()? == Some(b'}') {
        stream.pos += 1;
        return Ok(());
    }
    loop {
        let key = read_key(stream)?;
        stream.expect(b':', "after a key inside a large event")?;
        let optional = |k: &str| {
            let found = OPTIONAL_ARGS.iter().find(|(name, _)| *name == k);
            found.filter(|_| !top)
        };
        let field = key.as_deref().and_then(|k| {
            fields
                .iter()
                .find(|(name, _)| *name == k)
                .or_else(|| optional(k))
        });
        match field {
            Some(&(name, _)) if top && name == "args" && stream.peek_token()? == Some(b'{') => {
                kept.push_key(name);
                read_members_into(stream, kept)?;
            }
            Some(&(name, counted)) => match stream.value_span_within(MAX_VALUE_BYTES, CONTEXT)? {
                Some(len) => {
                    kept.push_key(name);
                    kept.text.extend_from_slice(&stream.unread()[..len]);
                    stream.pos += len;
                }
                None => {
                    if OPTIONAL_ARGS.iter().any(|&(_, c)| c == counted) && !top {
                        kept.oversized_optional.push(counted);
                    } else {
                        kept.oversized.get_or_insert(counted);
                    }
                    stream.value_span(false, CONTEXT)?;
                }
            },
            None => {
                stream.value_span(false, CONTEXT)?;
            }
        }
        match stream.peek_token()? {
            Some(b',') => stream.pos += 1,
            Some(b'}') => {
                stream.pos += 1;
                return Ok(());
            }
            Some(_) => {
                return Err(Fail::Json {
                    offset: stream.offset(),
                    message: "expected ',' or '}' inside an event".into(),
                })
            }
            None => return Err(Fail::Truncated { context: CONTEXT }),
        }
    }
}

/// `args` as an object of its kept members.
fn read_members_into(stream: &mut ByteStream, kept: &mut Kept) -> Result<(), Fail> {
    kept.text.push(b'{');
    read_members(stream, kept, &ARGS_FIELDS, false)?;
    kept.text.push(b'}');
    Ok(())
}

/// A member's key; `None` for one past the value limit, which is skipped unread (no key
/// the reader keeps is that long).
fn read_key(stream: &mut ByteStream) -> Result<Option<String>, Fail> {
    match stream.peek_token()? {
        Some(b'"') => {}
        Some(_) => {
            return Err(Fail::Json {
                offset: stream.offset(),
                message: "expected a string key inside an event".into(),
            })
        }
        None => return Err(Fail::Truncated { context: CONTEXT }),
    }
    let start = stream.offset();
    match stream.value_span_within(MAX_VALUE_BYTES, CONTEXT)? {
        Some(len) => {
            let span = &stream.unread()[..len];
            let key = serde_json::from_slice(span).map_err(|e| json_fail(&e, span, start))?;
            stream.pos += len;
            Ok(Some(key))
        }
        None => {
            stream.value_span(false, CONTEXT)?;
            Ok(None)
        }
    }
}
