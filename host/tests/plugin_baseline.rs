//! A plugin compiled against the frozen plugin-API 1.0 layout (tests/plugins/api1_0: the
//! `baseline::v1_0::FrameworkPlugin` root module, header version 1.0.0) loads into this
//! 1.1 host through the baseline path and contributes no fusion rows; the 1.1 engine
//! plugins export theirs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use llm_triage::catalog::load_fusions;
use llm_triage::plugins::{load_all, load_file};
use llm_triage::trace::stage::{MarkerKind, StageHint};
use llm_triage_plugin_api::abi_stable::library::lib_header_from_path;

/// `target/<profile>`, after building the 1.0 test plugin and the SGLang plugin into it.
fn build_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf();
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut cargo = Command::new(env!("CARGO"));
        cargo.arg("build").current_dir(workspace);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        cargo.args([
            "-p",
            "llm-triage-test-plugin-api1-0",
            "-p",
            "llm-triage-plugin-sglang",
        ]);
        assert!(cargo.status().expect("run cargo build").success());
        profile_dir
    })
}

/// Copies the built `lib_name` into `dir` as `file_name` (a name the host will open).
fn install_copy(dir: &Path, lib_name: &str, file_name: &str) -> PathBuf {
    let built = build_dir().join(format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let to = dir.join(format!("{file_name}{}", std::env::consts::DLL_SUFFIX));
    std::fs::copy(&built, &to).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    to
}

#[test]
fn a_1_0_plugin_loads_through_the_baseline_and_has_no_registry() {
    let dir = tempfile::tempdir().unwrap();
    let old = install_copy(
        dir.path(),
        "triage_test_api1_0",
        "libllm_triage_plugin_legacy",
    );

    // The header really says 1.0.0: this is what a plugin built against 1.0 reports.
    let header = lib_header_from_path(&old).unwrap();
    assert_eq!(header.version_strings().version.as_str(), "1.0.0");

    let engine = load_file(&old).expect("a 1.0 plugin loads into the 1.1 host");
    assert_eq!(engine.manifest.name, "legacy-engine");
    assert_eq!(engine.manifest.api_version, "1.0.0");
    // Its 1.0 entry points are called through the upgraded reference.
    assert_eq!(
        engine.stage_of(MarkerKind::Annotation, "x").unwrap(),
        StageHint::Decode
    );
    assert_eq!(engine.fusion_registry().unwrap(), None);
}

#[test]
fn old_and_new_plugins_load_together_and_only_new_ones_add_rows() {
    let dir = tempfile::tempdir().unwrap();
    install_copy(
        dir.path(),
        "triage_test_api1_0",
        "libllm_triage_plugin_legacy",
    );
    install_copy(
        dir.path(),
        "llm_triage_plugin_sglang",
        "libllm_triage_plugin_sglang",
    );
    let set = load_all(&[dir.path().to_path_buf()]);
    assert!(set.rejected.is_empty(), "{:?}", set.rejected);
    let names: Vec<&str> = set.engines.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["legacy-engine", "sglang"]);

    let sglang = set.find("sglang").unwrap();
    let text = sglang
        .fusion_registry()
        .unwrap()
        .expect("sglang exports rows");
    assert!(text.contains("id = \"sglang.fused-add-rmsnorm\""));

    let catalog = load_fusions(None, &set).unwrap();
    let origins: std::collections::BTreeSet<&str> =
        catalog.rules.iter().map(|r| r.origin.as_str()).collect();
    assert_eq!(
        origins.into_iter().collect::<Vec<_>>(),
        ["sglang", "torch"],
        "the legacy plugin adds no rows; torch rows are the host's"
    );
}
