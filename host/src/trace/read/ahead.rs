//! Scanning ahead: a thread between the reading thread and the parser runs the fast
//! scanner (`scan.rs`) over each text block's events before the parser gets the block,
//! and hands the results over with it. Scanning is most of the parse thread's work
//! (issue 22's profile: two thirds), so it moves to the second core while the parse
//! thread builds the trace.
//!
//! Why the parser may trust a result: the scanner's verdict on an element is a function
//! of the element's bytes alone (it reads nothing before its `{` and nothing past its
//! closing `}`). So "the element at document offset X scans to this event of N bytes"
//! is true wherever this thread started guessing. The parser uses a result only when
//! its own walk of the document is at the start of an element at exactly X and the N
//! bytes are in its window; everywhere else (the events cut by a block's end, those the
//! scanner declines, anything a guess missed) it reads as before. The guesses of where
//! elements start (a `{` after `}` and `,`) can only waste this thread's work: a wrong
//! one is a position the parser's walk never stands on.
//!
//! The results are spans into the block (the block itself goes on to the parser, so no
//! borrowed event can cross the threads): [`ScannedEvent`] mirrors [`RawEvent`] with
//! offsets, and [`ScannedEvent::event`] turns it back into one over the parser's text.

use std::borrow::Cow;

use super::raw::{Id, IntArg, Label, RawArgs, RawEvent, RawText, Text, Time};
use super::scan::{scan_event, Scan};
use super::ReadScope;
use crate::trace::event::Ns;

/// One element the scanner read: where it starts in the document, its length and its
/// fields.
pub(super) struct Scanned {
    pub(super) start: u64,
    pub(super) len: usize,
    pub(super) event: ScannedEvent,
}

/// A string's place in its element: byte offset and length.
#[derive(Clone, Copy)]
struct Span {
    at: u32,
    len: u32,
}

/// A [`Time`] with a span.
#[derive(Clone, Copy)]
enum TimeSpan {
    Text(Span),
    Ns(Ns),
}

#[derive(Clone, Copy)]
enum LabelSpan {
    Text(Span),
    Int(i64),
}

/// A [`RawEvent`] whose strings are spans of its element's text.
pub(super) struct ScannedEvent {
    name: Option<Span>,
    ph: Option<Span>,
    cat: Option<Span>,
    ts: Option<TimeSpan>,
    dur: Option<TimeSpan>,
    pid: Option<LabelSpan>,
    tid: Option<LabelSpan>,
    args: Option<ScannedArgs>,
}

/// [`RawArgs`] with spans.
struct ScannedArgs {
    external_id: Id,
    legacy_external_id: Id,
    correlation: Id,
    stream: IntArg,
    cuda_stream: IntArg,
    device: IntArg,
    name: Option<LabelSpan>,
    /// `Input Dims`, `Input dims`, `Input type`, `Concrete Inputs`, `kernel`, `grid`,
    /// `block`, `blocks per SM`, in [`RawArgs`]' order.
    facts: [Option<Span>; 9],
}

/// Records where the strings of an event lie in `element`, the text it was scanned
/// from; `None` if one does not (an owned string: the scanner makes none).
struct Spans<'e> {
    element: &'e str,
}

