//! Third-party plugins and versioned upgrades, through the real binary:
//! * the out-of-tree LMDeploy plugin (examples/lmdeploy-plugin) is built with its own
//!   `cargo build` (own target dir under target/, cached), loaded with `--plugin-dir`, and
//!   auto-detection claims an LMDeploy-shaped trace the host alone refuses;
//! * `plugins list` shows the upstream commit's age and `doctor` warns past 90 days;
//! * install, upgrade, refused downgrade, forced downgrade and remove in a temporary XDG
//!   data directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::util::{llm_triage, target_dir, workspace_root};

/// `target/example-plugins/debug`, holding the built LMDeploy plugin.
fn example_plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = workspace_root();
        let target = root.join("target").join("example-plugins");
        let status = Command::new(env!("CARGO"))
            .arg("build")
            .arg("--manifest-path")
            .arg(root.join("examples/lmdeploy-plugin/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the example plugin failed");
        let dir = target.join("debug");
        let lib = dir.join(format!(
            "{}llm_triage_plugin_lmdeploy{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
        assert!(lib.is_file(), "missing {}", lib.display());
        dir
    })
}

/// A trace as LMDeploy's model agent writes it (`<prefix><rank>.json.gz`, no Python
/// stacks): an eager step and a CUDA-graph decode step inside the engine's annotations.
fn write_lmdeploy_trace(dir: &Path) -> PathBuf {
    let cpu = r#""pid": 4242, "tid": 4242"#;
    let gpu = |name: &str, ts: u64, dur: u64, correlation: u64| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"device": 0, "stream": 7, "correlation": {correlation}}}}}"#
        )
    };
    let annotation = |name: &str, ts: u64, dur: u64| {
        format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", {cpu}, "ts": {ts}, "dur": {dur}}}"#
        )
    };
    let runtime = |name: &str, ts: u64, correlation: u64| {
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", {cpu}, "ts": {ts}, "dur": 5, "args": {{"correlation": {correlation}}}}}"#
        )
    };
    let events = [
        r#"{"ph": "M", "name": "process_name", "pid": 4242, "args": {"name": "python3"}}"#
            .to_string(),
        annotation("make_forward_inputs", 900, 50),
        annotation("forward_eager", 1000, 500),
        runtime("cudaLaunchKernel", 1100, 1),
        gpu("add_rms_norm_kernel", 1200, 30, 1),
        runtime("cudaLaunchKernel", 1150, 2),
        gpu("_fill_kv_cache_kernel", 1240, 20, 2),
        annotation("schedule_decoding", 2900, 20),
        annotation("forward_cudagraph", 3000, 400),
        runtime("cudaGraphLaunch", 3100, 10),
        gpu("_fwd_grouped_split_kernel", 3200, 40, 10),
        gpu("add_rms_norm_kernel", 3250, 10, 10),
    ];
    let json = format!(
        "{{\"schemaVersion\": 1, \"traceEvents\": [\n{}\n]}}\n",
        events.join(",\n")
    );
    let path = dir.join("lmdeploy_profile_0.json.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(json.as_bytes()).unwrap();
    gz.finish().unwrap();
    path
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_example_plugin_claims_an_lmdeploy_trace_the_host_alone_refuses() {
    let plugin_dir = example_plugin_dir();
    let dir = tempfile::tempdir().unwrap();
    let trace = write_lmdeploy_trace(dir.path());

    // Only the four built-in engines: nobody claims it (exit 4).
    let refused = llm_triage().arg("--input").arg(&trace).output().unwrap();
    assert_eq!(refused.status.code(), Some(4), "{}", stderr(&refused));

    let out = llm_triage()
        .arg("--plugin-dir")
        .arg(plugin_dir)
        .arg("--input")
        .arg(&trace)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["framework"]["name"], "lmdeploy");
    assert_eq!(report["framework"]["display_name"], "LMDeploy");
    assert_eq!(report["framework"]["plugin_version"], "0.1.0");
    assert_eq!(
        report["framework"]["decided_by"][0],
        "4 events of LMDeploy's record_function annotations (forward_cudagraph, make_forward_inputs, schedule_decoding)"
    );
    // forward_cudagraph holds the graph replay: decode. forward_eager says nothing: all.
    let stages: Vec<(String, Vec<(String, f64)>)> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let kernels = s["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| {
                    (
                        k["name"].as_str().unwrap().to_string(),
                        k["gpu_time_us"].as_f64().unwrap(),
                    )
                })
                .collect();
            (s["stage"].as_str().unwrap().to_string(), kernels)
        })
        .collect();
    let expect = vec![
        (
            "decode".to_string(),
            vec![
                ("_fwd_grouped_split_kernel".to_string(), 40.0),
                ("add_rms_norm_kernel".to_string(), 10.0),
            ],
        ),
        (
            "all".to_string(),
            vec![
                ("add_rms_norm_kernel".to_string(), 30.0),
                ("_fill_kv_cache_kernel".to_string(), 20.0),
            ],
        ),
    ];
    assert_eq!(stages, expect);

    // The capability matrix and upstream come from the plugin's manifest.
    let list = llm_triage()
        .args(["plugins", "list", "--plugin-dir"])
        .arg(plugin_dir)
        .env("SOURCE_DATE_EPOCH", "1788220800") // 2026-09-01
        .output()
        .unwrap();
    let text = stdout(&list);
    let row = text
        .lines()
        .find(|l| l.starts_with("lmdeploy "))
        .unwrap_or_else(|| panic!("no lmdeploy row in\n{text}"));
    assert!(
        row.contains("InternLM/lmdeploy@1263d5cd889b (2026-08-21, 11 days old)"),
        "{row}"
    );
}

