//! Tiling a real trace into a big one, for benchmarks (shared by the `tile_trace` and
//! `bench_read` examples).
//!
//! Copy `k` of every event is the source text with its `ts` shifted by `k` times the
//! trace's span, and every linking id shifted by `k` times the largest id: `correlation`,
//! `External id` / `external id`, `Python id` / `Python parent id`, `Ev Idx` and flow
//! `id`s. So the copies never link into each other, and the linker's indexes grow with
//! the file as they would on a real long trace. Everything else (field order, spacing,
//! the number text) is the source's own bytes.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::sync::mpsc::sync_channel;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Event keys whose integer value is a linking id.
const TOP_IDS: &[&str] = &["id"];
/// `args` keys whose integer value is a linking id.
const ARG_IDS: &[&str] = &[
    "correlation",
    "External id",
    "external id",
    "Python id",
    "Python parent id",
    "Ev Idx",
];

/// What was written.
pub struct Tiled {
    pub json_bytes: u64,
    pub gz_bytes: u64,
    pub copies: u64,
    pub events: u64,
}

/// How each event's text is laid out.
#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Layout {
    /// One event per line with Python `json.dumps` spacing (`", "`, `": "`): about the
    /// bytes per event torch.profiler itself writes, whatever the source's indentation.
    Python,
    /// The source's own bytes (the B200 trace is re-indented by 4: twice the bytes).
    Source,
}

impl Layout {
    pub fn parse(name: &str) -> Option<Layout> {
        match name {
            "python" => Some(Layout::Python),
            "source" => Some(Layout::Source),
            _ => None,
        }
    }
}

/// Writes about `target_bytes` of JSON tiled from `source` as gzip (fast level) to `gz`,
/// and also as plain JSON to `json` when given.
pub fn tile(
    source: &Path,
    layout: Layout,
    target_bytes: u64,
    gz: &Path,
    json: Option<&Path>,
) -> Tiled {
    let text = read_source(source);
    let (head, raw_events, tail) = split_document(&text);
    let events: Vec<Cow<str>> = raw_events
        .iter()
        .map(|raw| match layout {
            Layout::Source => Cow::Borrowed(raw.get()),
            Layout::Python => Cow::Owned(python_layout(raw.get())),
        })
        .collect();
    let template = Template::parse(head, &events, tail);
    let (tx, rx) = sync_channel::<Vec<u8>>(4);
    let gz_path = gz.to_path_buf();
    let json_path = json.map(Path::to_path_buf);
    // Compression on its own thread: generating the text is cheap, deflate is not.
    let writer = std::thread::spawn(move || {
        let out = BufWriter::with_capacity(1 << 20, create(&gz_path));
        let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
        let mut plain = json_path.map(|p| BufWriter::with_capacity(1 << 20, create(&p)));
        for block in rx {
            enc.write_all(&block).expect("write gzip");
            if let Some(plain) = plain.as_mut() {
                plain.write_all(&block).expect("write json");
            }
        }
        enc.finish()
            .expect("finish gzip")
            .flush()
            .expect("flush gzip");
        if let Some(mut plain) = plain {
            plain.flush().expect("flush json");
        }
    });

    // Whole copies, then events of one more until the target is reached.
    let mut block = Vec::with_capacity(4 << 20);
    block.extend_from_slice(template.head.as_bytes());
    let target = target_bytes.saturating_sub(template.tail.len() as u64);
    let mut sent = 0u64;
    let mut copies = 0u64;
    let mut events = 0u64;
    'copies: loop {
        for (i, event) in template.events.iter().enumerate() {
            if events > 0 && sent + block.len() as u64 >= target {
                break 'copies;
            }
            if i > 0 || copies > 0 {
                block.extend_from_slice(template.separator.as_bytes());
            }
            event.write(&mut block, copies, &template);
            events += 1;
            if block.len() >= 4 << 20 {
                sent += block.len() as u64;
                tx.send(std::mem::replace(&mut block, Vec::with_capacity(4 << 20)))
                    .expect("gzip thread alive");
            }
        }
        copies += 1;
        if template.events.is_empty() {
            break;
        }
    }
    block.extend_from_slice(template.tail.as_bytes());
    let written = sent + block.len() as u64;
    tx.send(block).expect("gzip thread alive");
    drop(tx);
    writer.join().expect("gzip thread");
    Tiled {
        json_bytes: written,
        gz_bytes: std::fs::metadata(gz).map(|m| m.len()).unwrap_or(0),
        copies: copies + u64::from(events > copies * template.events.len() as u64),
        events,
    }
}

