//! Shared by the plugin tests: build a workspace plugin crate into `target/<profile>`
//! and copy its library into a test directory under a plugin file name.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `package` (library stem `lib_stem`) and copies it into `dir` as
/// `libllm_triage_plugin_<installed_as>`.
pub fn build_and_install(package: &str, lib_stem: &str, dir: &Path, installed_as: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.arg("build").current_dir(workspace);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cargo.arg("--release");
    }
    cargo.args(["-p", package]);
    assert!(cargo.status().expect("run cargo build").success());
    let built = profile_dir.join(format!(
        "{}{lib_stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let to = dir.join(format!(
        "libllm_triage_plugin_{installed_as}{}",
        std::env::consts::DLL_SUFFIX
    ));
    std::fs::copy(&built, &to).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    to
}
