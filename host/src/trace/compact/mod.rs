//! Compact tables for the records a trace holds millions of: Python frames and CPU ops
//! here, GPU ops and runtime calls in [`launch`].
//!
//! Why: a 1 GB trace keeps about two million frames and 700,000 CPU ops, and as plain
//! structs (`i64` times, a pid and a tid each, three `Option<Sym>` shapes, an
//! `Option<u64>` id) they were 32 and 72 bytes each: most of a triage's peak memory. Here
//! each is stored in 12 (frame) or 20 (CPU op) bytes, exactly:
//!
//! - the name (a [`Sym`], under 2^24 in any real trace: they hold a few thousand
//!   strings) and the thread (pid, tid), an index into the table's list of threads (a
//!   trace has a few dozen), share one `u32`;
//! - `ts` is an `i32` offset from the start of its block of [`BLOCK`] consecutive
//!   records (the first one's `ts`): neighbours in a file are close in time;
//! - `dur` is a `u32` (4.29 s);
//! - a CPU op's three shape texts are one interned triple, its External id a `u32`
//!   offset from its block's first;
//! - a value that does not fit (a record far from its block's start, a longer one, a huge
//!   id) is kept exactly in a side map, so every time stays the exact integer the reader
//!   read.
//!
//! The records are read back as the plain [`PyFrame`] / [`CpuOp`] values (by value:
//! `for f in &trace.py_frames { f.ts }`), so code that reads them does not see the
//! layout.

use std::fmt;
use std::ops::Range;

use rustc_hash::FxHashMap;

use std::hash::Hash;

use crate::trace::event::{CpuOp, Ns, PyFrame, Sym};

/// The standard traits of a compact table, the same for every table: iteration by value,
/// building from records, equality of records (whatever the layout: blocks, side maps)
/// and a `Debug` list of records. Each table has `iter`, `push`, `len` and `Default`.
macro_rules! record_table_traits {
    ($table:ty, $record:ty) => {
        impl<'t> IntoIterator for &'t $table {
            type Item = $record;
            type IntoIter = Records<'t, $table>;
            fn into_iter(self) -> Self::IntoIter {
                self.iter()
            }
        }

        impl FromIterator<$record> for $table {
            fn from_iter<I: IntoIterator<Item = $record>>(iter: I) -> Self {
                let mut table = <$table>::default();
                table.extend(iter);
                table
            }
        }

        impl Extend<$record> for $table {
            fn extend<I: IntoIterator<Item = $record>>(&mut self, iter: I) {
                iter.into_iter().for_each(|record| self.push(record));
            }
        }

        impl PartialEq for $table {
            fn eq(&self, other: &Self) -> bool {
                self.len() == other.len() && self.iter().eq(other.iter())
            }
        }

        impl fmt::Debug for $table {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.iter()).finish()
            }
        }
    };
}

mod launch;
pub use launch::{GpuOps, RuntimeCalls};

/// Records per time block: one `i64` base per block (under 0.1 % of a frame's 12 bytes).
const BLOCK: usize = 1024;

/// An offset or duration kept in a side map instead.
const FAR_TS: i32 = i32::MIN;
const LONG_DUR: u32 = u32::MAX;

/// What every compact record has: name and thread, start and duration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Packed {
    /// The name's symbol in the low 24 bits, the thread index in the high 8; or
    /// [`FAR_NAME`] bits there, and both in `Spans::far_names`.
    name_thread: u32,
    ts: i32,
    dur: u32,
}

/// Name symbols and thread indexes that fit [`Packed::name_thread`].
const NAME_BITS: u32 = 24;
const NAME_MASK: u32 = (1 << NAME_BITS) - 1;
/// A thread index of all ones: this record's name and thread are in the side map.
const FAR_NAME: u32 = u32::MAX >> NAME_BITS;

/// The name, thread and exact times of a table's records, 12 bytes each.
#[derive(Clone, Debug, Default)]
struct Spans {
    packed: Vec<Packed>,
    /// The `ts` each block's offsets count from: its first record's.
    bases: Vec<Ns>,
    /// (pid, tid) of each thread index, and the index of each.
    threads: Vec<(Sym, Sym)>,
    thread_ids: FxHashMap<(Sym, Sym), u32>,
    /// The (name, thread index) of records where either did not fit, by record index.
    far_names: FxHashMap<u32, (Sym, u32)>,
    /// Exact values of the records whose `ts` / `dur` did not fit, by record index.
    far_ts: FxHashMap<u32, Ns>,
    long_durs: FxHashMap<u32, Ns>,
}

