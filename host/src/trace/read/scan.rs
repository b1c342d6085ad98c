//! The hand-written fast path for the common event: a strict JSON object whose keys and
//! kept strings have no escapes, with integer pids/tids/ids and number times.
//!
//! Why: serde's derived visitor costs about three quarters of the read time (key
//! matching through a generic visitor, `IgnoredAny` over the big `args` arrays). This
//! scanner reads the same fields in one pass over the bytes.
//!
//! Contract: when it returns [`Scan::Event`], serde would have produced the same
//! [`RawEvent`] from the same text (and ended at the same byte). Everything it is not
//! sure of (escapes, floats where an integer is expected, duplicate keys, `NaN`, invalid
//! JSON, deep nesting) is [`Scan::Unusual`], and the caller hands the element to serde,
//! which decides. So it may decline often but never disagrees. Skipped values are
//! validated as strictly as serde does (strings without control characters, the JSON
//! number grammar, exact literals, commas and colons in place), so an invalid document
//! fails with serde's message, not silently.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use super::build::MAX_VALUE_BYTES;
use super::raw::{Id, IntArg, Label, RawArgs, RawEvent, RawText, Text, Time};
use super::time::decimal_micros_to_ns;
use super::ReadScope;
use crate::trace::event::Ns;

/// What the scanner made of the text at the start of an event.
// Returned by value once per event; boxing the event would allocate per event.
#[expect(clippy::large_enum_variant)]
pub(super) enum Scan<'a> {
    /// The event and its length in bytes.
    Event(RawEvent<'a>, usize),
    /// The text ends inside the event: refill and scan again.
    NeedMore,
    /// Not the common shape: let serde read it.
    Unusual,
}

/// Why scanning stopped early.
enum Stop {
    NeedMore,
    Unusual,
}

type Step<T> = Result<T, Stop>;

/// serde_json refuses nesting deeper than 128; stay well inside it.
const MAX_DEPTH: usize = 64;

/// What else `build.rs` reads in a CPU op's `args` after its `External id` (searched in
/// every CPU op of a lean read: built once, as building a searcher cost more than the
/// search in these short objects, 2.6% of a 4-rank run's CPU).
static SECOND_EXTERNAL_ID: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"xternal id\""));
static SPLIT_SIZES: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"split size\""));

/// The event members the scanner reads, in the order Kineto writes them: each key's
/// bytes with the colon after it, and its index.
const EVENT_KEYS: [&[u8]; 8] = [
    b"\"ph\":",
    b"\"cat\":",
    b"\"name\":",
    b"\"pid\":",
    b"\"tid\":",
    b"\"ts\":",
    b"\"dur\":",
    b"\"args\":",
];
/// [`EVENT_KEYS`] as little-endian words and the masks of their bytes: one compare with
/// the eight bytes at the cursor (a slice compare of a length chosen at run time was a
/// `memcmp` call per key).
const EVENT_KEY_WORDS: [(u64, u64); 8] = {
    let mut words = [(0u64, 0u64); 8];
    let mut k = 0;
    while k < EVENT_KEYS.len() {
        let key = EVENT_KEYS[k];
        let mut i = 0;
        while i < key.len() {
            words[k].0 |= (key[i] as u64) << (8 * i);
            words[k].1 |= 0xff << (8 * i);
            i += 1;
        }
        k += 1;
    }
    words
};
const PH: usize = 0;
const CAT: usize = 1;
const NAME: usize = 2;
const PID: usize = 3;
const TID: usize = 4;
const TS: usize = 5;
const DUR: usize = 6;
const ARGS: usize = 7;

/// Scans one event object at the start of `text` (which starts with `{`), reading what
/// `scope` keeps (see [`ReadScope::Digest`]).
// Inlined into the events loop: in another codegen unit than its one caller
// (`document.rs`), it was a call per event plus a copy of the returned `Scan`.
#[inline(always)]
pub(super) fn scan_event(text: &str, scope: ReadScope) -> Scan<'_> {
    let mut cursor = Cursor {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        lean: scope == ReadScope::Digest,
    };
    match cursor.event() {
        Ok(event) => Scan::Event(event, cursor.pos),
        Err(Stop::NeedMore) => Scan::NeedMore,
        Err(Stop::Unusual) => Scan::Unusual,
    }
}

/// The members of a complete (`X`) event a [`ReadScope::Digest`] read keeps besides its
/// `args`, read by [`scan_lean`].
pub(super) struct Head<'a> {
    pub(super) name: &'a str,
    pub(super) pid: Label<'a>,
    pub(super) tid: Label<'a>,
    /// `ts` and `dur` in ns, as `time::micros_to_ns` makes them of the numbers' text
    /// (`None` where it makes none).
    pub(super) ts: Option<Ns>,
    pub(super) dur: Option<Ns>,
}

/// What [`scan_lean`] made of the text at the start of an event.
pub(super) enum LeanScan<'a> {
    /// A Python frame and its length in bytes.
    Frame(Head<'a>, usize),
    /// A CPU op, its `External id`, and its length in bytes.
    CpuOp(Head<'a>, Id, usize),
    /// An event the trace does not keep (`ph` neither `"X"` nor `"M"`, as `build.rs`
    /// sorts them), no longer than [`MAX_VALUE_BYTES`], so none of its values is past the
    /// limit either: its length in bytes.
    Dropped(usize),
    /// The text ends inside what reads as one of these so far: refill and scan again.
    NeedMore,
    /// Anything else: [`scan_event`] reads it.
    Other,
}

/// The shortcuts of a lean read ([`ReadScope::Digest`]) for the commonest events, at the
/// start of `text` (which starts with `{`), `ph` first as Kineto writes it:
///
/// - a Python frame in Kineto's shape exactly: `ph` `"X"`, `cat` `"python_function"`,
///   then `name`, `pid`, `tid`, `ts`, `dur` and a flat `args`, in that order, and
///   nothing else;
/// - a CPU op in the same shape (`cat` `"cpu_op"`) whose `args` open with its
///   `External id` and hold nothing else a digest reads (no second id, no split sizes,
///   no backslash, within [`MAX_VALUE_BYTES`]): the rest (the shape lists, which a digest
///   only counts when oversized) is skipped by brackets and quotes;
/// - an event the trace drops (flow arrows, instants, counters: `ph` neither `"X"` nor
///   `"M"`), skipped by its brackets and quotes, unchecked, like every value a lean read
///   does not read.
///
/// Why: Python frames are most of a trace's events (62% of the benchmark's), and a
/// digest reads each one's five members and skips its `args`. Read in one straight
/// sequence, a frame needs none of [`scan_event`]'s per-member dispatch, duplicate
/// checks and ~500-byte [`RawEvent`] (its unread `args` included) moved through each
/// step. Every member is read by the same code as there, and anything off the shape
/// (another member or order, a `null`, a string time, an escape, a value past
/// [`MAX_VALUE_BYTES`]) is [`LeanScan::Other`]: where this returns a frame, `scan_event`
/// would have read the same event, and where it drops one, the sink would have kept
/// nothing of it and counted nothing but the event.
#[inline(always)]
pub(super) fn scan_lean(text: &str) -> LeanScan<'_> {
    let mut cursor = Cursor {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        lean: true,
    };
    match cursor.lean_event() {
        Ok(Lean::Frame(head)) => LeanScan::Frame(head, cursor.pos),
        Ok(Lean::CpuOp(head, id)) => LeanScan::CpuOp(head, id, cursor.pos),
        Ok(Lean::Dropped) => LeanScan::Dropped(cursor.pos),
        Err(Stop::NeedMore) => LeanScan::NeedMore,
        Err(Stop::Unusual) => LeanScan::Other,
    }
}

