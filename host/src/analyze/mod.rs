//! The analyses, one module each: (trace, catalog) -> one part of the `Report`.

pub(crate) mod device;
pub(crate) mod ep_imbalance;
pub mod fuse;
pub mod graph;
pub mod kernels;
pub(crate) mod layers;
pub mod location;
pub(crate) mod overlap;
pub mod roofline;
pub(crate) mod sweep_points;
#[cfg(test)]
mod tests;
pub(crate) mod timeline;
