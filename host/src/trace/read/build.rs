//! Building the [`Trace`] from events: the sink the document walk hands each event to.
//! It classifies an event by its `cat` (GPU op, runtime call, CPU op, Python frame,
//! annotation, or other), keeps what later steps use as compact records with interned
//! names, counts what it drops (malformed, bad time, zero duration), and reads the
//! optional top-level facts (`deviceProperties`, `distributedInfo`, `with_stack`),
//! including the Python repr strings TraceLens writes in their place.

use std::path::Path;

use rustc_hash::FxHashMap;
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::devices::DeviceProperties;
use super::optional::{
    array_sym, compact_json, count, dim3, lone_surrogate_strings, ratio, string_text,
};
use super::raw::{Id, Label, RawArgs, RawEvent, RawText, Text, Time};
use super::scan::Head;
use super::stream::{json_fail, Fail};
use super::surrogate::{has_surrogate_escape, replace_lone_surrogates};
use super::time::{has_non_finite, micros_to_ns, non_finite_to_null};
use super::{EventParser, ReadScope};
use crate::trace::event::{
    Annotation, CpuOp, GpuKind, GpuOp, Ns, PyFrame, RuntimeCall, Schema, SplitSizes, Sym, Trace,
    FOLDED_GPU_OP_NAME, MAX_GPU_OP_NAMES,
};

/// The longest value the reader keeps (a name, pid, tid, time, or any kept field): real
/// ones stay under 2 KiB. An event with a longer one is skipped and counted by field
/// (`SkipCounts::oversized`) instead of costing memory and every later step its length.
pub(super) const MAX_VALUE_BYTES: usize = 64 << 10;

/// The longest top-level value the reader keeps (`deviceProperties`, `distributedInfo`,
/// `with_stack`): a few KiB per GPU in real traces.
pub(super) const MAX_META_BYTES: usize = 1 << 20;

/// The first field of `ev` the reader keeps whose value is past [`MAX_VALUE_BYTES`].
/// Checked on every event (a few length comparisons), so both the in-place tiers and
/// the member-by-member reader of `large.rs` count the same events.
fn oversized_field(ev: &RawEvent) -> Option<&'static str> {
    let text = |t: &Option<Text>| t.as_ref().map_or(0, |t| t.0.len());
    let label = |l: &Option<Label>| l.as_ref().and_then(Label::as_text).map_or(0, str::len);
    let time = |t: &Option<Time>| match t {
        Some(Time::Text(t)) => t.0.len(),
        // At most 20 characters became it.
        Some(Time::Ns(_)) | None => 0,
    };
    [
        ("name", text(&ev.name)),
        ("ph", text(&ev.ph)),
        ("cat", text(&ev.cat)),
        ("ts", time(&ev.ts)),
        ("dur", time(&ev.dur)),
        ("pid", label(&ev.pid)),
        ("tid", label(&ev.tid)),
        ("args.name", ev.args.as_ref().map_or(0, |a| label(&a.name))),
    ]
    .into_iter()
    .find(|&(_, len)| len > MAX_VALUE_BYTES)
    .map(|(field, _)| field)
}

/// Where the document walk hands each event (or element it could not read): the
/// [`Trace`] being built and the counts of what was dropped.
pub(super) struct TraceSink {
    pub(super) trace: Trace,
    pub(super) parser: EventParser,
    pub(super) scope: ReadScope,
    /// The last integer pids/tids interned: consecutive events mostly share them, and
    /// this skips formatting and hashing their text again.
    recent_ints: [Option<(i64, Sym)>; 2],
    /// Which interned strings are GPU op names (indexed by `Sym`), and how many: the
    /// bound of [`MAX_GPU_OP_NAMES`].
    gpu_names: Vec<bool>,
    gpu_name_count: usize,
    /// Which names were folded, so each distinct one is counted once.
    folded_names: Vec<bool>,
    /// The optional `args` facts `large.rs` left out of the event being added for their
    /// length (counted once the event is kept, as the in-place tiers count theirs).
    pub(super) oversized_optional: Vec<&'static str>,
    /// Reused for compacting shape texts, so reading them allocates nothing per event.
    scratch: String,
    /// Each shape text as written (without a backslash, so with no lone surrogate to
    /// count) and its compact form's symbol: a model runs the same ops on the same
    /// shapes step after step, and a text seen before skips the compacting, a tenth of a
    /// full read's instructions (issue 22's callgrind count).
    shapes_as_written: FxHashMap<Box<str>, Sym>,
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
        // The predecessor's kernel rule, kept: a category containing `kernel`, or any
        // other `gpu_*` category except annotations.
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

/// Python scopes (`….py(`, `python/…`, `nn.Module: …`) are never kernels even when they
/// carry a `stream` arg, as in the predecessor's fallback rule for stream-bearing events.
fn looks_like_python_scope(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains(".py(") || lower.starts_with("python/") || lower.starts_with("nn.module:")
}

impl TraceSink {
    pub(super) fn new(path: &Path, parser: EventParser, scope: ReadScope) -> Self {
        TraceSink {
            trace: Trace {
                path: path.to_path_buf(),
                ..Trace::default()
            },
            parser,
            scope,
            recent_ints: [None; 2],
            gpu_names: Vec::new(),
            gpu_name_count: 0,
            folded_names: Vec::new(),
            oversized_optional: Vec::new(),
            scratch: String::new(),
            shapes_as_written: FxHashMap::default(),
        }
    }

