//! The text the document walk reads from, and how a read fails.
//!
//! `ByteStream` is a window over the uncompressed document: the text block the reading
//! thread decoded, or at a block's end a small stitch of the last block's unread text
//! and the next block's head, with the text already read dropped at each refill, so
//! memory never grows with the document.
//! `SpanScan` finds where a value ends for the elements that are not read in place.
//! `Fail` is every way a read can end early, turned into one line naming the byte offset
//! (which is why it sits with the stream: the message needs the stream's offsets).

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::ahead::Scanned;
use super::raw::RawEvent;
use super::source::{Block, BlockText, Source, TextBlocks};
use super::ReadScope;

/// Bytes read per refill.
pub(super) const CHUNK: usize = 2 << 20;

/// Size of one block decoded by the reading thread.
const BLOCK: usize = 1 << 20;

/// How much of a new block is first copied after the unread text of the last one: the
/// rest of the event cut by the block's end is nearly always in it.
const STITCH_HEAD: usize = 4 << 10;

/// A window over the uncompressed document, decoded to text once as it arrives (so
/// serde never re-validates UTF-8 string by string): `text[pos..]` is unread; text
/// before `pos` is dropped at the next refill. `base` is the document offset of
/// `text[0]`. Invalid UTF-8 becomes U+FFFD, as a lenient reader would have it.
///
/// Why the window is mostly a block itself: the reading thread hands over blocks of
/// text, and copying each onto one rolling buffer was a tenth of the parse thread's
/// time. So the window is the block the parser is in; only at a block's end, where an
/// event is cut, is the unread text joined with the next block's head in a small
/// stitch buffer (4 KiB of the block, doubled while the cut value has not ended), and
/// as soon as the parser is past the stitch's first part, the window moves onto the
/// block itself, at the same text.
pub(super) struct ByteStream<'p> {
    src: TextBlocks,
    text: BlockText,
    /// Whether `text` is the stitch buffer (else it is a block, returned to the reading
    /// thread once read).
    window_is_stitch: bool,
    /// The stitch buffer while the window is a block, kept for reuse.
    stitch: String,
    /// The block whose head the stitch ends with.
    pending: Option<Pending>,
    /// Document offset just past the last block received.
    received: u64,
    /// The events scanned ahead in the blocks received, in document order.
    ahead: VecDeque<AheadBlock>,
    /// How many events the parser took from them.
    pub(super) scanned_ahead: u64,
    /// How many events the parser's own scan read (those cut by a block's end, and those
    /// of blocks passed on unscanned: `TextBlocks::recv`).
    pub(super) scanned_here: u64,
    /// Text bytes received in mapped blocks (`source.rs`): a plain file's, but for
    /// blocks that held invalid UTF-8.
    pub(super) mapped: u64,
    /// Blocks received: each end of one may cut an event, which is then stitched.
    pub(super) blocks: u64,
    pub(super) pos: usize,
    base: u64,
    eof: bool,
    gzip: bool,
    pub(super) consumed: Arc<AtomicU64>,
    /// Text bytes copied from one buffer to another on the way to the parser (the
    /// reading thread's copies included): each is a pass over memory, so tests hold it
    /// to a small fraction of the document.
    pub(super) copied: Arc<AtomicU64>,
    pub(super) progress: &'p mut dyn FnMut(u64),
    /// Set elsewhere when the run has failed meanwhile: the read gives up at its next
    /// refill ([`Fail::Stopped`]).
    stop: &'p AtomicBool,
}

/// One block's events scanned ahead, and how many of them are behind the parser.
struct AheadBlock {
    scanned: Vec<Scanned>,
    next: usize,
}

/// A block the stitch buffer holds the first `from` bytes of.
struct Pending {
    block: BlockText,
    from: usize,
    /// Document offset of `block[0]`.
    base: u64,
}

