//! Tests of the reader: exact counts on the shared traces, metadata, labels and ids,
//! the malformed and bad-time counts, every failure's one-line message, and the fast and
//! reference parsers held to identical traces at every refill size (down to one byte).

use super::build::MAX_VALUE_BYTES;
use super::time::decimal_micros_to_ns;
use super::*;
use crate::trace::event::{GpuKind, Schema};
use std::io::Write;
use std::path::PathBuf;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces")).join(name)
}

fn read(path: &Path) -> Result<Trace, TriageError> {
    read_trace_in_chunks(path, &mut |_| {}, CHUNK)
}

/// The error message of reading `path` (a Trace is too big to print on failure).
fn read_error(path: &Path) -> String {
    match read(path) {
        Ok(t) => panic!("expected an error, read {} events", t.event_count),
        Err(e) => e.to_string(),
    }
}

/// Writes `text` to a temp file and reads it.
fn read_text(text: &str) -> Result<Trace, TriageError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, text).unwrap();
    read(&path)
}

fn error_of(text: &str) -> String {
    match read_text(text) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e.to_string(),
    }
}

struct Expected {
    file: &'static str,
    events: u64,
    gpu_ops: usize,
    kernels: usize,
    zero_duration: u64,
    py_frames: usize,
    cpu_ops: usize,
    runtime: usize,
    annotations: usize,
    process_names: usize,
    thread_names: usize,
    gpu_dur_ns: i64,
}

/// Computed independently with python3 (json.load with Decimal floats; GPU ops are
/// X events of cat kernel/gpu_memcpy/gpu_memset or legacy Kernel/Memcpy/Memset with
/// dur > 0; runtime = cuda_runtime/cuda_driver/Runtime X events with a correlation).
const EXPECTED: [Expected; 8] = [
    Expected {
        file: "AMD-AGI__TraceLens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        events: 18221,
        gpu_ops: 1707,
        kernels: 1465,
        zero_duration: 0,
        py_frames: 4262,
        cpu_ops: 4186,
        runtime: 1922,
        annotations: 2,
        process_names: 17,
        thread_names: 4,
        gpu_dur_ns: 45647300,
    },
    Expected {
        file: "AMD-AGI__TraceLens__eager_trace.json.gz",
        events: 24656,
        gpu_ops: 929,
        kernels: 768,
        zero_duration: 0,
        py_frames: 15230,
        cpu_ops: 4809,
        runtime: 1372,
        annotations: 6,
        process_names: 0,
        thread_names: 0,
        gpu_dur_ns: 11665760,
    },
    Expected {
        file: "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
        events: 2058,
        gpu_ops: 558,
        kernels: 555,
        zero_duration: 0,
        py_frames: 821,
        cpu_ops: 61,
        runtime: 29,
        annotations: 2,
        process_names: 0,
        thread_names: 0,
        gpu_dur_ns: 9778614,
    },
    Expected {
        file: "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
        events: 60315,
        gpu_ops: 534,
        kernels: 527,
        zero_duration: 0,
        py_frames: 53321,
        cpu_ops: 3786,
        runtime: 1069,
        annotations: 2,
        process_names: 0,
        thread_names: 0,
        gpu_dur_ns: 492811563,
    },
    Expected {
        file: "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
        events: 1993,
        gpu_ops: 434,
        kernels: 425,
        zero_duration: 0,
        py_frames: 984,
        cpu_ops: 100,
        runtime: 20,
        annotations: 1,
        process_names: 0,
        thread_names: 0,
        gpu_dur_ns: 10717708,
    },
    Expected {
        file: "facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
        events: 40573,
        gpu_ops: 3774,
        kernels: 2700,
        zero_duration: 0,
        py_frames: 0,
        cpu_ops: 14346,
        runtime: 8740,
        annotations: 72,
        process_names: 9,
        thread_names: 5,
        gpu_dur_ns: 165185838,
    },
    Expected {
        file: "pytorch__kineto__worker0.pt.trace.json.gz",
        events: 82276,
        gpu_ops: 9618,
        kernels: 9229,
        zero_duration: 309,
        py_frames: 0,
        cpu_ops: 42438,
        runtime: 10800,
        annotations: 0,
        process_names: 9,
        thread_names: 2,
        gpu_dur_ns: 649472000,
    },
    Expected {
        file: "zhang-yuhui__nano-vllm__decode_gpu_0.json",
        events: 3044,
        gpu_ops: 28,
        kernels: 17,
        zero_duration: 0,
        py_frames: 2199,
        cpu_ops: 443,
        runtime: 53,
        annotations: 0,
        process_names: 17,
        thread_names: 31,
        gpu_dur_ns: 115038,
    },
];

#[test]
fn shared_traces_read_with_exact_counts() {
    for want in &EXPECTED {
        let path = shared(want.file);
        let t = read(&path).unwrap_or_else(|e| panic!("{e}"));
        let kernels = t
            .gpu_ops
            .iter()
            .filter(|g| g.kind == GpuKind::Kernel)
            .count();
        let dur: i64 = t.gpu_ops.iter().map(|g| g.dur).sum();
        let got = (
            t.event_count,
            t.gpu_ops.len(),
            kernels,
            t.skipped.zero_duration,
            t.py_frames.len(),
            t.cpu_ops.len(),
            t.runtime.len(),
            t.annotations.len(),
            t.process_names.len(),
            t.thread_names.len(),
            dur,
        );
        let expected = (
            want.events,
            want.gpu_ops,
            want.kernels,
            want.zero_duration,
            want.py_frames,
            want.cpu_ops,
            want.runtime,
            want.annotations,
            want.process_names,
            want.thread_names,
            want.gpu_dur_ns,
        );
        assert_eq!(got, expected, "{}", want.file);
        assert_eq!(t.skipped.malformed + t.skipped.bad_time, 0, "{}", want.file);
        let legacy = want.file.starts_with("pytorch__kineto");
        let schema = if legacy {
            Schema::Legacy
        } else {
            Schema::Kineto
        };
        assert_eq!(t.meta.schema, schema, "{}", want.file);
    }
}

#[test]
fn legacy_schema_fields() {
    let t = read(&shared("pytorch__kineto__worker0.pt.trace.json.gz")).unwrap();
    assert!(t.meta.keys.is_empty() || !t.meta.bare_list);
    // Legacy GPU ops live on tid "stream 7" and carry the lower-case `external id`.
    let op = t
        .gpu_ops
        .iter()
        .find(|g| g.correlation == Some(65460))
        .unwrap();
    assert_eq!(t.name(op.tid), "stream 7");
    assert_eq!(op.external_id, Some(862));
    assert_eq!(op.kind, GpuKind::Memcpy);
    assert_eq!((op.ts, op.dur), (1606910596350714000, 2353000));
    // cudaMemcpyAsync launches that memcpy: kept although its name has no "launch".
    let rt = t.runtime.iter().find(|r| r.correlation == 65460).unwrap();
    assert_eq!(t.name(rt.name), "cudaMemcpyAsync");
    assert_eq!(t.name(rt.tid), "4093687616");
}

#[test]
fn top_level_metadata() {
    let t = read(&shared("AMD-AGI__TraceLens__eager_trace.json.gz")).unwrap();
    assert_eq!(
        t.meta.keys.first().map(String::as_str),
        Some("schemaVersion")
    );
    assert_eq!(t.meta.keys.len(), 13);
    assert_eq!(t.meta.keys[11], "traceEvents");
    assert_eq!(t.meta.device_names, vec!["NVIDIA B200".to_string(); 8]);
    assert_eq!((t.meta.rank, t.meta.world_size), (Some(0), Some(8)));
    assert_eq!(t.meta.with_stack, Some(true));
    assert!(!t.meta.bare_list);

    let t = read(&shared(
        "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
    ));
    assert_eq!(t.unwrap().meta.device_names, vec![String::new(); 8]);
    let t = read(&shared("pytorch__kineto__worker0.pt.trace.json.gz")).unwrap();
    assert!(t.meta.device_names.is_empty());
    assert_eq!(t.meta.rank, None);
}

#[test]
fn python_repr_metadata_and_keys_after_events() {
    let t = read_text(
        r#"{"traceEvents": [{"ph": "i"}], "deviceProperties": "[{'id': 0, 'name': 'AMD Instinct MI300X', 'x': 1}, {'id': 1, 'name': 'AMD Instinct MI300X'}]",
               "distributedInfo": "{'backend': 'nccl', 'rank': 3, 'world_size': 8, 'pg_config': [{'ranks': [0, 1]}]}",
               "with_stack": true, "big": {"a": [1, {"b": "]}"}]}}"#,
    )
    .unwrap();
    assert_eq!(t.meta.device_names, vec!["AMD Instinct MI300X"; 2]);
    assert_eq!((t.meta.rank, t.meta.world_size), (Some(3), Some(8)));
    assert_eq!(t.meta.with_stack, Some(true));
    assert_eq!(
        t.meta.keys,
        [
            "traceEvents",
            "deviceProperties",
            "distributedInfo",
            "with_stack",
            "big"
        ]
    );
    assert_eq!(t.event_count, 1);
}

const KERNEL: &str = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2.25, "args": {"stream": 7, "correlation": 5, "External id": "9"}}"#;

