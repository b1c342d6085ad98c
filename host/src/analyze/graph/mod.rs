//! The CUDA/HIP graph X-ray: a graph-replayed kernel gets the launch site it was
//! recorded with, instead of the graph launch that replayed it.
//!
//! ```text
//! capture trace --capture--> CapturedGraph  (size, mode, nodes: the launches in the window)
//! formal Linked --resolve--> Linked          (replayed sites from their matched node)
//! ```
//!
//! `resolve` runs in `triage.rs` right after `trace::link`, so every table (kernel,
//! overlap, fuse, timeline) reads the same resolved site with no change of its own.
//! Pairing a replay's kernels with the graph's nodes is one function
//! (`resolve::pair_in_order`), the seam where the global aligner of `align.rs` plugs in.

pub(crate) mod capture;
pub(crate) mod resolve;
