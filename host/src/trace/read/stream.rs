//! The text the document walk reads from, and how a read fails.
//!
//! `ByteStream` is a rolling window over the uncompressed document: refilled chunk by
//! chunk (or block by block from the gzip thread), decoded to text once, with the text
//! already read dropped at each refill, so memory never grows with the document.
//! `SpanScan` finds where a value ends for the elements that are not read in place.
//! `Fail` is every way a read can end early, turned into one line naming the byte offset
//! (which is why it sits with the stream: the message needs the stream's offsets).

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::source::{Source, TextBlocks};

/// Bytes read per refill.
pub(super) const CHUNK: usize = 2 << 20;

/// Size of one block decoded by the gzip thread.
const BLOCK: usize = 1 << 20;

/// Where the document's text comes from.
enum Input {
    /// A plain file, decoded here chunk by chunk.
    Bytes(Box<dyn Read + Send>),
    /// Text decoded on the gzip thread.
    Text(TextBlocks),
}

/// A window over the uncompressed document, decoded to text once as it arrives (so
/// serde never re-validates UTF-8 string by string): `text[pos..]` is unread; text
/// before `pos` is dropped at the next refill. `base` is the document offset of
/// `text[0]`. Invalid UTF-8 becomes U+FFFD, as a lenient reader would have it.
pub(super) struct ByteStream<'p> {
    src: Input,
    text: String,
    /// Bytes read but not yet decoded: an incomplete UTF-8 sequence at a chunk's end.
    raw: Vec<u8>,
    /// How many bytes at the start of `raw` are read and not yet decoded (at most 3).
    raw_len: usize,
    pub(super) pos: usize,
    base: u64,
    eof: bool,
    gzip: bool,
    chunk: usize,
    pub(super) consumed: Arc<AtomicU64>,
    pub(super) progress: &'p mut dyn FnMut(u64),
}

impl<'p> ByteStream<'p> {
    pub(super) fn new(source: Source, progress: &'p mut dyn FnMut(u64), chunk: usize) -> Self {
        let src = if source.gzip {
            Input::Text(TextBlocks::spawn(source.bytes, chunk.min(BLOCK)))
        } else {
            Input::Bytes(source.bytes)
        };
        ByteStream {
            src,
            text: String::with_capacity(chunk),
            raw: Vec::new(),
            raw_len: 0,
            pos: 0,
            base: 0,
            eof: false,
            gzip: source.gzip,
            chunk,
            consumed: source.consumed,
            progress,
        }
    }

    /// Document offset of the next unread byte.
    pub(super) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Document offset just past the bytes read so far.
    pub(super) fn end_offset(&self) -> u64 {
        self.base + self.text.len() as u64
    }

    pub(super) fn unread(&self) -> &[u8] {
        &self.text.as_bytes()[self.pos..]
    }

    /// The unread text; `None` only if `pos` were inside a character, which the scanner
    /// never leaves it at (it stops on ASCII structural bytes).
    pub(super) fn unread_text(&self) -> Option<&str> {
        self.text.get(self.pos..)
    }

    /// Reads more bytes after the unread ones. Returns false at the end of the input.
    pub(super) fn fill(&mut self) -> Result<bool, Fail> {
        if self.eof {
            return Ok(false);
        }
        let mut cut = self.pos;
        while !self.text.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut > 0 {
            self.text.drain(..cut);
            self.base += cut as u64;
            self.pos -= cut;
        }
        let old_text = self.text.len();
        // A read that ends inside a multi-byte character adds no text yet.
        while self.text.len() == old_text && !self.eof {
            self.read_chunk()?;
        }
        (self.progress)(self.consumed.load(Ordering::Relaxed));
        Ok(self.text.len() > old_text)
    }

    /// Reads up to one chunk (one block, from the gzip thread) onto `text`.
    fn read_chunk(&mut self) -> Result<(), Fail> {
        let blocks = match &mut self.src {
            Input::Bytes(_) => return self.read_bytes_chunk(),
            Input::Text(blocks) => blocks,
        };
        match blocks.blocks.recv() {
            Ok(Ok(block)) => {
                self.text.push_str(&block);
                let _ = blocks.spare.try_send(block);
                Ok(())
            }
            Ok(Err(e)) => {
                self.eof = true;
                Err(self.read_failure(e))
            }
            // The thread ended: the input is exhausted.
            Err(_) => {
                self.eof = true;
                Ok(())
            }
        }
    }

