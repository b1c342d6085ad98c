//! Each injected change of the diff pairs, as `llm-triage diff --format json` reports it:
//! the right row, its size per step (exact: every step of a pair runs the same durations,
//! so each stage total divides by the step count; asserted within 1 ns per step for the
//! rounding the JSON's µs allow) and status, and nothing else moving; nvjet_* and Cijk_*
//! GEMMs of the same projection meeting at the role across vendors; the regression gate
//! (exit 7 naming the row at `--fail-on-regression 3` on the 5% GEMMs, not at 10; the
//! `-ms` form likewise); a saved `--format json` report as a side; and a side that is
//! neither trace nor report.

use std::collections::BTreeSet;
use std::path::Path;

use llm_triage_tests::diff_pairs::{ChangedRow, PairTruth, STAGE};

use super::support::{diff, diff_stages, pair, regressions, run, Row, Stage};

/// The pair's stage in a diff of its two traces.
fn diffed(truth: &PairTruth, extra: &[&str]) -> Stage {
    let stages = diff_stages(&truth.base.trace, &truth.new.trace, extra);
    let names: Vec<&str> = stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(names, [STAGE], "{}: the pairs hold one stage", truth.name);
    stages.into_iter().next().unwrap()
}

/// `ns` over the pair's steps (every side has the same step count).
fn per_step(truth: &PairTruth, ns: i64) -> i64 {
    let steps = truth.base.steps.len() as i64;
    assert_eq!(
        ns % steps,
        0,
        "{}: {ns} ns is not whole per step",
        truth.name
    );
    ns / steps
}

/// Whether `got` is `want` within 1 ns.
fn near(got: i64, want: i64) -> bool {
    (got - want).abs() <= 1
}

/// Every way `row` differs from the truth's `changed` row.
fn row_errors(truth: &PairTruth, row: Option<&Row>, changed: &ChangedRow) -> Vec<String> {
    let Some(row) = row else {
        return vec![format!("{}: no row `{}`", truth.name, changed.key)];
    };
    let (base, new) = (
        per_step(truth, changed.base_ns as i64),
        per_step(truth, changed.new_ns as i64),
    );
    let mut wrong = Vec::new();
    if !near(row.base_ns, base) || !near(row.new_ns, new) || !near(row.delta_ns, new - base) {
        wrong.push(format!(
            "{}: row `{}` base/new/delta {}/{}/{} ns per step, truth {base}/{new}/{}",
            truth.name,
            row.key,
            row.base_ns,
            row.new_ns,
            row.delta_ns,
            new - base
        ));
    }
    if row.status != changed.status() {
        wrong.push(format!(
            "{}: row `{}` is {}, truth {}",
            truth.name,
            row.key,
            row.status,
            changed.status()
        ));
    }
    wrong
}

/// Rows other than `changed` that moved.
fn moved_rows(stage: &Stage, changed: &BTreeSet<&str>) -> Vec<String> {
    stage
        .rows
        .iter()
        .filter(|r| !changed.contains(r.key.as_str()))
        .filter(|r| r.delta_ns != 0 || r.status != "same")
        .map(|r| format!("unchanged row moved: {r:?}"))
        .collect()
}

fn step_delta_errors(truth: &PairTruth, stage: &Stage) -> Vec<String> {
    let want = per_step(
        truth,
        truth.new.wall_ns() as i64 - truth.base.wall_ns() as i64,
    );
    if near(stage.delta_ns, want) {
        Vec::new()
    } else {
        vec![format!(
            "{}: step delta {} ns, truth {want} ns per step",
            truth.name, stage.delta_ns
        )]
    }
}

#[test]
fn five_percent_slower_gemms_are_the_slower_rows_by_exactly_their_ns() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "gemm-5pct-slower");
    let stage = diffed(&truth, &[]);
    let changed = truth.changed_kernels();
    let mut wrong = step_delta_errors(&truth, &stage);
    for c in &changed {
        wrong.extend(row_errors(&truth, stage.row(&c.key), c));
    }
    let keys: BTreeSet<&str> = changed.iter().map(|c| c.key.as_str()).collect();
    wrong.extend(moved_rows(&stage, &keys));
    assert!(wrong.is_empty(), "{}\n{stage:#?}", wrong.join("\n"));
}

