//! Compact records of the trace events later steps need.
//!
//! The reader turns each JSON event straight into one of these; no JSON tree is kept.
//! Strings (names, pids, tids) are interned once per trace and referred to by [`Sym`].
//! Times are integer nanoseconds, so sums of `dur` are exact (Kineto writes
//! microseconds with at most three decimals).

use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::num::NonZeroU64;

pub use crate::trace::compact::{CpuOps, GpuOps, PyFrames, RuntimeCalls};
use std::path::PathBuf;

/// An interned string of one [`Trace`]'s [`Interner`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// Time or duration in nanoseconds.
pub type Ns = i64;

/// Converts nanoseconds to the microseconds reports use.
pub fn ns_to_us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

/// String table: each distinct string stored once.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Interner {
    // Fx: names are hashed once per event on the read path; SipHash's DoS resistance
    // buys nothing for a local file and cost ~10% of read time.
    map: FxHashMap<Box<str>, Sym>,
    strings: Vec<Box<str>>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&sym) = self.map.get(s) {
            return sym;
        }
        let sym = Sym(self.strings.len() as u32);
        let boxed: Box<str> = s.into();
        self.strings.push(boxed.clone());
        self.map.insert(boxed, sym);
        sym
    }

    /// The symbol of `s` if it was ever interned.
    pub fn lookup(&self, s: &str) -> Option<Sym> {
        self.map.get(s).copied()
    }

    pub fn get(&self, sym: Sym) -> &str {
        &self.strings[sym.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

/// What kind of GPU activity an event is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
}

/// A kernel, memcpy or memset that ran on a GPU stream (`cat` `kernel`, `gpu_memcpy`,
/// `gpu_memset`; legacy `Kernel`, `Memcpy`, `Memset`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GpuOp {
    pub name: Sym,
    pub kind: GpuKind,
    pub ts: Ns,
    pub dur: Ns,
    pub pid: Sym,
    pub tid: Sym,
    /// `args.stream` (or `args.cuda_stream`); `None` when absent.
    pub stream: Option<i64>,
    /// `args.device`, when present.
    pub device: Option<i64>,
    /// `args.correlation`: links to the runtime call that launched it.
    pub correlation: Option<u64>,
    /// `args["External id"]`: links to the `cpu_op` around the launch.
    pub external_id: Option<u64>,
    /// `args.grid` and `args.block` (x, y, z), when present: the launch geometry. `None`
    /// unless the value is an array of three integers that fit a `u32`.
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    /// `args["blocks per SM"]`, when present (Kineto writes it for CUDA kernels): a
    /// finite, non-negative number, else `None`.
    pub blocks_per_sm: Option<f32>,
    /// A memcpy's or memset's `args.bytes` (Kineto writes it on both), when it is a
    /// positive integer that fits a `u64`; `None` for kernels and for a zero count.
    pub bytes: Option<NonZeroU64>,
}

impl GpuOp {
    pub fn end(&self) -> Ns {
        // Saturating: a hostile trace may put ts + dur past i64; the reader counts those
        // as bad times, and nothing downstream may panic on one that slips through.
        self.ts.saturating_add(self.dur)
    }
}

/// A CUDA/HIP runtime or driver call (`cat` `cuda_runtime`, `cuda_driver`; legacy
/// `Runtime`) that carries a `correlation` id: kernel launches, graph launches, memcpy
/// and memset calls.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RuntimeCall {
    pub name: Sym,
    pub ts: Ns,
    pub dur: Ns,
    pub pid: Sym,
    pub tid: Sym,
    pub correlation: u64,
    pub external_id: Option<u64>,
    /// `args.kernel`: the kernel a launch call names (ROCm writes it; a graph-capture
    /// trace's launches are its only record of the graph's nodes). `None` unless a
    /// string.
    pub kernel: Option<Sym>,
    /// `args.grid` and `args.block` of a launch call, when present (as [`GpuOp::grid`]).
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
}