impl Spans {
    fn len(&self) -> usize {
        self.packed.len()
    }

    fn thread_id(&mut self, thread: (Sym, Sym)) -> u32 {
        // Consecutive records are mostly on the thread of the last one.
        if let Some(last) = self.packed.len().checked_sub(1) {
            let (_, id) = self.name_thread(last);
            if self.threads[id as usize] == thread {
                return id;
            }
        }
        let next = self.threads.len() as u32;
        let id = *self.thread_ids.entry(thread).or_insert(next);
        if id == next {
            self.threads.push(thread);
        }
        id
    }

    /// The packed form of a record at index `i` (whose block has a base by then).
    fn pack(&mut self, i: usize, name: Sym, thread: (Sym, Sym), ts: Ns, dur: Ns) -> Packed {
        let thread = self.thread_id(thread);
        let key = i as u32;
        let name_thread = if name.0 <= NAME_MASK && thread < FAR_NAME {
            name.0 | thread << NAME_BITS
        } else {
            self.far_names.insert(key, (name, thread));
            FAR_NAME << NAME_BITS
        };
        let offset = ts
            .checked_sub(self.bases[i / BLOCK])
            .and_then(|d| i32::try_from(d).ok())
            .filter(|&d| d != FAR_TS);
        let ts = offset.unwrap_or_else(|| {
            self.far_ts.insert(key, ts);
            FAR_TS
        });
        let dur = match u32::try_from(dur).ok().filter(|&d| d != LONG_DUR) {
            Some(dur) => dur,
            None => {
                self.long_durs.insert(key, dur);
                LONG_DUR
            }
        };
        Packed {
            name_thread,
            ts,
            dur,
        }
    }

    fn push(&mut self, name: Sym, thread: (Sym, Sym), ts: Ns, dur: Ns) {
        let i = self.packed.len();
        if i.is_multiple_of(BLOCK) {
            self.bases.push(ts);
        }
        let packed = self.pack(i, name, thread, ts, dur);
        self.packed.push(packed);
    }

    /// Replaces record `i`'s values (its block's base stays).
    fn set(&mut self, i: usize, name: Sym, thread: (Sym, Sym), ts: Ns, dur: Ns) {
        self.far_names.remove(&(i as u32));
        self.far_ts.remove(&(i as u32));
        self.long_durs.remove(&(i as u32));
        self.packed[i] = self.pack(i, name, thread, ts, dur);
    }

    /// Record `i`'s start alone.
    fn ts(&self, i: usize) -> Ns {
        match self.packed[i].ts {
            FAR_TS => self.far_ts[&(i as u32)],
            offset => self.bases[i / BLOCK] + Ns::from(offset),
        }
    }

    /// Record `i`'s (start, end), the end saturating.
    fn span(&self, i: usize) -> (Ns, Ns) {
        let dur = match self.packed[i].dur {
            LONG_DUR => self.long_durs[&(i as u32)],
            dur => Ns::from(dur),
        };
        let ts = self.ts(i);
        (ts, ts.saturating_add(dur))
    }

    /// Record `i`'s name and thread index.
    fn name_thread(&self, i: usize) -> (Sym, u32) {
        let bits = self.packed[i].name_thread;
        match bits >> NAME_BITS {
            FAR_NAME => self.far_names[&(i as u32)],
            thread => (Sym(bits & NAME_MASK), thread),
        }
    }

    /// Record `i`'s thread index (into `threads`) alone.
    fn thread_index(&self, i: usize) -> u32 {
        self.name_thread(i).1
    }

    /// Record `i`'s (pid, tid) alone.
    fn thread(&self, i: usize) -> (Sym, Sym) {
        self.threads[self.name_thread(i).1 as usize]
    }