    /// The trace, its tables cut to their length: growth left up to half of each
    /// reserved (for a 1 GB trace, tens of MB of address space that nothing will use).
    pub(super) fn finish(self) -> Trace {
        let mut trace = self.trace;
        trace.gpu_ops.shrink_to_fit();
        trace.runtime.shrink_to_fit();
        trace.cpu_ops.shrink_to_fit();
        trace.py_frames.shrink_to_fit();
        trace.annotations.shrink_to_fit();
        trace.split_sizes.shrink_to_fit();
        trace
    }

    /// `name` as a GPU op's name: itself while the trace has at most
    /// [`MAX_GPU_OP_NAMES`] distinct ones, else [`FOLDED_GPU_OP_NAME`], counted.
    fn gpu_op_name(&mut self, name: Sym) -> Sym {
        let i = name.0 as usize;
        if self.gpu_names.get(i) == Some(&true) {
            return name;
        }
        if self.gpu_name_count < MAX_GPU_OP_NAMES {
            if self.gpu_names.len() <= i {
                self.gpu_names.resize(i + 1, false);
            }
            self.gpu_names[i] = true;
            self.gpu_name_count += 1;
            return name;
        }
        self.trace.folded_gpu_ops += 1;
        if self.folded_names.len() <= i {
            self.folded_names.resize(i + 1, false);
        }
        if !self.folded_names[i] {
            self.folded_names[i] = true;
            self.trace.folded_gpu_op_names += 1;
        }
        let folded = self.trace.strings.intern(FOLDED_GPU_OP_NAME);
        // The folded name is itself a GPU op name, kept past the bound.
        let f = folded.0 as usize;
        if self.gpu_names.len() <= f {
            self.gpu_names.resize(f + 1, false);
        }
        self.gpu_names[f] = true;
        folded
    }

