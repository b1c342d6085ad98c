//! `--all-ranks` against the generated multi-rank runs (`make-fixtures --ranks`): every
//! rank's clock offset is recovered within 5 µs, each rank's collective time is the exact
//! sum of its all-reduce kernels (recounted from the raw events) and splits exactly into
//! transfer and wait, each injected lateness is named as a straggler (the rank, within
//! 2 µs of the amount, the other ranks waiting that long, and its cause: the slower GEMM,
//! the late launch or the Python frame), and nothing else is. The same from several
//! `--input` files, one per rank (by name or by `distributedInfo` rank), in any order;
//! a file whose rank cannot be told or two files of one rank are refused, naming the
//! file. Ranks whose profilers started on other steps are re-aligned by their markers'
//! step numbers where those rise every step (vLLM-style summed contexts), else by their
//! collectives. What a non-reference rank's reader skipped is reported, naming its file.
//! Also that `--rank all` is the same flag, and the single-rank report carries none of
//! these sections.

use llm_triage_tests::ranks::{
    rank_runs, spoil_events, write_ep_runs, write_rank_runs, write_run, RankTruth, Spoiled,
    StepLabels,
};
use serde_json::Value;

use crate::util::{llm_triage, raw_events, shared_trace, triage_json, us_to_ns};

/// Integer ns from a report µs value (the report divides exact ns by 1000).
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap_or(f64::NAN) * 1000.0).round() as i64
}

/// One rank's all-reduce kernels, recounted from its raw events: the sum of durations.
fn collective_ns(path: &std::path::Path) -> i64 {
    raw_events(path)
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .filter(|e| {
            let name = e["name"].as_str().unwrap_or("");
            name.starts_with("ncclDevKernel_AllReduce") || name.contains("cross_device_reduce")
        })
        .map(|e| us_to_ns(&e["dur"]))
        .sum()
}

fn check_run(truth: &RankTruth) {
    let dir = truth.dir.display().to_string();
    check_report(truth, &triage_json(&["--input", &dir, "--all-ranks"]));
    // The stage summary names the ranks late most often, most steps first.
    let mut late: Vec<(u32, usize)> = Vec::new();
    for s in &truth.stragglers {
        match late.iter_mut().find(|(r, _)| *r == s.rank) {
            Some(entry) => entry.1 += 1,
            None => late.push((s.rank, 1)),
        }
    }
    late.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let named: Vec<String> = late
        .iter()
        .map(|(r, n)| format!("rank {r} ({n} step{})", if *n == 1 { "" } else { "s" }))
        .collect();
    let summary = format!(
        "Ranks late most often: {}; {} steps with a straggler",
        named.join(", "),
        truth.stragglers.len()
    );
    let out = llm_triage()
        .args(["--input", &dir, "--all-ranks"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&summary), "{dir}: {summary}\n{text}");
}