#[test]
fn a_split_fused_norm_is_the_fused_row_faster_its_kernels_new_and_a_fusion_firing() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "norm-unfused");
    let out = diff(&truth.base.trace, &truth.new.trace, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let stage = super::support::stages(&out.stdout).remove(0);
    let changed = truth.changed_kernels();
    let statuses: BTreeSet<&str> = changed.iter().map(ChangedRow::status).collect();
    assert_eq!(statuses, BTreeSet::from(["faster", "new"]), "{changed:?}");
    let mut wrong = step_delta_errors(&truth, &stage);
    for c in &changed {
        wrong.extend(row_errors(&truth, stage.row(&c.key), c));
    }
    let keys: BTreeSet<&str> = changed.iter().map(|c| c.key.as_str()).collect();
    wrong.extend(moved_rows(&stage, &keys));
    for id in &truth.fusions_started {
        if !out.stdout.contains(id.as_str()) {
            wrong.push(format!(
                "the fusion that started firing, {id}, is not named"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}\n{stage:#?}", wrong.join("\n"));
}

#[test]
fn a_longer_host_frame_between_steps_is_the_host_gap_row_by_exactly_its_ns() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "host-gap");
    let stage = diffed(&truth, &[]);
    assert!(truth.changed_kernels().is_empty());
    let parts = truth.changed_parts();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].key, "host_gap");
    let host: Vec<&Row> = stage
        .rows
        .iter()
        .filter(|r| r.key.to_lowercase().contains("host"))
        .collect();
    assert_eq!(host.len(), 1, "one host-gap row: {stage:#?}");
    let mut wrong = step_delta_errors(&truth, &stage);
    wrong.extend(row_errors(&truth, Some(host[0]), &parts[0]));
    wrong.extend(moved_rows(&stage, &BTreeSet::from([host[0].key.as_str()])));
    assert!(wrong.is_empty(), "{}\n{stage:#?}", wrong.join("\n"));
}

#[test]
fn a_different_batch_is_a_workload_note_and_moves_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "batch-16");
    let out = diff(&truth.base.trace, &truth.new.trace, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let stage = super::support::stages(&out.stdout).remove(0);
    let mut wrong = step_delta_errors(&truth, &stage);
    wrong.extend(moved_rows(&stage, &BTreeSet::new()));
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let notes = json["diff"]["stages"][0]["notes"].to_string() + &json["diff"]["notes"].to_string();
    if !(notes.to_lowercase().contains("workload") && notes.contains("16")) {
        wrong.push(format!(
            "no note that the workloads differ (8 vs 16 requests): {notes}"
        ));
    }
    assert!(wrong.is_empty(), "{}\n{stage:#?}", wrong.join("\n"));
}

#[test]
fn nvjet_and_cijk_gemms_of_the_same_projection_meet_at_the_role() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "cuda-vs-rocm");
    let stage = diffed(&truth, &[]);
    let mut wrong = step_delta_errors(&truth, &stage);
    wrong.extend(moved_rows(&stage, &BTreeSet::new()));
    let on_both =
        |key: &str| truth.base.kernels.contains_key(key) && truth.new.kernels.contains_key(key);
    let fixed = |r: &Row| {
        !truth.base.kernels.contains_key(&r.key)
            && !truth.new.kernels.contains_key(&r.key)
            && !r.key.starts_with("role ")
    };
    // Kernel names of each role on the base side: where two names share a role (the
    // layer norm and the q/k norm are both `norm`), the role cannot tell them apart and
    // the next key of the order, launch site + family, pairs them.
    let mut names_of_role: std::collections::BTreeMap<&str, usize> = Default::default();
    for k in truth.base.kernels.values() {
        *names_of_role.entry(k.role.as_str()).or_default() += 1;
    }
    let shared_role = |key: &str| {
        truth
            .base
            .kernels
            .get(key)
            .is_some_and(|k| names_of_role[k.role.as_str()] > 1)
    };
    for r in &stage.rows {
        // A row keyed by a kernel name only one side has, or by a role, met by role, or
        // by site where its role is shared.
        let by_site_ok = r.matched_by == "site" && shared_role(&r.key);
        if !on_both(&r.key) && !fixed(r) && r.matched_by != "role" && !by_site_ok {
            wrong.push(format!(
                "row `{}` matched by {}, not role",
                r.key, r.matched_by
            ));
        }
    }
    let gemms = stage
        .rows
        .iter()
        .filter(|r| {
            r.matched_by == "role"
                && (r.key.contains("nvjet")
                    || r.key.contains("Cijk")
                    || ["qkv", "o_proj", "gate_up", "down"]
                        .iter()
                        .any(|role| r.key.contains(role)))
        })
        .count();
    if gemms != 3 {
        wrong.push(format!(
            "the three GEMM rows (qkv, gate_up, o_proj + down) do not meet by role: {gemms} role-matched GEMM rows"
        ));
    }
    assert!(wrong.is_empty(), "{}\n{stage:#?}", wrong.join("\n"));
}