    /// (name, (pid, tid), ts, dur) of record `i`.
    fn at(&self, i: usize) -> (Sym, (Sym, Sym), Ns, Ns) {
        let p = self.packed[i];
        let ts = match p.ts {
            FAR_TS => self.far_ts[&(i as u32)],
            offset => self.bases[i / BLOCK] + Ns::from(offset),
        };
        let dur = match p.dur {
            LONG_DUR => self.long_durs[&(i as u32)],
            dur => Ns::from(dur),
        };
        let (name, thread) = self.name_thread(i);
        (name, self.threads[thread as usize], ts, dur)
    }

    fn shrink_to_fit(&mut self) {
        self.packed.shrink_to_fit();
        self.bases.shrink_to_fit();
    }

    fn heap_bytes(&self) -> usize {
        self.packed.capacity() * size_of::<Packed>()
            + self.bases.capacity() * size_of::<Ns>()
            + self.threads.capacity() * size_of::<(Sym, Sym)>()
            + map_bytes(&self.thread_ids)
            + map_bytes(&self.far_names)
            + map_bytes(&self.far_ts)
            + map_bytes(&self.long_durs)
    }
}

/// A packed id: none, or one kept in the side map.
const NO_ID: u32 = u32::MAX;
const FAR_ID: u32 = u32::MAX - 1;

/// Optional ids (correlation, External id) in 4 bytes each: an offset from the first id
/// of the record's block of [`BLOCK`] (ids count up through a file, so neighbours are
/// close, however large: a tiled trace's pass beyond 2^32), or [`NO_ID`]. An id too far
/// from its block's first is kept exactly in a side map by record index.
#[derive(Clone, Debug, Default)]
struct Ids {
    /// Each block's first id, once it has one.
    bases: Vec<Option<u64>>,
    far: FxHashMap<u32, u64>,
}

impl Ids {
    /// The packed form of record `i`'s id.
    fn pack(&mut self, i: usize, id: Option<u64>) -> u32 {
        let Some(id) = id else { return NO_ID };
        let block = i / BLOCK;
        if self.bases.len() <= block {
            self.bases.resize(block + 1, None);
        }
        let base = *self.bases[block].get_or_insert(id);
        let offset = i128::from(id) - i128::from(base);
        // An `i32` offset's bits, but for the two sentinels'.
        match i32::try_from(offset).map(|d| d as u32) {
            Ok(bits) if bits < FAR_ID => bits,
            _ => {
                self.far.insert(i as u32, id);
                FAR_ID
            }
        }
    }

    fn unpack(&self, i: usize, packed: u32) -> Option<u64> {
        match packed {
            NO_ID => None,
            FAR_ID => Some(self.far[&(i as u32)]),
            bits => {
                let base = self.bases[i / BLOCK].unwrap_or_default();
                Some(base.wrapping_add_signed(i64::from(bits as i32)))
            }
        }
    }

    /// Drops record `i`'s side entry, before it is packed again.
    fn forget(&mut self, i: usize) {
        self.far.remove(&(i as u32));
    }

    fn heap_bytes(&self) -> usize {
        self.bases.capacity() * size_of::<Option<u64>>() + map_bytes(&self.far)
    }
}

/// Each distinct value once, by a `u32` index (values that repeat across records: a GPU
/// op's stream, a launch's geometry).
#[derive(Clone, Debug)]
struct Distinct<T> {
    values: Vec<T>,
    ids: FxHashMap<T, u32>,
}

impl<T> Default for Distinct<T> {
    fn default() -> Self {
        Distinct {
            values: Vec::new(),
            ids: FxHashMap::default(),
        }
    }
}

impl<T: Copy + Eq + Hash> Distinct<T> {
    fn id(&mut self, value: T) -> u32 {
        let next = self.values.len() as u32;
        let id = *self.ids.entry(value).or_insert(next);
        if id == next {
            self.values.push(value);
        }
        id
    }

    fn get(&self, id: u32) -> T {
        self.values[id as usize]
    }

    fn heap_bytes(&self) -> usize {
        self.values.capacity() * size_of::<T>() + map_bytes(&self.ids)
    }
}

/// About what a hash map holds on the heap: its slots and their control bytes.
fn map_bytes<K, V>(map: &FxHashMap<K, V>) -> usize {
    map.capacity() * (size_of::<(K, V)>() + 1)
}

/// The Python frames of a trace, 12 bytes each; read back as [`PyFrame`] values.
#[derive(Clone, Default)]
pub struct PyFrames {
    spans: Spans,
    /// [`PyFrames::name_counts`], counted on its first call (four passes read it per
    /// trace, through `Trace::frame_names`); cleared by a push.
    name_counts: std::sync::OnceLock<Vec<(Sym, u64)>>,
}

