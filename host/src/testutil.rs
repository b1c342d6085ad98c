//! What the unit tests of every module share: a hand-built trace ([`TraceFixture`]) and
//! the path of a real trace in the shared traces beside the checkout
//! ([`shared_trace_path`]). Compiled for tests only.

use std::path::{Path, PathBuf};

use crate::trace::event::{Annotation, CpuOp, GpuKind, GpuOp, PyFrame, RuntimeCall, Trace};

/// The path of `name` in `../shared/traces` beside the checkout (the real traces the
/// tests recount).
pub(crate) fn shared_trace_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces")
        .join(name)
}

/// A trace built event by event: every time is in nanoseconds, CPU events live in pid
/// `host`, GPU ops on pid `gpu` stream `7`. `build` returns a copy.
pub(crate) struct TraceFixture {
    trace: Trace,
    /// The pid of the CPU events added next ([`TraceFixture::on_process`]).
    host: String,
}

impl TraceFixture {
    pub(crate) fn new() -> Self {
        TraceFixture {
            trace: Trace::default(),
            host: "host".to_string(),
        }
    }

    /// CPU events added from now on live in process `pid` (a merged multi-process trace).
    pub(crate) fn on_process(&mut self, pid: &str) -> &mut Self {
        self.host = pid.to_string();
        self
    }

    fn thread(&mut self, tid: u32) -> (crate::trace::event::Sym, crate::trace::event::Sym) {
        (
            self.trace.strings.intern(&self.host),
            self.trace.strings.intern(&tid.to_string()),
        )
    }

    pub(crate) fn path(&mut self, path: &str) -> &mut Self {
        self.trace.path = path.into();
        self
    }

    pub(crate) fn kernel(
        &mut self,
        name: &str,
        ts: i64,
        dur: i64,
        correlation: Option<u64>,
        external_id: Option<u64>,
    ) -> &mut Self {
        self.gpu_op_on("gpu", name, ts, dur, correlation, external_id)
    }

    pub(crate) fn gpu_op_on(
        &mut self,
        pid: &str,
        name: &str,
        ts: i64,
        dur: i64,
        correlation: Option<u64>,
        external_id: Option<u64>,
    ) -> &mut Self {
        let kind = if name.starts_with("Memcpy") {
            GpuKind::Memcpy
        } else if name.starts_with("Memset") {
            GpuKind::Memset
        } else {
            GpuKind::Kernel
        };
        let op = GpuOp {
            name: self.trace.strings.intern(name),
            kind,
            ts,
            dur,
            pid: self.trace.strings.intern(pid),
            tid: self.trace.strings.intern("7"),
            stream: Some(7),
            device: Some(0),
            correlation,
            external_id,
            grid: None,
            block: None,
            blocks_per_sm: None,
            bytes: None,
        };
        self.trace.gpu_ops.push(op);
        self
    }

    pub(crate) fn runtime(
        &mut self,
        name: &str,
        ts: i64,
        dur: i64,
        tid: u32,
        correlation: u64,
        external_id: Option<u64>,
    ) -> &mut Self {
        let (pid, tid) = self.thread(tid);
        let call = RuntimeCall {
            name: self.trace.strings.intern(name),
            ts,
            dur,
            pid,
            tid,
            correlation,
            external_id,
            kernel: None,
            grid: None,
            block: None,
        };
        self.trace.runtime.push(call);
        self
    }

    pub(crate) fn cpu_op(
        &mut self,
        name: &str,
        ts: i64,
        dur: i64,
        tid: u32,
        external_id: Option<u64>,
    ) -> &mut Self {
        let (pid, tid) = self.thread(tid);
        let op = CpuOp {
            name: self.trace.strings.intern(name),
            ts,
            dur,
            pid,
            tid,
            external_id,
            input_dims: None,
            input_types: None,
            concrete_inputs: None,
        };
        self.trace.cpu_ops.push(op);
        self
    }

    pub(crate) fn frame(&mut self, name: &str, ts: i64, dur: i64, tid: u32) -> &mut Self {
        let (pid, tid) = self.thread(tid);
        let frame = PyFrame {
            name: self.trace.strings.intern(name),
            ts,
            dur,
            pid,
            tid,
        };
        self.trace.py_frames.push(frame);
        self
    }

    pub(crate) fn annotation(&mut self, name: &str, ts: i64, dur: i64, on_gpu: bool) -> &mut Self {
        let (pid, tid) = if on_gpu {
            (
                self.trace.strings.intern("gpu"),
                self.trace.strings.intern("7"),
            )
        } else {
            self.thread(1)
        };
        let annotation = Annotation {
            name: self.trace.strings.intern(name),
            ts,
            dur,
            pid,
            tid,
            external_id: None,
            on_gpu,
        };
        self.trace.annotations.push(annotation);
        self
    }

    pub(crate) fn build(&self) -> Trace {
        self.trace.clone()
    }
}

/// Graph-capture facts on the events just added (issue 17): what a capture trace's launch
/// calls and CPU ops record.
impl TraceFixture {
    /// Names the kernel of the last runtime call added (`args.kernel`).
    pub(crate) fn launching(&mut self, kernel: &str) -> &mut Self {
        let sym = self.trace.strings.intern(kernel);
        if let Some(call) = self.trace.runtime.last() {
            let last = self.trace.runtime.len() - 1;
            let kernel = Some(sym);
            self.trace.runtime.set(last, RuntimeCall { kernel, ..call });
        }
        self
    }

    /// Gives the last CPU op added its `Input Dims` and `Input type` JSON text.
    pub(crate) fn with_shapes(&mut self, dims: &str, types: &str) -> &mut Self {
        let (dims, types) = (
            self.trace.strings.intern(dims),
            self.trace.strings.intern(types),
        );
        if let Some(last) = self.trace.cpu_ops.len().checked_sub(1) {
            let mut op = self.trace.cpu_ops.at(last);
            op.input_dims = Some(dims);
            op.input_types = Some(types);
            self.trace.cpu_ops.set(last, op);
        }
        self
    }
}