fn create(path: &Path) -> File {
    File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_source(source: &Path) -> String {
    let file = File::open(source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let mut reader: Box<dyn Read> = if source.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut text = String::new();
    reader.read_to_string(&mut text).expect("source is UTF-8");
    text
}

/// The source split into what is written once and what is written per copy.
struct Template<'a> {
    /// Everything up to the first event (other top-level keys, `"traceEvents": [`).
    head: String,
    events: Vec<EventTemplate<'a>>,
    /// Between two events.
    separator: &'static str,
    /// From after the last event to the end.
    tail: String,
    /// Added to a `ts` per copy, in microseconds.
    ts_shift_us: u64,
    /// Added to an id per copy.
    id_shift: u64,
}

/// One event's text as pieces: verbatim text and numbers to shift.
struct EventTemplate<'a> {
    pieces: Vec<Piece<'a>>,
}

enum Piece<'a> {
    Text(&'a str),
    /// A `ts`: integer microseconds and the fraction text after it (`.123` or empty).
    Ts(u64, &'a str),
    Id(u64),
}

impl<'a> Template<'a> {
    fn parse(head: String, texts: &'a [Cow<'a, str>], tail: String) -> Template<'a> {
        let mut events = Vec::with_capacity(texts.len());
        let (mut first_ts, mut last_end, mut max_id) = (u64::MAX, 0u64, 0u64);
        for text in texts {
            let event = EventTemplate::parse(text);
            let facts: Facts = serde_json::from_str(text).unwrap_or_default();
            if let Some(ts) = facts.ts.filter(|t| t.is_finite() && *t >= 0.0) {
                first_ts = first_ts.min(ts as u64);
                let dur = facts.dur.filter(|d| d.is_finite() && *d >= 0.0);
                last_end = last_end.max((ts + dur.unwrap_or(0.0)).ceil() as u64);
            }
            for piece in &event.pieces {
                if let Piece::Id(id) = piece {
                    max_id = max_id.max(*id);
                }
            }
            events.push(event);
        }
        let span = last_end.saturating_sub(first_ts.min(last_end));
        Template {
            head,
            events,
            separator: ",\n",
            tail,
            // A round gap after the source's last event, so copies never overlap.
            ts_shift_us: (span / 1000 + 2) * 1000,
            id_shift: max_id + 1,
        }
    }
}

impl<'a> EventTemplate<'a> {
    /// Splits an event object's text around its `ts`, its flow `id` and its `args` ids.
    fn parse(text: &'a str) -> EventTemplate<'a> {
        let mut pieces = Vec::new();
        let mut copied = 0;
        let mut slot = |start: usize, end: usize, piece: Piece<'a>, pieces: &mut Vec<Piece<'a>>| {
            pieces.push(Piece::Text(&text[copied..start]));
            pieces.push(piece);
            copied = end;
        };
        let bytes = text.as_bytes();
        for (key, start, end, in_args) in number_fields(bytes) {
            let value = &text[start..end];
            let is_id = if in_args {
                ARG_IDS.contains(&key.as_ref())
            } else {
                TOP_IDS.contains(&key.as_ref())
            };
            if !in_args && key == "ts" {
                let (whole, frac) = value.split_at(value.find('.').unwrap_or(value.len()));
                if let Ok(us) = whole.parse::<u64>() {
                    slot(start, end, Piece::Ts(us, frac), &mut pieces);
                }
            } else if is_id {
                if let Ok(id) = value.parse::<u64>() {
                    slot(start, end, Piece::Id(id), &mut pieces);
                }
            }
        }
        pieces.push(Piece::Text(&text[copied..]));
        EventTemplate { pieces }
    }

    fn write(&self, out: &mut Vec<u8>, copy: u64, template: &Template) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Ts(us, frac) => {
                    write!(out, "{}{frac}", us + copy * template.ts_shift_us).expect("vec write")
                }
                Piece::Id(id) => {
                    write!(out, "{}", id + copy * template.id_shift).expect("vec write")
                }
            }
        }
    }
}

