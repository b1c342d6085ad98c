//! Rendering the `Report` value. One file per output format, one trait for all.
pub mod json;
pub mod markdown;
pub mod model;
pub mod text;

pub use model::*;