    /// One element of the events array: parsed, classified and kept or counted.
    pub(super) fn add_element(&mut self, span: &[u8], start: u64) -> Result<(), Fail> {
        self.trace.event_count += 1;
        // A JSON array would deserialise into the struct field by field; not an event.
        if span.first() != Some(&b'{') {
            let valid: Result<IgnoredAny, _> = serde_json::from_slice(span);
            let valid = match valid {
                Err(err) if is_syntax(&err) => match repaired(span) {
                    Some((text, _)) => serde_json::from_slice::<IgnoredAny>(&text)
                        .map_err(|e| (is_syntax(&e), json_fail(&e, &text, start))),
                    None => Err((true, json_fail(&err, span, start))),
                },
                _ => Ok(IgnoredAny),
            };
            return match valid {
                Err((true, fail)) => Err(fail),
                _ => {
                    self.trace.skipped.malformed += 1;
                    Ok(())
                }
            };
        }
        let err = match serde_json::from_slice::<RawEvent>(span) {
            Ok(event) => {
                self.add_event(&event);
                return Ok(());
            }
            Err(err) => err,
        };
        if !is_syntax(&err) {
            self.trace.skipped.malformed += 1;
            return Ok(());
        }
        // Invalid JSON as serde reads it; Python's writers produce two kinds that
        // Python's reader accepts, so those are rewritten and read again.
        let Some((text, surrogate_strings)) = repaired(span) else {
            return Err(json_fail(&err, span, start));
        };
        match serde_json::from_slice::<RawEvent>(&text) {
            Ok(event) => {
                self.trace.lone_surrogate_strings += surrogate_strings;
                self.add_event(&event);
            }
            Err(err) if is_syntax(&err) => return Err(json_fail(&err, &text, start)),
            Err(_) => self.trace.skipped.malformed += 1,
        }
        Ok(())
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

    /// An event skipped because its `field` is past the size limit.
    pub(super) fn skip_oversized(&mut self, field: &'static str) {
        *self.trace.skipped.oversized.entry(field).or_default() += 1;
    }

    pub(super) fn add_event(&mut self, ev: &RawEvent) {
        if let Some(field) = oversized_field(ev) {
            self.skip_oversized(field);
            return;
        }
        let ph = ev.ph.as_ref().map(|t| t.0.as_ref());
        match ph {
            Some("X") => self.add_complete(ev),
            Some("M") => self.add_metadata(ev),
            _ => {}
        }
    }

    fn add_complete(&mut self, ev: &RawEvent) {
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
        let Some((ts, dur)) = self.span(ev.ts, ev.dur) else {
            return;
        };
        if dur == 0 && matches!(class, Class::Gpu(_)) {
            self.trace.skipped.zero_duration += 1;
            return;
        }
        let name = self
            .trace
            .strings
            .intern(ev.name.as_ref().map(|t| t.0.as_ref()).unwrap_or(""));
        // Two `Option` tests on every op; the rest only where split sizes are present.
        let splits = args.filter(|a| a.in_split.is_some() || a.out_split.is_some());
        if let Some(args) = splits {
            if matches!(class, Class::CpuOp | Class::Gpu(GpuKind::Kernel)) {
                self.add_split_sizes(args, class != Class::CpuOp, ts, dur, external_id);
            }
        }
        let pid = self.label(ev.pid.as_ref());
        let tid = self.label(ev.tid.as_ref());
        match class {
            Class::Gpu(kind) => {
                let name = self.gpu_op_name(name);
                let grid = self.dim3(args, |a| a.grid, "args.grid");
                let block = self.dim3(args, |a| a.block, "args.block");
                let blocks_per_sm = self
                    .optional_text(args, |a| a.blocks_per_sm, "args.blocks per SM")
                    .and_then(ratio);
                // Only copies: a kernel's `bytes` (none is written today) is no count of them.
                let bytes = if kind == GpuKind::Kernel {
                    None
                } else {
                    self.optional_text(args, |a| a.bytes, "args.bytes")
                        .and_then(count)
                };
                self.trace.gpu_ops.push(GpuOp {
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
                    grid,
                    block,
                    blocks_per_sm,
                    bytes,
                });
            }
            Class::Runtime => {
                let kernel = self.kernel_name(args);
                let call = RuntimeCall {
                    name,
                    ts,
                    dur,
                    pid,
                    tid,
                    correlation: correlation.unwrap_or_default(),
                    external_id,
                    kernel,
                    grid: self.dim3(args, |a| a.grid, "args.grid"),
                    block: self.dim3(args, |a| a.block, "args.block"),
                };
                self.trace.runtime.push(call);
            }
            Class::CpuOp if self.scope == ReadScope::Digest => {
                // No shapes, but their counts: as `shape` would, a legacy `Input dims`
                // only where there is no `Input Dims` list.
                if !self.shape_counted(args, |a| a.input_dims, "args.Input Dims") {
                    self.shape_counted(args, |a| a.legacy_input_dims, "args.Input dims");
                }
                self.shape_counted(args, |a| a.input_types, "args.Input type");
                self.shape_counted(args, |a| a.concrete_inputs, "args.Concrete Inputs");
                self.push_cpu_op(name, ts, dur, pid, tid, external_id, [None; 3]);
            }
            Class::CpuOp => {
                let input_dims = self
                    .shape(args, |a| a.input_dims, "args.Input Dims")
                    .or_else(|| self.shape(args, |a| a.legacy_input_dims, "args.Input dims"));
                let shapes = [
                    input_dims,
                    self.shape(args, |a| a.input_types, "args.Input type"),
                    self.shape(args, |a| a.concrete_inputs, "args.Concrete Inputs"),
                ];
                self.push_cpu_op(name, ts, dur, pid, tid, external_id, shapes);
            }
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

    /// A kept event's `ts` and `dur` in ns; `None`, counted, where either is unusable.
    fn span(&mut self, ts: Option<Time>, dur: Option<Time>) -> Option<(Ns, Ns)> {
        self.span_ns(micros_to_ns(ts), micros_to_ns(dur))
    }

    /// [`TraceSink::span`] of times already in ns.
    fn span_ns(&mut self, ts: Option<Ns>, dur: Option<Ns>) -> Option<(Ns, Ns)> {
        match (ts, dur) {
            // An end past i64 is as unusable as a negative time.
            (Some(ts), Some(dur)) if ts >= 0 && dur >= 0 && ts.checked_add(dur).is_some() => {
                Some((ts, dur))
            }
            _ => {
                self.trace.skipped.bad_time += 1;
                None
            }
        }
    }

    /// A Python frame the lean scanner read whole (`scan::scan_lean`): what
    /// [`TraceSink::add_event`] makes of the same event, interning in the same order.
    pub(super) fn add_frame(&mut self, frame: &Head) {
        let Some((name, ts, dur, pid, tid)) = self.head(frame) else {
            return;
        };
        self.trace.py_frames.push(PyFrame {
            name,
            ts,
            dur,
            pid,
            tid,
        });
    }

    /// A CPU op the lean scanner read whole (`scan::scan_lean`), likewise.
    pub(super) fn add_cpu_op(&mut self, op: &Head, external_id: Id) {
        if let Some((name, ts, dur, pid, tid)) = self.head(op) {
            self.push_cpu_op(name, ts, dur, pid, tid, external_id.0, [None; 3]);
        }
    }

    /// A lean-read event's name, span and thread, interned as `add_complete` interns
    /// them; `None`, counted, for an unusable time.
    fn head(&mut self, head: &Head) -> Option<(Sym, Ns, Ns, Sym, Sym)> {
        let (ts, dur) = self.span_ns(head.ts, head.dur)?;
        let name = self.trace.strings.intern(head.name);
        let pid = self.label(Some(&head.pid));
        let tid = self.label(Some(&head.tid));
        Some((name, ts, dur, pid, tid))
    }

    /// A CPU op with its `Input Dims`, `Input type` and `Concrete Inputs` (none in a
    /// digest read).
    #[expect(clippy::too_many_arguments, reason = "a CpuOp's fields, one by one")]
    fn push_cpu_op(
        &mut self,
        name: Sym,
        ts: Ns,
        dur: Ns,
        pid: Sym,
        tid: Sym,
        external_id: Option<u64>,
        [input_dims, input_types, concrete_inputs]: [Option<Sym>; 3],
    ) {
        self.trace.cpu_ops.push(CpuOp {
            name,
            ts,
            dur,
            pid,
            tid,
            external_id,
            input_dims,
            input_types,
            concrete_inputs,
        });
    }

    /// An optional `args` fact's text, unless it is past [`MAX_VALUE_BYTES`]: then it is
    /// left out and counted under `field` (the event is still kept).
    fn optional_text<'e>(
        &mut self,
        args: Option<&RawArgs<'e>>,
        value: fn(&RawArgs<'e>) -> Option<RawText<'e>>,
        field: &'static str,
    ) -> Option<&'e str> {
        let text = args.and_then(value).map(|t| t.0);
        let oversized = match text {
            Some(text) => text.len() > MAX_VALUE_BYTES,
            // `large.rs` leaves such a value out of the event and names it.
            None => self.oversized_optional.contains(&field),
        };
        if oversized {
            *self
                .trace
                .skipped
                .oversized_fields
                .entry(field)
                .or_default() += 1;
            return None;
        }
        text
    }

    /// `grid` / `block`.
    fn dim3<'e>(
        &mut self,
        args: Option<&RawArgs<'e>>,
        value: fn(&RawArgs<'e>) -> Option<RawText<'e>>,
        field: &'static str,
    ) -> Option<[u32; 3]> {
        self.optional_text(args, value, field).and_then(dim3)
    }

    /// A CPU op's shape list (`Input Dims`, ...), interned in its compact form.
    fn shape<'e>(
        &mut self,
        args: Option<&RawArgs<'e>>,
        value: fn(&RawArgs<'e>) -> Option<RawText<'e>>,
        field: &'static str,
    ) -> Option<Sym> {
        let text = self.optional_text(args, value, field)?;
        if let Some(&sym) = self.shapes_as_written.get(text) {
            return Some(sym);
        }
        let trace = &mut self.trace;
        let sym = array_sym(
            text,
            &mut trace.strings,
            &mut self.scratch,
            &mut trace.lone_surrogate_strings,
        )?;
        if memchr::memchr(b'\\', text.as_bytes()).is_none() {
            self.shapes_as_written.insert(text.into(), sym);
        }
        Some(sym)
    }

    /// [`TraceSink::shape`] in a [`ReadScope::Digest`] read: what it counts (an
    /// oversized value, lone surrogates), not the shape; whether it would have been one.
    fn shape_counted<'e>(
        &mut self,
        args: Option<&RawArgs<'e>>,
        value: fn(&RawArgs<'e>) -> Option<RawText<'e>>,
        field: &'static str,
    ) -> bool {
        let Some(text) = self.optional_text(args, value, field) else {
            return false;
        };
        if !text.starts_with('[') {
            return false;
        }
        self.trace.lone_surrogate_strings += lone_surrogate_strings(text);
        true
    }

    /// An op's split sizes and collective facts, kept when a split list is not empty
    /// (`"[]"` on every collective but an all-to-all-v).
    fn add_split_sizes(
        &mut self,
        args: &RawArgs,
        on_gpu: bool,
        ts: i64,
        dur: i64,
        external_id: Option<u64>,
    ) {
        let in_split = self.comms_text(args, |a| a.in_split, "args.In split size");
        let out_split = self.comms_text(args, |a| a.out_split, "args.Out split size");
        let empty = |s: Option<Sym>| s.is_none_or(|s| self.trace.name(s).trim() == "[]");
        if empty(in_split) && empty(out_split) {
            return;
        }
        let split = SplitSizes {
            on_gpu,
            ts,
            dur,
            external_id,
            in_split,
            out_split,
            collective: self.comms_text(args, |a| a.collective, "args.Collective name"),
            group: self.comms_text(args, |a| a.group, "args.Process Group Name"),
            group_desc: self.comms_text(args, |a| a.group_desc, "args.Process Group Description"),
            group_ranks: self.comms_text(args, |a| a.group_ranks, "args.Process Group Ranks"),
            dtype: self.comms_text(args, |a| a.dtype, "args.dtype"),
            rank: self.comms_text(args, |a| a.rank, "args.Rank"),
            seq: self.comms_text(args, |a| a.seq, "args.Seq"),
        };
        self.trace.split_sizes.push(split);
    }

    /// A collective fact as text: a string's characters, any other value's JSON
    /// without whitespace.
    fn comms_text<'e>(
        &mut self,
        args: &RawArgs<'e>,
        value: fn(&RawArgs<'e>) -> Option<RawText<'e>>,
        field: &'static str,
    ) -> Option<Sym> {
        let text = self.optional_text(Some(args), value, field)?;
        let trace = &mut self.trace;
        if let Some(chars) = string_text(text, &mut trace.lone_surrogate_strings) {
            return Some(trace.strings.intern(&chars));
        }
        let compact = compact_json(text, &mut self.scratch);
        Some(trace.strings.intern(compact))
    }

    /// A launch call's `kernel`, when it is a string.
    fn kernel_name(&mut self, args: Option<&RawArgs>) -> Option<Sym> {
        let text = self.optional_text(args, |a| a.kernel, "args.kernel")?;
        let name = string_text(text, &mut self.trace.lone_surrogate_strings)?;
        Some(self.trace.strings.intern(&name))
    }

    /// `process_name` / `thread_name` metadata (`ph: "M"`) with a non-empty `args.name`.
    fn add_metadata(&mut self, ev: &RawEvent) {
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
    pub(super) fn read_meta_value(
        &mut self,
        key: &str,
        span: &[u8],
        start: u64,
    ) -> Result<(), Fail> {
        let meta = &mut self.trace.meta;
        match key {
            "deviceProperties" => {
                let value: DeviceProperties = parse_meta(span, start)?;
                meta.devices = value.devices();
                meta.device_names = meta.devices.iter().map(|d| d.name.clone()).collect();
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

/// `span` with what Python writes but serde refuses rewritten: lone surrogate escapes
/// to `\ufffd` (and how many strings held one), bare `NaN`/`Infinity` to `null`. `None`
/// when it holds neither, so serde's own error stands.
fn repaired(span: &[u8]) -> Option<(Vec<u8>, u64)> {
    let surrogates = has_surrogate_escape(span);
    let non_finite = has_non_finite(span);
    if !surrogates && !non_finite {
        return None;
    }
    let (text, strings) = if surrogates {
        replace_lone_surrogates(span)
    } else {
        (span.to_vec(), 0)
    };
    let text = if non_finite {
        non_finite_to_null(&text)
    } else {
        text
    };
    Some((text, strings))
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
pub(super) fn repr_strings(text: &str, key: &str) -> Vec<String> {
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
    repr_u64(text, key).and_then(|v| u32::try_from(v).ok())
}

/// The first `'key': <non-negative integer>` in a Python repr.
pub(super) fn repr_u64(text: &str, key: &str) -> Option<u64> {
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