#[test]
fn the_gate_trips_on_five_percent_gemms_at_three_percent_and_not_at_ten() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "gemm-5pct-slower");
    let (base, new) = (&truth.base.trace, &truth.new.trace);
    let tripped = diff(base, new, &["--fail-on-regression", "3"]);
    assert_eq!(tripped.code, Some(7), "{}", tripped.stderr);
    assert!(
        truth
            .changed_kernels()
            .iter()
            .any(|c| tripped.stderr.contains(c.key.as_str())),
        "stderr names a regressed GEMM row: {}",
        tripped.stderr
    );
    let listed = regressions(&tripped.stdout);
    assert!(!listed.is_empty(), "the JSON lists the regressions");
    assert!(
        listed.iter().all(|r| r.contains("nvjet_tst_")),
        "{listed:?}"
    );

    let passed = diff(base, new, &["--fail-on-regression", "10"]);
    assert_eq!(passed.code, Some(0), "{}", passed.stderr);
    assert!(regressions(&passed.stdout).is_empty());

    // The largest GEMM row grows by more than 5 µs per step, none by 1 ms.
    let largest = truth
        .changed_kernels()
        .iter()
        .map(|c| per_step(&truth, c.delta_ns()))
        .max()
        .unwrap();
    assert!(largest > 5_000 && largest < 1_000_000, "{largest}");
    let ms = diff(base, new, &["--fail-on-regression-ms", "0.005"]);
    assert_eq!(ms.code, Some(7), "{}", ms.stderr);
    let ms = diff(base, new, &["--fail-on-regression-ms", "1"]);
    assert_eq!(ms.code, Some(0), "{}", ms.stderr);
}

/// Saves the triage of `trace` as a `--format json` report at `out`.
fn save_report(trace: &Path, out: &Path) {
    let (trace, out) = (trace.display().to_string(), out.display().to_string());
    let saved = run(&[
        "--input",
        trace.as_str(),
        "--min-share",
        "0",
        "--format",
        "json",
        "--output",
        out.as_str(),
    ]);
    assert_eq!(saved.code, Some(0), "{}", saved.stderr);
}

#[test]
fn a_saved_json_report_as_a_side_gives_the_same_diff_as_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "gemm-5pct-slower");
    let (base, new) = (&truth.base.trace, &truth.new.trace);
    let (base_json, new_json) = (dir.path().join("base.json"), dir.path().join("new.json"));
    save_report(base, &base_json);
    save_report(new, &new_json);
    let traces = diff_stages(base, new, &[]);
    assert_eq!(
        diff_stages(&base_json, &new_json, &[]),
        traces,
        "both sides saved"
    );
    assert_eq!(diff_stages(&base_json, new, &[]), traces, "the base saved");
    assert_eq!(
        diff_stages(base, &new_json, &[]),
        traces,
        "the new side saved"
    );
}

#[test]
fn a_side_that_is_neither_trace_nor_report_exits_3_with_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let truth = pair(dir.path(), "batch-16");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a trace\n").unwrap();
    let object = dir.path().join("other.json");
    std::fs::write(&object, "{\"hello\": [1, 2, 3]}\n").unwrap();
    for bad in [&text, &object] {
        for (base, new) in [(bad, &truth.new.trace), (&truth.base.trace, bad)] {
            let out = diff(base, new, &[]);
            assert_eq!(out.code, Some(3), "{}: {}", bad.display(), out.stderr);
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "one line: {}", out.stderr);
            assert!(
                lines[0].contains(&bad.display().to_string()),
                "names {}: {}",
                bad.display(),
                lines[0]
            );
            assert!(out.stdout.is_empty(), "no diff printed: {}", out.stdout);
        }
    }
}