#[test]
fn bare_list_and_string_or_int_labels() {
    let text = format!(
        r#"[{KERNEL}, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "12", "tid": 12.0, "ts": "9.0", "dur": 1, "args": {{"correlation": 5.0}}}}]"#
    );
    let t = read_text(&text).unwrap();
    assert!(t.meta.bare_list);
    assert!(t.meta.keys.is_empty());
    let k = t.gpu_ops.at(0);
    assert_eq!(
        (k.ts, k.dur, k.stream, k.correlation, k.external_id),
        (10500, 2250, Some(7), Some(5), Some(9))
    );
    assert_eq!((t.name(k.pid), t.name(k.tid)), ("0", "7"));
    let r = t.runtime.at(0);
    assert_eq!((r.ts, r.dur, r.correlation), (9000, 1000, 5));
    assert_eq!((t.name(r.pid), t.name(r.tid)), ("12", "12.0"));
}

#[test]
fn ids_absent_forms() {
    let ev = |id: &str| {
        format!(
            r#"{{"traceEvents": [{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {{"External id": {id}}}}}]}}"#
        )
    };
    for (id, want) in [
        ("null", None),
        ("\"\"", None),
        ("\"None\"", None),
        ("\"12.0\"", None),
        ("12.0", Some(12)),
        ("\"12\"", Some(12)),
        ("-3", None),
    ] {
        let t = read_text(&ev(id)).unwrap();
        assert_eq!(t.cpu_ops.at(0).external_id, want, "{id}");
    }
}

#[test]
fn nan_and_infinity_are_tolerated() {
    let text = format!(
        r#"{{"traceEvents": [{KERNEL},
              {{"ph": "X", "cat": "kernel", "name": "NaN k", "pid": 0, "tid": 7, "ts": 1, "dur": NaN, "args": {{"stream": 7}}}},
              {{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {{"bw": Infinity, "x": -Infinity, "s": "NaN"}}}}],
              "other": [NaN]}}"#
    );
    let t = read_text(&text).unwrap();
    assert_eq!(t.gpu_ops.len(), 1);
    assert_eq!(t.skipped.bad_time, 1);
    assert_eq!(t.cpu_ops.len(), 1);
    assert_eq!(t.event_count, 3);
}

#[test]
fn bad_times_zero_durations_and_malformed_elements_are_counted() {
    let text = format!(
        r#"{{"traceEvents": [{KERNEL}, 5, "x", [1, 2], {{"ph": 5}},
              {{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 0}},
              {{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}},
              {{"ph": "X", "cat": "gpu_memcpy", "name": "k", "ts": 1, "dur": -1}},
              {{"ph": "X", "cat": "gpu_memset", "name": "k", "ts": -1, "dur": 1}},
              {{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1}}]}}"#
    );
    let t = read_text(&text).unwrap();
    assert_eq!(t.event_count, 10);
    assert_eq!(t.gpu_ops.len(), 1);
    assert_eq!(t.skipped.malformed, 4);
    assert_eq!(t.skipped.zero_duration, 1);
    assert_eq!(t.skipped.bad_time, 3);
}

/// Reads with both parsers and a chosen refill size; they must agree.
fn read_trace_in_chunks(
    path: &Path,
    progress: &mut dyn FnMut(u64),
    chunk: usize,
) -> Result<Trace, TriageError> {
    let fast = read_trace_with(path, progress, chunk, EventParser::Fast);
    let reference = read_trace_with(path, &mut |_| {}, chunk, EventParser::Reference);
    match (&fast, &reference) {
        (Ok(f), Ok(r)) => assert!(f == r, "fast and reference traces differ"),
        (Err(f), Err(r)) => assert_eq!(f.to_string(), r.to_string()),
        _ => panic!(
            "one parser failed: {:?} / {:?}",
            fast.is_ok(),
            reference.is_ok()
        ),
    }
    fast
}

#[test]
fn names_past_the_limit_are_skipped_and_counted_by_field() {
    let long = "k".repeat(MAX_VALUE_BYTES + 1);
    let text = format!(
        r#"[{KERNEL}, {{"ph": "X", "cat": "kernel", "name": "{long}", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {{"stream": 7}}}},
           {{"ph": "X", "cat": "cpu_op", "name": "op", "pid": "{long}", "tid": 7, "ts": 1, "dur": 1}}]"#
    );
    // Tiny chunks too: the event spans many refills.
    for chunk in [CHUNK, 4096] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, &text).unwrap();
        let t = read_trace_in_chunks(&path, &mut |_| {}, chunk).unwrap();
        assert_eq!((t.event_count, t.gpu_ops.len(), t.cpu_ops.len()), (3, 1, 0));
        assert_eq!(t.skipped.malformed, 0);
        assert_eq!(
            t.skipped
                .oversized
                .iter()
                .map(|(k, v)| (*k, *v))
                .collect::<Vec<_>>(),
            [("name", 1), ("pid", 1)]
        );
        assert_eq!(t.skipped.total(), 2);
    }
}

#[test]
fn named_pipes_and_devices_are_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let err = read_error(&fifo);
    assert!(
        err.ends_with("p.json: not a regular file (a named pipe); pass the trace file itself"),
        "{err}"
    );
    let err = read_error(Path::new("/dev/null"));
    assert!(
        err.ends_with("not a regular file (a device); pass the trace file itself"),
        "{err}"
    );
}

#[test]
fn not_a_trace() {
    let cases = [
        ("", "not a torch.profiler trace: the file is empty"),
        ("  \n", "not a torch.profiler trace: the file is empty"),
        (
            "{}",
            "not a torch.profiler trace: top-level object has no traceEvents array",
        ),
        (
            r#"{"a": [1, 2]}"#,
            "not a torch.profiler trace: top-level object has no traceEvents array",
        ),
        (
            r#"{"traceEvents": 5}"#,
            "not a torch.profiler trace: traceEvents is not an array",
        ),
        (
            "5",
            "not a torch.profiler trace: the top level is a number, not an object or array",
        ),
        (
            r#""x""#,
            "not a torch.profiler trace: the top level is a string, not an object or array",
        ),
        (
            "[1, 2, 3]",
            "not a torch.profiler trace: none of its 3 events is a well-formed event object",
        ),
        ("[]", "not a torch.profiler trace: it holds no events"),
        (
            r#"{"traceEvents": [], "x": 1}"#,
            "not a torch.profiler trace: it holds no events",
        ),
    ];
    for (text, want) in cases {
        let err = error_of(text);
        assert!(err.contains(want), "{text:?}: {err}");
        assert!(err.contains("t.json: "), "{err}");
    }
}

#[test]
fn invalid_json_names_the_byte() {
    let err = error_of(r#"{"traceEvents": [{"ph": X}]}"#);
    assert!(
        err.contains("invalid JSON at byte 24: expected value"),
        "{err}"
    );
    let err = error_of(r#"{"traceEvents": [] x"#);
    assert!(
        err.contains("invalid JSON at byte 19: expected ',' or '}'"),
        "{err}"
    );
    let err = error_of(r#"{"traceEvents": []} {"#);
    assert!(
        err.contains("invalid JSON at byte 20: trailing characters"),
        "{err}"
    );
    let err = error_of(r#"{"traceEvents": [{"ph": "X"} {"ph": "X"}]}"#);
    assert!(
        err.contains("invalid JSON at byte 29: expected ',' or ']' after an event"),
        "{err}"
    );
}

#[test]
fn truncated_json_is_an_error_not_a_partial_read() {
    let whole = format!(r#"{{"traceEvents": [{KERNEL}, {KERNEL}]}}"#);
    for cut in [whole.len() - 1, whole.len() - 2, KERNEL.len() + 20, 30, 17] {
        let err = error_of(&whole[..cut]);
        assert!(
            err.contains("truncated JSON: the document ends at byte"),
            "{cut}: {err}"
        );
    }
    let err = error_of(r#"{"traceEvents": [{"name": "a\"#);
    assert!(err.contains("truncated JSON"), "{err}");
}

#[test]
fn truncated_and_corrupt_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let bytes =
        std::fs::read(shared("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz")).unwrap();
    let path = dir.path().join("cut.json.gz");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = read_error(&path);
    let want = format!("truncated gzip stream after {} bytes", bytes.len() / 2);
    assert!(err.ends_with(&want), "{err}");

    let mut corrupt = bytes.clone();
    // Past the header, whose file-name field no checksum covers.
    for b in &mut corrupt[1000..1100] {
        *b ^= 0x5a;
    }
    std::fs::write(&path, &corrupt).unwrap();
    let err = read_error(&path);
    assert!(err.contains("corrupt gzip stream"), "{err}");
}

#[test]
fn gzip_is_detected_by_magic_not_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain-name.json");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(format!(r#"{{"traceEvents": [{KERNEL}]}}"#).as_bytes())
        .unwrap();
    std::fs::write(&path, enc.finish().unwrap()).unwrap();
    assert_eq!(read(&path).unwrap().gpu_ops.len(), 1);
    let path = dir.path().join("not-gzip.json.gz");
    std::fs::write(&path, format!(r#"[{KERNEL}]"#)).unwrap();
    assert_eq!(read(&path).unwrap().gpu_ops.len(), 1);
}

/// `text` written to `dir` as `t.json` and, gzipped, as `t.json.gz`.
fn plain_and_gzip(dir: &Path, text: &str) -> (PathBuf, PathBuf) {
    let plain = dir.join("t.json");
    std::fs::write(&plain, text).unwrap();
    let gzip = dir.join("t.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    std::fs::write(&gzip, enc.finish().unwrap()).unwrap();
    (plain, gzip)
}

/// A trace of `n` kernels named `gemm→é<i>` (multi-byte characters), lasting
/// `i % 97 + 1` µs each.
fn many_kernels(n: usize) -> String {
    let events: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "gemm→é{i}", "pid": 0, "tid": 7, "ts": {i}, "dur": {}, "args": {{"stream": 7, "correlation": {i}}}}}"#,
                i % 97 + 1
            )
        })
        .collect();
    format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"))
}

/// Another part of the run failing sets the stop flag (`triage` loads the catalog beside
/// the read): the read gives up at its next block, with an error, where unstopped it
/// reads all.
#[test]
fn a_stopped_read_gives_up_at_its_next_block() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = plain_and_gzip(dir.path(), &many_kernels(20_000));
    let unstopped = AtomicBool::new(false);
    let whole = read_trace_until_stopped(&path, &mut |_| {}, ReadScope::Full, false, &unstopped);
    assert_eq!(whole.unwrap().gpu_ops.len(), 20_000);
    for beside_others in [false, true] {
        let stop = AtomicBool::new(false);
        let mut refills = 0;
        let stopped = read_trace_until_stopped(
            &path,
            &mut |_| {
                refills += 1;
                stop.store(true, Ordering::Relaxed);
            },
            ReadScope::Full,
            beside_others,
            &stop,
        );
        let err = stopped.map(|t| t.gpu_ops.len()).unwrap_err().to_string();
        assert!(
            err.ends_with("read stopped: the run failed meanwhile"),
            "{err}"
        );
        // The refill that set it, and the last progress call.
        assert_eq!(refills, 2);
    }
}

/// Blocks start at 64 KiB and double up to the full size (`source::BlockSizes`): a read
/// that crosses every size, gzip and plain, keeps every event, every name's multi-byte
/// characters (some cut by a block's end) and every duration.
#[test]
fn growing_blocks_lose_no_event_and_cut_no_character() {
    let text = many_kernels(20_000);
    assert!(
        text.len() > 2 << 20,
        "{} bytes cross every block size",
        text.len()
    );
    let dur_us: i64 = (0..20_000).map(|i| i % 97 + 1).sum();
    let dir = tempfile::tempdir().unwrap();
    let (plain, gz) = plain_and_gzip(dir.path(), &text);
    // The default refill (blocks of 64 KiB to 1 MiB) and one whose full block is not a
    // doubling of the first (64, 128, then 192 KiB).
    for chunk in [CHUNK, 192 << 10] {
        for path in [&plain, &gz] {
            let t = read_trace_in_chunks(path, &mut |_| {}, chunk).unwrap();
            assert_eq!(t.gpu_ops.len(), 20_000, "{}", path.display());
            let dur: i64 = t.gpu_ops.iter().map(|g| g.dur).sum();
            assert_eq!(dur, dur_us * 1000);
            assert_eq!(t.name(t.gpu_ops.at(12_345).name), "gemm→é12345");
            assert_eq!(t.skipped.total(), 0);
        }
    }
}

#[test]
fn missing_file_and_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = read_error(&dir.path().join("nope.json"));
    assert!(
        err.ends_with("nope.json: no such file or directory"),
        "{err}"
    );
    let err = read_error(dir.path());
    assert!(err.ends_with("is a directory, not a trace file"), "{err}");
}

