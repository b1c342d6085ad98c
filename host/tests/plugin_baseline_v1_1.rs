//! A plugin compiled against the frozen plugin-API 1.1 layout (tests/plugins/api1_1: the
//! `baseline::v1_1::FrameworkPlugin` root module, header version 1.1.0) loads into this
//! 1.2 host through the baseline path: its fusion registry is read, it has no live
//! capture (a capture error naming its API version) and claims no server.

use std::path::{Path, PathBuf};

use llm_triage::error::TriageError;
use llm_triage::plugins::load_file;
use llm_triage::trace::stage::{MarkerKind, StageHint};
use llm_triage_plugin_api::abi_stable::library::lib_header_from_path;
use llm_triage_plugin_api::{CaptureRequest, EndpointEvidence, Workload};

mod support;

/// Builds the 1.1 test plugin and copies it into `dir`.
fn installed(dir: &Path) -> PathBuf {
    support::build_and_install(
        "llm-triage-test-plugin-api1-1",
        "triage_test_api1_1",
        dir,
        "middle",
    )
}

#[test]
fn a_1_1_plugin_loads_through_the_baseline_and_has_no_live_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = installed(dir.path());
    let header = lib_header_from_path(&path).unwrap();
    assert_eq!(header.version_strings().version.as_str(), "1.1.0");

    let engine = load_file(&path).expect("a 1.1 plugin loads into the 1.2 host");
    assert_eq!(engine.manifest.api_version, "1.1.0");
    assert_eq!(
        engine.stage_of(MarkerKind::FilePath, "/x").unwrap(),
        StageHint::Extend
    );
    assert_eq!(
        engine.fusion_registry().unwrap().as_deref(),
        Some("# middle-engine rows (none)\n")
    );
    assert_eq!(
        engine
            .detect_endpoint(&EndpointEvidence::default())
            .unwrap(),
        None
    );
    let request = CaptureRequest {
        workload: Workload::Prefill,
        output_dir: "/tmp".into(),
        num_steps: 1,
        warmup_steps: 0,
        profile_prefix: "".into(),
        prefix_explicit: false,
        profile_by_stage: None.into(),
        merge_profiles: false,
        start_step: None.into(),
        guard_step: None.into(),
    };
    match engine.capture_plan(&request, &EndpointEvidence::default()) {
        Err(TriageError::Capture(message)) => assert!(
            message.contains("(plugin API 1.1.0) predates live capture (plugin API 1.2)"),
            "{message}"
        ),
        other => panic!("expected a capture error, got {other:?}"),
    }
}
