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

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::error::TriageError;
use raw::{Id, Label, RawEvent};
use scan::Scan;
use source::open_source;
use stream::{json_fail, ByteStream, Fail, CHUNK};
use time::{has_non_finite, micros_to_ns, non_finite_to_null};

mod raw;
mod scan;
mod source;
mod stream;
mod time;
use crate::trace::event::{
    Annotation, CpuOp, GpuKind, GpuOp, PyFrame, RuntimeCall, Schema, Sym, Trace,
};

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

// ---------------------------------------------------------------------------------------
// Building the Trace

/// Longer names are no kernel, op or frame name (real ones stay under 2 KiB); such an
/// event is counted as malformed instead of costing every later step its length.
const MAX_NAME_BYTES: usize = 64 << 10;

struct TraceBuilder {
    trace: Trace,
    parser: EventParser,
    /// The last integer pids/tids interned: consecutive events mostly share them, and
    /// this skips formatting and hashing their text again.
    recent_ints: [Option<(i64, Sym)>; 2],
}

/// What an `X` event is, from its `cat`.
#[derive(Copy, Clone, PartialEq)]
enum Class {
    Gpu(GpuKind),
    Runtime,
    CpuOp,
    PyFrame,
    Annotation { on_gpu: bool },
    Other,
}

/// The 2021 layout's categories; any of them marks the file as [`Schema::Legacy`].
const LEGACY_CATS: [&str; 5] = ["Kernel", "Memcpy", "Memset", "Operator", "Runtime"];

fn classify(cat: &str) -> Class {
    let is = |s: &str| cat.eq_ignore_ascii_case(s);
    if is("kernel") {
        Class::Gpu(GpuKind::Kernel)
    } else if is("gpu_memcpy") || is("memcpy") {
        Class::Gpu(GpuKind::Memcpy)
    } else if is("gpu_memset") || is("memset") {
        Class::Gpu(GpuKind::Memset)
    } else if [
        "cuda_runtime",
        "cuda_driver",
        "runtime",
        "hip_runtime",
        "hip_driver",
    ]
    .into_iter()
    .any(is)
    {
        Class::Runtime
    } else if is("cpu_op") || is("operator") {
        Class::CpuOp
    } else if is("python_function") {
        Class::PyFrame
    } else if is("user_annotation") {
        Class::Annotation { on_gpu: false }
    } else if is("gpu_user_annotation") {
        Class::Annotation { on_gpu: true }
    } else {
        // The predecessor's rule (§3.1): a category naming kernels, or any other gpu_*.
        let gpu_prefixed = cat
            .as_bytes()
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"gpu_"));
        if contains_ignore_case(cat, "kernel")
            || (gpu_prefixed && !contains_ignore_case(cat, "annotation"))
        {
            Class::Gpu(GpuKind::Kernel)
        } else {
            Class::Other
        }
    }
}

fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Python scopes are never kernels even when they carry a stream (§3.1).
fn looks_like_python_scope(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains(".py(") || lower.starts_with("python/") || lower.starts_with("nn.module:")
}

impl TraceBuilder {
    fn new(path: &Path, parser: EventParser) -> Self {
        TraceBuilder {
            trace: Trace {
                path: path.to_path_buf(),
                ..Trace::default()
            },
            parser,
            recent_ints: [None; 2],
        }
    }

    fn finish(self) -> Trace {
        self.trace
    }

    /// One element of the events array: parsed, classified and kept or counted.
    fn add_element(&mut self, span: &[u8], start: u64) -> Result<(), Fail> {
        self.trace.event_count += 1;
        // A JSON array would deserialise into the struct field by field; not an event.
        if span.first() != Some(&b'{') {
            let valid: Result<IgnoredAny, _> = serde_json::from_slice(&non_finite_to_null(span));
            return match valid {
                Err(err) if is_syntax(&err) => Err(json_fail(&err, span, start)),
                _ => {
                    self.trace.skipped.malformed += 1;
                    Ok(())
                }
            };
        }
        match serde_json::from_slice::<RawEvent>(span) {
            Ok(event) => {
                self.add_event(event);
                Ok(())
            }
            Err(err) => {
                if !is_syntax(&err) {
                    self.trace.skipped.malformed += 1;
                    return Ok(());
                }
                if !has_non_finite(span) {
                    return Err(json_fail(&err, span, start));
                }
                let rewritten = non_finite_to_null(span);
                match serde_json::from_slice::<RawEvent>(&rewritten) {
                    Ok(event) => self.add_event(event),
                    Err(err) if is_syntax(&err) => return Err(json_fail(&err, &rewritten, start)),
                    Err(_) => self.trace.skipped.malformed += 1,
                }
                Ok(())
            }
        }
    }