#[test]
fn deep_nesting_does_not_overflow() {
    let deep = "[".repeat(200_000) + &"]".repeat(200_000);
    let text = format!(
        r#"{{"junk": {deep}, "traceEvents": [{KERNEL}, {{"ph": "X", "cat": "cpu_op", "args": {deep}}}, {deep}]}}"#
    );
    let t = read_text(&text).unwrap();
    assert_eq!(t.gpu_ops.len(), 1);
    assert_eq!(t.skipped.malformed, 2);
}

#[test]
fn tiny_refills_give_the_same_trace() {
    // Escaped quotes, backslashes and multi-byte characters must survive every split.
    let text = format!(
        r#"{{"a": "x\\\"]}}", "traceEvents": [{KERNEL}, {{"ph": "X", "cat": "cpu_op", "name": "q\"{{\\ µs ✓ 名前", "pid": 1, "tid": 1, "ts": 3, "dur": 4}}], "z": "\\"}}"#
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, &text).unwrap();
    for chunk in 1..=9 {
        let t = read_trace_in_chunks(&path, &mut |_| {}, chunk).unwrap();
        assert_eq!((t.gpu_ops.len(), t.cpu_ops.len()), (1, 1), "chunk {chunk}");
        assert_eq!(t.name(t.cpu_ops.at(0).name), "q\"{\\ µs ✓ 名前");
        assert_eq!(t.meta.keys, ["a", "traceEvents", "z"]);
        assert_eq!(t.json_bytes, text.len() as u64);
    }
    let path = shared("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz");
    let small = read_trace_in_chunks(&path, &mut |_| {}, 4096).unwrap();
    let big = read(&path).unwrap();
    assert_eq!(small.gpu_ops, big.gpu_ops);
    assert_eq!(small.py_frames, big.py_frames);
    assert_eq!(small.json_bytes, big.json_bytes);
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let mut bytes = br#"[{"ph": "X", "cat": "cpu_op", "name": "a"#.to_vec();
    bytes.extend_from_slice(&[0xff, b'b', 0xe5, 0x90]);
    bytes.extend_from_slice(br#"", "pid": 1, "tid": 1, "ts": 3, "dur": 4}]"#);
    std::fs::write(&path, &bytes).unwrap();
    for chunk in [1, 2, 3, 1 << 20] {
        let t = read_trace_in_chunks(&path, &mut |_| {}, chunk).unwrap();
        assert_eq!(
            t.name(t.cpu_ops.at(0).name),
            "a\u{fffd}b\u{fffd}",
            "chunk {chunk}"
        );
    }
}

#[test]
fn progress_reaches_the_file_size() {
    let path = shared("AMD-AGI__TraceLens__eager_trace.json.gz");
    let mut seen = Vec::new();
    let t = read_trace(&path, &mut |n| seen.push(n)).unwrap();
    assert_eq!(seen.last().copied(), Some(816469));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]));
    assert!(t.json_bytes > 816469);
}

#[test]
fn decimal_text_to_exact_nanoseconds() {
    let cases = [
        ("1428625731896.179", Some(1428625731896179)),
        ("6520618853487.683", Some(6520618853487683)),
        ("1606910596297023", Some(1606910596297023000)),
        ("2.25", Some(2250)),
        ("0.0005", Some(1)),
        ("0.0004", Some(0)),
        ("1e3", Some(1_000_000)),
        ("1.5E-3", Some(2)),
        ("-1.5", Some(-1500)),
        ("0", Some(0)),
        ("", None),
        ("abc", None),
        ("1.2.3", None),
        ("99999999999999999999", None),
    ];
    for (text, want) in cases {
        assert_eq!(decimal_micros_to_ns(text), want, "{text}");
    }
    // A sum that f64 microseconds would not give exactly.
    let durs = ["0.1", "0.2", "4909914216204.635"];
    let sum: i64 = durs.iter().map(|d| decimal_micros_to_ns(d).unwrap()).sum();
    assert_eq!(sum, 4909914216204935);
}

#[test]
fn lone_surrogate_escapes_become_replacement_characters_and_are_counted() {
    // Python's json writes and reads lone surrogates; serde_json refuses them. A lone
    // high, a lone low, and a high followed by a non-low each become U+FFFD; a real pair
    // is one character and is not counted.
    let text = r#"[{"ph": "X", "cat": "kernel", "name": "a\ud800b", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "\udc00", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "c\uD800\u0041", "pid": 0, "tid": 7, "ts": 3, "dur": 1, "args": {"stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "\ud83d\ude00 \u00e9", "pid": 0, "tid": 7, "ts": 4, "dur": 1, "args": {"stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": "\ud800", "tid": "\udfff\ud800", "ts": 5, "dur": 1}]"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, text).unwrap();
    for chunk in [CHUNK, 7] {
        let t = read_trace_in_chunks(&path, &mut |_| {}, chunk).unwrap();
        let names: Vec<&str> = t.gpu_ops.iter().map(|op| t.name(op.name)).collect();
        assert_eq!(names, ["a\u{fffd}b", "\u{fffd}", "c\u{fffd}A", "😀 é"]);
        let op = t.cpu_ops.at(0);
        assert_eq!(
            (t.name(op.pid), t.name(op.tid)),
            ("\u{fffd}", "\u{fffd}\u{fffd}")
        );
        assert_eq!(t.lone_surrogate_strings, 5, "chunk {chunk}");
        assert_eq!(t.skipped.total(), 0);
    }
}

/// A file holding `events` (JSON texts) as a trace.
fn trace_file(dir: &Path, events: &[String]) -> PathBuf {
    let path = dir.join("t.json");
    std::fs::write(
        &path,
        format!(r#"{{"traceEvents": [{}]}}"#, events.join(",")),
    )
    .unwrap();
    path
}

#[test]
fn events_past_the_in_place_limit_keep_their_fields_and_skip_the_rest() {
    // Past 8 MiB an event is read member by member: the huge values it does not need
    // (an args string, deep nesting, whitespace, a huge key) are skipped as they stream
    // past, and what it keeps is typed as serde types it.
    let huge = 9 << 20;
    let blob = "x".repeat(huge);
    let deep = format!("{}{}", "[".repeat(huge / 2), "]".repeat(huge / 2));
    let spaces = " ".repeat(huge);
    let events = [
        KERNEL.to_string(),
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "blob\u006b", "pid": 0, "tid": 7, "ts": 20, "dur": 3, "args": {{"stream": 7, "blob": "{blob}", "correlation": "6"}}}}"#
        ),
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "deep", "pid": 0, "tid": 7, "ts": 30, "dur": 4, "args": {{"stream": 7, "deep": {deep}}}}}"#
        ),
        format!(
            r#"{{"ph": "X",{spaces}"cat": "kernel", "name": "spaced", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "{blob}": 1, "args": {{"stream": 7}}}}"#
        ),
        // Kept values past the limit: skipped and counted by field.
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{blob}", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {{"stream": 7}}}}"#
        ),
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "t", "pid": 0, "tid": 7, "ts": 1{}, "dur": 1, "args": {{"stream": 7, "x": "{blob}"}}}}"#,
            "0".repeat(huge)
        ),
        format!(r#""{blob}""#),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = trace_file(dir.path(), &events);
    let t = read_trace_in_chunks(&path, &mut |_| {}, CHUNK).unwrap();
    let names: Vec<&str> = t.gpu_ops.iter().map(|op| t.name(op.name)).collect();
    assert_eq!(names, ["k", "blobk", "deep", "spaced"]);
    assert_eq!(t.gpu_ops.at(1).correlation, Some(6));
    assert_eq!(t.gpu_ops.at(3).dur, 5000);
    assert_eq!(t.event_count, 7);
    assert_eq!(t.skipped.malformed, 1);
    assert_eq!(
        t.skipped
            .oversized
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>(),
        [("name", 1), ("ts", 1)]
    );
}