impl PyFrames {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.len() == 0
    }

    pub fn push(&mut self, f: PyFrame) {
        self.spans.push(f.name, (f.pid, f.tid), f.ts, f.dur);
        self.name_counts.take();
    }

    /// Frame `i`; panics past the end, as indexing a slice does.
    pub fn at(&self, i: usize) -> PyFrame {
        let (name, (pid, tid), ts, dur) = self.spans.at(i);
        PyFrame {
            name,
            ts,
            dur,
            pid,
            tid,
        }
    }

    pub fn get(&self, i: usize) -> Option<PyFrame> {
        (i < self.len()).then(|| self.at(i))
    }

    /// The (pid, tid) of frame `i`, without decoding its times.
    pub fn thread(&self, i: usize) -> (Sym, Sym) {
        self.spans.thread(i)
    }

    /// The table's threads, (pid, tid), by [`PyFrames::thread_index`]: a trace has a few
    /// dozen, so a pass that groups records by thread can index a list instead of
    /// hashing each record's (pid, tid).
    pub fn threads(&self) -> &[(Sym, Sym)] {
        &self.spans.threads
    }

    /// Frame `i`'s index into [`PyFrames::threads`].
    pub fn thread_index(&self, i: usize) -> u32 {
        self.spans.thread_index(i)
    }

    /// Each distinct frame name below `symbols` (the trace's interner size) with its
    /// number of frames, in symbol order: one pass over the packed names, no times
    /// decoded. A trace holds millions of frames and a few thousand names, and the
    /// passes that count frames by name (the diffusers check, the evidence, the model
    /// class, the fuse facts) each decoded every frame whole before.
    ///
    /// Counted once: every frame's name is below `symbols` (callers pass the interner's
    /// size, which only grows), so a later call's answer is the first one's.
    pub fn name_counts(&self, symbols: usize) -> &[(Sym, u64)] {
        self.name_counts.get_or_init(|| self.count_names(symbols))
    }

    fn count_names(&self, symbols: usize) -> Vec<(Sym, u64)> {
        let mut counts: Vec<u64> = vec![0; symbols];
        for i in 0..self.len() {
            if let Some(count) = counts.get_mut(self.name(i).0 as usize) {
                *count += 1;
            }
        }
        counts
            .into_iter()
            .enumerate()
            .filter(|&(_, n)| n > 0)
            .map(|(sym, n)| (Sym(sym as u32), n))
            .collect()
    }

    /// Frame `i`'s name alone.
    pub fn name(&self, i: usize) -> Sym {
        self.spans.name_thread(i).0
    }

    /// Frame `i`'s (start, end) alone, the end saturating as [`PyFrame::end`] does.
    pub fn span(&self, i: usize) -> (Ns, Ns) {
        self.spans.span(i)
    }

    pub fn iter(&self) -> Records<'_, PyFrames> {
        Records::new(self, self.len())
    }

    /// Gives back the room kept for growth, once the read is done.
    pub fn shrink_to_fit(&mut self) {
        self.spans.shrink_to_fit();
    }

    /// The bytes this table holds on the heap (capacity included), for memory profiles.
    pub fn heap_bytes(&self) -> usize {
        self.spans.heap_bytes()
    }
}

/// A CPU op's fields past name, thread and times: 8 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct CpuExtra {
    /// `external_id` as [`Ids`] packs it.
    external_id: u32,
    /// Index into `CpuOps::shapes`, or [`NO_SHAPES`].
    shapes: u32,
}

const NO_SHAPES: u32 = u32::MAX;

/// `input_dims`, `input_types`, `concrete_inputs` of one CPU op.
type Shapes = [Option<Sym>; 3];

/// The CPU ops of a trace, 20 bytes each; read back as [`CpuOp`] values.
#[derive(Clone, Default)]
pub struct CpuOps {
    spans: Spans,
    extra: Vec<CpuExtra>,
    external_ids: Ids,
    /// Each distinct shape triple once (shapes repeat: a model runs the same ops).
    shapes: Distinct<Shapes>,
}

