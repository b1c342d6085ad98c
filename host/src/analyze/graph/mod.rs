//! The CUDA/HIP graph X-ray: a graph-replayed kernel gets the launch site of its
//! counterpart in a trace where the kernel was launched on its own (a capture trace, or
//! the mapping trace of `--mapping-input`), found by aligning the two kernel sequences.
//!
//! ```text
//! capture trace --capture--> CapturedGraph  (size, mode, nodes: the launches in the window)
//! formal Linked --resolve--> Linked          (replayed sites from their matched node)
//! ```
//!
//! `resolve` runs in `triage.rs` right after `trace::link`, so every table (kernel,
//! overlap, fuse, timeline) reads the same resolved site with no change of its own.
//! A replay's kernels are paired with the graph's nodes by `align` (global alignment
//! over canonical names), through `resolve::pair_in_order`.

pub mod align;
pub(crate) mod capture;
pub(crate) mod mapping;
pub(crate) mod resolve;
