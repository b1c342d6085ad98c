//! A plugin compiled against the frozen plugin-API 1.2 layout (tests/plugins/api1_2: the
//! `baseline::v1_2::FrameworkPlugin` root module, header version 1.2.0) loads into this
//! 1.3 and later host through the baseline path: its live-capture entry points still answer, and it
//! has no tools (running one is a plugin error naming its API version).

use std::path::{Path, PathBuf};

use llm_triage::error::TriageError;
use llm_triage::plugins::load_file;
use llm_triage::trace::stage::{MarkerKind, StageHint};
use llm_triage_plugin_api::abi_stable::library::lib_header_from_path;
use llm_triage_plugin_api::EndpointEvidence;

mod support;

/// Builds the 1.2 test plugin and copies it into `dir`.
fn installed(dir: &Path) -> PathBuf {
    support::build_and_install(
        "llm-triage-test-plugin-api1-2",
        "triage_test_api1_2",
        dir,
        "late",
    )
}

#[test]
fn a_1_2_plugin_loads_through_the_baseline_and_has_no_tools() {
    let dir = tempfile::tempdir().unwrap();
    let path = installed(dir.path());
    let header = lib_header_from_path(&path).unwrap();
    assert_eq!(header.version_strings().version.as_str(), "1.2.0");

    let engine = load_file(&path).expect("a 1.2 plugin loads into a later host");
    assert_eq!(engine.manifest.api_version, "1.2.0");
    assert_eq!(
        engine.stage_of(MarkerKind::FilePath, "/x").unwrap(),
        StageHint::Decode
    );
    // The 1.2 entry points are reached through the baseline cast.
    let claim = engine
        .detect_endpoint(&EndpointEvidence::default())
        .unwrap()
        .expect("the 1.2 plugin claims every endpoint");
    assert_eq!(claim.score, 1234);
    assert_eq!(engine.fusion_registry().unwrap(), None);
    // The 1.3 field reads as absent.
    assert!(engine.tools().unwrap().is_empty());
    match engine.run_tool("anything", &[]) {
        Err(TriageError::Plugin { plugin, message }) => {
            assert_eq!(plugin, "late-engine");
            assert!(
                message.contains("plugin API 1.2.0 predates tools (plugin API 1.3)"),
                "{message}"
            );
        }
        other => panic!("expected a plugin error, got {other:?}"),
    }
}
