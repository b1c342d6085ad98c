//! A plugin compiled against the frozen plugin-API 1.3 layout (tests/plugins/api1_3: the
//! `baseline::v1_3::FrameworkPlugin` root module, header version 1.3.0) loads into this
//! 1.4 host through the baseline path: its tools still answer, it names no step markers
//! (the 1.4 entry point reads as absent), and the step catalog a triage loads with it is
//! the host's own rows, the fallback.

use std::path::{Path, PathBuf};

use llm_triage::catalog::Catalog;
use llm_triage::plugins::{load_all, load_file};
use llm_triage_plugin_api::abi_stable::library::lib_header_from_path;

mod support;

/// Builds the 1.3 test plugin and copies it into `dir`.
fn installed(dir: &Path) -> PathBuf {
    support::build_and_install(
        "llm-triage-test-plugin-api1-3",
        "triage_test_api1_3",
        dir,
        "tooled",
    )
}

#[test]
fn a_1_3_plugin_loads_through_the_baseline_and_its_steps_fall_back_to_the_host_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = installed(dir.path());
    let header = lib_header_from_path(&path).unwrap();
    assert_eq!(header.version_strings().version.as_str(), "1.3.0");

    let engine = load_file(&path).expect("a 1.3 plugin loads into the 1.4 host");
    assert_eq!(engine.manifest.api_version, "1.3.0");
    // The 1.3 entry point is reached through the baseline cast.
    let tools = engine.tools().unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["noop"]
    );
    // The 1.4 field reads as absent.
    assert_eq!(engine.step_catalog().unwrap(), None);

    let set = load_all(&[dir.path().to_path_buf()]);
    assert!(set.rejected.is_empty(), "{:?}", set.rejected);
    assert_eq!(set.engines.len(), 1);
    let catalog = Catalog::load(None, &set).unwrap();
    let origins: Vec<&str> = catalog
        .steps
        .markers
        .iter()
        .map(|m| m.origin.as_str())
        .chain(
            catalog
                .steps
                .forward_calls
                .iter()
                .map(|c| c.origin.as_str()),
        )
        .collect();
    assert!(!origins.is_empty());
    assert!(origins.iter().all(|&o| o == "host"), "{origins:?}");
    let prefixes: Vec<&str> = catalog
        .steps
        .markers
        .iter()
        .map(|m| m.prefix.as_str())
        .collect();
    assert_eq!(prefixes, ["ProfilerStep#"]);
}
