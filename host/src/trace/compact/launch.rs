//! Compact tables for GPU ops and runtime calls: 28 and 24 bytes a record instead of the
//! plain structs' 144 and 96.
//!
//! Why: a 1 GB trace keeps about 130,000 GPU ops and 200,000 runtime calls, and as plain
//! structs they were 38 MB, more than the two million Python frames. The layout is the
//! frames' and CPU ops' ([`Spans`]: name, thread index, block-relative `ts`, `u32`
//! `dur`), plus:
//!
//! - the correlation and External ids as `u32` offsets in their block ([`Ids`]; one
//!   too far in a side map);
//! - a GPU op's kind, stream and device as one index into the few distinct triples a
//!   trace has (its "lane");
//! - the launch facts (`grid`, `block`, blocks per SM, a copy's bytes; a call's `kernel`)
//!   as one index into their distinct combinations: the same kernels launch with the
//!   same geometry again and again.
//!
//! Records read back by value as the plain [`GpuOp`] / [`RuntimeCall`], exactly as read.

use std::fmt;
use std::num::NonZeroU64;

use super::{Distinct, Ids, RecordTable, Records, Spans};
use crate::trace::event::{GpuKind, GpuOp, Ns, RuntimeCall, Sym};

/// A GPU op's kind, `stream` and `device`: a trace has a few dozen.
type Lane = (GpuKind, Option<i64>, Option<i64>);

/// A GPU op's optional launch facts, `blocks_per_sm` as its bits (so it hashes; the bits
/// give back the exact `f32`).
type GpuFacts = (
    Option<[u32; 3]>,
    Option<[u32; 3]>,
    Option<u32>,
    Option<NonZeroU64>,
);

/// A runtime call's `kernel`, `grid` and `block`.
type CallFacts = (Option<Sym>, Option<[u32; 3]>, Option<[u32; 3]>);

/// The index of a record with none of its optional facts.
const NO_FACTS: u32 = u32::MAX;

/// A GPU op's fields past name, thread and times: 16 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct GpuExtra {
    correlation: u32,
    external_id: u32,
    lane: u32,
    /// Index into `GpuOps::facts`, or [`NO_FACTS`].
    facts: u32,
}

/// The GPU ops of a trace, 28 bytes each; read back as [`GpuOp`] values.
#[derive(Clone, Default)]
pub struct GpuOps {
    spans: Spans,
    extra: Vec<GpuExtra>,
    correlations: Ids,
    external_ids: Ids,
    lanes: Distinct<Lane>,
    facts: Distinct<GpuFacts>,
}

impl GpuOps {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.len() == 0
    }

    fn extra_of(&mut self, i: usize, op: &GpuOp) -> GpuExtra {
        let facts: GpuFacts = (
            op.grid,
            op.block,
            op.blocks_per_sm.map(f32::to_bits),
            op.bytes,
        );
        GpuExtra {
            correlation: self.correlations.pack(i, op.correlation),
            external_id: self.external_ids.pack(i, op.external_id),
            lane: self.lanes.id((op.kind, op.stream, op.device)),
            facts: if facts == (None, None, None, None) {
                NO_FACTS
            } else {
                self.facts.id(facts)
            },
        }
    }

    pub fn push(&mut self, op: GpuOp) {
        let extra = self.extra_of(self.len(), &op);
        self.spans.push(op.name, (op.pid, op.tid), op.ts, op.dur);
        self.extra.push(extra);
    }

    /// Replaces op `i` (panics past the end).
    pub fn set(&mut self, i: usize, op: GpuOp) {
        self.correlations.forget(i);
        self.external_ids.forget(i);
        self.extra[i] = self.extra_of(i, &op);
        self.spans.set(i, op.name, (op.pid, op.tid), op.ts, op.dur);
    }

    /// Op `i`; panics past the end, as indexing a slice does.
    pub fn at(&self, i: usize) -> GpuOp {
        let (name, (pid, tid), ts, dur) = self.spans.at(i);
        let extra = self.extra[i];
        let (kind, stream, device) = self.lanes.get(extra.lane);
        let (grid, block, blocks_per_sm, bytes) = match extra.facts {
            NO_FACTS => (None, None, None, None),
            id => self.facts.get(id),
        };
        GpuOp {
            name,
            kind,
            ts,
            dur,
            pid,
            tid,
            stream,
            device,
            correlation: self.correlations.unpack(i, extra.correlation),
            external_id: self.external_ids.unpack(i, extra.external_id),
            grid,
            block,
            blocks_per_sm: blocks_per_sm.map(f32::from_bits),
            bytes,
        }
    }

    pub fn get(&self, i: usize) -> Option<GpuOp> {
        (i < self.len()).then(|| self.at(i))
    }

    pub fn first(&self) -> Option<GpuOp> {
        self.get(0)
    }

    pub fn last(&self) -> Option<GpuOp> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    /// Op `i`'s start, without decoding the rest (for sorts).
    pub fn ts(&self, i: usize) -> Ns {
        self.spans.ts(i)
    }

    pub fn iter(&self) -> Records<'_, GpuOps> {
        Records::new(self, self.len())
    }

    /// Keeps the ops `keep` says yes to, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&GpuOp) -> bool) {
        *self = self.iter().filter(|op| keep(op)).collect();
        self.shrink_to_fit();
    }

    /// Gives back the room kept for growth, once the read is done.
    pub fn shrink_to_fit(&mut self) {
        self.spans.shrink_to_fit();
        self.extra.shrink_to_fit();
    }

    /// The bytes this table holds on the heap (capacity included), for memory profiles.
    pub fn heap_bytes(&self) -> usize {
        self.spans.heap_bytes()
            + self.extra.capacity() * size_of::<GpuExtra>()
            + self.correlations.heap_bytes()
            + self.external_ids.heap_bytes()
            + self.lanes.heap_bytes()
            + self.facts.heap_bytes()
    }
}