impl CpuOps {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.len() == 0
    }

    fn extra_of(&mut self, i: usize, op: &CpuOp) -> CpuExtra {
        let shapes: Shapes = [op.input_dims, op.input_types, op.concrete_inputs];
        CpuExtra {
            external_id: self.external_ids.pack(i, op.external_id),
            shapes: if shapes == [None; 3] {
                NO_SHAPES
            } else {
                self.shapes.id(shapes)
            },
        }
    }

    pub fn push(&mut self, op: CpuOp) {
        let extra = self.extra_of(self.len(), &op);
        self.spans.push(op.name, (op.pid, op.tid), op.ts, op.dur);
        self.extra.push(extra);
    }

    /// Replaces op `i` (panics past the end).
    pub fn set(&mut self, i: usize, op: CpuOp) {
        self.external_ids.forget(i);
        self.extra[i] = self.extra_of(i, &op);
        self.spans.set(i, op.name, (op.pid, op.tid), op.ts, op.dur);
    }

    /// Op `i`; panics past the end, as indexing a slice does.
    pub fn at(&self, i: usize) -> CpuOp {
        let (name, (pid, tid), ts, dur) = self.spans.at(i);
        let extra = self.extra[i];
        let external_id = self.external_ids.unpack(i, extra.external_id);
        let [input_dims, input_types, concrete_inputs] = match extra.shapes {
            NO_SHAPES => [None; 3],
            id => self.shapes.get(id),
        };
        CpuOp {
            name,
            ts,
            dur,
            pid,
            tid,
            external_id,
            input_dims,
            input_types,
            concrete_inputs,
        }
    }

    pub fn get(&self, i: usize) -> Option<CpuOp> {
        (i < self.len()).then(|| self.at(i))
    }

    /// The (pid, tid) of op `i`, without decoding the rest.
    pub fn thread(&self, i: usize) -> (Sym, Sym) {
        self.spans.thread(i)
    }

    /// The table's threads by [`CpuOps::thread_index`] (see [`PyFrames::threads`]).
    pub fn threads(&self) -> &[(Sym, Sym)] {
        &self.spans.threads
    }

    /// Op `i`'s name alone.
    pub fn name(&self, i: usize) -> Sym {
        self.spans.name_thread(i).0
    }

    /// Op `i`'s index into [`CpuOps::threads`].
    pub fn thread_index(&self, i: usize) -> u32 {
        self.spans.thread_index(i)
    }

    /// Op `i`'s start, its External id and its (start, end), each without decoding the
    /// rest: the keys the link sorts and sweeps ops by.
    pub fn ts(&self, i: usize) -> Ns {
        self.spans.ts(i)
    }

    pub fn external_id(&self, i: usize) -> Option<u64> {
        self.external_ids.unpack(i, self.extra[i].external_id)
    }

    pub fn span(&self, i: usize) -> (Ns, Ns) {
        self.spans.span(i)
    }

    pub fn iter(&self) -> Records<'_, CpuOps> {
        Records::new(self, self.len())
    }

    /// Gives back the room kept for growth, once the read is done.
    pub fn shrink_to_fit(&mut self) {
        self.spans.shrink_to_fit();
        self.extra.shrink_to_fit();
    }

    /// The bytes this table holds on the heap (capacity included), for memory profiles.
    pub fn heap_bytes(&self) -> usize {
        self.spans.heap_bytes()
            + self.extra.capacity() * size_of::<CpuExtra>()
            + self.external_ids.heap_bytes()
            + self.shapes.heap_bytes()
    }
}

/// A table whose records read back as plain values.
pub trait RecordTable {
    type Record;
    fn record(&self, i: usize) -> Self::Record;
}

impl RecordTable for PyFrames {
    type Record = PyFrame;
    fn record(&self, i: usize) -> PyFrame {
        self.at(i)
    }
}

impl RecordTable for CpuOps {
    type Record = CpuOp;
    fn record(&self, i: usize) -> CpuOp {
        self.at(i)
    }
}

/// The records of a table in order, by value.
#[derive(Clone)]
pub struct Records<'t, T> {
    table: &'t T,
    range: Range<usize>,
}

impl<'t, T> Records<'t, T> {
    fn new(table: &'t T, len: usize) -> Self {
        Records {
            table,
            range: 0..len,
        }
    }
}

