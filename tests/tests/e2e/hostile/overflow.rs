//! Times near the end of i64 nanoseconds (found by hand while auditing for overflow; the
//! release-mode fuzzers cannot see it, overflow wraps there). A debug build must not
//! panic, a release build must not wrap: an event whose end does not fit is a bad time,
//! and sums of huge but representable durations are exact.

use super::support::*;
use serde_json::json;

/// 9e15 µs = 9e18 ns: fits in i64 (max 9.22e18), but start + duration does not.
const HUGE_US: u64 = 9_000_000_000_000_000;

#[test]
fn an_event_whose_end_overflows_is_a_bad_time() {
    let dir = tempfile::tempdir().unwrap();
    let x = |cat: &str, name: &str, pid: u64, tid: u64, ts: u64, args: serde_json::Value| {
        json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
               "ts": ts, "dur": HUGE_US, "args": args})
    };
    let events = vec![
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            100,
            100,
            HUGE_US,
            json!({"correlation": 1}),
        ),
        x(
            "kernel",
            "end_overflows",
            0,
            7,
            HUGE_US,
            json!({"correlation": 1, "stream": 7}),
        ),
        x(
            "python_function",
            "a.py(1): f",
            100,
            100,
            HUGE_US,
            json!({}),
        ),
        x("user_annotation", "decode", 100, 100, HUGE_US, json!({})),
        x("gpu_user_annotation", "decode", 0, 7, HUGE_US, json!({})),
        x(
            "cpu_op",
            "aten::mm",
            100,
            100,
            HUGE_US,
            json!({"External id": 1}),
        ),
        // Starts at 1 µs: its end fits.
        x(
            "kernel",
            "fits",
            0,
            7,
            1,
            json!({"correlation": 2, "stream": 7}),
        ),
    ];
    let path = dir.path().join("overflow.trace.json");
    std::fs::write(&path, trace_text(&events)).unwrap();
    let report = report_of(&path);
    assert_eq!(
        kernel_rows(&report),
        [("fits".to_string(), 1, HUGE_US as f64)]
    );
    assert_eq!(
        notes(&report),
        ["overflow.trace.json: skipped 6 events (0 malformed, 6 with a missing, negative or NaN time, 0 GPU events of zero duration)"]
    );
}

#[test]
fn sums_of_huge_durations_do_not_overflow() {
    // Each 5e18 ns fits; their sum (1.5e19 ns) does not fit in i64.
    let dir = tempfile::tempdir().unwrap();
    let events: Vec<_> = (0..3u64)
        .map(|i| kernel(&format!("long_{i}"), 1 + i, 5_000_000_000_000_000, i + 1))
        .collect();
    let path = dir.path().join("sum.trace.json");
    std::fs::write(&path, trace_text(&events)).unwrap();
    let report = report_of(&path);
    let rows = kernel_rows(&report);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (_, launches, us) in &rows {
        assert_eq!((*launches, *us), (1, 5e15));
    }
    assert_eq!(report["stages"][0]["total_gpu_time_us"], 1.5e16);
}