/// A runtime call's fields past name, thread and times: 12 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct CallExtra {
    correlation: u32,
    external_id: u32,
    /// Index into `RuntimeCalls::facts`, or [`NO_FACTS`].
    facts: u32,
}

/// The runtime calls of a trace, 24 bytes each; read back as [`RuntimeCall`] values.
#[derive(Clone, Default)]
pub struct RuntimeCalls {
    spans: Spans,
    extra: Vec<CallExtra>,
    correlations: Ids,
    external_ids: Ids,
    facts: Distinct<CallFacts>,
}

impl RuntimeCalls {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.len() == 0
    }

    fn extra_of(&mut self, i: usize, call: &RuntimeCall) -> CallExtra {
        let facts: CallFacts = (call.kernel, call.grid, call.block);
        CallExtra {
            correlation: self.correlations.pack(i, Some(call.correlation)),
            external_id: self.external_ids.pack(i, call.external_id),
            facts: if facts == (None, None, None) {
                NO_FACTS
            } else {
                self.facts.id(facts)
            },
        }
    }

    pub fn push(&mut self, call: RuntimeCall) {
        let extra = self.extra_of(self.len(), &call);
        self.spans
            .push(call.name, (call.pid, call.tid), call.ts, call.dur);
        self.extra.push(extra);
    }

    /// Replaces call `i` (panics past the end).
    pub fn set(&mut self, i: usize, call: RuntimeCall) {
        self.correlations.forget(i);
        self.external_ids.forget(i);
        self.extra[i] = self.extra_of(i, &call);
        self.spans
            .set(i, call.name, (call.pid, call.tid), call.ts, call.dur);
    }

    /// Call `i`; panics past the end, as indexing a slice does.
    pub fn at(&self, i: usize) -> RuntimeCall {
        let (name, (pid, tid), ts, dur) = self.spans.at(i);
        let extra = self.extra[i];
        let (kernel, grid, block) = match extra.facts {
            NO_FACTS => (None, None, None),
            id => self.facts.get(id),
        };
        RuntimeCall {
            name,
            ts,
            dur,
            pid,
            tid,
            correlation: self.correlation(i),
            external_id: self.external_ids.unpack(i, extra.external_id),
            kernel,
            grid,
            block,
        }
    }

    pub fn get(&self, i: usize) -> Option<RuntimeCall> {
        (i < self.len()).then(|| self.at(i))
    }

    pub fn first(&self) -> Option<RuntimeCall> {
        self.get(0)
    }

    pub fn last(&self) -> Option<RuntimeCall> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    /// Call `i`'s start, process and correlation, each without decoding the rest: the
    /// keys the link sorts and searches calls by.
    pub fn ts(&self, i: usize) -> Ns {
        self.spans.ts(i)
    }

    pub fn pid(&self, i: usize) -> Sym {
        self.spans.thread(i).0
    }

    pub fn correlation(&self, i: usize) -> u64 {
        // Every call has one (the reader keeps no call without).
        self.correlations
            .unpack(i, self.extra[i].correlation)
            .unwrap_or_default()
    }

    /// Call `i`'s External id alone.
    pub fn external_id(&self, i: usize) -> Option<u64> {
        self.external_ids.unpack(i, self.extra[i].external_id)
    }

    pub fn iter(&self) -> Records<'_, RuntimeCalls> {
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
            + self.extra.capacity() * size_of::<CallExtra>()
            + self.correlations.heap_bytes()
            + self.external_ids.heap_bytes()
            + self.facts.heap_bytes()
    }
}

