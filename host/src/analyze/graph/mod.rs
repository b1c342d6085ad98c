//! The CUDA/HIP graph X-ray: a graph-replayed kernel gets the launch site of its
//! counterpart in a trace where the kernel was launched on its own (a capture trace, or
//! the mapping trace of `--mapping-input`), found by aligning the two kernel sequences.

pub mod align;
