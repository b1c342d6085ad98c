//! The graphs a capture trace recorded, node by node.
//!
//! While a graph is captured nothing runs: each kernel launch call is recorded into the
//! graph, with the Python stack, CPU op and `Input Dims` of an eager launch. The engines
//! wrap each captured graph in an annotation naming its size and mode (SGLang
//! `--enable-profile-cuda-graph`: `capture_<bs>_<MODE>`, `cuda_graph_runner.py`; vLLM's
//! graph-capture profiler: `capture_<num_tokens>_<MODE>`), so the launch calls inside one
//! annotation window, in launch order, are that graph's nodes.
//!
//! A launch inside the window whose kernel ran in the capture trace itself was not
//! recorded: it executed before the stream began capturing (SGLang fills two buffers
//! first), so it is no node. A launch call names its kernel only where the runtime
//! records it (`args.kernel`: ROCm does, CUDA's `cudaLaunchKernel` does not); a node
//! without a name is kept, unnamed, and the pairing says what it can do with it.

use std::path::PathBuf;

use rustc_hash::FxHashSet;

use crate::trace::event::{Sym, Trace};
use crate::trace::graph_capture::{capture_annotation, is_kernel_launch};
use crate::trace::link::link_launches;

/// One graph recorded in a capture trace.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CapturedGraph {
    /// The capture trace it was read from.
    pub path: PathBuf,
    /// The capture annotation (`capture_32_DECODE`).
    pub annotation: String,
    /// The batch size (SGLang) or token count (vLLM) the annotation names.
    pub size: u32,
    /// The mode the annotation names (`DECODE`, `FULL`, `PIECEWISE`).
    pub mode: String,
    /// The launches recorded into the graph, in launch order.
    pub nodes: Vec<GraphNode>,
    /// Launches inside the window that executed at once (not recorded as nodes).
    pub executed_launches: u64,
}

/// One node: a kernel launch recorded during the capture, and where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GraphNode {
    /// The kernel the launch call names (`args.kernel`), when the runtime records it.
    pub kernel: Option<String>,
    /// Python frames active at the launch, outer..inner.
    pub stack: Vec<String>,
    pub cpu_op: Option<String>,
    /// The launching CPU op's `Input Dims` / `Input type` JSON text, when recorded.
    pub input_dims: Option<String>,
    pub input_types: Option<String>,
}

