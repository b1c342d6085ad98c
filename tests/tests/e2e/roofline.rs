//! The roofline (issue 18) through the real binary, against independent figures:
//! every GEMM shape of TraceLens's published `GEMM.csv` for the SGLang Qwen3-8B prefill
//! trace gets the same FLOPs and bytes per launch (within 1%), and the attention launch
//! the FLOPs of `InferenceAttention_fwd.csv` (both CSVs read in place, from
//! `../shared/oracles`); on the B200 vLLM eager trace, every kernel whose grid gives
//! fewer thread blocks than the GPU has SMs (recounted here from the raw kernel args and
//! `deviceProperties.numSms`) is `under-filled`, and no other is.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::util::*;
use serde_json::Value;

const SGLANG_PREFILL: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz";
const B200_EAGER: &str = "AMD-AGI__TraceLens__eager_trace.json.gz";

fn oracle(file: &str) -> PathBuf {
    let p = workspace_root()
        .join("../shared/oracles/tracelens/sglang_prefilldecode")
        .join(file);
    assert!(p.exists(), "oracle missing: {}", p.display());
    p
}

/// The records of a CSV file (RFC 4180: quoted fields, `""` inside quotes), by header.
fn csv_records(path: &PathBuf) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut records: Vec<Vec<String>> = Vec::new();
    let (mut record, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => record.push(std::mem::take(&mut field)),
            ('\n', false) => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            ('\r', false) => {}
            (c, _) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    let header = records.remove(0);
    records
        .into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// `(kernel name, launches)` from a `kernel_details__summarize_kernel_stats` cell (a
/// Python repr of a list of dicts).
fn kernel_counts(cell: &str) -> Vec<(String, u64)> {
    let re = regex::Regex::new(r"'name': '([^']*)', 'stream': \d+, 'count': (\d+)").unwrap();
    re.captures_iter(cell)
        .map(|c| (c[1].to_string(), c[2].parse().unwrap()))
        .collect()
}

fn num(record: &HashMap<String, String>, key: &str) -> f64 {
    record[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} = {:?}", record[key]))
}

/// Every kernel row of every stage, each with its stage label.
fn rows(report: &Value) -> Vec<(String, &Value)> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            let label = s["stage"].as_str().unwrap().to_string();
            s["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |k| (label.clone(), k))
        })
        .collect()
}

/// The row whose raw names hold `raw`.
fn row_with<'a>(report: &'a Value, raw: &str) -> &'a Value {
    let found: Vec<&Value> = rows(report)
        .into_iter()
        .map(|(_, k)| k)
        .filter(|k| k["raw_names"].as_array().unwrap().iter().any(|n| n == raw))
        .collect();
    assert_eq!(found.len(), 1, "one row holds {raw}");
    found[0]
}

fn within(actual: f64, expected: f64, pct: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= expected.abs() * pct / 100.0,
        "{what}: {actual} vs {expected} (more than {pct}% apart)"
    );
}

/// Per kernel, the FLOPs and bytes the oracle rows of one op level give its launches.
fn expected_by_kernel(records: &[HashMap<String, String>]) -> HashMap<String, (u64, f64, f64)> {
    let mut by_kernel: HashMap<String, (u64, f64, f64)> = HashMap::new();
    for r in records {
        let per_launch_flops = num(r, "GFLOPS_first") * 1e9;
        let per_launch_bytes = num(r, "Data Moved (MB)_first") * 1024.0 * 1024.0;
        for (kernel, count) in kernel_counts(&r["kernel_details__summarize_kernel_stats"]) {
            let e = by_kernel.entry(kernel).or_default();
            e.0 += count;
            e.1 += per_launch_flops * count as f64;
            e.2 += per_launch_bytes * count as f64;
        }
    }
    by_kernel
}

#[test]
fn every_tracelens_gemm_shape_gets_its_flops_and_bytes_per_launch() {
    let report = triage_json(&[
        "--input",
        shared_trace(SGLANG_PREFILL).to_str().unwrap(),
        "--min-share",
        "0",
    ]);
    // One op level per launch (the oracle lists each aiter launch under the aiter op
    // and under the aten::mm inside it): the aten::mm rows, which hold every GEMM.
    let gemms: Vec<HashMap<String, String>> = csv_records(&oracle("GEMM.csv"))
        .into_iter()
        .filter(|r| r["name"] == "aten::mm")
        .collect();
    assert_eq!(gemms.len(), 5, "the oracle's GEMM shapes");
    let expected = expected_by_kernel(&gemms);
    assert!(!expected.is_empty());
    for (kernel, (launches, flops, bytes)) in &expected {
        let row = row_with(&report, kernel);
        let roof = &row["roofline"];
        assert_eq!(row["launches"].as_u64(), Some(*launches), "{kernel}");
        assert_eq!(
            roof["shaped_launches"].as_u64(),
            Some(*launches),
            "{kernel}"
        );
        assert_eq!(roof["shape_source"], "input-dims", "{kernel}");
        within(roof["flops"].as_f64().unwrap(), *flops, 1.0, kernel);
        within(roof["bytes"].as_f64().unwrap(), *bytes, 1.0, kernel);
    }
}