/// An operator on the CPU (`cat` `cpu_op`; legacy `Operator`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CpuOp {
    pub name: Sym,
    pub ts: Ns,
    pub dur: Ns,
    pub pid: Sym,
    pub tid: Sym,
    pub external_id: Option<u64>,
    /// `args["Input Dims"]` (the 2021 layout's `Input dims`), `args["Input type"]` and
    /// `args["Concrete Inputs"]` as their JSON text (interned: shapes repeat), when the
    /// trace recorded shapes and the value is an array. The text is compact, whatever the
    /// writer's indentation: no whitespace outside strings (`[[1,2880],[2880,25136]]`,
    /// `["c10::BFloat16",""]`), strings as written, lone surrogate escapes as `\ufffd`,
    /// so one shape has one symbol and `serde_json` parses every one.
    pub input_dims: Option<Sym>,
    pub input_types: Option<Sym>,
    pub concrete_inputs: Option<Sym>,
}

/// A Python frame (`cat` `python_function`), named `path(line): function`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PyFrame {
    pub name: Sym,
    pub ts: Ns,
    pub dur: Ns,
    pub pid: Sym,
    pub tid: Sym,
}

impl PyFrame {
    pub fn end(&self) -> Ns {
        // Saturating: a hostile trace may put ts + dur past i64; the reader counts those
        // as bad times, and nothing downstream may panic on one that slips through.
        self.ts.saturating_add(self.dur)
    }
}

/// A `user_annotation` (CPU time) or `gpu_user_annotation` (GPU time) range.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Annotation {
    pub name: Sym,
    pub ts: Ns,
    pub dur: Ns,
    pub pid: Sym,
    pub tid: Sym,
    pub external_id: Option<u64>,
    pub on_gpu: bool,
}

/// Which Kineto layout the file uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Schema {
    /// Current Kineto: `cat` `kernel`, `cpu_op`, `cuda_runtime`, ...
    #[default]
    Kineto,
    /// The 2021 layout: `cat` `Kernel`, `Operator`, `Runtime`, `Memcpy`, `Memset`.
    Legacy,
}

/// Top-level facts about the trace document (not its events).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceMeta {
    /// Top-level keys in document order (`schemaVersion`, `deviceProperties`, ...).
    /// Empty for the bare-list form.
    pub keys: Vec<String>,
    /// `deviceProperties[].name`, in order (may be empty strings on ROCm).
    pub device_names: Vec<String>,
    /// `deviceProperties[]`, in order: the facts a device table is matched by.
    pub devices: Vec<DeviceProps>,
    /// `distributedInfo.rank` / `world_size`, when present.
    pub rank: Option<u32>,
    pub world_size: Option<u32>,
    /// `with_stack` as written by torch.profiler, when present.
    pub with_stack: Option<bool>,
    pub schema: Schema,
    /// The document was a bare JSON array of events.
    pub bare_list: bool,
}

/// One entry of `deviceProperties` (fields absent in the trace are `None`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceProps {
    pub id: Option<i64>,
    pub name: String,
    /// `numSms`: SMs on NVIDIA, CUs on AMD.
    pub num_sms: Option<u32>,
    /// `totalGlobalMem` in bytes.
    pub total_global_mem: Option<u64>,
    pub compute_major: Option<u32>,
    pub compute_minor: Option<u32>,
}

/// Events the reader did not keep, by reason. Reported, never silent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkipCounts {
    /// Events that were not objects, or had a field of the wrong type.
    pub malformed: u64,
    /// GPU events with a negative, NaN or missing `ts`/`dur`.
    pub bad_time: u64,
    /// GPU events with `dur == 0` (kept out of every table).
    pub zero_duration: u64,
    /// Events skipped because a value the reader keeps (`name`, `ts`, `args.name`, ...)
    /// is past its size limit, by that field. No real trace has one; a hostile one would
    /// otherwise cost memory and time in proportion to it.
    pub oversized: BTreeMap<&'static str, u64>,
    /// Optional values dropped from events that were kept, by field (`args.Input Dims`,
    /// `args.kernel`, ...): past the same size limit, the fact is left out (`None`) and
    /// the event read without it, so a CPU op with a huge shape list still links its
    /// kernels. Not skipped events, so not in [`SkipCounts::total`].
    pub oversized_fields: BTreeMap<&'static str, u64>,
    /// Top-level values the reader keeps (`deviceProperties`, ...) or keys skipped as
    /// past their size limit, by name. Not events, so not in [`SkipCounts::total`].
    pub oversized_top_level: BTreeMap<&'static str, u64>,
}

