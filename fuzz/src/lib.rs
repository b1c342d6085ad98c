//! Shared checks of the llm-triage fuzz targets. Each `check_*` panics (a fuzzer
//! finding) when llm-triage breaks a promise: no panic on any input, one-line errors that
//! name the input, and internal counts that add up.

pub mod events;
pub mod tree;

use std::path::{Path, PathBuf};

use llm_triage::analyze::kernels::{kernel_tables, KernelTableOptions, StagedTrace};
use llm_triage::analyze::location::Locator;
use llm_triage::catalog::FamilyRules;
use llm_triage::error::TriageError;
use llm_triage::trace::event::Trace;
use llm_triage::trace::link::link;
use llm_triage::trace::read::read_trace;
use llm_triage::trace::stage::{split, Stage, StageHint};

/// A per-process scratch directory in memory when possible.
pub fn scratch_dir() -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("llm-triage-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// An error must be one line naming the input.
pub fn check_error(err: &TriageError, input: &Path) {
    let text = err.to_string();
    assert!(!text.contains('\n'), "error is not one line: {text:?}");
    assert!(
        text.starts_with(&input.display().to_string()),
        "error does not name {}: {text:?}",
        input.display()
    );
}

/// Writes `bytes` to a trace file and reads it; a trace read is analysed end to end.
pub fn check_trace_bytes(bytes: &[u8]) -> Option<Trace> {
    check_trace_bytes_or_error(bytes).ok()
}

/// [`check_trace_bytes`], with the one-line error when the file is refused.
pub fn check_trace_bytes_or_error(bytes: &[u8]) -> Result<Trace, String> {
    let path = scratch_dir().join("fuzz.trace.json");
    std::fs::write(&path, bytes).expect("write scratch file");
    check_trace_file_or_error(&path)
}

/// Reads `path`; a trace read is linked, split and tabled, and its counts must add up.
pub fn check_trace_file(path: &Path) -> Option<Trace> {
    check_trace_file_or_error(path).ok()
}

fn check_trace_file_or_error(path: &Path) -> Result<Trace, String> {
    let trace = match read_trace(path, &mut |_| {}) {
        Ok(trace) => trace,
        Err(err) => {
            check_error(&err, path);
            return Err(err.to_string());
        }
    };
    assert!(trace.event_count > 0, "a trace without events was accepted");
    assert!(trace.skipped.total() <= trace.event_count);
    let kept = trace.gpu_ops.len()
        + trace.runtime.len()
        + trace.cpu_ops.len()
        + trace.py_frames.len()
        + trace.annotations.len();
    assert!(kept as u64 + trace.skipped.total() <= trace.event_count);
    for op in &trace.gpu_ops {
        assert!(op.ts >= 0 && op.dur > 0, "kept a GPU op with a bad time");
    }
    analyse(&trace);
    Ok(trace)
}

/// The built-in kernel-family rules, parsed once.
pub fn builtin_families() -> &'static FamilyRules {
    static RULES: std::sync::OnceLock<FamilyRules> = std::sync::OnceLock::new();
    RULES.get_or_init(|| llm_triage::catalog::load_families(None).expect("built-in rules parse"))
}

/// Link, stage split (annotation names decide) and kernel tables; the tables' GPU time
/// must be the ops' GPU time, to the nanosecond.
pub fn analyse(trace: &Trace) {
    let linked = link(trace);
    assert_eq!(linked.sites.len(), trace.gpu_ops.len());
    let mut stage_of = |name: &str| {
        if name.contains("decode") {
            StageHint::Decode
        } else if name.contains("prefill") || name.contains("extend") {
            StageHint::Extend
        } else if name.contains("mixed") {
            StageHint::Mixed
        } else {
            StageHint::Unknown
        }
    };
    let staged = split(trace, &linked, Stage::All, &mut stage_of);
    assert_eq!(staged.stages.len(), trace.gpu_ops.len());
    let families = builtin_families();
    let locator = Locator::new(&llm_triage::plugins::Attribution::default());
    let inputs = [StagedTrace {
        trace,
        linked: &linked,
        split: &staged,
    }];
    let options = KernelTableOptions {
        min_share_pct: 0.0,
        limit: 0,
    };
    let tables = kernel_tables(&inputs, &locator, families, &options);
    // Only one GPU pid is tabled (the others are noted): equal when there is one.
    let first_pid = trace.gpu_ops.first().map(|op| op.pid);
    let one_pid = trace.gpu_ops.iter().all(|op| Some(op.pid) == first_pid);
    let total_ns: i128 = trace.gpu_ops.iter().map(|o| i128::from(o.dur)).sum();
    let tabled_us: f64 = tables.iter().map(|s| s.total_gpu_time_us).sum();
    let expected_us = total_ns as f64 / 1000.0;
    let slack = 1e-6 * expected_us.abs().max(1.0);
    assert!(
        tabled_us <= expected_us + slack && (!one_pid || tabled_us >= expected_us - slack),
        "tables hold {tabled_us} µs, the ops {expected_us} µs (one GPU pid: {one_pid})"
    );
}

/// Discovery of `root`: a set of plain files under it, or one line naming a path in it;
/// the chosen files are then read like any trace.
pub fn check_discover(root: &Path, rank: Option<u32>) {
    match llm_triage::trace::discover::discover(root, rank) {
        Ok(set) => {
            assert!(!set.files.is_empty(), "an empty trace set was accepted");
            for note in &set.notes {
                assert!(!note.contains('\n'), "note is not one line: {note:?}");
            }
            for file in &set.files {
                assert!(file.path.is_file(), "chose {}", file.path.display());
                check_trace_file(&file.path);
            }
        }
        Err(err) => {
            let text = err.to_string();
            assert!(!text.contains('\n'), "error is not one line: {text:?}");
            assert!(
                text.starts_with(&root.display().to_string()),
                "error names no path under the input: {text:?}"
            );
        }
    }
}

/// One catalog text (the first byte picks the loader): rules that load must work on
/// kernel names; rules that do not are one line naming the source.
pub fn check_catalog_text(bytes: &[u8]) {
    let Some((&which, body)) = bytes.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let source = Path::new("fuzz.toml");
    let one_line = |err: TriageError| {
        let text = err.to_string();
        assert!(!text.contains('\n'), "error is not one line: {text:?}");
        assert!(
            text.starts_with("fuzz.toml"),
            "error names no source: {text:?}"
        );
    };
    match which % 3 {
        0 => match llm_triage::catalog::parse_families(&text, source) {
            Ok(rules) => {
                for name in events::sample_names() {
                    let _ = rules.family_of(name);
                }
            }
            Err(err) => one_line(err),
        },
        1 => {
            let sources = vec![llm_triage::catalog::FusionSource {
                origin: "sglang".to_string(),
                name: "fuzz.toml".to_string(),
                text: text.into_owned(),
            }];
            if let Err(err) = llm_triage::catalog::merge_fusions(sources) {
                one_line(err);
            }
        }
        _ => {
            if let Err(err) = llm_triage::catalog::overlap::parse_known_paths(&text, source) {
                one_line(err);
            }
        }
    }
}
