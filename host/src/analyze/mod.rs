//! The analyses: kernel table (and later overlap, fuse, similarity).

pub mod families;
pub mod names;
#[cfg(test)]
pub(crate) mod test_trace;
pub mod location;
pub mod kernels;
