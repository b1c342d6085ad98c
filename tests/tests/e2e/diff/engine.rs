//! `llm-triage diff BASE NEW` on real traces and saved reports: a trace diffed against
//! itself is zero everywhere (every shared trace), each stage's rows add up exactly to
//! its step change, a saved `--format json` report diffs exactly as its trace does, the
//! regression gate exits 7 naming the row, and a side that is no input is exit 3.

use std::path::Path;

use serde_json::Value;

use crate::util::{llm_triage, shared_trace, shared_trace_verdicts, triage_json};

const DECODE: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";
const PREFILL: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz";
const VLLM_DECODE: &str = "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz";

/// `diff` with `--format json`: exit code and the `diff` object (null when not JSON).
fn diff_json(args: &[&str]) -> (i32, Value, String) {
    let out = llm_triage()
        .arg("diff")
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("binary runs");
    let value: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        value["diff"].clone(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Every stage's rows sum exactly to its step times and its delta (in ns), and the µs
/// fields are those ns / 1000.
fn assert_rows_add_up(diff: &Value) {
    for stage in diff["stages"].as_array().unwrap() {
        let rows = stage["rows"].as_array().unwrap();
        let sum = |field: &str| rows.iter().map(|r| int(&r[field])).sum::<i64>();
        assert_eq!(
            sum("base_ns"),
            int(&stage["base_step_ns"]),
            "{}",
            stage["stage"]
        );
        assert_eq!(
            sum("new_ns"),
            int(&stage["new_step_ns"]),
            "{}",
            stage["stage"]
        );
        assert_eq!(
            sum("delta_ns"),
            int(&stage["delta_ns"]),
            "{}",
            stage["stage"]
        );
        for row in rows {
            assert_eq!(
                int(&row["new_ns"]) - int(&row["base_ns"]),
                int(&row["delta_ns"])
            );
            assert_eq!(
                row["delta_us"].as_f64().unwrap(),
                int(&row["delta_ns"]) as f64 / 1000.0
            );
            let how = row["matched_by"].as_str().unwrap();
            assert!(["role", "site", "name", "untemplated", "family"].contains(&how));
        }
    }
}

#[test]
fn a_trace_diffed_against_itself_is_zero_everywhere_for_every_shared_trace() {
    for (trace, verdict) in shared_trace_verdicts() {
        let path = trace.to_str().unwrap();
        // Traces `auto` refuses are read as vLLM, as the report-identity check does.
        let framework = if verdict.starts_with("refuse") {
            "vllm"
        } else {
            "auto"
        };
        let (code, diff, stderr) = diff_json(&["--framework", framework, path, path]);
        assert_eq!(code, 0, "{path}: {stderr}");
        let report = triage_json(&[
            "--framework",
            framework,
            "--input",
            path,
            "--min-share",
            "0",
        ]);
        let stages = diff["stages"].as_array().unwrap();
        assert_eq!(
            stages.len(),
            report["stages"].as_array().unwrap().len(),
            "{path}"
        );
        for (stage, triaged) in stages.iter().zip(report["stages"].as_array().unwrap()) {
            assert_eq!(stage["delta_ns"], 0, "{path}");
            assert_eq!(stage["status"], "same", "{path}");
            // The step time is the triage's steps' wall time over their count, from the
            // report's own numbers (a stage without steps: its GPU time).
            let steps = triaged["timeline"]["steps"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let expected = if steps.is_empty() {
                (triaged["total_gpu_time_us"].as_f64().unwrap() * 1000.0).round() as i64
            } else {
                let wall: i64 = steps
                    .iter()
                    .map(|s| (s["wall_us"].as_f64().unwrap() * 1000.0).round() as i64)
                    .sum();
                let n = steps.len() as i64;
                (2 * wall + n) / (2 * n)
            };
            assert_eq!(
                int(&stage["base_step_ns"]),
                expected,
                "{path} {}",
                stage["stage"]
            );
            for row in stage["rows"].as_array().unwrap() {
                assert_eq!(row["delta_ns"], 0, "{path}: {row}");
                assert_eq!(row["status"], "same", "{path}: {row}");
            }
        }
        assert!(diff["regressions"].as_array().unwrap().is_empty());
        assert_rows_add_up(&diff);
    }
}

/// The `--format json --min-share 0` report of `trace`, saved as `dir/name`.
fn saved_report(trace: &Path, dir: &Path, name: &str) -> String {
    let out = llm_triage()
        .args([
            "--input",
            trace.to_str().unwrap(),
            "--min-share",
            "0",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let path = dir.join(name);
    std::fs::write(&path, &out.stdout).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn saved_json_reports_diff_exactly_as_their_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (shared_trace(DECODE), shared_trace(PREFILL));
    let (a_json, b_json) = (
        saved_report(&a, dir.path(), "a.json"),
        saved_report(&b, dir.path(), "b.json"),
    );
    let (code, traces, stderr) = diff_json(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let (code, reports, stderr) = diff_json(&[&a_json, &b_json]);
    assert_eq!(code, 0, "{stderr}");
    let (code, mixed, _) = diff_json(&[&a_json, b.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(traces["base"]["kind"], "trace");
    assert_eq!(reports["base"]["kind"], "report");
    assert_eq!(mixed["new"]["kind"], "trace");
    assert_eq!(traces["stages"], reports["stages"]);
    assert_eq!(traces["stages"], mixed["stages"]);
    // Decode on one side, prefill on the other: each stage is on one side only.
    let stages: Vec<&str> = traces["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["decode", "extend/prefill"]);
    assert_eq!(traces["stages"][0]["new_step_ns"], 0);
    assert_eq!(traces["stages"][1]["base_step_ns"], 0);
    assert_rows_add_up(&traces);
}

/// `report` with the row `kernel` of its first stage made `grow_ns` longer, and the
/// stage's GPU time and first step with it (as a trace with that kernel slower would be).
fn slower(report: &Value, kernel: usize, grow_ns: i64) -> Value {
    let mut r = report.clone();
    let add = |v: &mut Value, ns: i64| {
        let old = (v.as_f64().unwrap() * 1000.0).round() as i64;
        *v = serde_json::json!((old + ns) as f64 / 1000.0);
    };
    let stage = &mut r["stages"][0];
    add(&mut stage["kernels"][kernel]["gpu_time_us"], grow_ns);
    add(&mut stage["total_gpu_time_us"], grow_ns);
    add(&mut stage["timeline"]["steps"][0]["wall_us"], grow_ns);
    add(&mut stage["timeline"]["steps"][0]["compute_us"], grow_ns);
    r
}

#[test]
fn the_gate_exits_7_on_a_five_percent_regression_at_three_percent_not_at_ten() {
    let dir = tempfile::tempdir().unwrap();
    let base = saved_report(&shared_trace(DECODE), dir.path(), "base.json");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let stage = &report["stages"][0];
    assert_eq!(stage["timeline"]["steps"].as_array().unwrap().len(), 1);
    let row = &stage["kernels"][0];
    let name = row["name"].as_str().unwrap().to_string();
    let row_ns = (row["gpu_time_us"].as_f64().unwrap() * 1000.0).round() as i64;
    let new = dir.path().join("new.json");
    std::fs::write(&new, slower(&report, 0, row_ns / 20).to_string()).unwrap();
    let new = new.to_str().unwrap();

    let (code, diff, stderr) = diff_json(&[&base, new, "--fail-on-regression", "3"]);
    assert_eq!(code, 7, "{stderr}");
    let regressions = diff["regressions"].as_array().unwrap();
    assert_eq!(regressions.len(), 1, "{regressions:?}");
    assert_eq!(regressions[0]["key"], name.as_str());
    assert_eq!(regressions[0]["threshold"], "pct");
    let pct = regressions[0]["delta_pct"].as_f64().unwrap();
    assert!((pct - 5.0).abs() < 0.01, "{pct}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("regression: decode") && stderr.contains(&name[..20]),
        "{stderr}"
    );
    let grown = diff["stages"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == name.as_str())
        .unwrap();
    assert_eq!(grown["status"], "slower");
    assert_eq!(int(&grown["delta_ns"]), row_ns / 20);
    assert_eq!(int(&diff["stages"][0]["delta_ns"]), row_ns / 20);
    assert_rows_add_up(&diff);

    let (code, diff, stderr) = diff_json(&[&base, new, "--fail-on-regression", "10"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(diff["regressions"].as_array().unwrap().is_empty());
    // A millisecond gate below the growth trips too; the text format says so in a section.
    let grow_ms = (row_ns / 20) as f64 / 1e6;
    let out = llm_triage()
        .args(["diff", &base, new, "--format", "text"])
        .args(["--fail-on-regression-ms", &format!("{}", grow_ms / 2.0)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Regressions"), "{text}");
}

#[test]
fn a_side_that_is_no_trace_report_or_directory_is_exit_3_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = shared_trace(DECODE);
    let missing = dir.path().join("missing.json");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hello").unwrap();
    let stale = dir.path().join("old.json");
    std::fs::write(&stale, "{\"schema_version\": 0, \"stages\": []}").unwrap();
    for bad in [&missing, &notes, &stale] {
        for args in [
            [bad.as_path(), trace.as_path()],
            [trace.as_path(), bad.as_path()],
        ] {
            let out = llm_triage().arg("diff").args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(3), "{}", bad.display());
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(&bad.display().to_string()), "{stderr}");
            assert!(out.stdout.is_empty());
        }
    }
}

/// Kernel rows name their role (the role of the most of their time), so a diff can pair
/// rows across backends: on the shared decode traces, whose rows each hold one role, the
/// rows of each role add up exactly to the role table's time for it.
#[test]
fn kernel_rows_carry_the_role_the_role_table_counts() {
    for name in [DECODE, VLLM_DECODE] {
        let trace = shared_trace(name);
        let report = triage_json(&["--input", trace.to_str().unwrap(), "--min-share", "0"]);
        for stage in report["stages"].as_array().unwrap() {
            let roles = stage["roles"].as_array().unwrap();
            assert!(roles.len() > 2, "{}", stage["stage"]);
            let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
            for role in roles {
                let name = role["role"].as_str().unwrap();
                let rows: i64 = stage["kernels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|k| k["role"].as_str().unwrap_or("other") == name)
                    .map(|k| ns(&k["gpu_time_us"]))
                    .sum();
                assert_eq!(rows, ns(&role["gpu_time_us"]), "{} {name}", stage["stage"]);
            }
            assert!(stage["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .all(|k| k["role"] != "other"));
        }
    }
}

/// SGLang and vLLM decode traces of one GPU name their kernels differently; rows of the
/// same role (rotary embedding, KV-cache write) meet at it, with each side's time per step
/// the triage's row time over its steps.
#[test]
fn rows_of_two_engines_meet_at_their_role() {
    let (a, b) = (shared_trace(DECODE), shared_trace(VLLM_DECODE));
    let (code, diff, stderr) = diff_json(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(diff["notes"][0]
        .as_str()
        .unwrap()
        .contains("different engines"));
    let rows = diff["stages"][0]["rows"].as_array().unwrap();
    let rope = rows
        .iter()
        .find(|r| r["key"] == "role rope")
        .expect("a rope row");
    assert_eq!(rope["matched_by"], "role");
    let (base, new) = (
        rope["base_kernel"].as_str().unwrap(),
        rope["new_kernel"].as_str().unwrap(),
    );
    assert!(
        base.contains("rotary_embedding_kernel") && !base.contains("vllm::"),
        "{base}"
    );
    assert!(new.contains("vllm::rotary_embedding_kernel"), "{new}");
    for (trace, kernel, field) in [(&a, base, "base_ns"), (&b, new, "new_ns")] {
        let report = triage_json(&["--input", trace.to_str().unwrap(), "--min-share", "0"]);
        let stage = &report["stages"][0];
        let row = stage["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == kernel)
            .unwrap();
        assert_eq!(row["role"], "rope");
        let steps = stage["timeline"]["steps"].as_array().unwrap().len() as i64;
        let total = (row["gpu_time_us"].as_f64().unwrap() * 1000.0).round() as i64;
        assert_eq!(int(&rope[field]), (2 * total + steps) / (2 * steps));
    }
    assert!(rows.iter().any(|r| r["key"] == "role kv-cache write"));
    assert_rows_add_up(&diff);
}