/// A lean event's head, unless a kept value is past the limit: `build.rs` skips such an
/// event, and that is `scan_event`'s to read (the times' text is checked in `lean_time`).
#[inline(always)]
fn checked_head(head: Head<'_>) -> Step<Head<'_>> {
    let label_len = |l: &Label| l.as_text().map_or(0, str::len);
    if [head.name.len(), label_len(&head.pid), label_len(&head.tid)]
        .into_iter()
        .any(|len| len > MAX_VALUE_BYTES)
    {
        return Err(Stop::Unusual);
    }
    Ok(head)
}

/// The opening bytes of a Python frame and of a CPU op as Kineto writes them, up to the
/// name's first character ([`Cursor::kineto_event`]).
const KINETO_FRAME: &[u8] = br#"{"ph": "X", "cat": "python_function", "name": ""#;
const KINETO_CPU_OP: &[u8] = br#"{"ph": "X", "cat": "cpu_op", "name": ""#;
/// Where [`KINETO_FRAME`] holds its `ph` and `cat` values.
const KINETO_PH_AT: usize = r#"{"ph": ""#.len();
const KINETO_CAT_AT: usize = r#"{"ph": "X", "cat": ""#.len();

/// [`LeanScan`] without the lengths.
enum Lean<'a> {
    Frame(Head<'a>),
    CpuOp(Head<'a>, Id),
    Dropped,
}

struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// A [`ReadScope::Digest`] read: unread values are skipped unchecked.
    lean: bool,
}

/// Sets a field once; a second occurrence is serde's "duplicate field" error.
// Always inlined: out of line, each value (an `args` is ~400 bytes) was copied into it.
#[inline(always)]
fn set_once<T>(slot: &mut Option<T>, value: T) -> Step<()> {
    if slot.is_some() {
        return Err(Stop::Unusual);
    }
    *slot = Some(value);
    Ok(())
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Step<u8> {
        self.bytes.get(self.pos).copied().ok_or(Stop::NeedMore)
    }

    fn skip_ws(&mut self) -> Step<u8> {
        loop {
            let b = self.peek()?;
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Ok(b);
            }
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Step<()> {
        if self.skip_ws()? != byte {
            return Err(Stop::Unusual);
        }
        self.pos += 1;
        Ok(())
    }

    /// After a member: true for `,` (another follows), false for the closing byte.
    fn next_member(&mut self, close: u8) -> Step<bool> {
        match self.skip_ws()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            b if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(Stop::Unusual),
        }
    }

    // Inlined with `scan_event`, its one caller: the two were one piece of code before the
    // split, and the split alone made them a call (and a copy of the event) per event.
    #[inline(always)]
    fn event(&mut self) -> Step<RawEvent<'a>> {
        // A lean read takes frames in `scan_lean`.
        if !self.lean {
            let open = self.pos;
            if let Some(frame) = self.kineto_frame() {
                return Ok(frame);
            }
            self.pos = open;
        }
        let mut name = None;
        let mut ph = None;
        let mut cat = None;
        let mut ts = None;
        let mut dur = None;
        let mut pid = None;
        let mut tid = None;
        let mut args = None;
        // `Some(None)` records a `null` value: present for the duplicate check.
        self.expect(b'{')?;
        if self.skip_ws()? == b'}' {
            self.pos += 1;
        } else {
            let mut next = 0;
            loop {
                let member = self.event_key(next)?;
                match member {
                    Some(PH) => set_once(&mut ph, self.opt(Self::text)?)?,
                    Some(CAT) => set_once(&mut cat, self.opt(Self::text)?)?,
                    Some(NAME) => set_once(&mut name, self.opt(Self::text)?)?,
                    Some(PID) => set_once(&mut pid, self.opt(Self::label)?)?,
                    Some(TID) => set_once(&mut tid, self.opt(Self::label)?)?,
                    Some(TS) => set_once(&mut ts, self.opt(Self::time)?)?,
                    Some(DUR) => set_once(&mut dur, self.opt(Self::time)?)?,
                    Some(ARGS) if self.lean && args_unread(&ph, &cat) => {
                        set_once(&mut args, self.unread_args()?)?
                    }
                    Some(ARGS) => {
                        if args.is_some() {
                            return Err(Stop::Unusual);
                        }
                        if self.skip_ws()? == b'n' {
                            self.literal(b"null")?;
                            args = Some(None);
                        } else if let Some(out) = args.insert(Some(RawArgs::default())) {
                            self.args_into(out)?;
                        }
                    }
                    _ => self.skip_unread(1)?,
                }
                // After another key, the one expected may still come.
                next = member.map_or(next, |k| k + 1);
                if !self.next_member(b'}')? {
                    break;
                }
            }
        }
        Ok(RawEvent {
            name: name.flatten(),
            ph: ph.flatten(),
            cat: cat.flatten(),
            ts: ts.flatten(),
            dur: dur.flatten(),
            pid: pid.flatten(),
            tid: tid.flatten(),
            args: args.flatten(),
        })
    }

    /// [`scan_lean`]'s shortcuts: a frame, or `None` for an event dropped whole.
    #[inline(always)]
    fn lean_event(&mut self) -> Step<Lean<'a>> {
        self.skip_ws()?;
        let open = self.pos;
        if let Some(lean) = self.kineto_event() {
            return Ok(lean);
        }
        self.pos = open;
        self.expect(b'{')?;
        self.lean_member(PH)?;
        if self.skip_ws()? != b'"' {
            return Err(Stop::Unusual);
        }
        match self.plain_string()? {
            "X" => {}
            "M" => return Err(Stop::Unusual),
            _ => {
                self.pos = open;
                self.skip_unchecked()?;
                if self.pos - open > MAX_VALUE_BYTES {
                    return Err(Stop::Unusual);
                }
                return Ok(Lean::Dropped);
            }
        }
        self.lean_member(CAT)?;
        if self.skip_ws()? != b'"' {
            return Err(Stop::Unusual);
        }
        let cpu_op = match self.plain_string()? {
            "python_function" => false,
            "cpu_op" => true,
            _ => return Err(Stop::Unusual),
        };
        let head = self.head()?;
        let lean = if cpu_op {
            Lean::CpuOp(head, self.cpu_op_args()?)
        } else {
            self.frame_args()?;
            Lean::Frame(head)
        };
        self.expect(b'}')?;
        Ok(lean)
    }

    /// A Python frame or CPU op in Kineto's own bytes, from `{` to its name's opening
    /// quote and between its members (one space after each comma and colon, as Kineto
    /// writes them), read by fixed comparisons; `None`, the cursor anywhere, for any other
    /// text (the caller reads it member by member, which takes the same bytes to the same
    /// event: this reads each value with the same functions, and only skips matching
    /// the keys and whitespace one at a time).
    ///
    /// Why: matching `ph`, `cat` and the keys member by member (whitespace, comma, key
    /// word, two short strings found and compared) was most of a frame's scan in a lean
    /// read, and frames are most events.
    #[inline(always)]
    fn kineto_event(&mut self) -> Option<Lean<'a>> {
        let rest = self.bytes.get(self.pos..)?;
        let cpu_op = if rest.starts_with(KINETO_FRAME) {
            self.pos += KINETO_FRAME.len();
            false
        } else if rest.starts_with(KINETO_CPU_OP) {
            self.pos += KINETO_CPU_OP.len();
            true
        } else {
            return None;
        };
        let (name, pid, tid, ts, dur) = self.kineto_members(Self::lean_time)?;
        let head = checked_head(Head {
            name,
            pid,
            tid,
            ts,
            dur,
        })
        .ok()?;
        let lean = if cpu_op {
            Lean::CpuOp(head, self.cpu_op_args().ok()?)
        } else {
            self.frame_args().ok()?;
            Lean::Frame(head)
        };
        self.expect(b'}').ok()?;
        Some(lean)
    }

    /// A Python frame in Kineto's own bytes, `args` and all (its `Python parent id`,
    /// `Python id` and `Ev Idx` integers, which nothing keeps), as [`Cursor::event`]
    /// reads it member by member; `None`, the cursor anywhere, for any other text. The
    /// full read's [`Cursor::kineto_event`]: its values are read by the same functions,
    /// and the `args` members, which that walk checks as serde would, are integers of
    /// JSON's grammar here (anything else is left to the walk).
    #[inline(always)]
    fn kineto_frame(&mut self) -> Option<RawEvent<'a>> {
        self.skip_ws().ok()?;
        let open = self.pos;
        self.exact(KINETO_FRAME)?;
        let (name, pid, tid, ts, dur) = self.kineto_members(Self::time)?;
        self.exact(b", \"args\": {\"Python parent id\": ")?;
        self.integer().ok()?;
        self.exact(b", \"Python id\": ")?;
        self.integer().ok()?;
        self.exact(b", \"Ev Idx\": ")?;
        self.integer().ok()?;
        self.exact(b"}}")?;
        // `ph` and `cat` as the walk gives them: slices of the event's own text.
        let text = |from: usize, len: usize| Text(Cow::Borrowed(&self.text[open + from..][..len]));
        Some(RawEvent {
            name: Some(Text(Cow::Borrowed(name))),
            ph: Some(text(KINETO_PH_AT, 1)),
            cat: Some(text(KINETO_CAT_AT, "python_function".len())),
            ts: Some(ts),
            dur: Some(dur),
            pid: Some(pid),
            tid: Some(tid),
            args: Some(RawArgs::default()),
        })
    }

    /// A Kineto event's `name` (the cursor just past its opening quote), `pid`, `tid`,
    /// `ts` and `dur`, between Kineto's own separators; each time read by `time`.
    #[inline(always)]
    fn kineto_members<T>(
        &mut self,
        time: impl Fn(&mut Self) -> Step<T>,
    ) -> Option<(&'a str, Label<'a>, Label<'a>, T, T)> {
        // `plain_string` starts at the opening quote, one byte back.
        self.pos -= 1;
        let name = self.plain_string().ok()?;
        self.exact(b", \"pid\": ")?;
        let pid = self.label().ok()?;
        self.exact(b", \"tid\": ")?;
        let tid = self.label().ok()?;
        self.exact(b", \"ts\": ")?;
        let ts = time(self).ok()?;
        self.exact(b", \"dur\": ")?;
        let dur = time(self).ok()?;
        Some((name, pid, tid, ts, dur))
    }

    /// The bytes `text` at the cursor, the cursor past them; `None` for any others.
    #[inline(always)]
    fn exact(&mut self, text: &[u8]) -> Option<()> {
        if !self.bytes.get(self.pos..)?.starts_with(text) {
            return None;
        }
        self.pos += text.len();
        Some(())
    }

    /// An `X` event's members from `name` to `dur`, in [`scan_lean`]'s sequence.
    #[inline(always)]
    fn head(&mut self) -> Step<Head<'a>> {
        self.lean_member(NAME)?;
        if self.skip_ws()? != b'"' {
            return Err(Stop::Unusual);
        }
        let name = self.plain_string()?;
        self.lean_member(PID)?;
        let pid = self.label()?;
        self.lean_member(TID)?;
        let tid = self.label()?;
        self.lean_member(TS)?;
        let ts = self.lean_time()?;
        self.lean_member(DUR)?;
        let dur = self.lean_time()?;
        checked_head(Head {
            name,
            pid,
            tid,
            ts,
            dur,
        })
    }

    /// A frame's `args`, if any, skipped: flat, within the limit (as `unread_args`: one
    /// past it is read there, for its `name`).
    #[inline(always)]
    fn frame_args(&mut self) -> Step<()> {
        if !self.at_args()? {
            return Ok(());
        }
        let start = self.pos;
        if self.skip_ws()? != b'{' {
            return Err(Stop::Unusual);
        }
        match flat_object_end(self.bytes, self.pos) {
            Some(end) if end - start <= MAX_VALUE_BYTES => self.pos = end,
            _ => Err(Stop::Unusual)?,
        }
        Ok(())
    }

    /// A CPU op's `args`, if any: its `External id` (absent without `args`), the rest
    /// skipped where nothing in it is read (see [`scan_lean`]).
    #[inline(always)]
    fn cpu_op_args(&mut self) -> Step<Id> {
        if !self.at_args()? {
            return Ok(Id(None));
        }
        if self.skip_ws()? != b'{' {
            return Err(Stop::Unusual);
        }
        let open = self.pos;
        self.skip_unchecked()?;
        let end = self.pos;
        let args = &self.bytes[open..end];
        if args.len() > MAX_VALUE_BYTES || memchr::memchr(b'\\', args).is_some() {
            return Err(Stop::Unusual);
        }
        self.pos = open + 1;
        self.skip_ws()?;
        self.literal(b"\"External id\"")?;
        self.expect(b':')?;
        let id = self.id()?;
        // What else `build.rs` reads of a CPU op: the legacy id, a second id (a duplicate
        // for serde), split sizes (and the collective facts kept with them).
        let rest = &self.bytes[self.pos..end];
        if SECOND_EXTERNAL_ID.find(rest).is_some() || SPLIT_SIZES.find(rest).is_some() {
            return Err(Stop::Unusual);
        }
        self.pos = end;
        Ok(id)
    }

    /// Past the `,` and `"args":` after `dur`: true, or false at the event's closing `}`
    /// (left for the caller).
    #[inline(always)]
    fn at_args(&mut self) -> Step<bool> {
        if self.skip_ws()? == b'}' {
            return Ok(false);
        }
        self.lean_member(ARGS)?;
        Ok(true)
    }

    /// The comma before member `key` of an event in [`scan_lean`]'s sequence (none before
    /// `ph`), and that key with its colon.
    #[inline(always)]
    fn lean_member(&mut self, key: usize) -> Step<()> {
        if key != PH {
            self.expect(b',')?;
        }
        self.event_member(key)
    }

    /// Event member `key` (its bytes with the colon, as Kineto writes it) at the cursor.
    #[inline(always)]
    fn event_member(&mut self, key: usize) -> Step<()> {
        self.skip_ws()?;
        let (word, mask) = EVENT_KEY_WORDS[key];
        let have = self
            .bytes
            .get(self.pos..self.pos + 8)
            .ok_or(Stop::NeedMore)?;
        if u64::from_le_bytes(have.try_into().unwrap_or_default()) & mask != word {
            return Err(Stop::Unusual);
        }
        self.pos += EVENT_KEYS[key].len();
        Ok(())
    }

    /// A lean event's `ts`/`dur` (a number; a string time is `scan_event`'s) in ns.
    /// Kineto's `digits.ddd` is read and converted in one pass (`plain_time`); any other
    /// number is read as `scan_event` reads it and converted from its text.
    #[inline(always)]
    fn lean_time(&mut self) -> Step<Option<Ns>> {
        self.skip_ws()?;
        let start = self.pos;
        if let Some((ns, end)) = plain_time(self.bytes, start) {
            self.pos = end;
            return Ok(Some(ns));
        }
        self.number()?;
        let text = &self.text[start..self.pos];
        if text.len() > MAX_VALUE_BYTES {
            return Err(Stop::Unusual);
        }
        Ok(decimal_micros_to_ns(text))
    }

    /// The key at the cursor as its index in [`EVENT_KEYS`] (`None` for any other), the
    /// cursor after its colon. `next` is the member Kineto writes next: its bytes are
    /// compared in one go, which reads the same key as [`Cursor::key`] would from them
    /// without finding the string's end and matching its text.
    #[inline(always)]
    fn event_key(&mut self, next: usize) -> Step<Option<usize>> {
        self.skip_ws()?;
        let word = self.bytes.get(self.pos..self.pos + 8);
        if let (Some(&(key, mask)), Some(word)) = (EVENT_KEY_WORDS.get(next), word) {
            if u64::from_le_bytes(word.try_into().unwrap_or_default()) & mask == key {
                self.pos += EVENT_KEYS[next].len();
                return Ok(Some(next));
            }
        }
        Ok(match self.key()? {
            "ph" => Some(PH),
            "cat" => Some(CAT),
            "name" => Some(NAME),
            "pid" => Some(PID),
            "tid" => Some(TID),
            "ts" => Some(TS),
            "dur" => Some(DUR),
            "args" => Some(ARGS),
            _ => None,
        })
    }

    /// An `args` object read into `out` (all absent before), each member written where
    /// it stays: built in locals and returned, the ~440-byte value was copied at each
    /// step out (two or three times an event).
    fn args_into(&mut self, out: &mut RawArgs<'a>) -> Step<()> {
        // Members seen, by bit: a second one is serde's "duplicate field" error.
        let mut seen = 0u32;
        let mut once = |bit: u32| {
            let first = seen & 1 << bit == 0;
            seen |= 1 << bit;
            if first {
                Ok(())
            } else {
                Err(Stop::Unusual)
            }
        };
        self.object(|s, key| {
            match key {
                "External id" => (once(0)?, out.external_id = s.id()?),
                "external id" => (once(1)?, out.legacy_external_id = s.id()?),
                "correlation" => (once(2)?, out.correlation = s.id()?),
                "stream" => (once(3)?, out.stream = s.int_arg()?),
                "cuda_stream" => (once(4)?, out.cuda_stream = s.int_arg()?),
                "device" => (once(5)?, out.device = s.int_arg()?),
                "name" => (once(6)?, out.name = s.opt(Self::label)?),
                "Input Dims" => (once(7)?, out.input_dims = s.opt(Self::shape_value)?),
                "Input dims" => (once(8)?, out.legacy_input_dims = s.opt(Self::shape_value)?),
                "Input type" => (once(9)?, out.input_types = s.opt(Self::shape_value)?),
                "Concrete Inputs" => (once(10)?, out.concrete_inputs = s.opt(Self::shape_value)?),
                "kernel" => (once(11)?, out.kernel = s.opt(Self::raw_value)?),
                "grid" => (once(12)?, out.grid = s.opt(Self::raw_value)?),
                "block" => (once(13)?, out.block = s.opt(Self::raw_value)?),
                "blocks per SM" => (once(14)?, out.blocks_per_sm = s.opt(Self::raw_value)?),
                "bytes" => (once(15)?, out.bytes = s.opt(Self::raw_value)?),
                "In split size" => (once(16)?, out.in_split = s.opt(Self::raw_value)?),
                "Out split size" => (once(17)?, out.out_split = s.opt(Self::raw_value)?),
                "Collective name" => (once(18)?, out.collective = s.opt(Self::raw_value)?),
                "Process Group Name" => (once(19)?, out.group = s.opt(Self::raw_value)?),
                "Process Group Description" => {
                    (once(20)?, out.group_desc = s.opt(Self::raw_value)?)
                }
                "Process Group Ranks" => (once(21)?, out.group_ranks = s.opt(Self::raw_value)?),
                "dtype" => (once(22)?, out.dtype = s.opt(Self::raw_value)?),
                "Rank" => (once(23)?, out.rank = s.opt(Self::raw_value)?),
                "Seq" => (once(24)?, out.seq = s.opt(Self::raw_value)?),
                _ => ((), s.skip_unread(2)?),
            };
            Ok(())
        })
    }

    /// An `args` member's value as its text, validated as [`Cursor::skip_value`] does
    /// (serde's `RawValue` gives the same span).
    fn raw_value(&mut self) -> Step<RawText<'a>> {
        self.skip_ws()?;
        let start = self.pos;
        self.skip_value(2)?;
        Ok(RawText(&self.text[start..self.pos]))
    }

    /// A CPU op's shape list's text: as [`Cursor::raw_value`], unchecked in a lean read
    /// (kept only for its length, `build.rs`).
    fn shape_value(&mut self) -> Step<RawText<'a>> {
        if !self.lean {
            return self.raw_value();
        }
        self.skip_ws()?;
        let start = self.pos;
        self.skip_unchecked()?;
        Ok(RawText(&self.text[start..self.pos]))
    }

    /// A value nothing reads: checked as serde would ([`Cursor::skip_value`]), or, in a
    /// lean read, skipped unchecked.
    fn skip_unread(&mut self, depth: usize) -> Step<()> {
        if self.lean {
            self.skip_unchecked()
        } else {
            self.skip_value(depth)
        }
    }

    /// An `args` object a lean read does not read (see [`args_unread`]): `None`. One
    /// past [`MAX_VALUE_BYTES`] is read, so an oversized `args.name` is counted as in a
    /// full read.
    fn unread_args(&mut self) -> Step<Option<RawArgs<'a>>> {
        let start = self.pos;
        // A Python frame's `{"Python parent id": …, "Python id": …, "Ev Idx": …}` (a
        // frame `scan_lean` left here): one pass to its `}`, else the walk by brackets.
        let flat = (self.skip_ws()? == b'{')
            .then(|| flat_object_end(self.bytes, self.pos))
            .flatten();
        match flat {
            Some(end) => self.pos = end,
            None => self.skip_unchecked()?,
        }
        if self.pos - start > MAX_VALUE_BYTES {
            self.pos = start;
            let mut out = RawArgs::default();
            self.args_into(&mut out)?;
            return Ok(Some(out));
        }
        Ok(None)
    }

    /// Skips one value by its quotes and brackets alone, where the value is valid JSON
    /// ending where [`Cursor::skip_value`] ends, without checking its grammar: about
    /// three times faster over the shape lists and ids nothing reads. A `\u` escape, a
    /// control byte in a string, or nesting past [`MAX_DEPTH`] is still serde's to judge.
    fn skip_unchecked(&mut self) -> Step<()> {
        match self.skip_ws()? {
            b'"' => {
                self.pos = unchecked_string_end(self.bytes, self.pos + 1)?;
                return Ok(());
            }
            b'{' | b'[' => {}
            b't' => return self.literal(b"true"),
            b'f' => return self.literal(b"false"),
            b'n' => return self.literal(b"null"),
            _ => return self.number(),
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(end) = sse2::nested_end(self.bytes, self.pos) {
            self.pos = end;
            return Ok(());
        }
        self.walk_nested()
    }

    /// [`Cursor::skip_unchecked`] over the array or object at the cursor, stopping at
    /// each quote and bracket.
    fn walk_nested(&mut self) -> Step<()> {
        let bytes = self.bytes;
        let mut depth = 0usize;
        let mut i = self.pos;
        loop {
            i = bracket_or_quote(bytes, i);
            match *bytes.get(i).ok_or(Stop::NeedMore)? {
                b'"' => i = unchecked_string_end(bytes, i + 1)?,
                b'{' | b'[' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(Stop::Unusual);
                    }
                    i += 1;
                }
                _ => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        self.pos = i;
                        return Ok(());
                    }
                }
            }
        }
    }

    /// The object at the cursor: `member` is called with each key, the cursor at its
    /// value, and must consume that value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Step<()>) -> Step<()> {
        self.expect(b'{')?;
        if self.skip_ws()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.key()?;
            member(self, key)?;
            if !self.next_member(b'}')? {
                return Ok(());
            }
        }
    }

    /// An object key and its colon.
    fn key(&mut self) -> Step<&'a str> {
        if self.skip_ws()? != b'"' {
            return Err(Stop::Unusual);
        }
        let key = self.plain_string()?;
        self.expect(b':')?;
        Ok(key)
    }

    /// `null` as `None`, else the value `read` reads (serde's `Option`).
    // Inlined, with `read` a type rather than a function pointer: out of line, every
    // kept field was two calls (one indirect) and its value returned through memory.
    #[inline(always)]
    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> Step<T>) -> Step<Option<T>> {
        if self.skip_ws()? == b'n' {
            self.literal(b"null")?;
            return Ok(None);
        }
        read(self).map(Some)
    }

    fn text(&mut self) -> Step<Text<'a>> {
        if self.skip_ws()? != b'"' {
            return Err(Stop::Unusual);
        }
        Ok(Text(Cow::Borrowed(self.plain_string()?)))
    }

    /// A string or an integer (what serde's `Label` visitor gets from them).
    fn label(&mut self) -> Step<Label<'a>> {
        match self.skip_ws()? {
            b'"' => Ok(Label::Text(Cow::Borrowed(self.plain_string()?))),
            _ => Ok(Label::Int(self.integer()?)),
        }
    }

    /// A `ts`/`dur`: plain microseconds in ns, read in one pass (as `lean_time`); else
    /// the number's text, or a string's text with its quotes (the raw value serde would
    /// hand over).
    fn time(&mut self) -> Step<Time<'a>> {
        let first = self.skip_ws()?;
        let start = self.pos;
        if let Some((ns, end)) = plain_time(self.bytes, start) {
            self.pos = end;
            return Ok(Time::Ns(ns));
        }
        match first {
            b'"' => {
                self.plain_string()?;
            }
            _ => self.number()?,
        }
        Ok(Time::Text(RawText(&self.text[start..self.pos])))
    }

    /// `correlation` / `External id`: integers and `null`; digit strings as serde's `Id`
    /// visitor reads them.
    fn id(&mut self) -> Step<Id> {
        match self.skip_ws()? {
            b'n' => {
                self.literal(b"null")?;
                Ok(Id(None))
            }
            b'"' => {
                let s = self.plain_string()?;
                let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                Ok(Id(if digits { s.parse().ok() } else { None }))
            }
            // Negative ids are absent, as `u64::try_from` makes them.
            _ => Ok(Id(u64::try_from(self.integer()?).ok())),
        }
    }

    /// `stream` / `device`: integers, `null`, and strings as serde's `IntArg` reads them.
    fn int_arg(&mut self) -> Step<IntArg> {
        match self.skip_ws()? {
            b'n' => {
                self.literal(b"null")?;
                Ok(IntArg(None))
            }
            b'"' => Ok(IntArg(self.plain_string()?.trim().parse().ok())),
            _ => Ok(IntArg(Some(self.integer()?))),
        }
    }

    /// An integer of at most 18 digits (always an `i64`); anything else, floats
    /// included, is serde's to judge.
    fn integer(&mut self) -> Step<i64> {
        let negative = self.peek()? == b'-';
        let start = self.pos + usize::from(negative);
        let mut i = start;
        let mut value: i64 = 0;
        while let Some(&b) = self.bytes.get(i) {
            if !b.is_ascii_digit() {
                break;
            }
            // Count first: an 18-digit value times ten still fits, a 19th digit may not.
            if i - start == 18 {
                return Err(Stop::Unusual);
            }
            value = value * 10 + i64::from(b - b'0');
            i += 1;
        }
        let digits = i - start;
        let Some(&after) = self.bytes.get(i) else {
            return Err(Stop::NeedMore);
        };
        // No digits, a leading zero, `-0` (serde reads it as a float), or a fraction or
        // exponent next.
        if digits == 0
            || (digits > 1 && self.bytes[start] == b'0')
            || (negative && value == 0)
            || matches!(after, b'.' | b'e' | b'E')
        {
            return Err(Stop::Unusual);
        }
        self.pos = i;
        Ok(if negative { -value } else { value })
    }

    /// Any JSON number, checked against the grammar.
    fn number(&mut self) -> Step<()> {
        self.pos = number_end(self.bytes, self.pos, digit_end)?;
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> Step<()> {
        let end = self.pos + word.len();
        let Some(have) = self.bytes.get(self.pos..end) else {
            // A prefix of the word at the buffer's end may still become it.
            let rest = &self.bytes[self.pos..];
            return Err(if word.starts_with(rest) {
                Stop::NeedMore
            } else {
                Stop::Unusual
            });
        };
        if have != word {
            return Err(Stop::Unusual);
        }
        self.pos = end;
        Ok(())
    }

    /// A string without escapes, borrowed; `pos` is at its opening quote.
    fn plain_string(&mut self) -> Step<&'a str> {
        let start = self.pos + 1;
        let i = string_stop(self.bytes, start);
        if *self.bytes.get(i).ok_or(Stop::NeedMore)? != b'"' {
            return Err(Stop::Unusual);
        }
        self.pos = i + 1;
        // Quotes are ASCII, so both ends are character boundaries.
        Ok(&self.text[start..i])
    }

    /// A skipped string: simple escapes are fine, `\u` is serde's to judge.
    fn skip_string(&mut self) -> Step<()> {
        let mut i = self.pos + 1;
        loop {
            i = string_stop(self.bytes, i);
            let b = *self.bytes.get(i).ok_or(Stop::NeedMore)?;
            match b {
                b'"' => break,
                b'\\' => {
                    let escaped = *self.bytes.get(i + 1).ok_or(Stop::NeedMore)?;
                    if !matches!(
                        escaped,
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't'
                    ) {
                        return Err(Stop::Unusual);
                    }
                    i += 2;
                }
                _ => return Err(Stop::Unusual),
            }
        }
        self.pos = i + 1;
        Ok(())
    }

    /// Skips any value, checking it as serde's `IgnoredAny` would; `depth` is the
    /// nesting of the enclosing object.
    fn skip_value(&mut self, depth: usize) -> Step<()> {
        // Most skipped values are a CPU op's shape lists (`Input Dims`, `Input Strides`,
        // ...): arrays of numbers and plain strings, checked in one tight loop.
        if self.skip_ws()? == b'[' {
            if let Some(end) = plain_array_end(self.bytes, self.pos, MAX_DEPTH - depth) {
                self.pos = end;
                return Ok(());
            }
        }
        // The open containers as a bit stack (1 = object), innermost in bit 0.
        let mut objects: u64 = 0;
        let mut open = 0usize;
        loop {
            // One value.
            match self.skip_ws()? {
                b'"' => self.skip_string()?,
                b @ (b'{' | b'[') => {
                    self.pos += 1;
                    if depth + open + 1 > MAX_DEPTH {
                        return Err(Stop::Unusual);
                    }
                    let close = if b == b'{' { b'}' } else { b']' };
                    if self.skip_ws()? == close {
                        self.pos += 1;
                    } else {
                        objects = objects << 1 | u64::from(b == b'{');
                        open += 1;
                        if b == b'{' {
                            self.key()?;
                        }
                        continue;
                    }
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => self.number()?,
            }
            // After a value: the next member, or close containers.
            loop {
                if open == 0 {
                    return Ok(());
                }
                let object = objects & 1 == 1;
                if self.next_member(if object { b'}' } else { b']' })? {
                    if object {
                        self.key()?;
                    }
                    break;
                }
                objects >>= 1;
                open -= 1;
            }
        }
    }
}