/// `ts` and `dur` of an event, for the source's time span.
#[derive(serde::Deserialize, Default)]
struct Facts {
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
}

/// (key, value start, value end, inside `args`) of every number-valued field of the
/// event object and of its `args` object. The source is valid JSON (serde read it).
fn number_fields(bytes: &[u8]) -> Vec<(Cow<'_, str>, usize, usize, bool)> {
    let mut found = Vec::new();
    let i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return found;
    }
    object_fields(bytes, i, false, &mut found);
    found
}

fn object_fields<'b>(
    bytes: &'b [u8],
    open: usize,
    in_args: bool,
    found: &mut Vec<(Cow<'b, str>, usize, usize, bool)>,
) {
    let mut i = skip_ws(bytes, open + 1);
    while i < bytes.len() && bytes[i] == b'"' {
        let key_end = skip_value(bytes, i);
        let key: Cow<str> = serde_json::from_slice(&bytes[i..key_end]).unwrap_or_default();
        i = skip_ws(bytes, key_end);
        i = skip_ws(bytes, i + 1); // ':'
        let value_end = skip_value(bytes, i);
        match bytes[i] {
            b'-' | b'0'..=b'9' => found.push((key, i, value_end, in_args)),
            b'{' if !in_args && key == "args" => object_fields(bytes, i, true, found),
            _ => {}
        }
        i = skip_ws(bytes, value_end);
        if bytes.get(i) == Some(&b',') {
            i = skip_ws(bytes, i + 1);
        }
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end of the JSON value starting at `i`.
fn skip_value(bytes: &[u8], i: usize) -> usize {
    match bytes[i] {
        b'"' => {
            let mut j = i + 1;
            while bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        }
        b'{' | b'[' => {
            let mut j = skip_ws(bytes, i + 1);
            while bytes[j] != b'}' && bytes[j] != b']' {
                j = skip_ws(bytes, skip_value(bytes, j));
                if bytes[j] == b':' || bytes[j] == b',' {
                    j = skip_ws(bytes, j + 1);
                }
            }
            j + 1
        }
        _ => {
            let mut j = i;
            while j < bytes.len() && !b",}] \n\r\t".contains(&bytes[j]) {
                j += 1;
            }
            j
        }
    }
}

/// `text` (one JSON value) without whitespace outside strings, with `", "` and `": "`
/// as separators.
fn python_layout(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            ' ' | '\n' | '\r' | '\t' => {}
            ',' => out.push_str(", "),
            ':' => out.push_str(": "),
            '"' => {
                in_string = true;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// (text before the first event, the events, text after the last).
fn split_document(text: &str) -> (String, Vec<&RawValue>, String) {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let events: Vec<&RawValue> = serde_json::from_str(text).expect("source is a JSON array");
        return ("[\n".into(), events, "\n]\n".into());
    }
    let fields = serde_json::Deserializer::from_str(text)
        .deserialize_map(OrderedFields)
        .expect("source is a JSON object");
    let mut head = String::from("{");
    let mut events = Vec::new();
    let mut after = Vec::new();
    for (key, value) in fields {
        if key == "traceEvents" {
            events = serde_json::from_str(value.get()).expect("traceEvents is an array");
            continue;
        }
        let field = format!(
            "{}: {}",
            serde_json::to_string(&key).expect("key"),
            value.get()
        );
        if events.is_empty() {
            head.push_str(&field);
            head.push_str(",\n");
        } else {
            after.push(field);
        }
    }
    head.push_str("\"traceEvents\": [\n");
    let mut tail = String::from("\n]");
    for field in after {
        tail.push_str(",\n");
        tail.push_str(&field);
    }
    tail.push_str("\n}\n");
    (head, events, tail)
}

/// A top-level object's fields in document order.
struct OrderedFields;

impl<'de> Visitor<'de> for OrderedFields {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, &RawValue>()? {
            fields.push((key, value));
        }
        Ok(fields)
    }
}