/// The ranks, collectives and stragglers of `report` against the run's ground truth.
fn check_report(truth: &RankTruth, report: &Value) {
    let dir = truth.dir.display().to_string();
    let ranks = report["ranks"].as_array().expect("ranks[]");
    assert_eq!(ranks.len(), truth.files.len(), "{dir}");
    let common = truth.common_first_step();
    let matched: Vec<_> = truth
        .collectives
        .iter()
        .filter(|c| c.step >= common)
        .collect();
    // Each rank whose profiler started on another step than rank 0's is said to be
    // shifted by the difference, and no other rank is.
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| n.contains("steps shifted by"))
        .collect();
    // Markers whose number rises every step decide the shift; plain ones leave it to
    // the collectives.
    let basis = match truth.step_labels {
        StepLabels::Plain => "matched by the sequence and end times of their collectives",
        StepLabels::ContextSums => "matched by their markers' step numbers",
    };
    let mut want_notes = 0;
    for (r, first) in truth.first_steps.iter().enumerate() {
        let shift = *first as i64 - truth.first_steps[0] as i64;
        if shift != 0 {
            want_notes += 1;
            let steps = if shift.abs() == 1 { "step" } else { "steps" };
            let says = format!("rank {r}'s decode steps shifted by {shift:+} {steps} onto rank 0's (its profiler started on another step; {basis})");
            assert!(
                notes.iter().any(|n| n.contains(&says)),
                "{dir}: {says}: {notes:?}"
            );
        }
    }
    assert_eq!(notes.len(), want_notes, "{dir}: {notes:?}");
    let mut measured_total = 0i64;
    for (r, row) in ranks.iter().enumerate() {
        assert_eq!(row["rank"], r as u64);
        let file = truth.files[r].file_name().unwrap().to_string_lossy();
        assert!(
            row["file"].as_str().unwrap().ends_with(file.as_ref()),
            "{row}"
        );
        let offset = ns(&row["clock_offset_us"]);
        let want = truth.offsets_vs_rank0_ns[r];
        assert!(
            (offset - want).abs() <= 5_000,
            "{dir} rank {r}: offset {offset} ns, injected {want} ns"
        );
        let stage = &row["stages"][0];
        assert_eq!(stage["stage"], "decode");
        let comm = ns(&stage["comm_us"]);
        // Collectives of steps some rank's profiler missed are in no comparison.
        let unmatched: i64 = truth
            .collectives
            .iter()
            .filter(|c| c.step >= truth.first_steps[r] && c.step < common)
            .map(|c| c.duration_ns[r] as i64)
            .sum();
        assert_eq!(
            comm,
            collective_ns(&truth.files[r]) - unmatched,
            "{dir} rank {r} comm"
        );
        measured_total += comm;
        // Each collective's wait on this rank: its duration less the shortest one.
        let waits: i64 = matched
            .iter()
            .map(|c| (c.duration_ns[r] - c.duration_ns.iter().min().unwrap()) as i64)
            .sum();
        assert_eq!(ns(&stage["wait_us"]), waits, "{dir} rank {r} wait");
        // The generator's ranks run one stream: no kernel runs beside a collective, so
        // every ns of wait is exposed.
        assert_eq!(
            ns(&stage["exposed_wait_us"]),
            waits,
            "{dir} rank {r} exposed wait"
        );
        assert!(stage["step_p50_us"].as_f64().unwrap() > 0.0);
        assert!(stage["busy_us"].as_f64().unwrap() > 0.0);
        if r == 0 && waits > 0 {
            // The reference rank's wall-time and overlap sections say the same split.
            let wait_ms = format!("{:.3} ms", waits as f64 / 1e6);
            let timeline = format!("{wait_ms} was waiting for other ranks");
            let overlap = format!("waited {wait_ms} for other ranks: 0.000 ms behind other kernels (hidden), {wait_ms} exposed");
            let has = |notes: &Value, says: &str| {
                notes
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n.as_str().unwrap().contains(says))
            };
            let decode = |list: &Value| {
                list.as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["stage"] == "decode")
                    .cloned()
                    .unwrap()
            };
            let timeline_notes = &decode(&report["stages"])["timeline"]["notes"];
            assert!(
                has(timeline_notes, &timeline),
                "{dir}: {timeline}: {timeline_notes}"
            );
            let overlap_notes = &decode(&report["overlap_stages"])["notes"];
            assert!(
                has(overlap_notes, &overlap),
                "{dir}: {overlap}: {overlap_notes}"
            );
        }
    }
    // The issue's JSON shape, every field of it.
    for row in ranks {
        for key in [
            "rank",
            "file",
            "clock_offset_us",
            "stages",
            "skipped",
            "notes",
        ] {
            assert!(row.get(key).is_some(), "ranks[].{key}: {row}");
        }
        for key in [
            "stage",
            "busy_us",
            "idle_us",
            "comm_us",
            "wait_us",
            "exposed_wait_us",
            "step_p50_us",
            "step_p90_us",
        ] {
            assert!(row["stages"][0].get(key).is_some(), "stages[].{key}: {row}");
        }
        let stage = &row["stages"][0];
        assert!(stage["step_p90_us"].as_f64() >= stage["step_p50_us"].as_f64());
        assert!(stage["idle_us"].as_f64().unwrap() >= 0.0);
    }
    // Under the reference rank's kernel table its communication share is split: its
    // matched collectives' wait (checked exact above) and transfer, as shares of the
    // stage's GPU time.
    let (comm0, wait0) = (
        ns(&ranks[0]["stages"][0]["comm_us"]),
        ns(&ranks[0]["stages"][0]["wait_us"]),
    );
    let gpu_us = report["stages"][0]["total_gpu_time_us"].as_f64().unwrap();
    let share = |ns: i64| 100.0 * ns as f64 / 1000.0 / gpu_us;
    let split = format!(
        "all ranks: collectives matched on every rank {:.3} ms ({:.1}% of GPU time): waiting for other ranks {:.3} ms ({:.1}%), transfer {:.3} ms ({:.1}%)",
        comm0 as f64 / 1e6,
        share(comm0),
        wait0 as f64 / 1e6,
        share(wait0),
        (comm0 - wait0) as f64 / 1e6,
        share(comm0 - wait0)
    );
    assert_eq!(
        report["stages"][0]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n.as_str().unwrap().starts_with("all ranks: "))
            .collect::<Vec<_>>(),
        [&Value::String(split)],
        "{dir}"
    );
    let collectives = report["collectives"].as_array().expect("collectives[]");
    assert_eq!(collectives.len(), 1, "{dir}: {collectives:?}");
    let row = &collectives[0];
    for key in [
        "stage",
        "family",
        "count",
        "transfer_us",
        "wait_us",
        "skew_p50_us",
        "skew_p90_us",
        "skew_max_us",
    ] {
        assert!(row.get(key).is_some(), "collectives[].{key}: {row}");
    }
    assert_eq!(row["stage"], "decode");
    // Most collectives nobody is late for: their skew is jitter.
    assert!(ns(&row["skew_p50_us"]) <= 2_000, "{row}");
    assert!(
        row["skew_p90_us"].as_f64() <= row["skew_max_us"].as_f64(),
        "{row}"
    );
    assert_eq!(row["family"], "all_reduce");
    assert_eq!(row["count"], matched.len() as u64);
    assert_eq!(
        ns(&row["transfer_us"]) + ns(&row["wait_us"]),
        measured_total,
        "{dir}: transfer + wait is every measured duration"
    );
    let max_late = truth.stragglers.iter().map(|s| s.late_ns).max().unwrap() as i64;
    assert!((ns(&row["skew_max_us"]) - max_late).abs() <= 2_000, "{row}");

    let stragglers = report["stragglers"].as_array().expect("stragglers[]");
    assert_eq!(
        stragglers.len(),
        truth.stragglers.len(),
        "{dir}: {stragglers:#?}"
    );
    for want in &truth.stragglers {
        let got = stragglers
            .iter()
            .find(|s| s["step"] == want.step as u64)
            .unwrap_or_else(|| panic!("{dir}: no straggler in step {}", want.step));
        assert_eq!(got["stage"], "decode");
        assert_eq!(got["rank"], want.rank, "{dir} step {}", want.step);
        assert_eq!(got["collective"], want.ordinal as u64, "{got}");
        assert!(
            (ns(&got["late_us"]) - want.late_ns as i64).abs() <= 2_000,
            "{got}"
        );
        assert!(
            (ns(&got["others_wait_us"]) - want.late_ns as i64).abs() <= 2_000,
            "{got}"
        );
        assert_eq!(
            got["cause"],
            want.cause.as_str(),
            "{dir} step {}: {got}",
            want.step
        );
        assert_eq!(
            got["detail"],
            want.detail.as_str(),
            "{dir} step {}: {got}",
            want.step
        );
    }
}

