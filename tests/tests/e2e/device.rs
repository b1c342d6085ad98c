//! The report's `device` chosen on the command line: `--device` and `--device-spec`
//! override the trace's device; a bad spec file or device name fails with one line and
//! its exit code; a trace that lists no device has none. (Matching the shared traces'
//! `deviceProperties` by name and by SM count + memory needs the reader to fill
//! `TraceMeta.devices`; those tests join this file when it has.)

use serde_json::Value;

use crate::util::{llm_triage, raw_events, shared_trace, triage_json};

const B200_VLLM: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";

fn triage(trace: &str, extra: &[&str]) -> Value {
    let path = shared_trace(trace);
    let mut args = vec!["--input", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    triage_json(&args)
}

#[test]
fn the_device_flag_overrides_the_traces_device() {
    let report = triage(B200_VLLM, &["--device", "NVIDIA H100 80GB HBM3"]);
    let device = &report["device"];
    assert_eq!(device["name"], "H100 SXM");
    assert_eq!(device["matched_by"], "flag");
    assert_eq!(device["peak_tflops"]["fp8"], 1979.0);
}

#[test]
fn a_device_spec_file_overrides_the_traces_device() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("lab-gpu.toml");
    std::fs::write(
        &spec,
        "schema = 1\n[[device]]\nname = \"Lab GPU\"\nsms = 148\nhbm_tb_per_s = 7.7\ncitation = \"https://example.com/lab-gpu.pdf, Lab GPU datasheet, table 1\"\n[device.peak_tflops]\nbf16 = 2000.0\n",
    )
    .unwrap();
    let report = triage(B200_VLLM, &["--device-spec", spec.to_str().unwrap()]);
    let device = &report["device"];
    assert_eq!(device["name"], "Lab GPU");
    assert_eq!(device["matched_by"], "spec-file");
    assert_eq!(device["hbm_tb_per_s"], 7.7);
    assert_eq!(device["peak_tflops"], serde_json::json!({"bf16": 2000.0}));
}

#[test]
fn a_bad_spec_file_fails_with_exit_3_and_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.toml");
    std::fs::write(
        &spec,
        "schema = 1\n[[device]]\nname = \"Lab GPU\"\nhbm_tb_per_s = 7.7\ncitation = \"no url\"\n[device.peak_tflops]\nbf16 = 2000.0\n",
    )
    .unwrap();
    let trace = shared_trace(B200_VLLM);
    let out = llm_triage()
        .args(["--input", trace.to_str().unwrap()])
        .args(["--device-spec", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&spec.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("citation must name the vendor document"),
        "{stderr}"
    );
}

#[test]
fn an_unknown_device_name_is_a_usage_error_and_the_two_flags_exclude_each_other() {
    let trace = shared_trace(B200_VLLM);
    let out = llm_triage()
        .args(["--input", trace.to_str().unwrap(), "--device", "H900"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("\"H900\" is not in the device table"),
        "{stderr}"
    );
    let both = llm_triage()
        .args(["--input", trace.to_str().unwrap()])
        .args(["--device", "B200", "--device-spec", "x.toml"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn a_trace_without_device_properties_has_no_device() {
    // The legacy Kineto sample lists no devices: the report has no `device` key.
    let path = shared_trace("pytorch__kineto__worker0.pt.trace.json.gz");
    let events = raw_events(&path);
    assert!(!events.is_empty());
    let out = llm_triage()
        .args(["--input", path.to_str().unwrap(), "--framework", "vllm"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.get("device").is_none(), "{}", report["device"]);
}
