//! The speed-ups give byte-identical reports: every real trace and a generated fixture of
//! every engine and stage kind, rendered as markdown, text and JSON, by the real binary
//! as it runs and with each speed-up switched off: `LLM_TRIAGE_READER=reference` (serde
//! for every event, the straightforward path) and `LLM_TRIAGE_ANALYSES=serial` (the
//! analyses one after the other on one thread, not in two groups on two). Failures must
//! match too: same exit code, same stderr.

use std::path::Path;

use crate::util::*;
use llm_triage_tests::{write_fixture, Engine, FixtureSpec, StageKind};

/// A speed-up and the environment setting that switches it off.
#[derive(Copy, Clone, Debug)]
enum Plain {
    /// `LLM_TRIAGE_READER=reference`: serde reads every event.
    Reader,
    /// `LLM_TRIAGE_ANALYSES=serial`: the analyses run one after the other.
    Analyses,
}

impl Plain {
    fn setting(self) -> (&'static str, &'static str) {
        match self {
            Plain::Reader => ("LLM_TRIAGE_READER", "reference"),
            Plain::Analyses => ("LLM_TRIAGE_ANALYSES", "serial"),
        }
    }
}

/// (exit code, stdout, stderr) of one triage, with `plain` switched off if given.
fn run(input: &Path, format: &str, plain: Option<Plain>) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let mut cmd = llm_triage();
    for off in [Plain::Reader, Plain::Analyses] {
        cmd.env_remove(off.setting().0);
    }
    if let Some(off) = plain {
        let (name, value) = off.setting();
        cmd.env(name, value);
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

/// With and without `off`, every format; returns how many reports succeeded.
fn assert_identical(input: &Path, off: Plain) -> usize {
    let mut succeeded = 0;
    for format in ["markdown", "text", "json"] {
        let fast = run(input, format, None);
        let reference = run(input, format, Some(off));
        assert_eq!(
            fast.0,
            reference.0,
            "{} {format} {off:?}: exit code",
            input.display()
        );
        assert!(
            fast.1 == reference.1,
            "{} {format} {off:?}: reports differ",
            input.display()
        );
        assert_eq!(
            String::from_utf8_lossy(&fast.2),
            String::from_utf8_lossy(&reference.2),
            "{} {format} {off:?}: stderr",
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
    real_traces_give_identical_reports(Plain::Reader);
}

#[test]
fn real_traces_give_identical_reports_with_parallel_and_serial_analyses() {
    real_traces_give_identical_reports(Plain::Analyses);
}

fn real_traces_give_identical_reports(off: Plain) {
    let traces = shared_trace_verdicts();
    let succeeded: usize = traces.iter().map(|(f, _)| assert_identical(f, off)).sum();
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
    fixtures_give_identical_reports(Plain::Reader);
}

#[test]
fn fixtures_give_identical_reports_with_parallel_and_serial_analyses() {
    fixtures_give_identical_reports(Plain::Analyses);
}

fn fixtures_give_identical_reports(off: Plain) {
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
            succeeded += assert_identical(&path, off);
        }
    }
    assert_eq!(succeeded, 4 * 3 * 3);
}
