//! The analyses: kernel table (and later overlap, fuse, similarity).

pub mod fuse;
pub mod kernels;
pub mod location;
pub mod names;
pub mod overlap;
#[cfg(test)]
mod real_traces;
#[cfg(test)]
pub(crate) mod test_trace;
