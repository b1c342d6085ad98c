//! The catalog: every data file under `catalog/` (embedded at build time) and its types,
//! loaded and validated in one place. A user's `--catalog DIR` swaps in newer copies
//! without rebuilding.
//!
//! One module per file:
//! * [`families`]: kernel-family rules (`kernel-families.toml`);
//! * [`fusions`]: fusion rows (`fusions/<origin>.toml`): each engine plugin embeds its
//!   origin's file and exports it through the plugin API (`fusion_registry`), the host
//!   embeds `torch.toml`, and [`load_fusions`] merges and validates them;
//! * [`overlap`]: known overlap paths (`overlap.toml`);
//! * [`steps`]: step markers and forward calls (`steps.toml`, the host's, and
//!   `steps/<origin>.toml`, which each engine plugin embeds and exports through the plugin
//!   API, `step_catalog`), merged by [`load_steps`];
//! * [`devices`]: GPU peaks, bandwidths and `deviceProperties` names (`devices.toml`);
//! * [`roofline`]: which CPU op uses which FLOPs/bytes formula (`roofline.toml`);
//! * [`pattern`]: the token and pattern language all three share;
//! * [`roles`]: what a kernel does inside a decoder layer (`roles.toml`);
//!
//! [`Catalog::load`] reads all three files, so a triage and `catalog validate` check the
//! same things. `--catalog DIR` overrides file by file: `DIR/kernel-families.toml`,
//! `DIR/overlap.toml` and `DIR/fusions/<origin>.toml` each replace the built-in copy (or
//! that origin's rows) only when present. Every catalog error is one line naming the file
//! (or plugin) and the row, and exits with code 3 like any other unusable input. The
//! catalog is data plus pattern matching on strings; no analysis lives here.

use std::path::Path;

pub mod collectives;
pub mod devices;
pub(crate) mod families;
pub(crate) mod fusions;
pub mod overlap;
pub mod pattern;
pub mod roles;
pub mod roofline;
pub mod sources;
pub mod steps;

use crate::error::TriageError;
use crate::plugins::PluginSet;
pub use collectives::{load_collectives, CollectiveRules};
pub use devices::{load_devices, DeviceTable};
pub use families::{load_families, parse_families, FamilyRule, FamilyRules};
pub use fusions::{
    load_fusions, merge_fusions, parse_fusions, Evidence, FusionCatalog, FusionRule, FusionSource,
};
pub use overlap::{load_known_paths, KnownPaths};
pub use roles::{load_roles, RoleRules};
pub use roofline::{load_roofline_ops, RooflineOps};
pub use steps::{load_steps, merge_steps, ForwardCall, StepCatalog, StepMarker, StepSource};

/// Every catalog file of a run, parsed and validated.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub families: FamilyRules,
    pub fusions: FusionCatalog,
    pub overlap: KnownPaths,
    pub steps: StepCatalog,
    pub devices: DeviceTable,
    /// The collectives `--all-ranks` matches across ranks (`collectives.toml`).
    pub collectives: CollectiveRules,
    /// Which CPU op uses which FLOPs/bytes formula (`roofline.toml`).
    pub roofline: RooflineOps,
    pub roles: RoleRules,
}

impl Catalog {
    /// The built-in catalog plus the loaded plugins' fusion registries, with `dir`'s files
    /// in place of the built-in ones where it has them. The first invalid file fails the
    /// load (kernel families, then overlap paths, then step boundaries, then devices, then roles, then
    /// fusion rows).
    pub fn load(dir: Option<&Path>, plugins: &PluginSet) -> Result<Catalog, TriageError> {
        Ok(Catalog {
            families: load_families(dir)?,
            overlap: load_known_paths(dir)?,
            steps: load_steps(dir, plugins)?,
            devices: load_devices(dir)?,
            collectives: load_collectives(dir)?,
            roofline: load_roofline_ops(dir)?,
            roles: load_roles(dir)?,
            fusions: load_fusions(dir, plugins)?,
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `--catalog DIR` holding one file.
    fn dir_with(file: &str, text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(file), text).unwrap();
        dir
    }

    #[test]
    fn the_builtin_catalog_loads_every_file() {
        let catalog = Catalog::load(None, &PluginSet::default()).unwrap();
        assert!(!catalog.families.rules.is_empty());
        assert!(!catalog.overlap.paths.is_empty());
        assert!(!catalog.fusions.rules.is_empty());
        assert!(!catalog.steps.markers.is_empty());
        assert!(!catalog.devices.devices.is_empty());
        assert!(!catalog.roles.rules.is_empty());
    }

    #[test]
    fn a_broken_overlap_toml_fails_the_load_naming_the_file() {
        let broken = overlap::BUILTIN_OVERLAP.replacen("schema = 1", "schema = 1\nweight = 2", 1);
        let dir = dir_with(overlap::OVERLAP_FILE, &broken);
        let err = Catalog::load(Some(dir.path()), &PluginSet::default()).unwrap_err();
        let text = err.to_string();
        let file = dir.path().join(overlap::OVERLAP_FILE);
        assert!(text.starts_with(&file.display().to_string()), "{text}");
        assert!(text.contains("unknown field `weight`"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert_eq!(err.exit_code(), crate::exit::INPUT);
    }

    #[test]
    fn a_broken_kernel_families_toml_fails_the_load_too() {
        let dir = dir_with(families::KERNEL_FAMILIES_FILE, "schema = 2\n");
        let err = Catalog::load(Some(dir.path()), &PluginSet::default()).unwrap_err();
        assert!(err.to_string().contains("schema 2"), "{err}");
    }
}