impl SkipCounts {
    pub fn total(&self) -> u64 {
        self.malformed + self.bad_time + self.zero_duration + self.oversized_events()
    }

    /// Events skipped for an oversized value, whatever the field.
    pub fn oversized_events(&self) -> u64 {
        self.oversized.values().sum()
    }
}

/// One op's all-to-all(-v) split sizes and the collective facts PyTorch records beside
/// them (`record_param_comms` CPU ops; newer PyTorch copies them onto the NCCL kernel).
/// Every text is as the trace wrote it (a string's characters, other values' compact
/// JSON): the split lists are parsed by the analysis (`analyze::ep_imbalance`), which
/// counts a malformed one instead of failing the read.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SplitSizes {
    /// A GPU kernel's copy rather than the CPU op.
    pub on_gpu: bool,
    pub ts: Ns,
    pub dur: Ns,
    pub external_id: Option<u64>,
    /// Elements sent to each peer of the group (the input tensor's split).
    pub in_split: Option<Sym>,
    /// Elements received from each peer (the output tensor's split).
    pub out_split: Option<Sym>,
    pub collective: Option<Sym>,
    pub group: Option<Sym>,
    pub group_desc: Option<Sym>,
    /// The group's global ranks, in group order (`[0, 1, 2, 3]`).
    pub group_ranks: Option<Sym>,
    pub dtype: Option<Sym>,
    /// The recording rank's global rank, and the collective's sequence number in its
    /// group (the same on every rank of the group).
    pub rank: Option<Sym>,
    pub seq: Option<Sym>,
}

/// The most distinct GPU op names one trace keeps. Real serving traces hold a few
/// thousand; past this a trace is generated or hostile, and every distinct name costs
/// a kernel row, a family match and a display name downstream, so later names fold into
/// [`FOLDED_GPU_OP_NAME`] (counted, and said in a note) to keep time and memory bounded.
pub const MAX_GPU_OP_NAMES: usize = 1 << 16;

/// The one name GPU ops past [`MAX_GPU_OP_NAMES`] distinct names are read under.
pub const FOLDED_GPU_OP_NAME: &str = "[GPU op names past the 65536-distinct-name limit]";

/// One trace file, read. The input of every later step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub path: PathBuf,
    pub strings: Interner,
    /// Stored compactly (`trace::compact`), as are the CPU ops and frames: read back as
    /// [`GpuOp`], [`RuntimeCall`], [`CpuOp`] and [`PyFrame`] values.
    pub gpu_ops: GpuOps,
    pub runtime: RuntimeCalls,
    pub cpu_ops: CpuOps,
    pub py_frames: PyFrames,
    pub annotations: Vec<Annotation>,
    /// The ops (CPU op or kernel) that carry non-empty all-to-all split sizes, with the
    /// collective facts beside them: a side table, as few ops carry them, so every
    /// other record stays its size.
    pub split_sizes: Vec<SplitSizes>,
    /// `process_name` metadata: (pid, name).
    pub process_names: Vec<(Sym, Sym)>,
    /// `thread_name` metadata: (pid, tid, name).
    pub thread_names: Vec<(Sym, Sym, Sym)>,
    pub meta: TraceMeta,
    pub skipped: SkipCounts,
    /// Strings that held a lone UTF-16 surrogate escape (`\ud800` without its pair),
    /// read with U+FFFD in its place, as Python's lenient reader keeps them.
    pub lone_surrogate_strings: u64,
    /// GPU ops whose name came after [`MAX_GPU_OP_NAMES`] distinct ones, and how many
    /// distinct names they had: read under [`FOLDED_GPU_OP_NAME`] instead.
    pub folded_gpu_ops: u64,
    pub folded_gpu_op_names: u64,
    /// Number of events in the document (kept or not).
    pub event_count: u64,
    /// Uncompressed JSON bytes read.
    pub json_bytes: u64,
}

impl Trace {
    pub fn name(&self, sym: Sym) -> &str {
        self.strings.get(sym)
    }

    /// Each distinct Python frame name with its frame count, in symbol order: the passes
    /// that judge a trace by its frames' names read these thousands, not the millions of
    /// frames (`PyFrames::name_counts`, counted once per trace).
    pub fn frame_names(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.py_frames
            .name_counts(self.strings.len())
            .iter()
            .map(|&(sym, count)| (self.name(sym), count))
    }
}