impl Spans<'_> {
    fn span(&self, s: &str) -> Option<Span> {
        let at = (s.as_ptr() as usize).checked_sub(self.element.as_ptr() as usize)?;
        (at + s.len() <= self.element.len()).then_some(Span {
            at: u32::try_from(at).ok()?,
            len: u32::try_from(s.len()).ok()?,
        })
    }

    /// `Ok(None)` for an absent value, `Err` for one that is not a span of the element.
    fn text(&self, t: Option<&Text>) -> Result<Option<Span>, ()> {
        match t.map(|t| &t.0) {
            None => Ok(None),
            Some(Cow::Borrowed(s)) => self.span(s).map(Some).ok_or(()),
            Some(Cow::Owned(_)) => Err(()),
        }
    }

    fn raw(&self, t: Option<RawText>) -> Result<Option<Span>, ()> {
        match t {
            None => Ok(None),
            Some(RawText(s)) => self.span(s).map(Some).ok_or(()),
        }
    }

    fn time(&self, t: Option<Time>) -> Result<Option<TimeSpan>, ()> {
        match t {
            None => Ok(None),
            Some(Time::Ns(ns)) => Ok(Some(TimeSpan::Ns(ns))),
            Some(Time::Text(RawText(s))) => self.span(s).map(|s| Some(TimeSpan::Text(s))).ok_or(()),
        }
    }

    fn label(&self, l: Option<&Label>) -> Result<Option<LabelSpan>, ()> {
        match l {
            None => Ok(None),
            Some(Label::Int(v)) => Ok(Some(LabelSpan::Int(*v))),
            Some(Label::Text(Cow::Borrowed(s))) => {
                self.span(s).map(|s| Some(LabelSpan::Text(s))).ok_or(())
            }
            Some(_) => Err(()),
        }
    }
}

impl ScannedEvent {
    /// The spans of `event`, scanned from `element`.
    fn of(event: &RawEvent, element: &str) -> Option<ScannedEvent> {
        let s = Spans { element };
        let args = match &event.args {
            None => None,
            // A collective's facts: the parser reads the event itself (see `has_comms`).
            Some(a) if a.has_comms() => return None,
            Some(a) => Some(ScannedArgs {
                external_id: a.external_id,
                legacy_external_id: a.legacy_external_id,
                correlation: a.correlation,
                stream: a.stream,
                cuda_stream: a.cuda_stream,
                device: a.device,
                name: s.label(a.name.as_ref()).ok()?,
                facts: [
                    s.raw(a.input_dims).ok()?,
                    s.raw(a.legacy_input_dims).ok()?,
                    s.raw(a.input_types).ok()?,
                    s.raw(a.concrete_inputs).ok()?,
                    s.raw(a.kernel).ok()?,
                    s.raw(a.grid).ok()?,
                    s.raw(a.block).ok()?,
                    s.raw(a.blocks_per_sm).ok()?,
                    s.raw(a.bytes).ok()?,
                ],
            }),
        };
        Some(ScannedEvent {
            name: s.text(event.name.as_ref()).ok()?,
            ph: s.text(event.ph.as_ref()).ok()?,
            cat: s.text(event.cat.as_ref()).ok()?,
            ts: s.time(event.ts).ok()?,
            dur: s.time(event.dur).ok()?,
            pid: s.label(event.pid.as_ref()).ok()?,
            tid: s.label(event.tid.as_ref()).ok()?,
            args,
        })
    }