impl RecordTable for GpuOps {
    type Record = GpuOp;
    fn record(&self, i: usize) -> GpuOp {
        self.at(i)
    }
}

impl RecordTable for RuntimeCalls {
    type Record = RuntimeCall;
    fn record(&self, i: usize) -> RuntimeCall {
        self.at(i)
    }
}

record_table_traits!(GpuOps, GpuOp);
record_table_traits!(RuntimeCalls, RuntimeCall);

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_op(i: usize) -> GpuOp {
        let far = 1_700_000_000_000_000_000;
        GpuOp {
            name: Sym(i as u32 % 7),
            kind: [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset][i % 3],
            // Near, far (past an i32 offset), negative.
            ts: [1_000 * i as Ns, far, -5][i % 3],
            // Short, past u32, the sentinel's own value.
            dur: [10, Ns::from(u32::MAX) + 9, Ns::from(u32::MAX)][i % 3],
            pid: Sym(1),
            tid: Sym(2 + (i % 2) as u32),
            stream: [Some(7), None, Some(-1)][i % 3],
            device: [Some(0), None][i % 2],
            correlation: [
                Some(i as u64),
                None,
                Some(u64::MAX),
                Some(u64::from(u32::MAX)),
            ][i % 4],
            external_id: [None, Some(u64::from(u32::MAX) - 1), Some(3)][i % 3],
            grid: [Some([1, 2, 3]), None, Some([u32::MAX; 3])][i % 3],
            block: [None, Some([256, 1, 1])][i % 2],
            blocks_per_sm: [Some(0.125), None, Some(f32::MAX), Some(0.0)][i % 4],
            bytes: [None, NonZeroU64::new(u64::MAX), NonZeroU64::new(4096)][i % 3],
        }
    }

    #[test]
    fn gpu_ops_read_back_exactly_with_huge_ids_far_times_and_absent_facts() {
        let ops: Vec<GpuOp> = (0..2_100).map(gpu_op).collect();
        let table: GpuOps = ops.iter().copied().collect();
        assert_eq!(table.len(), ops.len());
        assert_eq!(table.iter().collect::<Vec<_>>(), ops);
        assert_eq!(table.ts(4), ops[4].ts);
        assert_eq!(table.last(), ops.last().copied());
        assert_eq!(table.get(ops.len()), None);
        // Few lanes and fact combinations, however many ops.
        assert_eq!(table.lanes.values.len(), 6);
        assert!(table.facts.values.len() <= 36);
    }

    #[test]
    fn gpu_ops_set_and_retain_keep_the_others_exact() {
        let ops: Vec<GpuOp> = (0..50).map(gpu_op).collect();
        let mut table: GpuOps = ops.iter().copied().collect();
        let changed = GpuOp {
            correlation: None,
            external_id: Some(u64::MAX - 1),
            device: Some(3),
            ts: 17,
            ..ops[2]
        };
        table.set(2, changed);
        assert_eq!(table.at(2), changed);
        assert_eq!(table.at(3), ops[3]);
        table.retain(|op| op.tid == Sym(2));
        // The even ops (thread 2), op 2 as changed.
        let expected: Vec<GpuOp> = (0..50)
            .filter(|i| i % 2 == 0)
            .map(|i| if i == 2 { changed } else { ops[i] })
            .collect();
        assert_eq!(table.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn runtime_calls_read_back_exactly() {
        let calls: Vec<RuntimeCall> = (0..1_500)
            .map(|i| RuntimeCall {
                name: Sym(i as u32 % 3),
                ts: [10 * i as Ns, i64::MAX - 1, 0][i % 3],
                dur: [5, Ns::from(u32::MAX) + 1][i % 2],
                pid: Sym(1),
                tid: Sym(4),
                correlation: [i as u64, u64::MAX, u64::from(u32::MAX), 0][i % 4],
                external_id: [None, Some(u64::from(u32::MAX) + 1), Some(9)][i % 3],
                kernel: [None, Some(Sym(8))][i % 2],
                grid: [Some([4, 4, 1]), None][i % 2],
                block: [None, None, Some([64, 1, 1])][i % 3],
            })
            .collect();
        let mut table: RuntimeCalls = calls.iter().copied().collect();
        assert_eq!(table.iter().collect::<Vec<_>>(), calls);
        assert_eq!(table.correlation(1), u64::MAX);
        assert_eq!(table.pid(5), Sym(1));
        assert_eq!(table.ts(1), i64::MAX - 1);
        let changed = RuntimeCall {
            kernel: Some(Sym(2)),
            correlation: 12,
            ..calls[1]
        };
        table.set(1, changed);
        assert_eq!(table.at(1), changed);
        assert_eq!(table.at(5), calls[5]);
        assert_ne!(table, calls.iter().copied().collect::<RuntimeCalls>());
    }
}
