//! The analyses: kernel table (and later overlap, fuse, similarity).

pub mod families;
pub mod fuse;
pub mod kernels;
pub mod location;
pub mod overlap;
pub mod similarity;
#[cfg(test)]
mod tests;

// Temporary re-export: kernel names moved to the leaf `trace::names`; families, fuse and
// similarity still import `analyze::names`. The merger removes it once they do not.
pub use crate::trace::names;
