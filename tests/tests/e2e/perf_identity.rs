//! The optimised reader gives byte-identical reports: every real trace and a generated
//! fixture of every engine and stage kind, rendered as markdown, text and JSON, by the
//! real binary with its fast event scanner and with `LLM_TRIAGE_READER=reference`
//! (serde for every event, the straightforward path). Failures must match too: same
//! exit code, same stderr.

use std::path::Path;

use crate::util::*;
use llm_triage_tests::{write_fixture, Engine, FixtureSpec, StageKind};

/// (exit code, stdout, stderr) of one triage.
fn run(input: &Path, format: &str, reference: bool) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let mut cmd = llm_triage();
    if reference {
        cmd.env("LLM_TRIAGE_READER", "reference");
    } else {
        cmd.env_remove("LLM_TRIAGE_READER");
    }
    let out = cmd
        .args([
            "--framework",
            "auto",
            "--min-share",
            "0",
            "--format",
            format,
        ])
        .arg("--input")
        .arg(input)
        .output()
        .expect("binary runs");
    (out.status.code(), out.stdout, out.stderr)
}

/// Both readers, every format; returns how many reports succeeded.
fn assert_identical(input: &Path) -> usize {
    let mut succeeded = 0;
    for format in ["markdown", "text", "json"] {
        let fast = run(input, format, false);
        let reference = run(input, format, true);
        assert_eq!(
            fast.0,
            reference.0,
            "{} {format}: exit code",
            input.display()
        );
        assert!(
            fast.1 == reference.1,
            "{} {format}: reports differ",
            input.display()
        );
        assert_eq!(
            String::from_utf8_lossy(&fast.2),
            String::from_utf8_lossy(&reference.2),
            "{} {format}: stderr",
            input.display()
        );
        if fast.0 == Some(0) {
            assert!(
                fast.1.len() > 200,
                "{} {format}: empty report",
                input.display()
            );
            succeeded += 1;
        }
    }
    succeeded
}

#[test]
fn real_traces_give_identical_reports_with_both_readers() {
    let traces = shared_trace_verdicts();
    let succeeded: usize = traces.iter().map(|(f, _)| assert_identical(f)).sum();
    // Every trace SOURCES.md gives an engine triages in all three formats; the refused
    // ones exit 4 in all three.
    let engines = traces
        .iter()
        .filter(|(_, v)| !v.starts_with("refuse"))
        .count();
    assert!(engines >= 5, "{traces:?}");
    assert_eq!(succeeded, engines * 3);
}

#[test]
fn fixtures_give_identical_reports_with_both_readers() {
    let dir = tempfile::tempdir().unwrap();
    let mut succeeded = 0;
    for engine in Engine::ALL {
        for stage in [StageKind::Extend, StageKind::Decode, StageKind::Mixed] {
            let mut spec = FixtureSpec::new(engine, stage);
            spec.streams = 2;
            spec.gzip = stage != StageKind::Mixed;
            let sub = dir.path().join(format!("{}-{stage:?}", engine.name()));
            std::fs::create_dir_all(&sub).unwrap();
            let (path, _truth) = write_fixture(&sub, &spec).unwrap();
            succeeded += assert_identical(&path);
        }
    }
    assert_eq!(succeeded, 4 * 3 * 3);
}