#[test]
fn top_level_values_and_keys_past_their_limits_are_skipped_and_counted() {
    let blob = "x".repeat(2 << 20);
    let text = format!(
        r#"{{"deviceProperties": [{{"name": "{blob}"}}], "{blob}": [1, 2], "distributedInfo": {{"rank": 3}}, "traceEvents": [{KERNEL}]}}"#
    );
    let t = read_text(&text).unwrap();
    assert_eq!(t.gpu_ops.len(), 1);
    assert_eq!(t.meta.rank, Some(3));
    assert!(t.meta.device_names.is_empty());
    assert_eq!(
        t.meta.keys,
        ["deviceProperties", "distributedInfo", "traceEvents"]
    );
    assert_eq!(
        t.skipped
            .oversized_top_level
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>(),
        [("deviceProperties", 1), ("top-level key", 1)]
    );
}

#[test]
fn gpu_op_names_past_the_distinct_name_limit_fold_into_one_counted_name() {
    use crate::trace::event::{FOLDED_GPU_OP_NAME, MAX_GPU_OP_NAMES};
    // Every name of the limit kept, then 10 more names (3 ops of the first of them), and
    // a kept name again: it stays itself.
    let kernel = |name: &str, ts: usize| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":1,"args":{{"stream":7}}}}"#
        )
    };
    let mut events: Vec<String> = (0..MAX_GPU_OP_NAMES)
        .map(|i| kernel(&format!("k{i}"), i))
        .collect();
    for i in 0..10 {
        let extra = format!("extra{i}");
        events.push(kernel(&extra, MAX_GPU_OP_NAMES + i));
        if i == 0 {
            events.push(kernel(&extra, MAX_GPU_OP_NAMES + i));
            events.push(kernel(&extra, MAX_GPU_OP_NAMES + i));
        }
    }
    events.push(kernel("k0", 2 * MAX_GPU_OP_NAMES));
    // A CPU op may use a new name past the limit: only GPU op names are bounded.
    events.push(
        r#"{"ph":"X","cat":"cpu_op","name":"extra0_cpu","pid":0,"tid":7,"ts":1,"dur":1}"#
            .to_string(),
    );
    let t = read_text(&format!("[{}]", events.join(","))).unwrap();
    assert_eq!(t.gpu_ops.len(), MAX_GPU_OP_NAMES + 13);
    assert_eq!((t.folded_gpu_ops, t.folded_gpu_op_names), (12, 10));
    let names: std::collections::BTreeSet<&str> =
        t.gpu_ops.iter().map(|op| t.name(op.name)).collect();
    assert_eq!(names.len(), MAX_GPU_OP_NAMES + 1);
    assert!(names.contains(FOLDED_GPU_OP_NAME));
    assert!(!names.contains("extra0"));
    assert_eq!(t.name(t.gpu_ops.last().unwrap().name), "k0");
    assert_eq!(t.name(t.cpu_ops.at(0).name), "extra0_cpu");
}

/// The trace of `events`, read by both tiers at a few refill sizes (they must agree).
fn read_events_in_chunks(events: &[&str], chunks: &[usize]) -> Trace {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[{}]", events.join(",\n"));
    let path = dir.path().join("t.json");
    std::fs::write(&path, text).unwrap();
    let mut last = None;
    for &chunk in chunks {
        let t = read_trace_in_chunks(&path, &mut |_| {}, chunk).unwrap();
        if let Some(prev) = &last {
            assert!(*prev == t, "refill size {chunk} reads another trace");
        }
        last = Some(t);
    }
    last.unwrap()
}