    /// Reads up to one chunk of a plain file and decodes it onto `text`.
    fn read_bytes_chunk(&mut self) -> Result<(), Fail> {
        let Input::Bytes(src) = &mut self.src else {
            return Ok(());
        };
        // Sized once: zeroing a fresh chunk at every refill would cost a pass of its own.
        let end = self.raw_len + self.chunk;
        if self.raw.len() < end {
            self.raw.resize(end, 0);
        }
        let mut filled = self.raw_len;
        while filled < end {
            match src.read(&mut self.raw[filled..end]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.read_failure(e)),
            }
        }
        let decoded = decode_utf8(&mut self.text, &self.raw[..filled], self.eof);
        self.raw.copy_within(decoded..filled, 0);
        self.raw_len = filled - decoded;
        Ok(())
    }

    fn read_failure(&self, e: io::Error) -> Fail {
        let consumed = self.consumed.load(Ordering::Relaxed);
        if !self.gzip {
            return Fail::Io(format!("read failed: {e}"));
        }
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Fail::Io(format!("truncated gzip stream after {consumed} bytes"))
        } else {
            Fail::Io(format!("corrupt gzip stream near byte {consumed}: {e}"))
        }
    }

    /// The next byte after whitespace, without consuming it; `None` at the end.
    pub(super) fn peek_token(&mut self) -> Result<Option<u8>, Fail> {
        loop {
            let rest = self.unread();
            match rest
                .iter()
                .position(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
            {
                Some(i) => {
                    self.pos += i;
                    return Ok(Some(self.text.as_bytes()[self.pos]));
                }
                None => {
                    self.pos = self.text.len();
                    if !self.fill()? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Consumes `byte` after whitespace, or fails naming what was expected.
    pub(super) fn expect(&mut self, byte: u8, context: &'static str) -> Result<(), Fail> {
        match self.peek_token()? {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(Fail::Json {
                offset: self.offset(),
                message: format!("expected '{}' {context}", byte as char),
            }),
            None => Err(Fail::Truncated { context }),
        }
    }

    /// Finds the JSON value starting at the next token. With `keep`, returns its length:
    /// the span `unread()[..len]` stays in the buffer. Without `keep`, consumes it as it
    /// goes (so a huge value never sits in memory) and returns 0.
    pub(super) fn value_span(&mut self, keep: bool, context: &'static str) -> Result<usize, Fail> {
        let first = self.peek_token()?.ok_or(Fail::Truncated { context })?;
        let mut scan = SpanScan::new(first);
        loop {
            if let Some(len) = scan.advance(self.unread()) {
                if !keep {
                    self.pos += len;
                    return Ok(0);
                }
                return Ok(len);
            }
            if !keep {
                self.pos += scan.pos;
                scan.pos = 0;
            }
            if !self.fill()? {
                if let Some(len) = scan.finish_at_eof(self.unread()) {
                    if !keep {
                        self.pos += len;
                        return Ok(0);
                    }
                    return Ok(len);
                }
                return Err(Fail::Truncated { context });
            }
        }
    }
}

impl ByteStream<'_> {
    /// [`ByteStream::value_span`] with `keep`, for a value that may be huge: `None`,
    /// consuming nothing, once the value runs past `limit` bytes, so a value the reader
    /// keeps never grows the buffer much past `limit` (the caller then skips it with
    /// `value_span(false, ..)`, which holds nothing).
    pub(super) fn value_span_within(
        &mut self,
        limit: usize,
        context: &'static str,
    ) -> Result<Option<usize>, Fail> {
        let first = self.peek_token()?.ok_or(Fail::Truncated { context })?;
        let mut scan = SpanScan::new(first);
        loop {
            if let Some(len) = scan.advance(self.unread()) {
                return Ok((len <= limit).then_some(len));
            }
            if scan.pos > limit {
                return Ok(None);
            }
            if !self.fill()? {
                return match scan.finish_at_eof(self.unread()) {
                    Some(len) => Ok((len <= limit).then_some(len)),
                    None => Err(Fail::Truncated { context }),
                };
            }
        }
    }
}

/// Appends the decodable prefix of `raw` to `text` and returns its length. An incomplete
/// sequence at the end waits for the next read (or becomes U+FFFD at the end of input);
/// invalid bytes become U+FFFD.
pub(super) fn decode_utf8(text: &mut String, raw: &[u8], at_end: bool) -> usize {
    let mut start = 0;
    while start < raw.len() {
        match std::str::from_utf8(&raw[start..]) {
            Ok(valid) => {
                text.push_str(valid);
                start = raw.len();
            }
            Err(e) => {
                let good = start + e.valid_up_to();
                text.push_str(std::str::from_utf8(&raw[start..good]).unwrap_or_default());
                start = good;
                match e.error_len() {
                    Some(bad) => start += bad,
                    None if at_end => start = raw.len(),
                    None => break,
                }
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
    }
    start
}

/// Resumable search for the end of one JSON value. Only string/escape state and the
/// depth of the value's own bracket kind are tracked: for valid JSON that finds the
/// matching close; serde reports anything invalid inside afterwards. Iterative, so deep
/// nesting costs no stack.
struct SpanScan {
    kind: SpanKind,
    /// Scan position relative to the value's start.
    pos: usize,
    depth: u64,
    in_string: bool,
}

#[derive(Copy, Clone)]
enum SpanKind {
    Nested { open: u8, close: u8 },
    String,
    Scalar,
}

impl SpanScan {
    fn new(first: u8) -> Self {
        let kind = match first {
            b'{' => SpanKind::Nested {
                open: b'{',
                close: b'}',
            },
            b'[' => SpanKind::Nested {
                open: b'[',
                close: b']',
            },
            b'"' => SpanKind::String,
            _ => SpanKind::Scalar,
        };
        // A string value starts inside its opening quote.
        let in_string = matches!(kind, SpanKind::String);
        SpanScan {
            kind,
            pos: usize::from(in_string),
            depth: 0,
            in_string,
        }
    }

    /// Continues over `bytes` (which start at the value). Returns the value's length once
    /// its end is in `bytes`.
    fn advance(&mut self, bytes: &[u8]) -> Option<usize> {
        match self.kind {
            SpanKind::Scalar => match memchr::memchr3(b',', b']', b'}', &bytes[self.pos..]) {
                Some(k) => Some(self.pos + k),
                None => {
                    self.pos = bytes.len();
                    None
                }
            },
            SpanKind::String => self.advance_nested(bytes, 0, 0),
            SpanKind::Nested { open, close } => self.advance_nested(bytes, open, close),
        }
    }

    fn advance_nested(&mut self, bytes: &[u8], open: u8, close: u8) -> Option<usize> {
        let mut i = self.pos;
        loop {
            if self.in_string {
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    None => {
                        self.pos = bytes.len();
                        return None;
                    }
                    Some(k) => {
                        let j = i + k;
                        if bytes[j] == b'\\' {
                            if j + 1 >= bytes.len() {
                                // Resume at the backslash once the escaped byte is here.
                                self.pos = j;
                                return None;
                            }
                            i = j + 2;
                        } else {
                            self.in_string = false;
                            i = j + 1;
                            if matches!(self.kind, SpanKind::String) {
                                return Some(i);
                            }
                        }
                    }
                }
            } else {
                match memchr::memchr3(b'"', open, close, &bytes[i..]) {
                    None => {
                        self.pos = bytes.len();
                        return None;
                    }
                    Some(k) => {
                        let j = i + k;
                        let b = bytes[j];
                        i = j + 1;
                        if b == b'"' {
                            self.in_string = true;
                        } else if b == open {
                            self.depth += 1;
                        } else {
                            self.depth = self.depth.saturating_sub(1);
                            if self.depth == 0 {
                                return Some(i);
                            }
                        }
                    }
                }
            }
        }
    }

    /// At the end of input only a scalar may end (a bare top-level number, say).
    fn finish_at_eof(&self, bytes: &[u8]) -> Option<usize> {
        match self.kind {
            SpanKind::Scalar if !bytes.is_empty() => Some(bytes.len()),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Failures, turned into one-line messages naming the byte offset

pub(super) enum Fail {
    Io(String),
    Json { offset: u64, message: String },
    Truncated { context: &'static str },
    NotTrace(String),
}

impl Fail {
    pub(super) fn message(self, stream: &ByteStream) -> String {
        match self {
            Fail::Io(m) => m,
            Fail::Json { offset, message } => format!("invalid JSON at byte {offset}: {message}"),
            Fail::Truncated { context } => format!(
                "truncated JSON: the document ends at byte {} {context}",
                stream.end_offset()
            ),
            Fail::NotTrace(m) => format!("not a torch.profiler trace: {m}"),
        }
    }
}

/// Converts a serde_json error inside `span` (which starts at document offset `start`).
pub(super) fn json_fail(err: &serde_json::Error, span: &[u8], start: u64) -> Fail {
    Fail::Json {
        offset: start + offset_in(span, err.line(), err.column()) as u64,
        message: strip_position(&err.to_string()),
    }
}

/// Byte index of serde_json's 1-based (line, column) in `span`.
fn offset_in(span: &[u8], line: usize, column: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line {
        match memchr::memchr(b'\n', &span[line_start..]) {
            Some(k) => line_start += k + 1,
            None => break,
        }
    }
    (line_start + column.saturating_sub(1)).min(span.len())
}

/// serde_json appends " at line L column C", which is relative to the event, not the file.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}
