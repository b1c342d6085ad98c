//! The analyses: kernel table (and later overlap, fuse, similarity).

#[cfg(test)]
pub(crate) mod test_trace;
pub mod names;