#[test]
fn launch_geometry_and_blocks_per_sm_read_alike_in_both_tiers_and_bad_values_are_none() {
    let kernel = |name: &str, ts: u32, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 1, "args": {{"stream": 7, {args}}}}}"#
        )
    };
    let events = [
        kernel(
            "ok",
            1,
            r#""grid": [128, 1, 1], "block": [256,1,1], "blocks per SM": 0.263158"#,
        ),
        kernel(
            "arity",
            2,
            r#""grid": [1, 2], "block": [-1, 1, 1], "blocks per SM": "x""#,
        ),
        kernel(
            "overflow",
            3,
            r#""grid": [4294967296, 1, 1], "block": "1,1,1", "blocks per SM": -1"#,
        ),
        kernel(
            "float",
            4,
            r#""grid": [1.0, 1, 1], "block": [[1], 1, 1], "blocks per SM": 2"#,
        ),
        kernel(
            "max",
            5,
            r#""grid": [4294967295, 0, 1], "block": null, "blocks per SM": 1e60"#,
        ),
        kernel(
            "four",
            6,
            r#""grid": [1, 1, 1, 1], "block": {"x": 1}, "blocks per SM": [1]"#,
        ),
        // An escape in the name sends the event to serde in the fast tier too.
        kernel(
            r#"esc\"aped"#,
            7,
            "\"grid\": [ 2 ,3,\n 4 ], \"block\": [64, 1, 1], \"blocks per SM\": 1.5e-2",
        ),
        kernel("none", 8, r#""x": 1"#),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK, 7, 1]);
    assert_eq!(t.skipped.total(), 0);
    let got: Vec<_> = t
        .gpu_ops
        .iter()
        .map(|op| (t.name(op.name), op.grid, op.block, op.blocks_per_sm))
        .collect();
    assert_eq!(
        got,
        [
            ("ok", Some([128, 1, 1]), Some([256, 1, 1]), Some(0.263158)),
            ("arity", None, None, None),
            ("overflow", None, None, None),
            ("float", None, None, Some(2.0)),
            ("max", Some([u32::MAX, 0, 1]), None, None),
            ("four", None, None, None),
            ("esc\"aped", Some([2, 3, 4]), Some([64, 1, 1]), Some(0.015)),
            ("none", None, None, None),
        ]
    );
}

#[test]
fn copy_bytes_read_alike_in_both_tiers_for_copies_only_and_bad_values_are_none() {
    let op = |cat: &str, name: &str, ts: u32, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 1, "args": {{"stream": 7, {args}}}}}"#
        )
    };
    let events = [
        op(
            "gpu_memcpy",
            "copy",
            1,
            r#""bytes": 2048, "memory bandwidth (GB/s)": 1.28"#,
        ),
        op("gpu_memset", "set", 2, r#""bytes": 18446744073709551615"#),
        op("gpu_memcpy", "zero", 3, r#""bytes": 0"#),
        op("gpu_memcpy", "float", 4, r#""bytes": 1.5"#),
        op("gpu_memcpy", "string", 5, r#""bytes": "64""#),
        op("gpu_memcpy", "past", 6, r#""bytes": 18446744073709551616"#),
        op("gpu_memcpy", "negative", 7, r#""bytes": -8"#),
        // A kernel's `bytes` is not a copy's count.
        op("kernel", "kernel", 8, r#""bytes": 64"#),
        op("gpu_memcpy", r#"esc\"aped"#, 9, r#""bytes": 4"#),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK, 7, 1]);
    assert_eq!(t.skipped.total(), 0);
    let got: Vec<_> = t
        .gpu_ops
        .iter()
        .map(|op| (t.name(op.name), op.bytes.map(std::num::NonZeroU64::get)))
        .collect();
    assert_eq!(
        got,
        [
            ("copy", Some(2048)),
            ("set", Some(u64::MAX)),
            ("zero", None),
            ("float", None),
            ("string", None),
            ("past", None),
            ("negative", None),
            ("kernel", None),
            ("esc\"aped", Some(4)),
        ]
    );
}

#[test]
fn launch_calls_keep_their_kernel_name_and_geometry() {
    let launch = |correlation: u32, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 0, "tid": 1, "ts": {correlation}, "dur": 1, "args": {{"correlation": {correlation}, {args}}}}}"#
        )
    };
    let events = [
        launch(
            1,
            r#""kernel": "void foo<int>(int*)", "grid": [60, 1, 1], "block": [256, 1, 1]"#,
        ),
        launch(2, r#""kernel": "bar\u00e9 \"q\"", "grid": [1, 1, 1]"#),
        launch(3, r#""kernel": 123, "grid": [1, 1], "block": "x""#),
        launch(4, r#""kernel": null"#),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK, 5]);
    assert_eq!(t.skipped.total(), 0);
    let got: Vec<_> = t
        .runtime
        .iter()
        .map(|r| (r.kernel.map(|k| t.name(k)), r.grid, r.block))
        .collect();
    assert_eq!(
        got,
        [
            (
                Some("void foo<int>(int*)"),
                Some([60, 1, 1]),
                Some([256, 1, 1])
            ),
            (Some("baré \"q\""), Some([1, 1, 1]), None),
            (None, None, None),
            (None, None, None),
        ]
    );
}

#[test]
fn cpu_op_shapes_are_their_json_text_without_whitespace_interned_once() {
    let op = |name: &str, ts: u32, cat: &str, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 0, "tid": 1, "ts": {ts}, "dur": 5, "args": {{{args}}}}}"#
        )
    };
    let events = [
        op(
            "aten::mm",
            1,
            "cpu_op",
            r#""Input Dims": [[1, 2880], [2880, 25136]], "Input type": ["c10::BFloat16", "c10::BFloat16"], "Concrete Inputs": ["", ""]"#,
        ),
        // Pretty-printed (as some writers indent): the same shapes, the same symbols.
        op(
            "aten::mm",
            10,
            "cpu_op",
            "\"Input Dims\": [\n  [\n   1,\n   2880\n  ],\n  [2880,\t25136]\n ],\r\n \"Input type\": [\"c10::BFloat16\",\"c10::BFloat16\"], \"Concrete Inputs\": [\"\",\"\"]",
        ),
        // Spaces and escapes inside strings are kept as written.
        op(
            "aten::add",
            20,
            "cpu_op",
            r#""Input Dims": [[2], []], "Input type": ["float", "Scalar"], "Concrete Inputs": ["", "1 \"x\" \\ y"]"#,
        ),
        // Not arrays, or null: absent.
        op(
            "aten::x",
            30,
            "cpu_op",
            r#""Input Dims": "abc", "Input type": null, "Concrete Inputs": 7"#,
        ),
        // The 2021 layout spells it `Input dims`.
        op("conv", 40, "Operator", r#""Input dims": [[1], []], "Input type": []"#),
        // A `\u` escape: serde reads it in both tiers; the text stays as written.
        op(
            "aten::y",
            50,
            "cpu_op",
            r#""Input Dims": [[3]], "Concrete Inputs": ["\u00e9"]"#,
        ),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK, 3, 1]);
    assert_eq!(t.skipped.total(), 0);
    let text = |s: Option<crate::trace::event::Sym>| s.map(|s| t.name(s));
    let got: Vec<_> = t
        .cpu_ops
        .iter()
        .map(|op| {
            (
                t.name(op.name),
                text(op.input_dims),
                text(op.input_types),
                text(op.concrete_inputs),
            )
        })
        .collect();
    let mm = (
        "aten::mm",
        Some("[[1,2880],[2880,25136]]"),
        Some(r#"["c10::BFloat16","c10::BFloat16"]"#),
        Some(r#"["",""]"#),
    );
    assert_eq!(
        got,
        [
            mm,
            mm,
            (
                "aten::add",
                Some("[[2],[]]"),
                Some(r#"["float","Scalar"]"#),
                Some(r#"["","1 \"x\" \\ y"]"#)
            ),
            ("aten::x", None, None, None),
            ("conv", Some("[[1],[]]"), Some("[]"), None),
            ("aten::y", Some("[[3]]"), None, Some(r#"["\u00e9"]"#)),
        ]
    );
    assert_eq!(t.cpu_ops.at(0).input_dims, t.cpu_ops.at(1).input_dims);
    // Every kept text is JSON a later step can parse.
    for op in &t.cpu_ops {
        for sym in [op.input_dims, op.input_types, op.concrete_inputs]
            .into_iter()
            .flatten()
        {
            let parsed: Result<serde_json::Value, _> = serde_json::from_str(t.name(sym));
            assert!(parsed.is_ok_and(|v| v.is_array()), "{}", t.name(sym));
        }
    }
}

#[test]
fn lone_surrogates_in_shapes_and_kernel_names_are_repaired_and_counted() {
    let events = [
        r#"{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": 1, "ts": 1, "dur": 5, "args": {"Input Dims": [[1]], "Concrete Inputs": ["a\ud800", "\ud83d\ude00"]}}"#,
        r#"{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 0, "tid": 1, "ts": 2, "dur": 1, "args": {"correlation": 1, "kernel": "k\udc00"}}"#,
        // A lone surrogate in the name as well: the whole event is repaired first.
        r#"{"ph": "X", "cat": "cpu_op", "name": "n\ud800", "pid": 0, "tid": 1, "ts": 3, "dur": 5, "args": {"Input type": ["t\ud800"]}}"#,
    ];
    let t = read_events_in_chunks(&events, &[CHUNK, 4]);
    let concrete = t.cpu_ops.at(0).concrete_inputs.map(|s| t.name(s));
    assert_eq!(concrete, Some(r#"["a\ufffd","\ud83d\ude00"]"#));
    assert_eq!(t.runtime.at(0).kernel.map(|s| t.name(s)), Some("k\u{fffd}"));
    let types = t.cpu_ops.at(1).input_types.map(|s| t.name(s));
    assert_eq!(types, Some(r#"["t\ufffd"]"#));
    assert_eq!(t.name(t.cpu_ops.at(1).name), "n\u{fffd}");
    assert_eq!(t.lone_surrogate_strings, 4);
    assert_eq!(t.skipped.total(), 0);
}

#[test]
fn a_shape_text_seen_before_reads_as_it_did_and_its_lone_surrogates_count_each_time() {
    // The sink keeps each shape text as written with its symbol (`shapes_as_written`):
    // a repeat must give the same symbol, a repeat written otherwise too, and a repeat
    // with a lone surrogate must still count it.
    let op = |dims: &str| {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": 1, "ts": 1, "dur": 5, "args": {{"Input Dims": {dims}}}}}"#
        )
    };
    let events = [
        op("[[2, 3], []]"),
        op("[[2, 3], []]"),
        op("[[2,3],[]]"),
        op("[[2,\n 3], [ ]]"),
        op(r#"["a\ud800"]"#),
        op(r#"["a\ud800"]"#),
        op("[[2, 4]]"),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK, 5]);
    let dims: Vec<Option<&str>> = (0..t.cpu_ops.len())
        .map(|i| t.cpu_ops.at(i).input_dims.map(|s| t.name(s)))
        .collect();
    let (same, surrogate) = (Some("[[2,3],[]]"), Some(r#"["a\ufffd"]"#));
    let want = [
        same,
        same,
        same,
        same,
        surrogate,
        surrogate,
        Some("[[2,4]]"),
    ];
    assert_eq!(dims, want);
    let syms: Vec<_> = (0..4).map(|i| t.cpu_ops.at(i).input_dims).collect();
    assert!(syms.iter().all(|s| *s == syms[0]));
    assert_eq!(t.lone_surrogate_strings, 2);
}

#[test]
fn optional_values_past_the_limit_are_dropped_and_counted_and_the_event_kept() {
    // In place (the event under 8 MiB) and member by member (past it), alike.
    let huge_dims = format!("[[{}1]]", "1, ".repeat(MAX_VALUE_BYTES / 3 + 1));
    let huge_kernel = "k".repeat(MAX_VALUE_BYTES + 1);
    let padding = "x".repeat(9 << 20);
    let events = [
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": 1, "ts": 1, "dur": 5, "args": {{"Input Dims": {huge_dims}, "Input type": ["float"]}}}}"#
        ),
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "big", "pid": 0, "tid": 1, "ts": 10, "dur": 5, "args": {{"pad": "{padding}", "Input Dims": {huge_dims}, "Concrete Inputs": [""]}}}}"#
        ),
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 0, "tid": 1, "ts": 2, "dur": 1, "args": {{"correlation": 1, "kernel": "{huge_kernel}", "grid": [1, 1, 1]}}}}"#
        ),
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 0, "tid": 1, "ts": 3, "dur": 1, "args": {{"pad": "{padding}", "correlation": 2, "kernel": "{huge_kernel}", "grid": [1, 2, 1]}}}}"#
        ),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK]);
    let ops: Vec<(&str, Option<crate::trace::event::Sym>)> = t
        .cpu_ops
        .iter()
        .map(|op| (t.name(op.name), op.input_dims))
        .collect();
    assert_eq!(ops, [("op", None), ("big", None)]);
    assert_eq!(
        t.cpu_ops.at(0).input_types.map(|s| t.name(s)),
        Some(r#"["float"]"#)
    );
    assert_eq!(
        t.cpu_ops.at(1).concrete_inputs.map(|s| t.name(s)),
        Some(r#"[""]"#)
    );
    let calls: Vec<(Option<crate::trace::event::Sym>, Option<[u32; 3]>)> =
        t.runtime.iter().map(|r| (r.kernel, r.grid)).collect();
    assert_eq!(calls, [(None, Some([1, 1, 1])), (None, Some([1, 2, 1]))]);
    assert_eq!(
        t.skipped
            .oversized_fields
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>(),
        [("args.Input Dims", 2), ("args.kernel", 2)]
    );
    // Not skipped events: every one is kept.
    assert_eq!(t.skipped.total(), 0);
}

#[test]
fn device_properties_facts_in_list_and_repr_form_with_bad_types_tolerated() {
    use crate::trace::event::DeviceProps;
    let mi300x = |id| DeviceProps {
        id: Some(id),
        name: "AMD Instinct MI300X".to_string(),
        num_sms: Some(304),
        total_global_mem: Some(206141652992),
        compute_major: Some(9),
        compute_minor: Some(4),
    };
    let t = read(&shared(
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
    ))
    .unwrap();
    assert_eq!(t.meta.devices, [mi300x(0)]);
    let t = read(&shared("AMD-AGI__TraceLens__eager_trace.json.gz")).unwrap();
    let b200: Vec<_> = t
        .meta
        .devices
        .iter()
        .map(|d| (d.id, d.name.as_str(), d.num_sms, d.compute_major))
        .collect();
    let want: Vec<_> = (0..8)
        .map(|i| (Some(i), "NVIDIA B200", Some(148), Some(10)))
        .collect();
    assert_eq!(b200, want);
    assert_eq!(t.meta.devices[0].total_global_mem, Some(191503138816));
    let t = read(&shared(
        "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
    ))
    .unwrap();
    assert_eq!(t.meta.devices.len(), 8);
    assert!(t
        .meta
        .devices
        .iter()
        .all(|d| d.name.is_empty() && d.num_sms == Some(304)));
    let t = read(&shared("pytorch__kineto__worker0.pt.trace.json.gz")).unwrap();
    assert!(t.meta.devices.is_empty());

    // Wrong types lose that fact only; the names stay as before.
    let t = read_text(&format!(
        r#"{{"deviceProperties": [{{"id": 1, "name": "G", "numSms": "abc", "totalGlobalMem": 1.5e3, "computeMajor": [9], "computeMinor": -1}}, {{"name": "H", "numSms": true, "id": {{"a": 1}}}}], "traceEvents": [{KERNEL}]}}"#
    ))
    .unwrap();
    assert_eq!(t.meta.device_names, ["G", "H"]);
    let g = DeviceProps {
        id: Some(1),
        name: "G".to_string(),
        total_global_mem: Some(1500),
        ..DeviceProps::default()
    };
    let h = DeviceProps {
        name: "H".to_string(),
        ..DeviceProps::default()
    };
    assert_eq!(t.meta.devices, [g, h]);

    // TraceLens's Python repr of the list.
    let t = read_text(
        r#"{"traceEvents": [{"ph": "i"}], "deviceProperties": "[{'id': 0, 'name': 'AMD Instinct MI300X', 'totalGlobalMem': 206141652992, 'computeMajor': 9, 'computeMinor': 4, 'numSms': 304}, {'id': 1, 'name': '', 'numSms': 304}]"}"#,
    )
    .unwrap();
    let empty = DeviceProps {
        id: Some(1),
        num_sms: Some(304),
        ..DeviceProps::default()
    };
    assert_eq!(t.meta.devices, [mi300x(0), empty]);
    assert_eq!(t.meta.device_names, ["AMD Instinct MI300X", ""]);
}

/// Every event of a shared trace as serde_json values: the independent count the
/// reader's new fields are checked against.
fn raw_events(path: &Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(path).unwrap();
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
            .unwrap();
        out
    } else {
        bytes
    };
    match serde_json::from_slice(&text).unwrap() {
        serde_json::Value::Object(mut doc) => match doc.remove("traceEvents") {
            Some(serde_json::Value::Array(events)) => events,
            _ => panic!("no traceEvents"),
        },
        serde_json::Value::Array(events) => events,
        _ => panic!("not a trace"),
    }
}

/// `value` as `[x, y, z]` of u32, as the reader is to read `grid`/`block`.
fn dim3_of(value: Option<&serde_json::Value>) -> Option<[u32; 3]> {
    let items = value?.as_array()?;
    let mut out = [0u32; 3];
    if items.len() != 3 {
        return None;
    }
    for (slot, item) in out.iter_mut().zip(items) {
        *slot = u32::try_from(item.as_u64()?).ok()?;
    }
    Some(out)
}

#[test]
fn shared_traces_new_fields_match_a_recount_from_the_raw_events() {
    use std::collections::BTreeMap;
    type Kernels = BTreeMap<(Option<[u32; 3]>, Option<[u32; 3]>, Option<u32>), usize>;
    for file in std::fs::read_dir(shared("")).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.contains(".json") {
            continue;
        }
        let t = read(&path).unwrap();
        let raw = raw_events(&path);
        let x_of = |cats: &'static [&'static str]| {
            raw.iter()
                .filter(|e| e["ph"] == "X")
                .filter(move |e| cats.iter().any(|c| e["cat"] == *c))
        };
        // GPU kernels: (grid, block, blocks per SM bits) as a multiset.
        let mut want: Kernels = BTreeMap::new();
        for e in x_of(&["kernel", "Kernel"]).filter(|e| e["dur"].as_f64() != Some(0.0)) {
            let a = &e["args"];
            let bps = a["blocks per SM"].as_f64().map(|v| (v as f32).to_bits());
            *want
                .entry((dim3_of(a.get("grid")), dim3_of(a.get("block")), bps))
                .or_default() += 1;
        }
        let mut got: Kernels = BTreeMap::new();
        for op in t.gpu_ops.iter().filter(|op| op.kind == GpuKind::Kernel) {
            let key = (op.grid, op.block, op.blocks_per_sm.map(f32::to_bits));
            *got.entry(key).or_default() += 1;
        }
        assert_eq!(got, want, "{name}: kernel geometry");
        // Launch calls: (kernel, grid, block) as a multiset.
        const RUNTIME_CATS: &[&str] = &["cuda_runtime", "cuda_driver", "Runtime"];
        let mut want: BTreeMap<_, usize> = BTreeMap::new();
        for e in x_of(RUNTIME_CATS).filter(|e| !e["args"]["correlation"].is_null()) {
            let a = &e["args"];
            let kernel = a["kernel"].as_str().map(str::to_string);
            let key = (kernel, dim3_of(a.get("grid")), dim3_of(a.get("block")));
            *want.entry(key).or_default() += 1;
        }
        let mut got: BTreeMap<_, usize> = BTreeMap::new();
        for r in &t.runtime {
            let kernel = r.kernel.map(|k| t.name(k).to_string());
            *got.entry((kernel, r.grid, r.block)).or_default() += 1;
        }
        assert_eq!(got, want, "{name}: launch calls");
        // CPU ops: their shapes as compact JSON (serde_json writes no whitespace).
        let compact = |v: &serde_json::Value| v.is_array().then(|| v.to_string());
        let mut want: BTreeMap<_, usize> = BTreeMap::new();
        for e in x_of(&["cpu_op", "Operator"]) {
            let a = &e["args"];
            let dims = a.get("Input Dims").or(a.get("Input dims"));
            let key = (
                dims.and_then(compact),
                a.get("Input type").and_then(compact),
                a.get("Concrete Inputs").and_then(compact),
            );
            *want.entry(key).or_default() += 1;
        }
        let mut got: BTreeMap<_, usize> = BTreeMap::new();
        for op in &t.cpu_ops {
            let text = |s: Option<crate::trace::event::Sym>| s.map(|s| t.name(s).to_string());
            let key = (
                text(op.input_dims),
                text(op.input_types),
                text(op.concrete_inputs),
            );
            *got.entry(key).or_default() += 1;
        }
        assert_eq!(got, want, "{name}: cpu op shapes");
    }
    // The facts later analyses start from, by name.
    let t = read(&shared("AMD-AGI__TraceLens__bs_32_rank0.json.gz")).unwrap();
    let launches = t
        .runtime
        .iter()
        .filter(|r| t.name(r.name).contains("LaunchKernel") && r.kernel.is_some());
    assert_eq!(launches.count(), 546);
    let t = read(&shared("AMD-AGI__TraceLens__eager_trace.json.gz")).unwrap();
    let kernels = t.gpu_ops.iter().filter(|op| op.kind == GpuKind::Kernel);
    assert!(kernels.clone().count() == 768);
    assert!(kernels
        .clone()
        .all(|op| op.grid.is_some() && op.block.is_some() && op.blocks_per_sm.is_some()));
    let t = read(&shared(
        "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
    ))
    .unwrap();
    let mm: Vec<_> = t
        .cpu_ops
        .iter()
        .filter(|op| t.name(op.name) == "aten::mm")
        .collect();
    assert!(!mm.is_empty());
    assert!(mm.iter().all(|op| op.input_dims.is_some()));
}

// ---------------------------------------------------------------------------------------
// How text reaches the parser (issue 22): blocks are parsed where the reading thread
// put them, not copied onto a rolling buffer.

/// A trace of `events` events of the common shapes: kernels with multi-byte names (so
/// blocks end inside characters) and CPU ops with shapes, every 97th one with a 12 KiB
/// name (longer than the stitch's first part, so it grows).
fn bulk_trace(events: usize) -> String {
    let mut text = String::from(r#"{"traceEvents": ["#);
    for i in 0..events {
        if i > 0 {
            text.push_str(",\n  ");
        }
        let event = if i % 2 == 0 {
            format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "gemm_é_{i}", "pid": 0, "tid": 7, "ts": {}.5, "dur": 2.25, "args": {{"stream": 7, "correlation": {i}, "grid": [1, 2, 3]}}}}"#,
                1000 + i * 10
            )
        } else if i % 97 == 1 {
            let long = "ü".repeat(6 << 10);
            format!(
                r#"{{"ph": "X", "cat": "cpu_op", "name": "{long}", "pid": 0, "tid": 1, "ts": {}, "dur": 3}}"#,
                1000 + i * 10
            )
        } else {
            format!(
                r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": {}, "dur": 3, "args": {{"External id": {i}, "Input Dims": [[128, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}}"#,
                1000 + i * 10
            )
        };
        text.push_str(&event);
    }
    text.push_str("]}");
    text
}

/// A [`bulk_trace`] of `events` written plain and gzipped in `dir`: its text and paths.
fn bulk_files(dir: &Path, events: usize) -> (String, PathBuf, PathBuf) {
    let text = bulk_trace(events);
    let (plain, gzip) = plain_and_gzip(dir, &text);
    (text, plain, gzip)
}

#[test]
fn text_reaches_the_parser_without_being_copied_between_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let (text, plain, gzip) = bulk_files(dir.path(), 16_000);
    let block = 256 << 10;
    for path in [&plain, &gzip] {
        let (fast, counts) = read_trace_counted(path, &mut |_| {}, block, EventParser::Fast);
        let copied = counts.copied;
        let fast = fast.unwrap();
        let reference = read_trace_with(path, &mut |_| {}, CHUNK, EventParser::Reference);
        assert!(fast == reference.unwrap(), "{}", path.display());
        assert_eq!(fast.event_count, 16_000);
        assert_eq!(fast.gpu_ops.len(), 8_000);
        assert_eq!(fast.json_bytes, text.len() as u64);
        // Only the stitches at block ends are copied: at each, at most the rest of the
        // event cut (up to the longest, 12 KiB) and as much of the next block's head
        // (doubled from 4 KiB until that event ends), so under 32 KiB; and in all, a
        // small share of the text (the last blocks are small, so there are more ends).
        let ends = counts.blocks - 1;
        assert!(ends >= 16, "{}: {ends} block ends", path.display());
        assert!(
            copied < ends * (32 << 10) && copied * 10 < text.len() as u64,
            "{}: {copied} of {} bytes copied at {ends} block ends",
            path.display(),
            text.len()
        );
    }
}

#[test]
fn a_plain_file_is_read_where_it_is_mapped_and_reads_as_its_gzip_stream_does() {
    let text = bulk_trace(120);
    // One invalid byte: the block holding it is decoded into a buffer instead.
    let mut broken = text.clone().into_bytes();
    let at = text.find("aten::mm").unwrap() + 2;
    broken[at] = 0xff;
    let dir = tempfile::tempdir().unwrap();
    for (bytes, all_mapped) in [(text.into_bytes(), true), (broken, false)] {
        let plain = dir.path().join("t.json");
        std::fs::write(&plain, &bytes).unwrap();
        let gzip = dir.path().join("t.json.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&bytes).unwrap();
        std::fs::write(&gzip, enc.finish().unwrap()).unwrap();
        // Blocks of 1 and 3 bytes cut every 2-byte character (`é`, `ü`) and the invalid one.
        for block in [1, 3, 4096, 256 << 10] {
            let (mapped, counts) =
                read_trace_counted(&plain, &mut |_| {}, block, EventParser::Fast);
            let (streamed, stream_counts) =
                read_trace_counted(&gzip, &mut |_| {}, block, EventParser::Fast);
            let (mapped, mut streamed) = (mapped.unwrap(), streamed.unwrap());
            streamed.path = mapped.path.clone();
            assert!(mapped == streamed, "block {block}");
            assert_eq!(mapped.event_count, 120);
            assert_eq!(stream_counts.mapped, 0);
            if all_mapped {
                assert_eq!(counts.mapped, mapped.json_bytes, "block {block}");
            } else {
                let names =
                    (0..mapped.cpu_ops.len()).map(|i| mapped.name(mapped.cpu_ops.at(i).name));
                assert_eq!(names.filter(|n| *n == "at\u{fffd}n::mm").count(), 1);
                // All but the one block with the invalid byte (a block may run 3 bytes
                // long, to the end of a character).
                let file_len = bytes.len() as u64;
                assert!(counts.mapped < file_len, "block {block}");
                assert!(
                    counts.mapped + block as u64 + 3 >= file_len,
                    "block {block}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Scanning ahead (issue 22): the scan-ahead thread's events are the parser's own.

#[test]
fn scan_lists_are_lent_again_not_made_anew_for_each_block() {
    let dir = tempfile::tempdir().unwrap();
    let (text, plain, gzip) = bulk_files(dir.path(), 16_000);
    let chunk = 64 << 10;
    let blocks = text.len() / chunk;
    assert!(blocks > 50, "{blocks} blocks: too few to tell");
    // As many as are ever in flight at once, whatever the timing. How many more a list
    // dropped on the way back would make depends on timing (in a release build, a 1 GB
    // read made 140-158 while the spares' channel held 3 and the empty lists of blocks
    // passed on unscanned took spares' places); a list made per block fails here always.
    let at_once = source::BLOCKS_IN_FLIGHT as u64 + 2;
    for path in [&plain, &gzip] {
        let (fast, counts) = read_trace_counted(path, &mut |_| {}, chunk, EventParser::Fast);
        assert_eq!(fast.unwrap().event_count, 16_000, "{}", path.display());
        assert!(
            counts.scanned_ahead > 0,
            "{}: nothing scanned ahead",
            path.display()
        );
        assert!(
            counts.scan_lists_made <= at_once,
            "{}: {} scan lists made for {blocks} blocks (at most {at_once} are in flight)",
            path.display(),
            counts.scan_lists_made
        );
    }
}

#[test]
fn most_events_are_scanned_ahead_on_the_other_thread() {
    let text = bulk_trace(16_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, &text).unwrap();
    let (fast, counts) = read_trace_counted(&path, &mut |_| {}, 256 << 10, EventParser::Fast);
    let reference = read_trace_with(&path, &mut |_| {}, CHUNK, EventParser::Reference);
    assert!(fast.unwrap() == reference.unwrap());
    // Every event is read by the scanner: on the scan-ahead thread, or by the parser
    // (the events cut by the 16 blocks' ends, and the blocks passed on unscanned while
    // the parser waited, which depend on timing), and the scan-ahead thread did its part.
    assert_eq!(counts.scanned_ahead + counts.scanned_here, 16_000);
    assert!(counts.scanned_ahead > 0, "nothing scanned ahead");
    let (_, counts) = read_trace_counted(&path, &mut |_| {}, 256 << 10, EventParser::Reference);
    assert_eq!(
        counts.scanned_ahead, 0,
        "the reference path scans nothing ahead"
    );
}

#[test]
fn guesses_of_element_starts_inside_strings_and_args_never_change_the_trace() {
    // Text the scan-ahead thread mistakes for element starts: `}, {` inside strings
    // (with escapes), and objects in arrays inside `args` that scan as events, one
    // of them a whole kernel. The parser must take none of them as elements.
    let kernel_like = r#"{"ph": "X", "cat": "kernel", "name": "fake", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "args": {"stream": 7}}"#;
    let events = [
        r#"{"ph": "X", "cat": "cpu_op", "name": "a}, {\"ph\": \"X\"}, {b", "pid": 0, "tid": 1, "ts": 5, "dur": 3}"#.to_string(),
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": 1, "ts": 9, "dur": 3, "args": {{"list": [{kernel_like}, {kernel_like}], "Input Dims": [[1, 2]]}}}}"#
        ),
        r#"{"ph": "X", "cat": "cpu_op", "name": "x},{", "pid": 0, "tid": 1, "ts": 12, "dur": 1}"#.to_string(),
        format!(r#"{{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 0, "tid": 1, "ts": 20, "dur": 9}}"#, r"}, {\\".repeat(40)),
        KERNEL.to_string(),
        r#"{"ph": "X", "cat": "cpu_op", "name": "é}, {ü", "pid": 0, "tid": 1, "ts": 30, "dur": 1, "args": {"External id": 4, "nested": [{}, {"ph": "X"}]}}"#.to_string(),
    ];
    let mut text = String::from("[");
    for round in 0..8 {
        for (i, e) in events.iter().enumerate() {
            if round + i > 0 {
                text.push_str(if i % 2 == 0 { ",\n" } else { " , " });
            }
            text.push_str(e);
        }
    }
    text.push(']');
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, &text).unwrap();
    let reference = read_trace_with(&path, &mut |_| {}, CHUNK, EventParser::Reference).unwrap();
    assert_eq!(reference.gpu_ops.len(), 8, "only the real kernels");
    assert_eq!(reference.cpu_ops.len(), 32);
    assert_eq!(reference.annotations.len(), 8);
    // Blocks from one byte up, so block ends (and the scan-ahead thread's first guesses)
    // land at every offset of the events.
    let mut used = 0;
    for block in (1..=48).chain([97, 250, 1000, 4096, CHUNK]) {
        let (fast, counts) = read_trace_counted(&path, &mut |_| {}, block, EventParser::Fast);
        assert!(
            fast.unwrap() == reference,
            "block size {block} reads another trace"
        );
        used += counts.scanned_ahead;
    }
    assert!(used > 0, "the scan-ahead results were used");
}

#[test]
fn shared_traces_read_alike_when_block_ends_land_everywhere() {
    // Odd-sized blocks of about 10 KB: hundreds of events per trace are cut by a block
    // end, and the scan-ahead thread starts guessing at arbitrary offsets.
    for want in &EXPECTED {
        let path = shared(want.file);
        let reference = read_trace_with(&path, &mut |_| {}, CHUNK, EventParser::Reference)
            .unwrap_or_else(|e| panic!("{e}"));
        let (fast, counts) = read_trace_counted(&path, &mut |_| {}, 10_007, EventParser::Fast);
        assert!(fast.unwrap() == reference, "{}", want.file);
        // Most events are read by the scanner, ahead or by the parser (which of the two
        // depends on timing), and the scan-ahead thread did its part.
        assert!(
            (counts.scanned_ahead + counts.scanned_here) * 2 > reference.event_count,
            "{}: {} + {} of {} events scanned",
            want.file,
            counts.scanned_ahead,
            counts.scanned_here,
            reference.event_count
        );
        assert!(
            counts.scanned_ahead > 0,
            "{}: nothing scanned ahead",
            want.file
        );
    }
}

/// One op's split-size facts as text, in `SplitSizes` field order.
fn split_texts(t: &Trace) -> Vec<(bool, i64, [Option<&str>; 9])> {
    t.split_sizes
        .iter()
        .map(|s| {
            let text = |sym: Option<crate::trace::event::Sym>| sym.map(|s| t.name(s));
            (
                s.on_gpu,
                s.ts,
                [
                    text(s.in_split),
                    text(s.out_split),
                    text(s.collective),
                    text(s.group),
                    text(s.group_desc),
                    text(s.group_ranks),
                    text(s.dtype),
                    text(s.rank),
                    text(s.seq),
                ],
            )
        })
        .collect()
}

#[test]
fn split_sizes_read_alike_in_every_tier_and_empty_lists_are_not_kept() {
    let comms = |cat: &str, name: &str, ts: u32, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 2, "args": {{"External id": {ts}, {args}}}}}"#
        )
    };
    let full = r#""In split size": "[1, 2, 3, 4]", "Out split size": "[4, 3, 2, 1]", "Collective name": "all_to_allv", "Process Group Name": "7", "Process Group Description": "ep_group", "Process Group Ranks": "[0, 1, 2, 3]", "dtype": "BFloat16", "Rank": 2, "Seq": 41"#;
    let events = [
        // The scanner's shape: strings as PyTorch writes them, integers for Rank and Seq.
        comms("cpu_op", "record_param_comms", 10, full),
        // Arrays instead of strings (compact JSON text), on the kernel's copy.
        comms(
            "kernel",
            "ncclDevKernel_SendRecv",
            20,
            r#""stream": 7, "In split size": [5, 6], "Out split size": [ 6 , 5 ], "Seq": "42""#,
        ),
        // An escape in the name: serde reads it in the fast tier too.
        comms("cpu_op", r#"record_param_comms\"x"#, 30, full),
        // Both lists empty: an even split, nothing kept.
        comms(
            "cpu_op",
            "record_param_comms",
            40,
            r#""In split size": "[]", "Out split size": "[]", "Collective name": "allreduce""#,
        ),
        // One side empty: kept (the analysis counts it as one-sided).
        comms(
            "cpu_op",
            "record_param_comms",
            50,
            r#""In split size": "[]", "Out split size": "[9, 9]""#,
        ),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_events_in_chunks(&events, &[CHUNK, 7, 1]);
    assert_eq!(t.skipped.total(), 0);
    let full_texts = [
        Some("[1, 2, 3, 4]"),
        Some("[4, 3, 2, 1]"),
        Some("all_to_allv"),
        Some("7"),
        Some("ep_group"),
        Some("[0, 1, 2, 3]"),
        Some("BFloat16"),
        Some("2"),
        Some("41"),
    ];
    let none = [None; 9];
    let mut kernel_copy = none;
    kernel_copy[0] = Some("[5,6]");
    kernel_copy[1] = Some("[6,5]");
    kernel_copy[8] = Some("42");
    let mut one_sided = none;
    one_sided[0] = Some("[]");
    one_sided[1] = Some("[9, 9]");
    assert_eq!(
        split_texts(&t),
        [
            (false, 10_000, full_texts),
            (true, 20_000, kernel_copy),
            (false, 30_000, full_texts),
            (false, 50_000, one_sided),
        ]
    );
    assert_eq!(t.split_sizes[0].external_id, Some(10));
    assert_eq!(t.split_sizes[0].dur, 2000);

    // Past the in-place limit the event is read member by member: the same facts.
    let blob = "x".repeat(9 << 20);
    let large = comms(
        "cpu_op",
        "record_param_comms",
        10,
        &format!(r#""blob": "{blob}", {full}"#),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = trace_file(dir.path(), &[large]);
    let t = read_trace_in_chunks(&path, &mut |_| {}, CHUNK).unwrap();
    assert_eq!(split_texts(&t), [(false, 10_000, full_texts)]);
}

/// A record's `Debug` text with each `Sym(n)` written as its string: records of two
/// reads compare whatever order their interners numbered the strings in.
fn resolved(trace: &Trace, record: &impl std::fmt::Debug) -> String {
    let text = format!("{record:?}");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("Sym(") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 4..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match after[..digits].parse::<u32>() {
            Ok(n) if after[digits..].starts_with(')') => {
                out.push('"');
                out.push_str(trace.name(crate::trace::event::Sym(n)));
                out.push('"');
                rest = &after[digits + 1..];
            }
            _ => {
                out.push_str("Sym(");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every record and count of `trace`, names resolved; CPU ops without their shapes
/// when `shapes` is false.
fn digest_view(trace: &Trace, shapes: bool) -> Vec<String> {
    let mut lines = vec![format!(
        "{:?} {:?} {} {} {} {} {}",
        trace.skipped,
        trace.meta,
        trace.event_count,
        trace.lone_surrogate_strings,
        trace.folded_gpu_ops,
        trace.folded_gpu_op_names,
        trace.json_bytes
    )];
    lines.extend(trace.gpu_ops.iter().map(|r| resolved(trace, &r)));
    lines.extend(trace.runtime.iter().map(|r| resolved(trace, &r)));
    lines.extend(trace.cpu_ops.iter().map(|mut op| {
        if !shapes {
            (op.input_dims, op.input_types, op.concrete_inputs) = (None, None, None);
        }
        resolved(trace, &op)
    }));
    lines.extend(trace.py_frames.iter().map(|r| resolved(trace, &r)));
    lines.extend(trace.annotations.iter().map(|r| resolved(trace, r)));
    lines.extend(trace.split_sizes.iter().map(|r| resolved(trace, r)));
    lines
}

/// A digest read (`ReadScope::Digest`, its unread values skipped unchecked) keeps every
/// record and count a full read keeps, but the CPU ops' shapes; with both parsers and
/// block ends landing anywhere.
fn assert_lean_read_is_full_read_less_shapes(path: &Path) {
    let full = read_trace_with(path, &mut |_| {}, CHUNK, EventParser::Fast).unwrap();
    let want = digest_view(&full, false);
    for (parser, chunk) in [
        (EventParser::Fast, CHUNK),
        (EventParser::Fast, 4093),
        (EventParser::Reference, CHUNK),
    ] {
        let lean = read_in_scope(path, &mut |_| {}, chunk, parser, ReadScope::Digest)
            .0
            .unwrap();
        assert!(
            lean.cpu_ops.iter().all(|op| op.input_dims.is_none()
                && op.input_types.is_none()
                && op.concrete_inputs.is_none()),
            "{}",
            path.display()
        );
        let got = digest_view(&lean, true);
        assert_eq!(got.len(), want.len(), "{}", path.display());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{} ({parser:?}, chunk {chunk})", path.display());
        }
    }
}

#[test]
fn shared_traces_read_lean_keep_all_but_the_cpu_op_shapes() {
    let mut read = 0;
    for file in std::fs::read_dir(shared("")).unwrap() {
        let path = file.unwrap().path();
        if path.to_string_lossy().contains(".json") {
            assert_lean_read_is_full_read_less_shapes(&path);
            read += 1;
        }
    }
    assert!(read >= 9, "{read} shared traces");
}

#[test]
fn values_a_lean_read_skips_unchecked_end_where_a_full_read_ends_them() {
    let big = format!("[[{}]]", vec!["1"; MAX_VALUE_BYTES / 2 + 1].join(", "));
    let text = format!(
        r#"[{KERNEL},
        {{"ph": "X", "cat": "python_function", "name": "a.py(1): f", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
          "args": {{"Python id": 3, "x": [{{"k": "] }} \" \\ [ {{"}}, [[], {{}}], -1.5e3, true, null], "y": "}}"}}}},
        {{"ph": "X", "name": "b.py(2): g", "args": {{"Python id": 4}}, "cat": "python_function", "pid": 1, "tid": 1, "ts": 2, "dur": 1}},
        {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 2, "dur": 2,
          "args": {{"External id": 9, "Input Dims": [[1, 2], []], "Input Strides": [[2, 1], []],
                    "Input type": ["float", "\u00e9"], "Concrete Inputs": ["", "\ud800"], "Ev Idx": 1}}}},
        {{"ph": "X", "cat": "cpu_op", "name": "aten::big", "pid": 1, "tid": 1, "ts": 3, "dur": 1,
          "args": {{"External id": 10, "Input Dims": {big}, "Input dims": [[3]]}}}},
        {{"ph": "X", "cat": "cpu_op", "name": "aten::legacy", "pid": 1, "tid": 1, "ts": 3, "dur": 1,
          "args": {{"External id": 11, "Input Dims": 5, "Input dims": [[3]]}}}},
        {{"ph": "s", "cat": "ac2g", "name": "flow", "id": 9, "pid": 1, "tid": 1, "ts": 3, "args": {{"a": [1, {{"b": "]"}}]}}}},
        {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4, "dur": 1,
          "args": {{"correlation": 1, "External id": 9, "unknown": {{"deep": [[["x"]]]}}}}}}]"#
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, text).unwrap();
    assert_lean_read_is_full_read_less_shapes(&path);
    let lean = read_in_scope(
        &path,
        &mut |_| {},
        CHUNK,
        EventParser::Fast,
        ReadScope::Digest,
    )
    .0
    .unwrap();
    // What the skipped values held is still counted: the oversized shape, the lone
    // surrogate, and every event.
    assert_eq!(
        lean.skipped.oversized_fields.get("args.Input Dims"),
        Some(&1)
    );
    assert_eq!(lean.lone_surrogate_strings, 1);
    assert_eq!(
        (
            lean.event_count,
            lean.py_frames.len(),
            lean.cpu_ops.len(),
            lean.runtime.len()
        ),
        (8, 2, 3, 1)
    );
}
