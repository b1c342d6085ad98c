//! Live capture in mapping+formal mode: two servers (the mapping one would run with CUDA
//! graphs off), captured one after the other, triaged as --mapping-input/--formal-input.

use llm_triage_tests::emulator::{Config, Emulator};
use llm_triage_tests::Engine;
use serde_json::Value;

use crate::util::llm_triage;

#[test]
fn mapping_and_formal_urls_capture_both_and_triage_them_together() {
    let mapping = Emulator::start(Config::new(Engine::Sglang));
    let formal = Emulator::start(Config::new(Engine::Sglang));
    let dir = tempfile::tempdir().unwrap();
    let (mapping_dir, formal_dir) = (dir.path().join("mapping"), dir.path().join("formal"));
    let out = llm_triage()
        .args([
            "--framework",
            "auto",
            "--mapping-url",
            &mapping.url(),
            "--formal-url",
        ])
        .arg(formal.url())
        .arg("--mapping-output-dir")
        .arg(&mapping_dir)
        .arg("--formal-output-dir")
        .arg(&formal_dir)
        .args([
            "--warmup-steps",
            "2",
            "--num-steps",
            "3",
            "--prefill-input-len",
            "64",
        ])
        .args([
            "--decode-output-len",
            "16",
            "--probe-delay",
            "0",
            "--flush-timeout",
            "10",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["mode"], "mapping-formal");
    assert_eq!(report["framework"]["name"], "sglang");
    let under = |key: &str, root: &std::path::Path| {
        let paths: Vec<String> = report[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(paths.len(), 2, "{key}: {paths:?}");
        for p in &paths {
            assert!(p.starts_with(&root.display().to_string()), "{key}: {p}");
        }
    };
    under("inputs", &formal_dir);
    under("mapping_inputs", &mapping_dir);
    // Each server was profiled for both workloads and left stopped.
    for emu in [&mapping, &formal] {
        let starts = emu
            .served()
            .iter()
            .filter(|s| s.path == "/start_profile")
            .count();
        assert_eq!(starts, 2);
        assert!(!emu.profiling());
    }
    let stages: Vec<&str> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["extend/prefill", "decode"]);
}
