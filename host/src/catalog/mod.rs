//! The catalog: data files under `catalog/`, embedded at build time, or loaded from a
//! user's `--catalog DIR` to use a newer copy without rebuilding.
//!
//! Two parts:
//! * kernel-family rules (`kernel-families.toml`), embedded in the host;
//! * fusion rows (`fusions/<origin>.toml`, schema in `catalog/README.md`): each engine
//!   plugin embeds its origin's file and exports it through the plugin API
//!   (`fusion_registry`); the host embeds `torch.toml`. [`load_fusions`] merges them and
//!   validates every row.
//!
//! `--catalog DIR` overrides part by part: `DIR/kernel-families.toml` replaces the
//! built-in family rules and `DIR/fusions/<origin>.toml` replaces that origin's rows,
//! each only when present. Every catalog error is one line naming the file (or plugin)
//! and the row, and exits with code 3 like any other unusable input.

use std::path::Path;

pub mod families;
pub mod fusions;
pub mod overlap;
pub mod pattern;
pub mod text;

use crate::error::TriageError;
pub use families::{load_families, parse_families, FamilyRule, FamilyRules};
pub use fusions::{
    load_fusions, merge_fusions, parse_fusions, Evidence, FusionCatalog, FusionRule, FusionSource,
};
pub use text::{list_rows, show_row, validation_summary};

/// A `--catalog DIR` must be a directory.
fn check_catalog_dir(dir: &Path) -> Result<(), TriageError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(TriageError::input(
            dir,
            "--catalog needs a directory (holding kernel-families.toml and/or fusions/*.toml)",
        ))
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