    /// The symbol of a pid or tid (`""` when absent).
    fn label(&mut self, label: Option<&Label>) -> Sym {
        match label {
            Some(Label::Int(v)) => {
                let recent = self.recent_ints.iter().flatten();
                if let Some(&(_, sym)) = recent.into_iter().find(|(k, _)| k == v) {
                    return sym;
                }
                let sym = Label::Int(*v).intern(&mut self.trace.strings);
                self.recent_ints = [Some((*v, sym)), self.recent_ints[0]];
                sym
            }
            Some(label) => label.intern(&mut self.trace.strings),
            None => self.trace.strings.intern(""),
        }
    }

    fn add_event(&mut self, ev: RawEvent) {
        if ev.name.as_ref().is_some_and(|n| n.0.len() > MAX_NAME_BYTES) {
            self.trace.skipped.malformed += 1;
            return;
        }
        let ph = ev.ph.as_ref().map(|t| t.0.as_ref());
        match ph {
            Some("X") => self.add_complete(ev),
            Some("M") => self.add_metadata(ev),
            _ => {}
        }
    }

    fn add_complete(&mut self, ev: RawEvent) {
        let cat = ev.cat.as_ref().map(|t| t.0.as_ref()).unwrap_or("");
        if LEGACY_CATS.contains(&cat) {
            self.trace.meta.schema = Schema::Legacy;
        }
        let args = ev.args.as_ref();
        let mut class = classify(cat);
        let stream = args.and_then(|a| a.stream.0.or(a.cuda_stream.0));
        if class == Class::Other && stream.is_some() {
            let name = ev.name.as_ref().map(|t| t.0.as_ref()).unwrap_or("");
            if !contains_ignore_case(cat, "trace") && !looks_like_python_scope(name) {
                class = Class::Gpu(GpuKind::Kernel);
            }
        }
        let external_id = args.and_then(|a| a.external_id.0.or(a.legacy_external_id.0));
        let correlation = args.and_then(|a| a.correlation.0);
        if class == Class::Other || (class == Class::Runtime && correlation.is_none()) {
            return;
        }
        let (ts, dur) = (micros_to_ns(ev.ts), micros_to_ns(ev.dur));
        let (ts, dur) = match (ts, dur) {
            // An end past i64 is as unusable as a negative time.
            (Some(ts), Some(dur)) if ts >= 0 && dur >= 0 && ts.checked_add(dur).is_some() => {
                (ts, dur)
            }
            _ => {
                self.trace.skipped.bad_time += 1;
                return;
            }
        };
        if dur == 0 && matches!(class, Class::Gpu(_)) {
            self.trace.skipped.zero_duration += 1;
            return;
        }
        let name = self
            .trace
            .strings
            .intern(ev.name.as_ref().map(|t| t.0.as_ref()).unwrap_or(""));
        let pid = self.label(ev.pid.as_ref());
        let tid = self.label(ev.tid.as_ref());
        match class {
            Class::Gpu(kind) => self.trace.gpu_ops.push(GpuOp {
                name,
                kind,
                ts,
                dur,
                pid,
                tid,
                stream,
                device: args.and_then(|a| a.device.0),
                correlation,
                external_id,
            }),
            Class::Runtime => self.trace.runtime.push(RuntimeCall {
                name,
                ts,
                dur,
                pid,
                tid,
                correlation: correlation.unwrap_or_default(),
                external_id,
            }),
            Class::CpuOp => self.trace.cpu_ops.push(CpuOp {
                name,
                ts,
                dur,
                pid,
                tid,
                external_id,
            }),
            Class::PyFrame => self.trace.py_frames.push(PyFrame {
                name,
                ts,
                dur,
                pid,
                tid,
            }),
            Class::Annotation { on_gpu } => self.trace.annotations.push(Annotation {
                name,
                ts,
                dur,
                pid,
                tid,
                external_id,
                on_gpu,
            }),
            Class::Other => {}
        }
    }