/// Every graph `trace` captured, in the order of their annotations.
pub(crate) fn captured_graphs(trace: &Trace) -> Vec<CapturedGraph> {
    let mut windows: Vec<_> = trace
        .annotations
        .iter()
        .filter(|a| !a.on_gpu)
        .filter_map(|a| capture_annotation(trace.name(a.name)).map(|(size, mode)| (a, size, mode)))
        .collect();
    windows.sort_by_key(|(a, _, _)| a.ts);
    if windows.is_empty() {
        return Vec::new();
    }
    // A launch whose kernel ran was executed, not recorded into the graph.
    let executed: FxHashSet<u64> = trace
        .gpu_ops
        .iter()
        .filter_map(|op| op.correlation)
        .collect();
    let mut launches: Vec<u32> = (0..trace.runtime.len() as u32)
        .filter(|&c| is_kernel_launch(trace.name(trace.runtime.at(c as usize).name)))
        .collect();
    launches.sort_by_key(|&c| trace.runtime.ts(c as usize));

    // Each window's recorded launches, then one link over all of them.
    let mut recorded: Vec<u32> = Vec::new();
    let mut spans = Vec::with_capacity(windows.len());
    for (window, size, mode) in &windows {
        let end = window.ts.saturating_add(window.dur);
        let start = recorded.len();
        let mut executed_launches = 0;
        for &c in &launches {
            let call = trace.runtime.at(c as usize);
            let inside = (call.pid, call.tid) == (window.pid, window.tid)
                && window.ts <= call.ts
                && call.ts <= end;
            if !inside {
                continue;
            }
            if executed.contains(&call.correlation) {
                executed_launches += 1;
            } else {
                recorded.push(c);
            }
        }
        spans.push((
            start..recorded.len(),
            *size,
            *mode,
            executed_launches,
            window.name,
        ));
    }
    let linked = link_launches(trace, &recorded);
    let text = |sym: Option<Sym>| sym.map(|s| trace.name(s).to_string());
    spans
        .into_iter()
        .map(
            |(range, size, mode, executed_launches, name)| CapturedGraph {
                path: trace.path.clone(),
                annotation: trace.name(name).to_string(),
                size,
                mode: mode.to_string(),
                nodes: range
                    .map(|i| {
                        let call = trace.runtime.at(recorded[i] as usize);
                        let site = &linked.sites[i];
                        GraphNode {
                            kernel: text(call.kernel),
                            stack: site
                                .stack
                                .map(|id| {
                                    linked
                                        .stack(id)
                                        .iter()
                                        .map(|&s| trace.name(s).to_string())
                                        .collect()
                                })
                                .unwrap_or_default(),
                            cpu_op: text(site.cpu_op),
                            input_dims: text(site.input_dims),
                            input_types: text(site.input_types),
                        }
                    })
                    .collect(),
                executed_launches,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{shared_trace_path, TraceFixture};

    /// A capture window on thread 1 with an executed launch before the capture began,
    /// three recorded launches (one with shapes, one unnamed) and a launch after the
    /// window; a launch on another thread inside the window time.
    fn capture_fixture() -> Trace {
        let mut b = TraceFixture::new();
        b.path("/p/capture_traces/bs_8_rank0.json.gz");
        b.annotation("ProfilerStep#3", 0, 100_000, false);
        b.annotation("capture_8_DECODE", 100, 50_000, false);
        b.frame(
            "python/sglang/srt/model_executor/cuda_graph_runner.py(400): capture",
            100,
            50_000,
            1,
        );
        // Ran at once: its kernel is in the trace.
        b.cpu_op("aten::fill_", 150, 100, 1, Some(1));
        b.runtime("hipLaunchKernel", 160, 10, 1, 11, Some(1));
        b.launching("fill_kernel");
        b.kernel("fill_kernel", 5_000, 5, Some(11), Some(1));
        b.frame(
            "python/sglang/srt/models/qwen3.py(263): forward",
            1_000,
            2_000,
            1,
        );
        b.cpu_op("aten::mm", 1_100, 500, 1, Some(2));
        b.with_shapes(
            "[[8, 4096], [4096, 4096]]",
            "[\"c10::BFloat16\", \"c10::BFloat16\"]",
        );
        b.runtime("hipExtModuleLaunchKernel", 1_200, 10, 1, 12, Some(2));
        b.launching("Cijk_gemm");
        b.frame(
            "python/sglang/srt/layers/layernorm.py(70): forward",
            4_000,
            1_000,
            1,
        );
        b.runtime("hipLaunchKernel", 4_100, 10, 1, 13, None);
        b.launching("rmsnorm_kernel");
        b.runtime("cudaLaunchKernel", 4_500, 10, 1, 14, None);
        // Another thread, inside the window's time: not this capture's.
        b.runtime("hipLaunchKernel", 4_600, 10, 2, 15, None);
        b.launching("other_thread_kernel");
        // After the window.
        b.runtime("hipLaunchKernel", 60_000, 10, 1, 16, None);
        b.launching("after_kernel");
        b.build()
    }

    #[test]
    fn nodes_are_the_recorded_launches_inside_the_window_in_order() {
        let graphs = captured_graphs(&capture_fixture());
        assert_eq!(graphs.len(), 1);
        let graph = &graphs[0];
        assert_eq!(
            (graph.annotation.as_str(), graph.size, graph.mode.as_str()),
            ("capture_8_DECODE", 8, "DECODE")
        );
        assert_eq!(graph.executed_launches, 1);
        let kernels: Vec<Option<&str>> = graph.nodes.iter().map(|n| n.kernel.as_deref()).collect();
        assert_eq!(kernels, [Some("Cijk_gemm"), Some("rmsnorm_kernel"), None]);
        let gemm = &graph.nodes[0];
        assert_eq!(
            gemm.stack,
            [
                "python/sglang/srt/model_executor/cuda_graph_runner.py(400): capture",
                "python/sglang/srt/models/qwen3.py(263): forward"
            ]
        );
        assert_eq!(gemm.cpu_op.as_deref(), Some("aten::mm"));
        assert_eq!(
            gemm.input_dims.as_deref(),
            Some("[[8, 4096], [4096, 4096]]")
        );
        assert_eq!(
            gemm.input_types.as_deref(),
            Some("[\"c10::BFloat16\", \"c10::BFloat16\"]")
        );
        // No CPU op around it: the stack still counts.
        let norm = &graph.nodes[1];
        assert_eq!(norm.cpu_op, None);
        assert_eq!(norm.input_dims, None);
        assert_eq!(
            norm.stack.last().map(String::as_str),
            Some("python/sglang/srt/layers/layernorm.py(70): forward")
        );
    }

    #[test]
    fn a_trace_without_a_capture_annotation_has_no_graphs() {
        let mut b = TraceFixture::new();
        b.annotation("ProfilerStep#3", 0, 100_000, false);
        b.runtime("hipLaunchKernel", 160, 10, 1, 11, None);
        b.launching("k");
        assert!(captured_graphs(&b.build()).is_empty());
    }

    /// The shared SGLang capture: 546 launches inside `capture_32_DECODE`, of which the
    /// two buffer fills ran before the capture began; 544 nodes, counted from the events.
    #[test]
    fn the_shared_sglang_capture_has_544_nodes_of_546_launches() {
        let trace = crate::trace::read::read_trace(
            &shared_trace_path("AMD-AGI__TraceLens__bs_32_rank0.json.gz"),
            &mut |_| {},
        )
        .unwrap();
        let graphs = captured_graphs(&trace);
        assert_eq!(graphs.len(), 1);
        let graph = &graphs[0];
        assert_eq!((graph.size, graph.mode.as_str()), (32, "DECODE"));
        assert_eq!(graph.nodes.len() as u64 + graph.executed_launches, 546);
        assert_eq!(graph.executed_launches, 2);
        let with_site = graph
            .nodes
            .iter()
            .filter(|n| n.cpu_op.is_some() && !n.stack.is_empty())
            .count();
        assert_eq!(with_site, 544);
    }
}