impl<T: RecordTable> Iterator for Records<'_, T> {
    type Item = T::Record;

    fn next(&mut self) -> Option<T::Record> {
        self.range.next().map(|i| self.table.record(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }

    fn nth(&mut self, n: usize) -> Option<T::Record> {
        self.range.nth(n).map(|i| self.table.record(i))
    }
}

impl<T: RecordTable> DoubleEndedIterator for Records<'_, T> {
    fn next_back(&mut self) -> Option<T::Record> {
        self.range.next_back().map(|i| self.table.record(i))
    }
}

impl<T: RecordTable> ExactSizeIterator for Records<'_, T> {}

record_table_traits!(PyFrames, PyFrame);
record_table_traits!(CpuOps, CpuOp);

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: u32, ts: Ns, dur: Ns, tid: u32) -> PyFrame {
        PyFrame {
            name: Sym(name),
            ts,
            dur,
            pid: Sym(0),
            tid: Sym(tid),
        }
    }

    /// The counted-once name counts are the fresh count's, on every call, and a push
    /// after a call is counted.
    #[test]
    fn frame_name_counts_are_counted_once_and_recounted_after_a_push() {
        let mut frames = PyFrames::default();
        for (name, ts) in [(3, 0), (1, 10), (3, 20), (7, 30)] {
            frames.push(frame(name, ts, 5, 1));
        }
        let expected = vec![(Sym(1), 1), (Sym(3), 2), (Sym(7), 1)];
        assert_eq!(frames.count_names(8), expected);
        assert_eq!(frames.name_counts(8), expected);
        assert_eq!(
            frames.name_counts(20),
            expected,
            "a grown interner counts the same"
        );
        frames.push(frame(1, 40, 5, 2));
        assert_eq!(
            frames.name_counts(8),
            [(Sym(1), 2), (Sym(3), 2), (Sym(7), 1)]
        );
        assert_eq!(frames.name_counts(8), frames.count_names(8));
    }

    #[test]
    fn frames_read_back_exactly_whatever_their_times() {
        // Near and far from the block start, negative, past i32 and u32 offsets, the
        // sentinels' own values, long and negative durations, across block boundaries.
        let times: Vec<(Ns, Ns)> = vec![
            (1_365_627_862_757_064, 87_412_863),
            (1_365_627_862_757_000, 0),
            (0, 1),
            (i64::MAX - 5, 5),
            (i64::MIN, 7),
            (
                1_365_627_862_757_064 + Ns::from(i32::MAX),
                Ns::from(u32::MAX),
            ),
            (
                1_365_627_862_757_064 - Ns::from(i32::MAX) - 1,
                Ns::from(u32::MAX) + 1,
            ),
            (1_365_627_862_757_064 + 3, -4),
        ];
        let frames: Vec<PyFrame> = (0..3 * BLOCK + 17)
            .map(|i| {
                let (ts, dur) = times[i % times.len()];
                frame(i as u32 % 97, ts, dur, (i % 5) as u32)
            })
            .collect();
        let table: PyFrames = frames.iter().copied().collect();
        assert_eq!(table.len(), frames.len());
        let back: Vec<PyFrame> = table.iter().collect();
        assert_eq!(back, frames);
        assert_eq!(table.get(frames.len()), None);
        assert_eq!(table.thread(7), (Sym(0), Sym(2)));
        let reversed: Vec<PyFrame> = table.iter().rev().collect();
        assert_eq!(reversed.first(), frames.last());
    }

    #[test]
    fn cpu_ops_keep_ids_and_shapes_exactly() {
        let op = |i: u64, external_id, shapes: Shapes| CpuOp {
            name: Sym(i as u32),
            ts: 1_000 * i as Ns,
            dur: 10,
            pid: Sym(1),
            tid: Sym(2),
            external_id,
            input_dims: shapes[0],
            input_types: shapes[1],
            concrete_inputs: shapes[2],
        };
        let ops = vec![
            op(0, None, [None; 3]),
            op(1, Some(0), [Some(Sym(4)), None, None]),
            op(2, Some(u64::from(u32::MAX)), [None, None, Some(Sym(5))]),
            op(3, Some(u64::MAX), [Some(Sym(4)), None, None]),
            op(
                4,
                Some(u64::from(FAR_ID)),
                [Some(Sym(4)), Some(Sym(6)), Some(Sym(7))],
            ),
            op(5, Some(u64::from(FAR_ID) - 1), [None; 3]),
        ];
        let mut table: CpuOps = ops.iter().copied().collect();
        assert_eq!(table.iter().collect::<Vec<_>>(), ops);
        // Two ops with one triple share it.
        assert_eq!(table.shapes.values.len(), 3);
        let changed = op(9, Some(u64::MAX - 1), [None, Some(Sym(8)), None]);
        table.set(2, changed);
        assert_eq!(table.at(2), changed);
        assert_eq!(table.at(3), ops[3]);
    }

    #[test]
    fn names_and_threads_past_their_bits_read_back_exactly() {
        // 300 threads (past the 8-bit index) and names past 2^24, among ordinary ones.
        let frames: Vec<PyFrame> = (0..2_000u32)
            .map(|i| {
                let name = if i % 7 == 0 { u32::MAX - i } else { i % 50 };
                frame(name, 1_000 * Ns::from(i), 3, i % 300)
            })
            .collect();
        let mut table: PyFrames = frames.iter().copied().collect();
        assert_eq!(table.iter().collect::<Vec<_>>(), frames);
        assert_eq!(table.thread(299), (Sym(0), Sym(299)));
        // A far record made ordinary, and back.
        let mut ops: CpuOps = frames
            .iter()
            .map(|f| CpuOp {
                name: f.name,
                ts: f.ts,
                dur: f.dur,
                pid: f.pid,
                tid: f.tid,
                external_id: None,
                input_dims: None,
                input_types: None,
                concrete_inputs: None,
            })
            .collect();
        let near = CpuOp {
            name: Sym(3),
            tid: Sym(1),
            ..ops.at(0)
        };
        ops.set(0, near);
        assert_eq!(ops.at(0), near);
        assert_eq!(ops.spans.far_names.get(&0), None);
        let far = CpuOp {
            name: Sym(1 << 24),
            ..near
        };
        ops.set(0, far);
        assert_eq!(ops.at(0), far);
        assert_eq!(ops.thread(0), (Sym(0), Sym(1)));
        table.push(frame(1 << 24, 5, 5, 299));
        assert_eq!(table.at(frames.len()), frame(1 << 24, 5, 5, 299));
    }

    #[test]
    fn ids_pack_as_offsets_in_their_block_whatever_their_size() {
        let mut ids = Ids::default();
        // A tiled trace's ids, past u32, counting up and down a little: no side entry.
        let tiled: Vec<Option<u64>> = (0..3 * BLOCK as u64)
            .map(|i| (i % 5 != 0).then(|| 12_862_522_656 + i * 3 - (i % 7) * 11))
            .collect();
        let packed: Vec<u32> = tiled
            .iter()
            .enumerate()
            .map(|(i, &id)| ids.pack(i, id))
            .collect();
        assert!(ids.far.is_empty());
        // The sentinels' own offsets (-1, -2 from the base), the extremes, a block whose
        // first record has none.
        let n = packed.len();
        let edge = [
            None,
            Some(u64::MAX),
            Some(u64::MAX - 1),
            Some(u64::MAX - 2),
            Some(u64::MAX - 3),
            Some(0),
            Some(u64::MAX - 3 - (1 << 31)),
            Some(u64::MAX - 4),
        ];
        let edge_packed: Vec<u32> = edge
            .iter()
            .enumerate()
            .map(|(k, &id)| ids.pack(n + k, id))
            .collect();
        for (i, (&id, &bits)) in tiled
            .iter()
            .chain(&edge)
            .zip(packed.iter().chain(&edge_packed))
            .enumerate()
        {
            assert_eq!(ids.unpack(i, bits), id, "record {i}");
        }
        // u64::MAX is the block's base: -1 and -2 (the sentinels), 0 and -3 - 2^31 are far.
        assert_eq!(ids.far.len(), 4);
    }

    #[test]
    fn equal_records_are_equal_tables() {
        let a: PyFrames = [frame(1, 5, 5, 0), frame(2, 6, 1, 1)].into_iter().collect();
        let mut b = a.clone();
        assert_eq!(a, b);
        b.push(frame(3, 1, 1, 0));
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}").matches("PyFrame").count(), 2);
    }
}
