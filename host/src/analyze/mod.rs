//! The analyses, one module each: (trace, catalog) -> one part of the `Report`.

pub mod fuse;
pub mod kernels;
pub(crate) mod layers;
pub mod location;
pub(crate) mod overlap;
#[cfg(test)]
mod tests;
pub(crate) mod timeline;