#[test]
fn the_attention_launch_gets_tracelens_flops_from_the_step_annotation() {
    let report = triage_json(&[
        "--input",
        shared_trace(SGLANG_PREFILL).to_str().unwrap(),
        "--min-share",
        "0",
    ]);
    let attention: Vec<HashMap<String, String>> =
        csv_records(&oracle("InferenceAttention_fwd.csv"))
            .into_iter()
            .filter(|r| r["name"] == "aiter::mha_batch_prefill")
            .collect();
    assert_eq!(attention.len(), 1);
    let expected = expected_by_kernel(&attention);
    assert_eq!(expected.len(), 1);
    for (kernel, (launches, flops, bytes)) in &expected {
        let row = row_with(&report, kernel);
        let roof = &row["roofline"];
        assert_eq!(
            roof["shaped_launches"].as_u64(),
            Some(*launches),
            "{kernel}"
        );
        assert_eq!(roof["shape_source"], "step-annotation", "{kernel}");
        within(roof["flops"].as_f64().unwrap(), *flops, 1.0, kernel);
        within(roof["bytes"].as_f64().unwrap(), *bytes, 1.0, kernel);
    }
}

#[test]
fn every_kernel_of_less_than_one_wave_on_the_b200_is_under_filled() {
    let path = shared_trace(B200_EAGER);
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
    // The recount: the SM count the trace reports, and each kernel's grid.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()),
        &mut bytes,
    )
    .unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let sms = doc["deviceProperties"][0]["numSms"].as_u64().unwrap();
    assert_eq!(sms, 148, "B200");
    let mut by_name: HashMap<String, (i64, i64, u64, u64)> = HashMap::new();
    for e in raw_events(&path)
        .iter()
        .filter(|e| e["cat"] == "kernel" && us_to_ns(&e["dur"]) > 0)
    {
        let grid = e["args"]["grid"].as_array().unwrap();
        let blocks: u64 = grid.iter().map(|g| g.as_u64().unwrap()).product();
        let entry = by_name
            .entry(e["name"].as_str().unwrap().to_string())
            .or_default();
        let dur = us_to_ns(&e["dur"]);
        entry.0 += dur;
        entry.2 += 1;
        if blocks < sms {
            entry.1 += dur;
            entry.3 += 1;
        }
    }
    let stages = report["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1, "one stage: each raw name has one row");
    let (mut under, mut checked) = (0, 0);
    for (_, row) in rows(&report) {
        let names = row["raw_names"].as_array().unwrap();
        let (mut total, mut starved, mut launches, mut starved_launches) = (0, 0, 0, 0);
        for n in names {
            let Some(&(t, s, l, sl)) = by_name.get(n.as_str().unwrap()) else {
                continue;
            };
            (total, starved, launches, starved_launches) =
                (total + t, starved + s, launches + l, starved_launches + sl);
        }
        if launches == 0 {
            continue; // a memcpy or memset row
        }
        let roof = &row["roofline"];
        let name = row["name"].as_str().unwrap();
        assert_eq!(
            roof["under_filled_launches"].as_u64(),
            Some(starved_launches),
            "{name}"
        );
        let expect_under = 2 * starved >= total && starved > 0;
        assert_eq!(
            roof["bound"] == "under-filled",
            expect_under,
            "{name}: {roof}"
        );
        under += usize::from(expect_under);
        checked += 1;
    }
    assert!(checked > 20, "{checked} kernel rows");
    assert!(under > 5, "{under} under-filled rows");
}

#[test]
fn memcpy_rows_get_the_bytes_kineto_wrote_recounted_from_the_raw_args() {
    let path = shared_trace(B200_EAGER);
    let report = triage_json(&["--input", path.to_str().unwrap(), "--min-share", "0"]);
    let bandwidth = report["device"]["hbm_tb_per_s"].as_f64().unwrap() * 1e12;
    // The recount: per copy name, its launches, GPU time and the `bytes` of its args.
    let mut by_name: HashMap<String, (u64, i64, u64)> = HashMap::new();
    for e in gpu_events(&raw_events(&path))
        .into_iter()
        .filter(|e| e["cat"] == "gpu_memcpy" || e["cat"] == "gpu_memset")
    {
        let entry = by_name
            .entry(e["name"].as_str().unwrap().to_string())
            .or_default();
        entry.0 += 1;
        entry.1 += us_to_ns(&e["dur"]);
        entry.2 += e["args"]["bytes"].as_u64().unwrap();
    }
    assert_eq!(
        by_name.len(),
        3,
        "DtoD, pinned and pageable HtoD: {by_name:?}"
    );
    for (name, (launches, ns, bytes)) in &by_name {
        let row = row_with(&report, name);
        let roof = &row["roofline"];
        assert_eq!(row["launches"].as_u64(), Some(*launches), "{name}");
        assert_eq!(roof["shape_source"], "kineto-bytes", "{name}");
        assert_eq!(roof["shaped_launches"].as_u64(), Some(*launches), "{name}");
        assert_eq!(roof["bytes"].as_f64(), Some(*bytes as f64), "{name}");
        assert_eq!(roof["flops"].as_f64(), Some(0.0), "{name}");
        assert_eq!(roof["bound"], "memory", "{name}");
        let seconds = *ns as f64 / 1e9;
        within(
            roof["tb_per_s"].as_f64().unwrap(),
            *bytes as f64 / seconds / 1e12,
            0.01,
            name,
        );
        within(
            roof["pct_of_peak"].as_f64().unwrap(),
            100.0 * (*bytes as f64 / bandwidth) / seconds,
            0.01,
            name,
        );
    }
}