impl<'p> ByteStream<'p> {
    /// With `scan_ahead`, each block's events are scanned (in that scope) on another
    /// thread on the way (`ahead.rs`), and [`ByteStream::scanned_event`] hands them out.
    pub(super) fn new(
        source: Source,
        progress: &'p mut dyn FnMut(u64),
        chunk: usize,
        scan_ahead: Option<ReadScope>,
        stop: &'p AtomicBool,
    ) -> Self {
        let copied = Arc::new(AtomicU64::new(0));
        let src = TextBlocks::spawn(
            source.bytes,
            Arc::clone(&source.consumed),
            chunk.min(BLOCK),
            Arc::clone(&copied),
            scan_ahead,
        );
        ByteStream {
            src,
            text: BlockText::default(),
            window_is_stitch: false,
            stitch: String::new(),
            pending: None,
            received: 0,
            ahead: VecDeque::new(),
            scanned_ahead: 0,
            scanned_here: 0,
            mapped: 0,
            blocks: 0,
            pos: 0,
            base: 0,
            eof: false,
            gzip: source.gzip,
            consumed: source.consumed,
            copied,
            progress,
            stop,
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

    /// Makes more text follow the unread text (which stays as it is). Returns false at
    /// the end of the input.
    pub(super) fn fill(&mut self) -> Result<bool, Fail> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Fail::Stopped);
        }
        let grew = self.extend_window()?;
        (self.progress)(self.consumed.load(Ordering::Relaxed));
        Ok(grew)
    }

    /// The start of the unread text's character: the text kept at a refill.
    fn unread_start(&self) -> usize {
        let mut cut = self.pos;
        while !self.text.is_char_boundary(cut) {
            cut -= 1;
        }
        cut
    }

    fn extend_window(&mut self) -> Result<bool, Fail> {
        if let Some(pending) = self.pending.take() {
            let cut = self.unread_start();
            let unread = self.text.len() - cut;
            if unread <= pending.from {
                // The unread text is all in the block's head: read on in the block.
                let from = pending.from;
                let stitch = std::mem::replace(&mut self.text, pending.block);
                self.stitch = stitch.into_buffer();
                self.window_is_stitch = false;
                self.pos = from - unread + (self.pos - cut);
                self.base = pending.base;
                if self.text.len() > from {
                    return Ok(true);
                }
            } else {
                // A value longer than the head: copy the next, twice as large, part.
                self.drop_read(cut);
                let block = &pending.block;
                let mut to = (pending.from * 2)
                    .max(pending.from + STITCH_HEAD)
                    .min(block.len());
                while !block.is_char_boundary(to) {
                    to += 1;
                }
                self.count_copied(to - pending.from);
                self.text.buffer_mut().push_str(&block[pending.from..to]);
                if to < block.len() {
                    self.pending = Some(Pending {
                        from: to,
                        ..pending
                    });
                } else {
                    self.recycle(pending.block);
                }
                return Ok(true);
            }
        }
        if self.eof {
            return Ok(false);
        }
        let block = match self.src.recv() {
            Ok(Ok(Block { text, scanned })) => {
                if scanned.is_empty() {
                    // An unscanned block's empty list has no buffer to lend: sent back,
                    // it would take a spare's place and the scanner would grow a new one.
                    if scanned.capacity() > 0 {
                        let _ = self.src.spare_scanned.try_send(scanned);
                    }
                } else {
                    self.ahead.push_back(AheadBlock { scanned, next: 0 });
                }
                text
            }
            Ok(Err(e)) => {
                self.eof = true;
                return Err(self.read_failure(e));
            }
            // The thread ended: the input is exhausted.
            Err(_) => {
                self.eof = true;
                return Ok(false);
            }
        };
        let block_base = self.received;
        self.received += block.len() as u64;
        self.blocks += 1;
        if matches!(block, BlockText::Mapped(_)) {
            self.mapped += block.len() as u64;
        }
        let cut = self.unread_start();
        if cut == self.text.len() {
            // Nothing unread: the block is the window.
            let old = std::mem::replace(&mut self.text, block);
            self.keep_old_window(old);
            self.window_is_stitch = false;
            self.pos = 0;
            self.base = block_base;
            return Ok(true);
        }
        self.drop_read(cut);
        let mut head = STITCH_HEAD.min(block.len());
        while !block.is_char_boundary(head) {
            head += 1;
        }
        self.count_copied(head);
        self.text.buffer_mut().push_str(&block[..head]);
        if head < block.len() {
            self.pending = Some(Pending {
                block,
                from: head,
                base: block_base,
            });
        } else {
            self.recycle(block);
        }
        Ok(true)
    }

    /// The event scanned ahead that starts at the unread text (the parser's walk is at
    /// an element's start) and lies in the window, with its length; results behind
    /// the parser are dropped on the way.
    pub(super) fn scanned_event(&mut self) -> Option<(RawEvent<'_>, usize)> {
        let offset = self.offset();
        loop {
            let front = self.ahead.front_mut()?;
            while front
                .scanned
                .get(front.next)
                .is_some_and(|s| s.start < offset)
            {
                front.next += 1;
            }
            if front.next < front.scanned.len() {
                break;
            }
            if let Some(done) = self.ahead.pop_front() {
                let _ = self.src.spare_scanned.try_send(done.scanned);
            }
        }
        let end = self.end_offset();
        let front = self.ahead.front_mut()?;
        let index = front.next;
        let found = front.scanned.get(index)?;
        if found.start != offset || found.start + found.len as u64 > end {
            return None;
        }
        front.next += 1;
        let found = self.ahead.front()?.scanned.get(index)?;
        let element = self.text.get(self.pos..self.pos + found.len)?;
        let event = found.event.event(element)?;
        self.scanned_ahead += 1;
        Some((event, found.len))
    }

    /// Makes the window the stitch buffer holding only the text from `cut` on.
    fn drop_read(&mut self, cut: usize) {
        self.count_copied(self.text.len() - cut);
        if self.window_is_stitch {
            self.text.buffer_mut().drain(..cut);
        } else {
            let mut stitch = std::mem::take(&mut self.stitch);
            stitch.clear();
            stitch.push_str(&self.text[cut..]);
            let block = std::mem::replace(&mut self.text, BlockText::Buffer(stitch));
            self.recycle(block);
            self.window_is_stitch = true;
        }
        self.base += cut as u64;
        self.pos -= cut;
    }

    /// The window just replaced: the stitch buffer is kept, a block goes back.
    fn keep_old_window(&mut self, old: BlockText) {
        if self.window_is_stitch {
            self.stitch = old.into_buffer();
        } else {
            self.recycle(old);
        }
    }

    /// Hands a read block back to the reading thread for reuse.
    fn recycle(&self, block: BlockText) {
        let _ = self.src.spare.try_send(block);
    }

    /// Scan lists the scan-ahead thread made (`TextBlocks::scan_lists_made`).
    pub(super) fn scan_lists_made(&self) -> u64 {
        self.src.scan_lists_made.load(Ordering::Relaxed)
    }

    fn count_copied(&self, bytes: usize) {
        self.copied.fetch_add(bytes as u64, Ordering::Relaxed);
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
    Json {
        offset: u64,
        message: String,
    },
    Truncated {
        context: &'static str,
    },
    NotTrace(String),
    /// Given up because the run failed elsewhere (the caller reports that failure).
    Stopped,
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
            Fail::Stopped => "read stopped: the run failed meanwhile".to_string(),
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