    /// The event over `element`, the same bytes it was scanned from (`None` if a span
    /// does not fit them, which only other bytes could make happen).
    pub(super) fn event<'a>(&self, element: &'a str) -> Option<RawEvent<'a>> {
        let get = |span: Option<Span>| -> Result<Option<&'a str>, ()> {
            match span {
                None => Ok(None),
                Some(Span { at, len }) => {
                    let (at, len) = (at as usize, len as usize);
                    element.get(at..at + len).map(Some).ok_or(())
                }
            }
        };
        let text = |span| get(span).map(|s| s.map(|s| Text(Cow::Borrowed(s))));
        let raw = |span| get(span).map(|s| s.map(RawText));
        let time = |t: Option<TimeSpan>| match t {
            None => Ok(None),
            Some(TimeSpan::Ns(ns)) => Ok(Some(Time::Ns(ns))),
            Some(TimeSpan::Text(span)) => {
                get(Some(span)).map(|s| s.map(|s| Time::Text(RawText(s))))
            }
        };
        let label = |l: Option<LabelSpan>| match l {
            None => Ok(None),
            Some(LabelSpan::Int(v)) => Ok(Some(Label::Int(v))),
            Some(LabelSpan::Text(span)) => {
                get(Some(span)).map(|s| s.map(|s| Label::Text(Cow::Borrowed(s))))
            }
        };
        let args = match &self.args {
            None => None,
            Some(a) => {
                let [input_dims, legacy_input_dims, input_types, concrete_inputs, kernel, grid, block, blocks_per_sm, bytes] =
                    a.facts;
                Some(RawArgs {
                    external_id: a.external_id,
                    legacy_external_id: a.legacy_external_id,
                    correlation: a.correlation,
                    stream: a.stream,
                    cuda_stream: a.cuda_stream,
                    device: a.device,
                    name: label(a.name).ok()?,
                    input_dims: raw(input_dims).ok()?,
                    legacy_input_dims: raw(legacy_input_dims).ok()?,
                    input_types: raw(input_types).ok()?,
                    concrete_inputs: raw(concrete_inputs).ok()?,
                    kernel: raw(kernel).ok()?,
                    grid: raw(grid).ok()?,
                    block: raw(block).ok()?,
                    blocks_per_sm: raw(blocks_per_sm).ok()?,
                    bytes: raw(bytes).ok()?,
                    in_split: None,
                    out_split: None,
                    collective: None,
                    group: None,
                    group_desc: None,
                    group_ranks: None,
                    dtype: None,
                    rank: None,
                    seq: None,
                })
            }
        };
        Some(RawEvent {
            name: text(self.name).ok()?,
            ph: text(self.ph).ok()?,
            cat: text(self.cat).ok()?,
            ts: time(self.ts).ok()?,
            dur: time(self.dur).ok()?,
            pid: label(self.pid).ok()?,
            tid: label(self.tid).ok()?,
            args,
        })
    }
}

/// Scans the events of one block, whose first byte is at document offset `base`, into
/// `out`: from each guessed element start, then from element to element while the
/// scanner reads them, guessing again after anything it declines.
pub(super) fn scan_block(text: &str, base: u64, scope: ReadScope, out: &mut Vec<Scanned>) {
    let bytes = text.as_bytes();
    let mut at = guess_element(bytes, 0);
    while let Some(x) = at {
        // `x` is at a `{`, an ASCII byte, so a character boundary.
        let Some(rest) = text.get(x..) else { return };
        // By reference: moved out of the result, the event was copied twice more.
        match &scan_event(rest, scope) {
            &Scan::Event(ref event, len) => {
                if let Some(scanned) = rest.get(..len).and_then(|e| ScannedEvent::of(event, e)) {
                    out.push(Scanned {
                        start: base + x as u64,
                        len,
                        event: scanned,
                    });
                }
                at = next_element(bytes, x + len).or_else(|| guess_element(bytes, x + len));
            }
            // The block ends inside: the parser reads the rest.
            Scan::NeedMore => return,
            Scan::Unusual => at = guess_element(bytes, x + 1),
        }
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// The `{` of the element after the one ending at `end`: `,` and `{` after whitespace.
fn next_element(bytes: &[u8], end: usize) -> Option<usize> {
    let mut i = end;
    while is_space(*bytes.get(i)?) {
        i += 1;
    }
    if bytes[i] != b',' {
        return None;
    }
    i += 1;
    while is_space(*bytes.get(i)?) {
        i += 1;
    }
    (bytes[i] == b'{').then_some(i)
}

/// The first `{` from `from` on that follows `}` and `,` (whitespace between): where an
/// element of an array of objects starts, unless the bytes are inside a string.
fn guess_element(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let k = i + memchr::memchr(b'{', bytes.get(i..)?)?;
        let mut j = k;
        while j > 0 && is_space(bytes[j - 1]) {
            j -= 1;
        }
        if j > 0 && bytes[j - 1] == b',' {
            j -= 1;
            while j > 0 && is_space(bytes[j - 1]) {
                j -= 1;
            }
            if j > 0 && bytes[j - 1] == b'}' {
                return Some(k);
            }
        }
        i = k + 1;
    }
}
