//! Recognising a trace that recorded a CUDA/HIP graph being *captured* rather than a run.
//!
//! While a graph is captured, every kernel launch is recorded into the graph instead of
//! executing: the trace holds hundreds of `cudaLaunchKernel`/`hipLaunchKernel` calls with
//! their Python stacks but (almost) no kernels on the GPU. Engines name the capture too:
//! SGLang's graph runner records `capture_<bs>_<MODE>` (`capture_32_DECODE`), vLLM's
//! `capture_<N>_FULL` / `capture_<N>_PIECEWISE`. A kernel table of such a trace would
//! rank the two stray kernels that did run as if they were the workload, so the triage
//! says what the trace is instead. The trace stays useful: its launches, in order, are
//! the graph's nodes (input for graph-replay attribution).

use crate::trace::event::{GpuKind, Trace};

/// A trace that captured a graph and ran (almost) nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphCapture {
    /// Distinct capture annotation names, first seen first (may be empty).
    pub annotations: Vec<String>,
    /// Kernel launch calls the CPU recorded.
    pub launches: u64,
    /// Kernels that executed on the GPU.
    pub kernels_executed: u64,
}

/// At most one executed kernel per this many launches: a run executes every launch
/// (graph replays add kernels without launches), a capture executes almost none.
const LAUNCHES_PER_EXECUTED_KERNEL: u64 = 10;
/// Without a capture annotation, this many launches must be seen before their missing
/// kernels are read as a capture rather than a truncated or tiny trace.
const MIN_UNNAMED_CAPTURE_LAUNCHES: u64 = 100;

/// `Some` when `trace` recorded a graph capture: few executed kernels for its launches,
/// and a capture annotation or at least [`MIN_UNNAMED_CAPTURE_LAUNCHES`] launches.
pub fn graph_capture(trace: &Trace) -> Option<GraphCapture> {
    let launches = trace
        .runtime
        .iter()
        .filter(|call| is_kernel_launch(trace.name(call.name)))
        .count() as u64;
    let kernels_executed = trace
        .gpu_ops
        .iter()
        .filter(|op| op.kind == GpuKind::Kernel)
        .count() as u64;
    if launches == 0 || kernels_executed * LAUNCHES_PER_EXECUTED_KERNEL > launches {
        return None;
    }
    let mut annotations: Vec<String> = Vec::new();
    for annotation in &trace.annotations {
        let name = trace.name(annotation.name);
        if is_capture_annotation(name) && !annotations.iter().any(|a| a == name) {
            annotations.push(name.to_string());
        }
    }
    (!annotations.is_empty() || launches >= MIN_UNNAMED_CAPTURE_LAUNCHES).then_some(GraphCapture {
        annotations,
        launches,
        kernels_executed,
    })
}

/// A runtime or driver call that launches one kernel (`cudaLaunchKernel`,
/// `cudaLaunchKernelExC`, `cuLaunchKernelEx`, `hipLaunchKernel`, `hipExtModuleLaunchKernel`,
/// `hipModuleLaunchKernel`); not `cudaGraphLaunch`, which replays many.
pub fn is_kernel_launch(name: &str) -> bool {
    name.contains("LaunchKernel")
}

/// `capture_<digits>_<MODE>`: SGLang's `capture_32_DECODE`, vLLM's `capture_8_FULL`.
fn is_capture_annotation(name: &str) -> bool {
    capture_annotation(name).is_some()
}

/// The size and mode a capture annotation names: `capture_32_DECODE` -> (32, `DECODE`).
/// SGLang's graph runner records `capture_<bs>_<MODE>` (`cuda_graph_runner.py`), vLLM's
/// graph-capture profiler `capture_<num_tokens>_<MODE>` or, for a speculator,
/// `capture_<num_tokens>_<prefix>_<MODE>` (`FULL`, `PIECEWISE`): the mode is the text
/// after the size, whole.
pub fn capture_annotation(name: &str) -> Option<(u32, &str)> {
    let rest = name.strip_prefix("capture_")?;
    let (size, mode) = rest.split_once('_')?;
    let valid = !size.is_empty()
        && size.bytes().all(|b| b.is_ascii_digit())
        && !mode.is_empty()
        && mode.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid {
        return None;
    }
    Some((size.parse().ok()?, mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TraceFixture;

    /// `launches` launch calls of `launch_name` and `kernels` executed kernels.
    fn fixture(launch_name: &str, launches: u64, kernels: u64, annotation: Option<&str>) -> Trace {
        let mut b = TraceFixture::new();
        if let Some(name) = annotation {
            b.annotation(name, 0, 1_000_000, false);
        }
        for i in 0..launches {
            b.runtime(launch_name, 10 + i as i64 * 10, 5, 1, i + 1, None);
        }
        for i in 0..kernels {
            b.kernel("k", 20 + i as i64 * 10, 5, Some(i + 1), None);
        }
        b.build()
    }

    #[test]
    fn sglang_capture_annotation_with_few_kernels_is_a_capture() {
        let trace = fixture("hipLaunchKernel", 40, 2, Some("capture_32_DECODE"));
        assert_eq!(
            graph_capture(&trace),
            Some(GraphCapture {
                annotations: vec!["capture_32_DECODE".to_string()],
                launches: 40,
                kernels_executed: 2,
            })
        );
    }

    #[test]
    fn many_launches_without_kernels_are_a_capture_even_unnamed() {
        let capture = graph_capture(&fixture("cudaLaunchKernel", 150, 1, None)).unwrap();
        assert!(capture.annotations.is_empty());
        assert_eq!((capture.launches, capture.kernels_executed), (150, 1));
    }

    #[test]
    fn a_run_or_a_tiny_trace_is_not_a_capture() {
        // Every launch executed.
        assert_eq!(
            graph_capture(&fixture("cudaLaunchKernel", 150, 150, None)),
            None
        );
        // A capture annotation, but the kernels ran (a run that also captured).
        assert_eq!(
            graph_capture(&fixture("cudaLaunchKernel", 40, 30, Some("capture_8_FULL"))),
            None
        );
        // Few launches, no annotation: not enough to say.
        assert_eq!(
            graph_capture(&fixture("cudaLaunchKernel", 20, 0, None)),
            None
        );
    }

    #[test]
    fn capture_annotations_have_a_size_and_a_mode() {
        for name in [
            "capture_32_DECODE",
            "capture_8_FULL",
            "capture_512_PIECEWISE",
        ] {
            assert!(is_capture_annotation(name), "{name}");
        }
        for name in [
            "capture",
            "capture_DECODE",
            "capture_32_",
            "capture_x_FULL",
            "step[DECODE bs=32]",
        ] {
            assert!(!is_capture_annotation(name), "{name}");
        }
        assert_eq!(
            capture_annotation("capture_32_DECODE"),
            Some((32, "DECODE"))
        );
        assert_eq!(
            capture_annotation("capture_8_draft_FULL"),
            Some((8, "draft_FULL"))
        );
        // Past u32: not a size any engine captures.
        assert_eq!(capture_annotation("capture_99999999999_FULL"), None);
    }
}
