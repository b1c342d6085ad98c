//! The report's `device`: the shared traces' GPUs are matched to `catalog/devices.toml` by
//! their `deviceProperties` name, else by SM count and memory (an AMD trace with empty
//! names); `--device` and `--device-spec` override; an unknown device is said in the
//! notes and the header; a bad spec file or device name fails with one line and its exit
//! code; a trace that lists no device has none.

use serde_json::Value;

use crate::util::{llm_triage, raw_events, shared_trace, triage_json};

const MI300X_SGLANG: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz";
const MI300X_VLLM_NO_NAMES: &str = "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz";
const B200_VLLM: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";
const RTX4080_NANO_VLLM: &str = "zhang-yuhui__nano-vllm__decode_gpu_0.json";

/// The trace's own first `deviceProperties` entry, parsed here from the file's text.
fn first_device_properties(name: &str) -> Value {
    let path = shared_trace(name);
    let mut bytes = Vec::new();
    let file = std::fs::File::open(&path).unwrap();
    use std::io::Read as _;
    if name.ends_with(".gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut bytes)
            .unwrap();
    } else {
        std::io::BufReader::new(file)
            .read_to_end(&mut bytes)
            .unwrap();
    }
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    doc["deviceProperties"][0].clone()
}

fn triage(trace: &str, extra: &[&str]) -> Value {
    let path = shared_trace(trace);
    let mut args = vec!["--input", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    triage_json(&args)
}

/// The stderr of a run that failed with exit `code`, printing nothing on stdout and one
/// line on stderr.
fn one_line_failure(out: std::process::Output, code: i32) -> String {
    assert_eq!(out.status.code(), Some(code));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
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
    let stderr = one_line_failure(out, 3);
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

/// The catalog, and the flags checked against it, load beside the read (`triage.rs`): a
/// bad device name is still the run's error, a usage error, even when the read fails too.
#[test]
fn a_bad_device_name_is_the_error_even_beside_a_read_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json.gz");
    let whole = std::fs::read(shared_trace(B200_VLLM)).unwrap();
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let alone = llm_triage()
        .args(["--input", cut.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(3));
    let stderr = String::from_utf8(alone.stderr).unwrap();
    assert!(stderr.contains("truncated gzip stream"), "{stderr}");
    let out = llm_triage()
        .args(["--input", cut.to_str().unwrap(), "--device", "H900"])
        .output()
        .unwrap();
    let stderr = one_line_failure(out, 2);
    assert!(
        stderr.contains("\"H900\" is not in the device table"),
        "{stderr}"
    );
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

#[test]
fn the_mi300x_trace_is_matched_by_its_name_with_the_traces_cu_count() {
    let props = first_device_properties(MI300X_SGLANG);
    assert_eq!(props["name"], "AMD Instinct MI300X");
    let report = triage(MI300X_SGLANG, &[]);
    let device = &report["device"];
    assert_eq!(device["name"], "MI300X");
    assert_eq!(device["matched_by"], "name");
    assert_eq!(device["sms"], props["numSms"]);
    assert_eq!(device["memory_bytes"], props["totalGlobalMem"]);
    assert_eq!(device["peak_tflops"]["bf16"], 1307.4);
    assert_eq!(device["hbm_tb_per_s"], 5.3);
    assert!(device["citation"].as_str().unwrap().contains("https://"));
}

#[test]
fn empty_device_names_fall_back_to_cus_and_memory() {
    let props = first_device_properties(MI300X_VLLM_NO_NAMES);
    assert_eq!(props["name"], "");
    let report = triage(MI300X_VLLM_NO_NAMES, &[]);
    let device = &report["device"];
    assert_eq!(device["name"], "MI300X");
    assert_eq!(device["matched_by"], "sms-and-memory");
    assert_eq!(device["trace_name"], "");
    assert_eq!(device["sms"], props["numSms"]);
}

#[test]
fn the_b200_trace_has_its_device_line_in_the_header() {
    let path = shared_trace(B200_VLLM);
    let out = llm_triage()
        .args(["--input", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Device: "))
        .unwrap_or_else(|| panic!("no Device line:\n{text}"));
    let props = first_device_properties(B200_VLLM);
    let sms = props["numSms"].as_u64().unwrap();
    assert!(
        line.starts_with(&format!("Device: `B200` (by name; {sms} SMs; 8 TB/s;")),
        "{line}"
    );
    assert!(line.contains("fp4 9000"), "{line}");
}

#[test]
fn an_unknown_device_is_said_in_the_notes_and_has_no_peaks() {
    let report = triage(RTX4080_NANO_VLLM, &["--framework", "vllm"]);
    let device = &report["device"];
    assert_eq!(device["matched_by"], Value::Null);
    assert_eq!(device["peak_tflops"], serde_json::json!({}));
    assert_eq!(device["hbm_tb_per_s"], Value::Null);
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with(
            "device not in the table: \"NVIDIA GeForce RTX 4080 Laptop GPU\" (58 SMs, 11.6 GiB)"
        ) && n.ends_with("pass --device or --device-spec")),
        "{notes:?}"
    );
}

#[test]
fn the_device_flag_keeps_the_traces_own_device_name() {
    let report = triage(B200_VLLM, &["--device", "NVIDIA H100 80GB HBM3"]);
    assert_eq!(report["device"]["trace_name"], "NVIDIA B200");
}