    /// `process_name` / `thread_name` metadata (`ph: "M"`) with a non-empty `args.name`.
    fn add_metadata(&mut self, ev: RawEvent) {
        let kind = ev.name.as_ref().map(|t| t.0.as_ref());
        if !matches!(kind, Some("process_name" | "thread_name")) {
            return;
        }
        let value = ev
            .args
            .as_ref()
            .and_then(|a| a.name.as_ref())
            .and_then(Label::as_text)
            .filter(|s| !s.is_empty());
        let Some(value) = value else { return };
        let value = self.trace.strings.intern(value);
        let pid = self.label(ev.pid.as_ref());
        if kind == Some("process_name") {
            self.trace.process_names.push((pid, value));
        } else {
            let tid = self.label(ev.tid.as_ref());
            self.trace.thread_names.push((pid, tid, value));
        }
    }

    /// `deviceProperties`, `distributedInfo` or `with_stack`. A value of an unexpected
    /// shape is ignored: these facts are optional.
    fn read_meta_value(&mut self, key: &str, span: &[u8], start: u64) -> Result<(), Fail> {
        let meta = &mut self.trace.meta;
        match key {
            "deviceProperties" => {
                let value: DeviceProperties = parse_meta(span, start)?;
                match value {
                    DeviceProperties::List(devices) => {
                        meta.device_names = devices
                            .into_iter()
                            .map(|d| d.name.unwrap_or_default())
                            .collect();
                    }
                    DeviceProperties::Repr(text) => meta.device_names = repr_strings(&text, "name"),
                    DeviceProperties::Other(_) => {}
                }
            }
            "distributedInfo" => {
                let value: DistributedInfo = parse_meta(span, start)?;
                match value {
                    DistributedInfo::Object { rank, world_size } => {
                        meta.rank = rank.0.and_then(|v| u32::try_from(v).ok());
                        meta.world_size = world_size.0.and_then(|v| u32::try_from(v).ok());
                    }
                    DistributedInfo::Repr(text) => {
                        meta.rank = repr_int(&text, "rank");
                        meta.world_size = repr_int(&text, "world_size");
                    }
                    DistributedInfo::Other(_) => {}
                }
            }
            "with_stack" => {
                meta.with_stack = match parse_meta::<Flag>(span, start)? {
                    Flag::Bool(b) => Some(b),
                    Flag::Number(n) => Some(n != 0.0),
                    Flag::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
                        "1" | "true" => Some(true),
                        "0" | "false" => Some(false),
                        _ => None,
                    },
                    Flag::Other(_) => None,
                };
            }
            _ => {}
        }
        Ok(())
    }
}

fn is_syntax(err: &serde_json::Error) -> bool {
    use serde_json::error::Category;
    // Nesting past serde_json's recursion limit is valid JSON we decline: malformed.
    matches!(err.classify(), Category::Syntax | Category::Eof)
        && !err.to_string().contains("recursion limit")
}

/// Parses a small top-level value, tolerating Python's `NaN`/`Infinity` like events do.
fn parse_meta<T: serde::de::DeserializeOwned>(span: &[u8], start: u64) -> Result<T, Fail> {
    match serde_json::from_slice::<T>(span) {
        Ok(v) => Ok(v),
        Err(err) if is_syntax(&err) && has_non_finite(span) => {
            let rewritten = non_finite_to_null(span);
            serde_json::from_slice::<T>(&rewritten).map_err(|e| json_fail(&e, &rewritten, start))
        }
        Err(err) => Err(json_fail(&err, span, start)),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum DeviceProperties {
    List(Vec<DeviceProperty>),
    /// TraceLens rewrites the list as a Python repr string.
    Repr(String),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
struct DeviceProperty {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum DistributedInfo {
    Object {
        #[serde(default)]
        rank: Id,
        #[serde(default)]
        world_size: Id,
    },
    Repr(String),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Flag {
    Bool(bool),
    Number(f64),
    Text(String),
    Other(IgnoredAny),
}

/// Every `'key': 'value'` (or double-quoted) string value in a Python repr.
fn repr_strings(text: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for quote in ['\'', '"'] {
        let needle = format!("{quote}{key}{quote}:");
        let mut rest = text;
        while let Some(i) = rest.find(&needle) {
            rest = rest[i + needle.len()..].trim_start();
            let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue;
            };
            let body = &rest[1..];
            let end = body.find(q).unwrap_or(body.len());
            out.push(body[..end].to_string());
            rest = &body[end..];
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// The first `'key': <integer>` in a Python repr.
fn repr_int(text: &str, key: &str) -> Option<u32> {
    for quote in ['\'', '"'] {
        let needle = format!("{quote}{key}{quote}:");
        if let Some(i) = text.find(&needle) {
            let rest = text[i + needle.len()..].trim_start();
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            return rest[..end].parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests;