/// The end of the array at `i` when it holds only arrays (nested at most `room` deep,
/// itself included), numbers and strings without escapes or control characters, each
/// as JSON's grammar has it: what [`Cursor::skip_value`] would accept of it, where it
/// would end. `None` for anything else, or an array past the end of `bytes`, which the
/// general walk then judges.
fn plain_array_end(bytes: &[u8], mut i: usize, room: usize) -> Option<usize> {
    let ws = |mut i: usize| {
        while matches!(bytes.get(i)?, b' ' | b'\n' | b'\r' | b'\t') {
            i += 1;
        }
        Some(i)
    };
    let mut open = 0usize;
    loop {
        // A value, or the `]` of an array just opened.
        i = ws(i)?;
        match *bytes.get(i)? {
            b'[' => {
                open += 1;
                if open > room {
                    return None;
                }
                i = ws(i + 1)?;
                if *bytes.get(i)? != b']' {
                    continue;
                }
                open -= 1;
                i += 1;
            }
            b'"' => {
                let end = string_stop(bytes, i + 1);
                if *bytes.get(end)? != b'"' {
                    return None;
                }
                i = end + 1;
            }
            // Byte by byte: a shape's numbers are a few digits, too short for
            // `digit_end`'s sixteen-byte steps to pay.
            b'-' | b'0'..=b'9' => i = number_end(bytes, i, digit_end_bytes).ok()?,
            _ => return None,
        }
        // After a value: the next one, or the ends of arrays.
        loop {
            if open == 0 {
                return Some(i);
            }
            i = ws(i)?;
            match *bytes.get(i)? {
                b',' => {
                    i += 1;
                    break;
                }
                b']' => {
                    open -= 1;
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}

/// The end of the JSON number at `i`, checked against the grammar: `NeedMore` where
/// `bytes` ends first, `Unusual` where it is no number. `digit_run` finds the end of a
/// run of digits (or `bytes.len()`): sixteen bytes a step for the scanner's long ids
/// and times ([`digit_end`]), byte by byte for a shape's few-digit numbers.
#[inline(always)]
fn number_end(
    bytes: &[u8],
    mut i: usize,
    digit_run: impl Fn(&[u8], usize) -> usize,
) -> Step<usize> {
    let at = |i: usize| bytes.get(i).copied().ok_or(Stop::NeedMore);
    // A run of at least one digit from `start`, which must end inside the text.
    let digits = |start: usize| -> Step<usize> {
        match digit_run(bytes, start) {
            end if end >= bytes.len() => Err(Stop::NeedMore),
            end if end == start => Err(Stop::Unusual),
            end => Ok(end),
        }
    };
    if at(i)? == b'-' {
        i += 1;
    }
    if at(i)? == b'0' {
        i += 1;
        if at(i)?.is_ascii_digit() {
            return Err(Stop::Unusual);
        }
    } else {
        i = digits(i)?;
    }
    if at(i)? == b'.' {
        i = digits(i + 1)?;
    }
    if matches!(at(i)?, b'e' | b'E') {
        i += 1;
        if matches!(at(i)?, b'+' | b'-') {
            i += 1;
        }
        i = digits(i)?;
    }
    Ok(i)
}

/// The number at `i` when it is plain microseconds: 1 to 16 integer digits (no leading
/// zero) and at most 3 decimals, followed inside `bytes` by a byte that cannot continue
/// a number; with its value in ns (as `time::micros_to_ns` gives it) and its end.
/// `None` for anything else, which [`Cursor::number`] then judges.
#[inline(always)]
fn plain_time(bytes: &[u8], i: usize) -> Option<(Ns, usize)> {
    let digit = |at: usize| {
        bytes
            .get(at)
            .filter(|b| b.is_ascii_digit())
            .map(|b| b - b'0')
    };
    let mut whole: u64 = 0;
    let mut j = i;
    while let Some(d) = digit(j) {
        if j - i == 16 {
            return None;
        }
        whole = whole * 10 + u64::from(d);
        j += 1;
    }
    let digits = j - i;
    if digits == 0 || (digits > 1 && bytes[i] == b'0') {
        return None;
    }
    let mut ns = whole * 1000;
    if bytes.get(j) == Some(&b'.') {
        j += 1;
        let mut unit = 100;
        while let Some(d) = digit(j) {
            if unit == 0 {
                return None;
            }
            ns += u64::from(d) * unit;
            unit /= 10;
            j += 1;
        }
        if unit == 100 {
            return None;
        }
    }
    match bytes.get(j) {
        None | Some(b'e' | b'E') => None,
        Some(_) => Some((Ns::try_from(ns).ok()?, j)),
    }
}

/// Whether a lean read leaves an event's `args` unread, from the `ph` and `cat` seen
/// before them: `build.rs` reads no `args` of a Python frame (its class comes from its
/// `cat` alone) nor of an event that is neither `X` nor `M`.
fn args_unread(ph: &Option<Option<Text>>, cat: &Option<Option<Text>>) -> bool {
    fn text<'t>(t: &'t Option<Option<Text>>) -> Option<&'t str> {
        t.as_ref().and_then(|t| t.as_ref()).map(|t| t.0.as_ref())
    }
    match text(ph) {
        Some("X") => text(cat).is_some_and(|c| c.eq_ignore_ascii_case("python_function")),
        Some("M") | None => false,
        Some(_) => true,
    }
}

/// The index just past the `}` closing the object whose `{` is at `i`, when the object
/// is flat and plain: no `{`, `[`, `]` or `\` before its first `}`, no control byte
/// inside a string, and an even number of quotes before it, so that `}` is outside
/// every string (without escapes, each quote opens or closes one). Control bytes
/// outside strings are whitespace: Kineto writes each `args` over several lines. There
/// [`Cursor::skip_unchecked`] ends too; `None` for anything else, and where the text
/// ends first, for it to decide.
fn flat_object_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut quotes = 0u32;
    #[cfg(target_arch = "x86_64")]
    let start = match sse2::flat_object_end(bytes, i + 1, &mut quotes) {
        Ok(found) => return found,
        Err(tail) => tail,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let start = i + 1;
    flat_object_end_bytes(bytes, start, quotes)
}

/// [`flat_object_end`] a byte at a time from `i`, `quotes` seen before it.
fn flat_object_end_bytes(bytes: &[u8], i: usize, mut quotes: u32) -> Option<usize> {
    for (k, &b) in bytes.get(i..)?.iter().enumerate() {
        match b {
            b'}' => return quotes.is_multiple_of(2).then_some(i + k + 1),
            b'"' => quotes += 1,
            b'{' | b'[' | b']' | b'\\' => return None,
            0..=0x1f if quotes % 2 == 1 => return None,
            _ => {}
        }
    }
    None
}

/// The index just past the closing quote of the string whose characters start at `i`,
/// escapes stepped over unchecked but for `\u` (serde's, as a lone surrogate is
/// repaired and counted).
fn unchecked_string_end(bytes: &[u8], mut i: usize) -> Step<usize> {
    loop {
        i = string_stop(bytes, i);
        match *bytes.get(i).ok_or(Stop::NeedMore)? {
            b'"' => return Ok(i + 1),
            b'\\' => match *bytes.get(i + 1).ok_or(Stop::NeedMore)? {
                b'u' => return Err(Stop::Unusual),
                _ => i += 2,
            },
            _ => return Err(Stop::Unusual),
        }
    }
}

/// The index of the first `"`, `[`, `]`, `{` or `}` from `i` on, or `bytes.len()`.
/// Sixteen bytes a step on x86_64 (SSE2, always there), eight elsewhere and in the tail.
fn bracket_or_quote(bytes: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let i = match sse2::bracket_or_quote(bytes, i) {
        Ok(found) => return found,
        Err(tail) => tail,
    };
    bracket_or_quote_words(bytes, i)
}

/// [`bracket_or_quote`] eight bytes at a time, as [`string_stop_words`].
fn bracket_or_quote_words(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        // Setting bit 5 maps `[` to `{` and `]` to `}`, and no other byte onto either.
        let folded = word | (ONES * 0x20);
        let stops = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(folded ^ (ONES * u64::from(b'{')))
            | zero_bytes(folded ^ (ONES * u64::from(b'}')));
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let rest = bytes.get(i..).unwrap_or_default();
    rest.iter()
        .position(|&b| matches!(b, b'"' | b'[' | b']' | b'{' | b'}'))
        .map_or(bytes.len(), |k| i + k)
}

/// The index of the first byte from `i` on that ends a plain run inside a string (`"`,
/// `\\` or a control character), or `bytes.len()`. Strings are most of a trace's bytes
/// (kernel and frame names of 100-300 bytes), so this goes sixteen bytes a step on
/// x86_64 (SSE2, part of the architecture), eight elsewhere and in the tail.
fn string_stop(bytes: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let i = match sse2::string_stop(bytes, i) {
        Ok(found) => return found,
        Err(tail) => tail,
    };
    string_stop_words(bytes, i)
}

/// The index of the first byte from `i` on that is not an ASCII digit, or `bytes.len()`:
/// the ends of times and of the ids skipped in `args`, of 10 to 17 digits. Sixteen
/// bytes a step on x86_64, as [`string_stop`].
fn digit_end(bytes: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let i = match sse2::digit_end(bytes, i) {
        Ok(found) => return found,
        Err(tail) => tail,
    };
    digit_end_bytes(bytes, i)
}

fn digit_end_bytes(bytes: &[u8], i: usize) -> usize {
    let rest = bytes.get(i..).unwrap_or_default();
    rest.iter()
        .position(|b| !b.is_ascii_digit())
        .map_or(bytes.len(), |k| i + k)
}

/// [`string_stop`] eight bytes at a time, in plain integer arithmetic.
fn string_stop_words(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // The high bit of each byte that is zero (in `quote`, `backslash`) or below 0x20
        // (in `word`). Borrows only flag bytes above a true match, so the lowest flag is
        // exact.
        let stops = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        let stops = stops & HIGH;
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let rest = bytes.get(i..).unwrap_or_default();
    rest.iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map_or(bytes.len(), |k| i + k)
}

/// The sixteen-byte steps of [`string_stop`] and [`bracket_or_quote`]: `Ok` with the
/// stop's index, or `Err` with where fewer than sixteen bytes are left, for the word
/// loop to finish.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_sub_epi8,
    };

    /// Where the array or object whose `[` or `{` is at `i` ends (just past its closing
    /// bracket), sixteen-byte loads making one 64-bit mask per 64 bytes: the quotes'
    /// running parity marks what lies inside strings, and only the brackets outside
    /// them are walked. The same end as [`super::Cursor::skip_unchecked`]'s walk, which
    /// decides wherever this gives `None`: a backslash, a control byte inside a string,
    /// nesting past [`super::MAX_DEPTH`], or the text ending first. About three times
    /// faster over a CPU op's pretty-printed shape lists, whose every quote and bracket
    /// was a stop of that walk.
    #[inline]
    pub(super) fn nested_end(bytes: &[u8], mut i: usize) -> Option<usize> {
        let mut depth = 0usize;
        // All ones while the previous block ended inside a string.
        let mut in_string = 0u64;
        while let Some(block) = bytes.get(i..i + 64) {
            let (quote, backslash, control, open, close) = block_masks(block);
            let strings = prefix_xor(quote) ^ in_string;
            in_string = ((strings as i64) >> 63) as u64;
            let unsure = backslash | (control & strings);
            let mut brackets = (open | close) & !strings;
            while brackets != 0 {
                let at = brackets.trailing_zeros();
                brackets &= brackets - 1;
                if open >> at & 1 == 1 {
                    depth += 1;
                    if depth > super::MAX_DEPTH {
                        return None;
                    }
                } else {
                    depth -= 1;
                    if depth == 0 {
                        let before = u64::MAX >> (63 - at);
                        return (unsure & before == 0).then_some(i + at as usize + 1);
                    }
                }
            }
            if unsure != 0 {
                return None;
            }
            i += 64;
        }
        None
    }

    /// Each byte's parity of the set bits at and below it: 1 from an opening quote up
    /// to (not including) its closing quote.
    #[inline(always)]
    fn prefix_xor(mut x: u64) -> u64 {
        x ^= x << 1;
        x ^= x << 2;
        x ^= x << 4;
        x ^= x << 8;
        x ^= x << 16;
        x ^= x << 32;
        x
    }

    /// The masks of 64 bytes: quotes, backslashes, control bytes, `[`/`{` and `]`/`}`.
    #[inline(always)]
    fn block_masks(block: &[u8]) -> (u64, u64, u64, u64, u64) {
        let mut masks = [0u64; 5];
        for (k, sixteen) in block.chunks_exact(16).enumerate() {
            // SAFETY: `sixteen` is 16 readable bytes, the load unaligned; SSE2 is part
            // of every x86_64 target.
            let bits = unsafe {
                let v = _mm_loadu_si128(sixteen.as_ptr().cast::<__m128i>());
                let eq = |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)));
                // Setting bit 5 maps `[` to `{` and `]` to `}`, and no other byte onto either.
                let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
                let folded_eq =
                    |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b as i8)));
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                [
                    eq(b'"'),
                    eq(b'\\'),
                    _mm_movemask_epi8(control),
                    folded_eq(b'{'),
                    folded_eq(b'}'),
                ]
            };
            for (mask, b) in masks.iter_mut().zip(bits) {
                *mask |= u64::from(b as u32 & 0xffff) << (16 * k);
            }
        }
        (masks[0], masks[1], masks[2], masks[3], masks[4])
    }

    /// The stop bits of each sixteen bytes from `i` on, until one is set.
    #[inline(always)]
    fn first_stop(
        bytes: &[u8],
        mut i: usize,
        stops: impl Fn(__m128i) -> i32,
    ) -> Result<usize, usize> {
        while let Some(chunk) = bytes.get(i..i + 16) {
            // SAFETY: `chunk` is 16 readable bytes; the load is unaligned.
            let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>()) };
            let mask = stops(v) as u32;
            if mask != 0 {
                return Ok(i + mask.trailing_zeros() as usize);
            }
            i += 16;
        }
        Err(i)
    }

    #[inline]
    pub(super) fn string_stop(bytes: &[u8], i: usize) -> Result<usize, usize> {
        first_stop(bytes, i, |v| {
            // SAFETY: SSE2 is part of every x86_64 target; these touch no memory.
            unsafe {
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                // Unsigned `v <= 0x1f`: the minimum with 0x1f is `v` itself.
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
            }
        })
    }

    #[inline]
    pub(super) fn digit_end(bytes: &[u8], i: usize) -> Result<usize, usize> {
        first_stop(bytes, i, |v| {
            // SAFETY: as in `string_stop`.
            unsafe {
                // A digit is `v - '0' <= 9` unsigned.
                let d = _mm_sub_epi8(v, _mm_set1_epi8(b'0' as i8));
                let digit = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
                !_mm_movemask_epi8(digit) & 0xffff
            }
        })
    }

    /// [`super::flat_object_end`] from `i`, sixteen bytes a step: `Ok` with its answer,
    /// or `Err` with where fewer than sixteen bytes are left (`quotes` counted so far).
    #[inline]
    pub(super) fn flat_object_end(
        bytes: &[u8],
        mut i: usize,
        quotes: &mut u32,
    ) -> Result<Option<usize>, usize> {
        while let Some(chunk) = bytes.get(i..i + 16) {
            // SAFETY: `chunk` is 16 readable bytes, the load unaligned; SSE2 is part of
            // every x86_64 target.
            let (close, quote, bad, control) = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
                let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                let bad = _mm_or_si128(
                    _mm_or_si128(eq(b'{'), eq(b'[')),
                    _mm_or_si128(eq(b']'), eq(b'\\')),
                );
                (
                    _mm_movemask_epi8(eq(b'}')) as u32,
                    _mm_movemask_epi8(eq(b'"')) as u32,
                    _mm_movemask_epi8(bad) as u32,
                    _mm_movemask_epi8(control) as u32,
                )
            };
            // A control byte is whitespace outside strings, and ends the fast path in one.
            let open_string = if quotes.is_multiple_of(2) { 0 } else { 0xffff };
            let strings = (prefix_xor(u64::from(quote)) as u32 ^ open_string) & 0xffff;
            let bad = bad | (control & strings);
            if close != 0 {
                let before = (1u32 << close.trailing_zeros()) - 1;
                if bad & before != 0 {
                    return Ok(None);
                }
                *quotes += (quote & before).count_ones();
                let end = i + close.trailing_zeros() as usize + 1;
                return Ok(quotes.is_multiple_of(2).then_some(end));
            }
            if bad != 0 {
                return Ok(None);
            }
            *quotes += quote.count_ones();
            i += 16;
        }
        Err(i)
    }

    #[inline]
    pub(super) fn bracket_or_quote(bytes: &[u8], i: usize) -> Result<usize, usize> {
        first_stop(bytes, i, |v| {
            // SAFETY: as in `string_stop`.
            unsafe {
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                // Setting bit 5 maps `[` to `{` and `]` to `}`, and no other byte onto either.
                let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
                let open = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8));
                let close = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8));
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, open), close))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::time::micros_to_ns;
    use super::*;

    /// The first `"`, `\` or control byte from `i` on, one byte at a time.
    fn naive_stop(bytes: &[u8], i: usize) -> usize {
        (i..bytes.len())
            .find(|&k| matches!(bytes[k], b'"' | b'\\' | 0..=0x1f))
            .unwrap_or(bytes.len())
    }

    /// The first `"`, `[`, `]`, `{` or `}` from `i` on, one byte at a time.
    fn naive_bracket(bytes: &[u8], i: usize) -> usize {
        (i..bytes.len())
            .find(|&k| matches!(bytes[k], b'"' | b'[' | b']' | b'{' | b'}'))
            .unwrap_or(bytes.len())
    }

    /// Holds `fast` to `naive` with each of `stops` at every offset of runs of `fillers`
    /// of every length up to past two 16-byte steps and the 8-byte tail, from every
    /// start, with another stop just after the first (a carry in the word trick must not
    /// flag a byte before the first true one), and without any stop.
    fn holds_to_byte_loop(
        what: &str,
        fast: fn(&[u8], usize) -> usize,
        naive: fn(&[u8], usize) -> usize,
        fillers: &[u8],
        stops: &[u8],
    ) {
        for len in 1..=41 {
            for &filler in fillers {
                let clean = vec![filler; len];
                for start in 0..=len {
                    assert_eq!(fast(&clean, start), len, "{what}: {filler:#x} x {len}");
                }
                for &stop in stops {
                    for at in 0..len {
                        let mut bytes = vec![filler; len];
                        bytes[at] = stop;
                        if at + 1 < len {
                            bytes[at + 1] = stops[0];
                        }
                        for start in 0..=len {
                            assert_eq!(
                                fast(&bytes, start),
                                naive(&bytes, start),
                                "{what}: filler {filler:#x} stop {stop:#x} at {at} of {len} \
                                 from {start}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn string_stop_finds_the_first_stop_byte_like_a_byte_loop() {
        // Every stop byte, and near misses: 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, and bytes
        // past 0x7f (negative as signed bytes, where a signed `< 0x20` would flag them).
        let fillers = [
            b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0x9f, 0xc3, 0xff,
        ];
        let stops = [b'"', b'\\', 0x00, 0x01, 0x09, 0x0a, 0x1f];
        holds_to_byte_loop("string_stop", string_stop, naive_stop, &fillers, &stops);
        holds_to_byte_loop("words", string_stop_words, naive_stop, &fillers, &stops);
    }

    #[test]
    fn digit_end_finds_the_first_non_digit_like_a_byte_loop() {
        let naive = |bytes: &[u8], i: usize| {
            (i..bytes.len())
                .find(|&k| !bytes[k].is_ascii_digit())
                .unwrap_or(bytes.len())
        };
        // Near misses: the bytes just outside '0'..='9', and those 0x80 above them.
        let stops = [
            b'.', b'/', b':', b'e', b'E', b'-', b'+', b' ', b',', 0x00, 0xaf, 0xb0, 0xb9, 0xba,
        ];
        holds_to_byte_loop("digit_end", digit_end, naive, b"0159", &stops);
        holds_to_byte_loop("bytes", digit_end_bytes, naive, b"0159", &stops);
    }

    #[test]
    fn bracket_or_quote_finds_the_first_stop_byte_like_a_byte_loop() {
        // Near misses: the bytes one bit 5 (or one step) away from the stops.
        let fillers = [
            b'a', 0x02, 0x3b, 0x3d, 0x5a, 0x5c, 0x5e, 0x7a, 0x7c, 0x7e, 0xdb, 0xfb,
        ];
        let stops = [b'"', b'[', b']', b'{', b'}'];
        holds_to_byte_loop("bracket", bracket_or_quote, naive_bracket, &fillers, &stops);
        holds_to_byte_loop(
            "words",
            bracket_or_quote_words,
            naive_bracket,
            &fillers,
            &stops,
        );
    }

    /// Where the lean walk by brackets ([`Cursor::walk_nested`]) ends the array or object
    /// at the start of `text`, or `None` where it declines or needs more.
    fn walked_end(text: &str) -> Option<usize> {
        let mut cursor = Cursor {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            lean: true,
        };
        cursor.walk_nested().ok().map(|()| cursor.pos)
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn nested_end_ends_where_the_walk_by_brackets_ends() {
        // A CPU op's args as the benchmark's trace lays them out (pretty-printed), and
        // compact.
        let shapes = "[\n    [\n        512\n    ],\n    [],\n    []\n]";
        let concrete = "[\n    \"\",\n    \"[1]\",\n    \"0\"\n]";
        let args = format!(
            "{{\"External id\": 2, \"Concrete Inputs\": {concrete}, \"Input Dims\": {shapes}, \"Ev Idx\": 1}}"
        );
        let mut texts = vec![shapes.to_string(), concrete.to_string(), args.clone()];
        // Near misses: brackets inside strings, escapes (a quote among them), control
        // bytes in and out of strings, deep nesting, strings across the 64-byte steps.
        for text in [
            r#"["a]b", {"c}": "[{"}]"#,
            r#"["a\"]", 1]"#,
            r#"["a\\", "]"]"#,
            r#"["\u005d"]"#,
            "[\"a\x01\", 1]",
            "[\t1,\r\n2]",
            r#"[[], {}, [[[]]]]"#,
            r#"[1, 2"#,
            r#"{"a": [1, {"b": "}"}]}"#,
        ] {
            texts.push(text.to_string());
        }
        texts.push(format!("{}{}", "[".repeat(64), "]".repeat(64)));
        texts.push(format!("{}{}", "[".repeat(65), "]".repeat(65)));
        for pad in 0..140 {
            let name = "n".repeat(pad);
            texts.push(format!(r#"["{name}", ["]"], "{name}{name}"]"#));
            texts.push(format!(r#"[{name:?}, "a\"b", {{}}]"#));
            texts.push(format!("[\"{name}\", \"x\ny\"]"));
            texts.push(format!(r#"{{"{name}": [{{}}], "x": "]"}}"#));
        }
        let mut accepted = 0;
        for text in &texts {
            // Cut anywhere, and with more text after the value (its end is not the text's).
            for cut in 1..=text.len() {
                let Some(part) = text.get(..cut) else {
                    continue;
                };
                for tail in [
                    "",
                    r#", "\"]", "x": [1]}"#,
                    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                ] {
                    let text = format!("{part}{tail}");
                    if let Some(end) = sse2::nested_end(text.as_bytes(), 0) {
                        accepted += 1;
                        assert_eq!(walked_end(&text), Some(end), "{text:?}");
                    }
                }
            }
        }
        // The common layouts are taken, not only declined safely.
        let with_tail =
            format!("{args}, \"next\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]");
        assert_eq!(sse2::nested_end(with_tail.as_bytes(), 0), Some(args.len()));
        assert!(accepted > 1000, "{accepted}");
    }

    #[test]
    fn flat_object_end_ends_where_the_walk_by_brackets_ends() {
        let frame = r#"{"Python parent id": 29941980, "Python id": 29942095, "Ev Idx": 30041807}"#;
        let mut accepted = 0;
        let mut texts = vec![frame.to_string()];
        // Near misses: a `}` or bracket inside a string, a bracket outside one, escapes,
        // control bytes in and out of strings, nesting, an empty object, odd quotes.
        for text in [
            r#"{"a}b": 1, "c": 2}"#,
            r#"{"a": "x]y", "b": 2}"#,
            r#"{"a": 1]}"#,
            r#"{"a": [1, 2], "b": 3}"#,
            r#"{"a": {"b": 1}}"#,
            r#"{"a\"b": 1}"#,
            r#"{"a": "\u00e9"}"#,
            "{\"a\":\n\t1}",
            "{\"a\x01\": 1}",
            r#"{}"#,
            r#"{"a": "}"}"#,
            r#"{"a": "b}"#,
        ] {
            texts.push(text.to_string());
        }
        // Every position of the `}` and of each stop across the 16-byte steps and tail.
        for pad in 0..40 {
            let name = "n".repeat(pad);
            texts.push(format!(r#"{{"{name}": 1, "Ev Idx": 2}}"#));
            texts.push(format!(r#"{{"{name}": "}}", "b": 2}}"#));
            texts.push(format!(r#"{{"{name}": 1]}}"#));
            texts.push(format!("{{\"{name}\": \"a\nb\"}}"));
            texts.push(format!(r#"{{"{name}\": 1}}"#));
        }
        for text in &texts {
            for cut in 1..=text.len() {
                let Some(part) = text.get(..cut) else {
                    continue;
                };
                if let Some(end) = flat_object_end(part.as_bytes(), 0) {
                    accepted += 1;
                    assert_eq!(walked_end(part), Some(end), "{part:?}");
                }
                // The sixteen-byte steps agree with the byte loop.
                let bytes_only = flat_object_end_bytes(part.as_bytes(), 1, 0);
                assert_eq!(flat_object_end(part.as_bytes(), 0), bytes_only, "{part:?}");
            }
        }
        // The common layouts are taken, not only declined safely: on one line, and over
        // several as Kineto writes them.
        assert_eq!(flat_object_end(frame.as_bytes(), 0), Some(frame.len()));
        let kineto = "{\n      \"Python parent id\": 1, \"Python id\": 2, \"Ev Idx\": 3\n    }";
        assert_eq!(flat_object_end(kineto.as_bytes(), 0), Some(kineto.len()));
        assert!(accepted > 40, "{accepted}");
    }

    #[test]
    fn plain_arrays_end_where_serde_ends_them_and_decline_the_rest() {
        // (array text, whether the one-loop path takes it); each is followed by `}` in
        // the text read, as a value in `args` is.
        let cases = [
            ("[]", true),
            ("[ ]", true),
            ("[[512, 1], [], [], [], []]", true),
            ("[[1,2880],[2880,25136]]", true),
            ("[\n  [1,\n 2],\t[ ]\r\n]", true),
            (r#"["", "0", "[1, 512]", "c10::BFloat16", "é ✓"]"#, true),
            ("[0, -1, 1.5, -0.25e-3, 2E+10, 10]", true),
            ("[[[[[[1]]]]]]", true),
            // Not taken: escapes, literals, objects (the general walk reads them).
            (r#"["a\"b"]"#, false),
            ("[true, null]", false),
            (r#"[{"a": 1}]"#, false),
            // Invalid JSON, declined for the general walk to refuse.
            ("[1,]", false),
            ("[,1]", false),
            ("[01]", false),
            ("[1.]", false),
            ("[.5]", false),
            ("[-]", false),
            ("[1e]", false),
            ("[1 2]", false),
            ("[[1]", false),
            ("[\"a\u{1}\"]", false),
            ("[+1]", false),
        ];
        for (array, taken) in cases {
            let text = format!("{array}}}");
            let end = plain_array_end(text.as_bytes(), 0, MAX_DEPTH);
            assert_eq!(end.is_some(), taken, "{array:?}");
            if let Some(end) = end {
                assert_eq!(end, array.len(), "{array:?}");
                assert!(serde_json::from_str::<serde::de::IgnoredAny>(array).is_ok());
            }
            // Whatever the path, the skip agrees with serde on the value.
            let mut cursor = Cursor {
                text: &text,
                bytes: text.as_bytes(),
                pos: 0,
                lean: false,
            };
            let skipped = cursor.skip_value(2).is_ok() && cursor.pos == array.len();
            let serde_ok = serde_json::from_str::<serde::de::IgnoredAny>(array).is_ok();
            assert_eq!(skipped, serde_ok, "{array:?}");
        }
        // Nesting: taken up to `room` arrays deep, declined past it.
        assert_eq!(plain_array_end(b"[[[1]]]}", 0, 3), Some(7));
        assert_eq!(plain_array_end(b"[[[1]]]}", 0, 2), None);
        // Cut by the end of the text: left to the general walk (which asks for more).
        assert_eq!(plain_array_end(b"[[1, 2]", 0, MAX_DEPTH), None);
        assert_eq!(plain_array_end(b"[1, 23", 0, MAX_DEPTH), None);
    }

    #[test]
    fn plain_times_convert_as_the_number_scan_and_micros_to_ns_do() {
        let mut taken = 0;
        for number in [
            "0",
            "7",
            "0.5",
            "1.188",
            "1.18",
            "12.000",
            "1365627862817.469",
            "1.1234",
            "01",
            "00.5",
            "-1",
            "-0.5",
            "1e3",
            "1.5E2",
            "1.",
            ".5",
            "1.5e",
            "1234567890123456",
            "1234567890123456.789",
            "9999999999999999",
            "99999999999999999",
            "18446744073709551616",
            "1..2",
        ] {
            for after in [",", "}", " ", "\n", "x", ""] {
                let text = format!("{number}{after}");
                let mut cursor = Cursor {
                    text: &text,
                    bytes: text.as_bytes(),
                    pos: 0,
                    lean: true,
                };
                let scanned = cursor.number().ok().map(|()| cursor.pos);
                match plain_time(text.as_bytes(), 0) {
                    Some((ns, end)) => {
                        taken += 1;
                        assert_eq!(scanned, Some(end), "{text:?}");
                        assert_eq!(decimal_micros_to_ns(&text[..end]), Some(ns), "{text:?}");
                    }
                    // Declined: the number is not plain (or not whole); either way the
                    // frame path then reads it as `scan_event` does.
                    None => assert!(
                        after.is_empty()
                            || number.contains(['-', 'e', 'E'])
                            || scanned.is_none()
                            || number.split('.').nth(1).is_some_and(|f| f.len() > 3)
                            || number.split('.').next().is_some_and(|w| w.len() > 16)
                            || decimal_micros_to_ns(number).is_none(),
                        "{text:?}"
                    ),
                }
            }
        }
        // Every plain number, before each byte that ends one.
        assert_eq!(taken, 9 * 5, "{taken}");
    }

    /// A label as comparable text.
    fn label_text(label: Option<&Label>) -> Option<String> {
        label.map(|l| match l {
            Label::Text(t) => format!("text {t}"),
            Label::Int(v) => format!("int {v}"),
            Label::Float(v) => format!("float {v}"),
        })
    }

    #[test]
    fn a_lean_shortcut_reads_a_frame_as_the_event_scan_does_and_drops_only_what_is_dropped() {
        let pretty = "{\n    \"ph\": \"X\",\n    \"cat\": \"python_function\",\n    \"name\": \"torch/nn/modules/module.py(1750): _call_impl\",\n    \"pid\": 6583,\n    \"tid\": 6583,\n    \"ts\": 1365627862817.469,\n    \"dur\": 1.188,\n    \"args\": {\n        \"Python parent id\": 29937669,\n        \"Python id\": 29937670,\n        \"Ev Idx\": 30037382\n    }\n}";
        let compact = r#"{"ph":"X","cat":"python_function","name":"a.py(1): f","pid":"7","tid":-3,"ts":12,"dur":0.5,"args":{"Python id":1}}"#;
        let mut texts = vec![pretty.to_string(), compact.to_string()];
        // Each a near miss the frame path must leave to `scan_event`, or take alike.
        for text in [
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {}}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"a": [1]}}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {}, "id": 3}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": "1", "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": null}"#,
            r#"{"ph": "X", "cat": "python_function", "name": null, "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f\"g", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "tid": 1, "pid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "Python_Function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_functions", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "B", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1.5, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 01, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": -1e3, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2,}"#,
            r#"{"ph" : "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            // Kineto's opening, then its own spacing left (read member by member), a
            // string pid, a space before the closing brace: all taken.
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid":1, "tid": 1,"ts": 1, "dur": 2, "args": {}}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": "7", "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"a": 1} }"#,
            // And declined: an escape in the name, a member after `args`.
            r#"{"ph": "X", "cat": "python_function", "name": "f\g", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {}, "s": 1}"#,
        ] {
            texts.push(text.to_string());
        }
        let long_name = "n".repeat(MAX_VALUE_BYTES + 1);
        texts.push(format!(
            r#"{{"ph": "X", "cat": "python_function", "name": "{long_name}", "pid": 1, "tid": 1, "ts": 1, "dur": 2}}"#
        ));
        let mut taken = Vec::new();
        for text in &texts {
            // Whole, with what follows an event in the array, and cut anywhere.
            let whole = format!("{text},\n{{");
            for cut in 1..=whole.len() {
                let Some(part) = whole.get(..cut) else {
                    continue;
                };
                let (frame, len) = match scan_lean(part) {
                    LeanScan::Frame(frame, len) => (frame, len),
                    // Only the `"cat": "cpu_op"` near miss: `a_lean_cpu_op_...` below.
                    LeanScan::CpuOp(..) => {
                        assert!(part.contains(r#""cat": "cpu_op""#), "{part:?}");
                        continue;
                    }
                    LeanScan::Dropped(len) => {
                        // Only the `"ph": "B"` near miss, which the sink drops too.
                        let Scan::Event(event, event_len) = scan_event(part, ReadScope::Digest)
                        else {
                            panic!("dropped, and the event scan declines: {part:?}");
                        };
                        assert_eq!(len, event_len);
                        assert_eq!(event.ph.map(|t| t.0.to_string()).as_deref(), Some("B"));
                        continue;
                    }
                    LeanScan::NeedMore | LeanScan::Other => continue,
                };
                if taken.last() != Some(text) {
                    taken.push(text.clone());
                }
                let Scan::Event(event, event_len) = scan_event(part, ReadScope::Digest) else {
                    panic!("a frame the event scan declines: {part:?}");
                };
                let text_of = |t: &Option<Text>| t.as_ref().map(|t| t.0.to_string());
                assert_eq!(len, event_len, "{part:?}");
                assert_eq!(Some(frame.name.to_string()), text_of(&event.name));
                assert_eq!(text_of(&event.ph).as_deref(), Some("X"));
                assert_eq!(text_of(&event.cat).as_deref(), Some("python_function"));
                assert_eq!(label_text(Some(&frame.pid)), label_text(event.pid.as_ref()));
                assert_eq!(label_text(Some(&frame.tid)), label_text(event.tid.as_ref()));
                assert_eq!(frame.ts, micros_to_ns(event.ts), "{part:?}");
                assert_eq!(frame.dur, micros_to_ns(event.dur), "{part:?}");
                assert!(event.args.is_none());
            }
        }
        // The canonical layouts, the one without `args`, the one with empty `args`, the
        // negative time (which the sink counts as bad, as it does any), and Kineto's
        // opening with other spacing or a string pid.
        assert_eq!(
            taken,
            [0, 1, 2, 3, 16, 20, 21, 22].map(|i| texts[i].clone())
        );
        assert!(matches!(scan_lean(pretty), LeanScan::Frame(_, len) if len == pretty.len()));
        assert!(matches!(scan_lean(&pretty[..200]), LeanScan::NeedMore));
        assert!(matches!(scan_lean(&texts[4]), LeanScan::Other));

        // Dropped: flow arrows as Kineto writes them, an instant with nested args, and
        // one whose unread values are malformed (a lean read's leniency, as for `args`).
        let flow = r#"{"ph": "f", "id": 16, "pid": 0, "tid": 7, "ts": 1365627865398.728, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#;
        let kineto_flow = "{\n    \"ph\": \"s\", \"id\": 47121, \"pid\": 10330, \"tid\": 10330, \"ts\": 2903534560778.376,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }";
        let instant = r#"{"ph": "i", "name": "x", "args": {"a": [1, {"b": "]}"}], "c": "{"}}"#;
        let malformed = r#"{"ph": "f", "ts": 01, "pid": [1, 2]}"#;
        let scanned = |text: &str| match scan_event(text, ReadScope::Digest) {
            Scan::Event(event, len) => Some((event.ph.map(|t| t.0.to_string()), len)),
            _ => None,
        };
        for text in [flow, kineto_flow, instant] {
            let followed = format!("{text}, {{");
            assert!(matches!(scan_lean(&followed), LeanScan::Dropped(len) if len == text.len()));
            let (ph, len) = scanned(&followed).unwrap();
            assert_eq!(len, text.len());
            assert!(!matches!(ph.as_deref(), Some("X" | "M")), "{text}");
            for cut in 1..text.len() {
                assert!(
                    matches!(
                        scan_lean(&text[..cut]),
                        LeanScan::NeedMore | LeanScan::Other
                    ),
                    "{cut}"
                );
            }
        }
        assert!(matches!(scan_lean(malformed), LeanScan::Dropped(len) if len == malformed.len()));
        assert_eq!(scanned(malformed), None);
        // Not dropped: metadata (kept), a `ph` that is not first, one past the limit.
        for text in [
            r#"{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}"#.to_string(),
            r#"{"name": "x", "ph": "f", "id": 1}"#.to_string(),
            format!(r#"{{"ph": "f", "name": "{long_name}"}}, "#),
        ] {
            assert!(matches!(scan_lean(&text), LeanScan::Other), "{text:.80}");
        }
    }

    #[test]
    fn a_full_read_takes_kinetos_frames_as_serde_reads_them() {
        let frame = |args: &str| {
            format!(
                r#"{{"ph": "X", "cat": "python_function", "name": "vllm/v1/worker/gpu_model_runner.py(2001): execute_model", "pid": 6583, "tid": 6583, "ts": 1365627894720.503, "dur": 0.065{args}}}"#
            )
        };
        let kineto = r#", "args": {"Python parent id": 29942089, "Python id": 29942091, "Ev Idx": 30041803}"#;
        let mut texts = vec![frame(kineto)];
        // Near misses the fast path must leave to the walk (which serde agrees with, or
        // declines), or take alike: other args, a value serde reads otherwise, a member
        // more.
        for args in [
            "",
            r#", "args": {}"#,
            r#", "args": {"Python parent id": 29942089, "Python id": 29942091}"#,
            r#", "args": {"Python parent id": -1, "Python id": 0, "Ev Idx": 3}"#,
            r#", "args": {"Python parent id": 01, "Python id": 2, "Ev Idx": 3}"#,
            r#", "args": {"Python parent id": 1.5, "Python id": 2, "Ev Idx": 3}"#,
            r#", "args": {"Python parent id": 1e3, "Python id": 2, "Ev Idx": 3}"#,
            r#", "args": {"Python parent id": 1, "Python id": 2, "Ev Idx": 3, "name": "x"}"#,
            r#", "args": {"Python parent id": 1, "Python id": 2, "Ev Idx": 3}, "id": 4"#,
            r#", "args": {"Python parent id": 1, "Python id": 2, "Ev Idx": 3 }"#,
        ] {
            texts.push(frame(args));
        }
        texts.push(frame(kineto).replace("6583, \"ts\"", "\"6583\", \"ts\""));
        texts.push(frame(kineto).replace("execute_model", "execute\\u0041model"));
        texts.push(frame(kineto).replace("\"dur\": 0.065", "\"dur\": 65e-3"));
        let text_of = |t: &Option<Text>| t.as_ref().map(|t| t.0.to_string());
        let mut declined = 0;
        for text in &texts {
            let followed = format!("{text},\n{{");
            let Ok(serde) = serde_json::from_str::<RawEvent>(text) else {
                // Invalid JSON (the leading zero): for the walk's strict checks to judge.
                assert!(!matches!(
                    scan_event(&followed, ReadScope::Full),
                    Scan::Event(..)
                ));
                declined += 1;
                continue;
            };
            let Scan::Event(event, len) = scan_event(&followed, ReadScope::Full) else {
                // Left to serde (the escape).
                declined += 1;
                continue;
            };
            assert_eq!(len, text.len(), "{text}");
            assert_eq!(text_of(&event.name), text_of(&serde.name), "{text}");
            assert_eq!(text_of(&event.ph), text_of(&serde.ph), "{text}");
            assert_eq!(text_of(&event.cat), text_of(&serde.cat), "{text}");
            assert_eq!(
                label_text(event.pid.as_ref()),
                label_text(serde.pid.as_ref())
            );
            assert_eq!(
                label_text(event.tid.as_ref()),
                label_text(serde.tid.as_ref())
            );
            assert_eq!(micros_to_ns(event.ts), micros_to_ns(serde.ts), "{text}");
            assert_eq!(micros_to_ns(event.dur), micros_to_ns(serde.dur), "{text}");
            assert_eq!(event.args.is_some(), serde.args.is_some(), "{text}");
            let name_of = |a: &Option<RawArgs>| {
                a.as_ref()
                    .and_then(|a| a.name.as_ref())
                    .map(|l| label_text(Some(l)))
            };
            assert_eq!(name_of(&event.args), name_of(&serde.args), "{text}");
            // Cut anywhere, it waits for more or declines.
            for cut in 1..text.len() {
                let Some(part) = text.get(..cut) else {
                    continue;
                };
                assert!(
                    !matches!(scan_event(part, ReadScope::Full), Scan::Event(..)),
                    "{cut}: {part}"
                );
            }
        }
        // Invalid args are the walk's to refuse too.
        let invalid = frame(r#", "args": {"Python parent id": 1, "Python id": 2, "Ev Idx": 3x}"#);
        assert!(serde_json::from_str::<RawEvent>(&invalid).is_err());
        assert!(!matches!(
            scan_event(&format!("{invalid},\n{{"), ReadScope::Full),
            Scan::Event(..)
        ));
        // The leading zero (invalid) and the escape (serde's to decode).
        assert_eq!(declined, 2);
        // Kineto's own layout is the fast path's, with other values in place (negative
        // ids, a string pid, an exponent): the others here are the walk's.
        let fast = |text: &str| {
            let mut cursor = Cursor {
                text,
                bytes: text.as_bytes(),
                pos: 0,
                lean: false,
            };
            cursor.kineto_frame().map(|_| cursor.pos)
        };
        assert_eq!(fast(&texts[0]), Some(texts[0].len()));
        assert_eq!(texts[1..].iter().filter(|t| fast(t).is_some()).count(), 3);
    }

    #[test]
    fn a_lean_cpu_op_is_taken_only_where_its_args_hold_nothing_else_a_digest_reads() {
        let shapes = r#""Record function id": 0, "Concrete Inputs": ["", "1", "[2, 3]"], "Input type": ["float", "Scalar", "ScalarList"], "Input Strides": [[1], [], []], "Input Dims": [[512], [], []], "Ev Idx": 1"#;
        let op = |args: &str| {
            format!(
                r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 8, "ts": 12.5, "dur": 3{args}}}"#
            )
        };
        let taken = [
            (
                op(&format!(r#", "args": {{"External id": 41, {shapes}}}"#)),
                Some(41),
            ),
            (
                op(&format!(
                    ", \"args\": {{\n      \"External id\": 42,{shapes}\n    }}"
                )),
                Some(42),
            ),
            (op(r#", "args": {"External id": "43"}"#), Some(43)),
            (op(r#", "args": {"External id": null, "Ev Idx": 1}"#), None),
            (op(""), None),
        ];
        let declined = [
            op(&format!(r#", "args": {{{shapes}, "External id": 44}}"#)),
            op(r#", "args": {"External id": 45, "In split size": "[1, 2]"}"#),
            op(r#", "args": {"External id": 46, "Out split size": "[]"}"#),
            op(r#", "args": {"External id": 47, "external id": 48}"#),
            op(r#", "args": {"External id": 49, "External id": 50}"#),
            op(r#", "args": {"External id": 51, "Concrete Inputs": ["a\"b"]}"#),
            op(r#", "args": {"External id": 52, "Concrete Inputs": ["\u00e9"]}"#),
            op(r#", "args": ["External id", 53]"#),
            op(r#", "args": {"External id": 54}, "id": 1"#),
            op(&format!(
                r#", "args": {{"External id": 55, "Concrete Inputs": ["{}"]}}"#,
                "x".repeat(MAX_VALUE_BYTES)
            )),
        ];
        for (text, id) in &taken {
            let followed = format!("{text},\n{{");
            let LeanScan::CpuOp(head, got, len) = scan_lean(&followed) else {
                panic!("declined: {text}");
            };
            assert_eq!((len, got.0), (text.len(), *id), "{text}");
            // The event scan reads the same event, and nothing else a digest keeps.
            let Scan::Event(event, event_len) = scan_event(&followed, ReadScope::Digest) else {
                panic!("the event scan declines: {text}");
            };
            assert_eq!(len, event_len);
            assert_eq!(Some(head.name), event.name.as_ref().map(|t| t.0.as_ref()));
            assert_eq!(label_text(Some(&head.pid)), label_text(event.pid.as_ref()));
            assert_eq!(label_text(Some(&head.tid)), label_text(event.tid.as_ref()));
            assert_eq!((head.ts, head.dur), (Some(12_500), Some(3_000)));
            if let Some(args) = &event.args {
                assert_eq!(args.external_id.0, *id);
                assert!(args.legacy_external_id.0.is_none() && args.in_split.is_none());
            }
            // Cut anywhere, it waits for more or leaves the event to the event scan.
            for cut in 1..text.len() {
                assert!(matches!(
                    scan_lean(&text[..cut]),
                    LeanScan::NeedMore | LeanScan::Other
                ));
            }
        }
        for text in &declined {
            let followed = format!("{text},\n{{");
            assert!(
                matches!(scan_lean(&followed), LeanScan::Other),
                "{text:.120}"
            );
        }
    }

    fn scanned(text: &str) -> Option<usize> {
        match scan_event(text, ReadScope::Full) {
            Scan::Event(_, len) => Some(len),
            _ => None,
        }
    }

    #[test]
    fn scanner_declines_what_serde_reads_differently_and_waits_for_cut_text() {
        let ok = r#"{"ph": "X", "pid": 1, "tid": "7", "ts": 1.5, "args": {"correlation": 3}} ,"#;
        assert_eq!(scanned(ok), Some(ok.len() - 2));
        for declined in [
            r#"{"pid": -0}"#,                  // serde reads -0 as a float
            r#"{"pid": 1.0}"#,                 // floats are serde's
            r#"{"pid": 1234567890123456789}"#, // past 18 digits
            r#"{"name": "a\"b"}"#,             // escapes in a kept string
            r#"{"x": "\u00e9"}"#,              // \u escapes anywhere
            r#"{"ph": "X", "ph": "X"}"#,       // duplicate field
            r#"{"args": {"stream": 1, "stream": 2}}"#,
            r#"{"ts": NaN}"#,
            r#"{"x": [1, 2,]}"#,
            r#"{"x": 01}"#,
        ] {
            assert!(
                matches!(scan_event(declined, ReadScope::Full), Scan::Unusual),
                "{declined}"
            );
        }
        // Cut anywhere inside, the text asks for more rather than failing.
        for cut in 1..ok.len() - 3 {
            assert!(
                matches!(scan_event(&ok[..cut], ReadScope::Full), Scan::NeedMore),
                "cut at {cut}: {}",
                &ok[..cut]
            );
        }
    }
}