#[test]
fn doctor_warns_when_a_tracked_upstream_is_older_than_90_days() {
    let doctor = |epoch: &str| {
        let out = llm_triage()
            .args(["plugins", "doctor", "--plugin-dir"])
            .arg(example_plugin_dir())
            .env("SOURCE_DATE_EPOCH", epoch)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    // 2026-12-01 is 102 days after the LMDeploy plugin's 2026-08-21.
    let late = doctor("1796083200");
    assert!(
        late.contains(
            "warning: lmdeploy was checked against InternLM/lmdeploy as of 2026-08-21 (102 days ago, more than 90)"
        ),
        "{late}"
    );
    // 2026-09-01: 11 days, no warning for it.
    let fresh = doctor("1788220800");
    assert!(
        fresh.contains("  lmdeploy  InternLM/lmdeploy@1263d5cd889b (2026-08-21, 11 days old)"),
        "{fresh}"
    );
    assert!(!fresh.contains("warning: lmdeploy"), "{fresh}");
}

/// `target/<profile>/<lib>` after building the old-sglang test plugin (0.0.1).
fn old_sglang() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "llm-triage-test-plugin-old-sglang"])
        .current_dir(workspace_root())
        .status()
        .unwrap();
    assert!(status.success());
    target_dir().join(format!(
        "{}triage_test_old_sglang{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

#[test]
fn install_upgrade_downgrade_and_remove_in_the_user_dir() {
    let old = old_sglang();
    let new = target_dir().join(format!(
        "{}llm_triage_plugin_sglang{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let xdg = tempfile::tempdir().unwrap();
    let user_dir = xdg.path().join("llm-triage").join("plugins");
    let installed = user_dir.join(format!(
        "libllm_triage_plugin_sglang{}",
        std::env::consts::DLL_SUFFIX
    ));
    let run = |args: &[&str]| {
        llm_triage()
            .env("XDG_DATA_HOME", xdg.path())
            .args(args)
            .output()
            .unwrap()
    };
    let files = || -> Vec<PathBuf> {
        let mut f: Vec<PathBuf> = std::fs::read_dir(&user_dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        f.sort();
        f
    };
    let version_in_user_dir = || {
        let info = stdout(&run(&["plugins", "info", "sglang"]));
        assert!(
            info.contains(&format!("file:           {}", installed.display())),
            "{info}"
        );
        info.lines().next().unwrap().to_string()
    };

    let first = run(&["plugins", "install", old.to_str().unwrap()]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(stdout(&first).starts_with("installed sglang 0.0.1 "));
    assert_eq!(files(), std::slice::from_ref(&installed));

    let upgrade = run(&["plugins", "install", new.to_str().unwrap()]);
    assert!(upgrade.status.success(), "{}", stderr(&upgrade));
    assert!(
        stdout(&upgrade).trim_end().ends_with("(replaced 0.0.1)"),
        "{}",
        stdout(&upgrade)
    );
    assert_eq!(files(), std::slice::from_ref(&installed), "one copy kept");
    assert_eq!(version_in_user_dir(), "sglang (SGLang) 0.1.0");

    let downgrade = run(&["plugins", "install", old.to_str().unwrap()]);
    assert_eq!(downgrade.status.code(), Some(6));
    assert!(
        stderr(&downgrade).contains("refusing to downgrade sglang from 0.1.0"),
        "{}",
        stderr(&downgrade)
    );
    assert_eq!(version_in_user_dir(), "sglang (SGLang) 0.1.0");

    let forced = run(&["plugins", "install", "--force", old.to_str().unwrap()]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert!(
        stdout(&forced).contains("(downgraded from 0.1.0 (--force))"),
        "{}",
        stdout(&forced)
    );
    assert_eq!(
        version_in_user_dir(),
        "sglang (SGLang (old test build)) 0.0.1"
    );

    let removed = run(&["plugins", "remove", "sglang"]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    assert_eq!(
        stdout(&removed),
        format!("removed {}\n", installed.display())
    );
    assert!(files().is_empty());
    let again = run(&["plugins", "remove", "sglang"]);
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn install_takes_a_bare_file_name_in_the_current_directory() {
    let xdg = tempfile::tempdir().unwrap();
    let name = format!(
        "{}llm_triage_plugin_sglang{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let out = llm_triage()
        .env("XDG_DATA_HOME", xdg.path())
        .current_dir(target_dir())
        .args(["plugins", "install", &name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("installed sglang "),
        "{}",
        stdout(&out)
    );
    let installed = xdg.path().join("llm-triage").join("plugins").join(&name);
    assert!(installed.is_file(), "{}", installed.display());
}

#[test]
fn a_file_that_is_not_a_library_is_refused_in_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("libfoo.so"), "not a library").unwrap();
    let out = llm_triage()
        .current_dir(dir.path())
        .args(["plugins", "install", "libfoo.so"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // The loader's own cause, about the file given, without its line structure.
    let absolute = dir.path().join("libfoo.so");
    assert!(
        err.contains(&format!("{}: ", absolute.display())),
        "names the file: {err}"
    );
    assert!(!err.contains("cannot open shared object file"), "{err}");
    assert!(!err.contains(" | "), "{err}");
    assert!(!err.contains("Could not open library at"), "{err}");
}