/// `--all-ranks --format json` on `dir`, its digest ranks read lean (the default) or, with
/// `full`, in full (`LLM_TRIAGE_DIGEST_READ=full`).
fn all_ranks_json(dir: &std::path::Path, full: bool) -> Vec<u8> {
    let mut cmd = llm_triage();
    cmd.args([
        "--input",
        &dir.display().to_string(),
        "--all-ranks",
        "--format",
        "json",
    ]);
    if full {
        cmd.env("LLM_TRIAGE_DIGEST_READ", "full");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The ranks but the reference are read lean (no CPU op shapes, unread `args` skipped
/// unchecked: `ReadScope::Digest`); their digests, so the report, are those of a full
/// read: on every generated run (eager, graph, expert-parallel splits, skipped events)
/// and on the shared traces as the ranks of one run (each a non-reference rank).
#[test]
fn digest_ranks_read_lean_give_the_report_of_a_full_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs: Vec<std::path::PathBuf> = write_rank_runs(&dir.path().join("runs"))
        .unwrap()
        .into_iter()
        .chain(write_ep_runs(&dir.path().join("ep")).unwrap())
        .map(|t| t.dir)
        .collect();
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let names = [
        "AMD-AGI__TraceLens__eager_trace.json.gz",
        "AMD-AGI__TraceLens__bs_32_rank0.json.gz",
        "pytorch__kineto__worker0.pt.trace.json.gz",
        "facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
        "zhang-yuhui__nano-vllm__decode_gpu_0.json",
    ];
    for (rank, name) in names.iter().enumerate() {
        let ext = if name.ends_with(".gz") {
            "json.gz"
        } else {
            "json"
        };
        std::fs::copy(
            shared_trace(name),
            shared.join(format!("rank{rank}.pt.trace.{ext}")),
        )
        .unwrap();
    }
    runs.push(shared);
    for run in &runs {
        let lean = all_ranks_json(run, false);
        let full = all_ranks_json(run, true);
        let report: Value = serde_json::from_slice(&lean).unwrap();
        assert!(
            report["ranks"].as_array().is_some_and(|r| r.len() >= 2),
            "{}: {report}",
            run.display()
        );
        assert!(
            lean == full,
            "{}: lean and full reads report differently",
            run.display()
        );
    }
}

#[test]
fn every_generated_run_is_aligned_split_and_its_stragglers_named() {
    let dir = tempfile::tempdir().unwrap();
    for truth in write_rank_runs(dir.path()).unwrap() {
        check_run(&truth);
    }
}

#[test]
fn rank_all_is_all_ranks_and_the_sections_are_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let truth = write_rank_runs(dir.path()).unwrap().remove(1);
    let input = truth.dir.display().to_string();
    let json = |flag: &[&str]| {
        let mut v = triage_json(&[&["--input", input.as_str()], flag].concat());
        v["inputs"] = Value::Null;
        v
    };
    assert_eq!(json(&["--rank", "all"]), json(&["--all-ranks"]));
    let single = triage_json(&["--input", &input]);
    for key in ["ranks", "collectives", "stragglers"] {
        assert!(single.get(key).is_none(), "{key} in a single-rank report");
    }
    let out = llm_triage()
        .args(["--input", &input, "--all-ranks"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for heading in ["## Ranks", "## Collective wait", "## Stragglers"] {
        assert!(text.contains(heading), "{heading} missing:\n{text}");
    }
}

#[test]
fn all_ranks_on_a_single_file_or_with_a_mapping_trace_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let truth = write_rank_runs(dir.path()).unwrap().remove(0);
    let file = truth.files[0].display().to_string();
    let out = llm_triage()
        .args(["--input", &file, "--all-ranks"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&file) && err.contains("profile directory"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let dir_arg = truth.dir.display().to_string();
    let out = llm_triage()
        .args([
            "--formal-input",
            &dir_arg,
            "--mapping-input",
            &file,
            "--rank",
            "all",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--all-ranks"));
}

/// `--all-ranks` with one `--input` per file of `files`, in the order given.
fn files_report(files: &[std::path::PathBuf]) -> Value {
    let mut args = vec!["--all-ranks".to_string()];
    for f in files {
        args.extend(["--input".to_string(), f.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    triage_json(&args)
}

#[test]
fn several_input_files_are_compared_as_the_ranks_of_a_directory_are() {
    let dir = tempfile::tempdir().unwrap();
    let truth = write_rank_runs(dir.path()).unwrap().remove(1);
    // Given last rank first: the ranks come from the files, not from the order.
    let mut files = truth.files.clone();
    files.reverse();
    let report = files_report(&files);
    check_report(&truth, &report);
    let from_dir = triage_json(&["--input", &truth.dir.display().to_string(), "--all-ranks"]);
    for key in ["ranks", "collectives", "stragglers"] {
        assert_eq!(report[key], from_dir[key], "{key}");
    }
    assert_eq!(report["inputs"].as_array().unwrap().len(), files.len());
}

#[test]
fn input_files_whose_names_carry_no_rank_take_their_distributed_info_rank() {
    let dir = tempfile::tempdir().unwrap();
    let mut truth = write_rank_runs(dir.path()).unwrap().remove(0);
    let renamed = tempfile::tempdir().unwrap();
    // Names without a rank, in the opposite order of their ranks.
    let names = ["zeta.pt.trace.json.gz", "alpha.pt.trace.json.gz"];
    for (file, name) in truth.files.iter_mut().zip(names) {
        let to = renamed.path().join(name);
        std::fs::copy(&*file, &to).unwrap();
        *file = to;
    }
    let report = files_report(&truth.files);
    check_report(&truth, &report);
    let ranks: Vec<u64> = report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [0, 1], "{:?}", report["inputs"]);
}

#[test]
fn an_input_file_of_no_known_rank_or_of_a_rank_given_twice_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let truth = write_rank_runs(dir.path()).unwrap().remove(0);
    let other = tempfile::tempdir().unwrap();
    let refused = |files: &[&std::path::Path], named: &std::path::Path, says: &str| {
        let mut cmd = llm_triage();
        cmd.arg("--all-ranks");
        for f in files {
            cmd.arg("--input").arg(f);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(3));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&named.display().to_string()) && err.contains(says),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    };
    // No rank in the name and no distributedInfo.
    let anonymous = other.path().join("anonymous.json");
    std::fs::write(
        &anonymous,
        r#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}]}"#,
    )
    .unwrap();
    refused(
        &[&truth.files[0], &anonymous],
        &anonymous,
        "rank cannot be told",
    );
    // Rank 0 twice, both of the decode stage.
    let twin = other.path().join(truth.files[0].file_name().unwrap());
    std::fs::copy(&truth.files[0], &twin).unwrap();
    refused(
        &[&truth.files[0], &truth.files[1], &twin],
        &twin,
        "claims rank 0",
    );
    // Several --input without --all-ranks is a usage error.
    let out = llm_triage()
        .arg("--input")
        .arg(&truth.files[0])
        .arg("--input")
        .arg(&truth.files[1])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--all-ranks"));
}

#[test]
fn a_non_reference_ranks_skipped_events_are_reported_naming_its_file_and_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let run = rank_runs().remove(1);
    let truth = write_run(&dir.path().join(run.name), &run).unwrap();
    let spoiled = Spoiled {
        malformed: 3,
        bad_time: 2,
    };
    spoil_events(&truth.files[2], spoiled).unwrap();
    let input = truth.dir.display().to_string();
    let report = triage_json(&["--input", &input, "--all-ranks"]);
    // The skipped events change nothing else.
    check_report(&truth, &report);
    let file = truth.files[2].file_name().unwrap().to_string_lossy();
    let read_note = format!(
        "{file}: skipped 5 events (3 malformed, 2 with a missing, negative or NaN time, 0 GPU events of zero duration)"
    );
    for (r, row) in report["ranks"].as_array().unwrap().iter().enumerate() {
        let (skipped, notes) = match r {
            2 => (spoiled.total(), vec![read_note.clone()]),
            _ => (0, Vec::new()),
        };
        assert_eq!(row["skipped"], skipped, "rank {r}: {row}");
        assert_eq!(row["notes"], serde_json::json!(notes), "rank {r}");
    }
    let rank_note = format!("rank 2: {read_note}");
    let run_notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| n.contains(".trace.json.gz: "))
        .collect();
    // Once, and no note about another rank's file.
    assert_eq!(run_notes, [rank_note.as_str()], "{:?}", report["notes"]);
    // The markdown says it too: the note, and the rank table's last column.
    let out = llm_triage()
        .args(["--input", &input, "--all-ranks"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&rank_note), "{text}");
    let skipped_cells: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("## Ranks"))
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Rank") && !l.starts_with("| -"))
        .take(4)
        .map(|l| l.trim_end_matches(" |").rsplit(" | ").next().unwrap())
        .collect();
    assert_eq!(skipped_cells, ["0", "0", "5", "0"], "{text}");
}
