//! End-to-end: one row, one identity, on the real traces of ../shared/traces. The overlap
//! table gives a kernel the Python scope the kernel table gives the same row, and no two
//! rows of one stage's table print the same name (or a mangled `_Z` symbol).

use std::collections::BTreeMap;

use crate::util::*;
use serde_json::Value;

/// The markdown report of `path` with every row shown: `--framework auto`, or
/// `--framework vllm` where SOURCES.md says auto refuses the trace.
fn every_row_markdown(path: &std::path::Path, verdict: &str) -> String {
    let mut args = vec!["--min-share", "0", "--input", path.to_str().unwrap()];
    if verdict.starts_with("refuse") {
        args.extend(["--framework", "vllm"]);
    }
    let out = llm_triage().args(&args).output().expect("binary runs");
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The cells of one markdown table row (escaped `\|` kept inside its cell).
fn cells(line: &str) -> Vec<String> {
    let masked = line.replace("\\|", "\u{1}");
    masked
        .trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().replace('\u{1}', "\\|"))
        .collect()
}

/// `(section and stage, kernel names in row order)` for every markdown table with a
/// `Kernel` column.
fn kernel_columns(markdown: &str) -> Vec<(String, Vec<String>)> {
    let mut tables = Vec::new();
    let mut heading = String::new();
    let mut column: Option<usize> = None;
    let mut lines = markdown.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('|') {
            column = None;
            if !line.trim().is_empty() && !line.starts_with("- ") {
                heading = line.to_string();
            }
            continue;
        }
        match column {
            None => {
                column = cells(line).iter().position(|c| c == "Kernel");
                if column.is_some() {
                    tables.push((heading.clone(), Vec::new()));
                    lines.next(); // the | --- | line
                }
            }
            Some(k) => {
                let row = cells(line);
                if let (Some(name), Some((_, names))) = (row.get(k), tables.last_mut()) {
                    names.push(name.clone());
                }
            }
        }
    }
    tables
}

#[test]
fn no_two_rows_of_a_stage_table_print_the_same_name_on_any_shared_trace() {
    for (path, verdict) in shared_trace_verdicts() {
        let markdown = every_row_markdown(&path, &verdict);
        let file = path.file_name().unwrap().to_string_lossy();
        let tables = kernel_columns(&markdown);
        // A graph-capture trace (nothing ran) is reported in one line, with no tables.
        let capture = markdown.contains("Graph capture:");
        assert_eq!(
            tables.is_empty(),
            capture,
            "{file}: kernel tables unless a capture"
        );
        for (heading, names) in tables {
            let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
            for name in &names {
                *seen.entry(name).or_default() += 1;
            }
            let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
            assert!(
                twice.is_empty(),
                "{file} {heading}: printed twice: {twice:?}"
            );
        }
    }
}

#[test]
fn no_mangled_symbol_is_printed_in_any_shared_trace_report() {
    for (path, verdict) in shared_trace_verdicts() {
        let markdown = every_row_markdown(&path, &verdict);
        let file = path.file_name().unwrap().to_string_lossy();
        for line in markdown.lines() {
            let mangled = line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .find(|word| word.starts_with("_Z"));
            assert!(mangled.is_none(), "{file}: mangled symbol in: {line}");
        }
    }
}

/// The kernel table's dominant resolved location of each row, by canonical name.
fn kernel_locations(stage: &Value) -> BTreeMap<String, Option<String>> {
    stage["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let first = k["python_locations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|site| site["location"].as_str().unwrap())
                .find(|l| *l != "unresolved");
            (
                k["name"].as_str().unwrap().to_string(),
                first.map(String::from),
            )
        })
        .collect()
}

/// Every overlap row's Python scope against the kernel table's location of the same row;
/// returns (rows checked, graph-replayed rows among them).
fn overlap_scopes_match_kernel_locations(report: &Value) -> (usize, usize) {
    let (mut checked, mut graph_rows) = (0, 0);
    for stage in report["stages"].as_array().unwrap() {
        let locations = kernel_locations(stage);
        let replayed: Vec<&str> = stage["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| {
                k["cpu_ops"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|op| op.as_str().unwrap_or("").contains("GraphLaunch"))
            })
            .map(|k| k["name"].as_str().unwrap())
            .collect();
        for row in stage["overlap"].as_array().unwrap() {
            let kernel = row["kernel"].as_str().unwrap();
            let scope = row["python_scope"].as_str().map(String::from);
            assert_eq!(
                Some(&scope),
                locations.get(kernel),
                "{kernel}: overlap scope against the kernel table's location"
            );
            graph_rows += usize::from(replayed.contains(&kernel));
            checked += 1;
        }
    }
    (checked, graph_rows)
}

#[test]
fn the_overlap_table_scope_is_the_kernel_table_location_of_the_same_row() {
    // The SGLang decode trace (where a base-name join once gave the graph-replayed
    // `<128, 8>` row the `<128, 4>` row's location) now reads as one stream in effect, so
    // its overlap table may be empty; a graph-replay fixture on two streams has rows, and
    // before the fix its graph-replayed rows were `unmapped`.
    let trace = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let mut spec = llm_triage_tests::FixtureSpec::new(
        llm_triage_tests::Engine::Sglang,
        llm_triage_tests::StageKind::Decode,
    );
    spec.graph_replay = true;
    spec.streams = 2;
    let (fixture, _) = llm_triage_tests::write_fixture(dir.path(), &spec).unwrap();
    let (mut checked, mut graph_rows) = (0, 0);
    for path in [trace, fixture] {
        let report = triage_json(&["--min-share", "0", "--input", path.to_str().unwrap()]);
        let (c, g) = overlap_scopes_match_kernel_locations(&report);
        checked += c;
        graph_rows += g;
    }
    assert!(checked > 0, "no overlap rows");
    assert!(graph_rows > 0, "no graph-replayed overlap row was checked");
}
