//! Hostile inputs through the real binary. Every case runs under a
//! time limit and either refuses with its exit code and one line naming the file, or
//! succeeds with the bad events skipped and counted in the report's notes. No panic, no
//! hang, no stack overflow.

use std::path::{Path, PathBuf};

use super::support::*;
use serde_json::json;

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn triage(path: &Path) -> Ran {
    run(&["--framework", "sglang", "--input", path.to_str().unwrap()])
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

// ---------------------------------------------------------------------------------------
// Files that are not (whole) traces: exit 3, one line naming the file

#[test]
fn truncated_gzip_at_any_point() {
    let dir = tempfile::tempdir().unwrap();
    // Large enough that the deflate stream spans many blocks.
    let mut events = Vec::new();
    for step in 0..300 {
        events.extend(valid_events().into_iter().map(|mut e| {
            e["ts"] = json!(e["ts"].as_u64().unwrap() + step * 1000);
            e
        }));
    }
    let whole = gzip(trace_text(&events).as_bytes());
    for cut in [
        10,
        whole.len() / 10,
        whole.len() / 2,
        whole.len() - 9,
        whole.len() - 4,
    ] {
        let path = write(dir.path(), "cut.trace.json.gz", &whole[..cut]);
        let line = assert_refused(&triage(&path), 3, &["cut.trace.json.gz"]);
        assert!(
            line.contains("truncated gzip stream") || line.contains("truncated JSON"),
            "cut at {cut} of {}: {line}",
            whole.len()
        );
    }
}

#[test]
fn truncated_json_at_any_point() {
    let dir = tempfile::tempdir().unwrap();
    let text = trace_text(&valid_events());
    for cut in [1, 17, text.len() / 3, text.len() / 2, text.len() - 2] {
        let path = write(dir.path(), "cut.trace.json", &text.as_bytes()[..cut]);
        assert_refused(&triage(&path), 3, &["cut.trace.json: truncated JSON"]);
    }
}

#[test]
fn random_bytes_raw_gzip_magic_and_gzipped() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 1..=12 {
        let bytes = noise(4096, seed);
        let mut magic = vec![0x1f, 0x8b];
        magic.extend(&bytes);
        for (name, content) in [
            ("noise.json", bytes.clone()),
            ("magic.json.gz", magic),
            ("noise.json.gz", gzip(&bytes)),
        ] {
            let path = write(dir.path(), name, &content);
            assert_refused(&triage(&path), 3, &[name]);
        }
    }
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "empty.trace.json", b"");
    assert_refused(
        &triage(&path),
        3,
        &["empty.trace.json: not a torch.profiler trace: the file is empty"],
    );
    let path = write(dir.path(), "blank.trace.json.gz", gzip(b"  \n"));
    assert_refused(
        &triage(&path),
        3,
        &["blank.trace.json.gz", "the file is empty"],
    );
}

#[test]
fn json_documents_that_are_not_traces() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        ("{}", "top-level object has no traceEvents array"),
        (r#"{"traceEvents": 5}"#, "traceEvents is not an array"),
        (
            r#"{"traceEvents": {"ph": "X"}}"#,
            "traceEvents is not an array",
        ),
        ("42", "the top level is a number"),
        ("null", "the top level is null"),
        (
            r#"[1, "two", null]"#,
            "none of its 3 events is a well-formed event object",
        ),
        // An object, but `tid` is neither a number nor a string: the message must not
        // call it a non-object.
        (r#"[{"tid":{}}]"#, "or has a field of the wrong type"),
        ("[]", "holds no events"),
        (r#"{"traceEvents": []}"#, "holds no events"),
        (
            r#"{"traceEvents": [], "traceEvents": []}"#,
            "holds no events",
        ),
    ];
    for (text, expected) in cases {
        let path = write(dir.path(), "doc.trace.json", text);
        let line = assert_refused(&triage(&path), 3, &["doc.trace.json: ", expected]);
        assert!(
            line.contains("not a torch.profiler trace"),
            "{text}: {line}"
        );
    }
}

#[test]
fn gzip_of_something_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "text.trace.json.gz",
        gzip(b"Traceback (most recent call last):\n  OOM\n"),
    );
    assert_refused(
        &triage(&path),
        3,
        &["text.trace.json.gz: invalid JSON at byte 0"],
    );
    // A complete trace followed by bytes that are no gzip member.
    let mut bytes = gzip(trace_text(&valid_events()).as_bytes());
    bytes.extend(b"\0\0\0\0 disk full");
    let path = write(dir.path(), "tail.trace.json.gz", &bytes);
    assert_refused(&triage(&path), 3, &["tail.trace.json.gz: "]);
}

#[test]
fn trailing_bytes_and_nul_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text = trace_text(&valid_events());
    let path = write(dir.path(), "tail.trace.json", format!("{text} garbage"));
    assert_refused(
        &triage(&path),
        3,
        &[
            "tail.trace.json: invalid JSON at byte",
            "trailing characters",
        ],
    );
    let mut nul = text.clone().into_bytes();
    nul.insert(50, 0);
    let path = write(dir.path(), "nul.trace.json", &nul);
    assert_refused(
        &triage(&path),
        3,
        &["nul.trace.json: invalid JSON at byte 50"],
    );
}

#[test]
fn nesting_200000_deep_never_overflows_the_stack() {
    const DEPTH: usize = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let arrays = format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH));

    // The whole document, and one element of the events array: not events.
    for (name, text) in [
        ("top.trace.json", arrays.clone()),
        (
            "element.trace.json",
            format!(r#"{{"traceEvents": [{arrays}]}}"#),
        ),
    ] {
        let path = write(dir.path(), name, text);
        assert_refused(
            &triage(&path),
            3,
            &[name, "none of its 1 events is a well-formed event object"],
        );
    }
    // Never closed.
    let path = write(dir.path(), "open.trace.json", "[".repeat(DEPTH));
    assert_refused(&triage(&path), 3, &["open.trace.json: truncated JSON"]);

    // Deep values the reader does not need, beside valid events: the report is whole.
    let events = valid_events();
    let deep_args = format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "deep_args_kernel", "pid": 0, "tid": 7, "ts": 2000, "dur": 5, "args": {{"stream": 7, "correlation": 999, "x": {arrays}, "y": {objects}}}}}"#
    );
    let text = trace_text_with_raw(&events, &[&deep_args]);
    let text = text.replacen(
        '{',
        &format!(r#"{{"junk": {arrays}, "more": {objects}, "#),
        1,
    );
    let path = write(dir.path(), "deep.trace.json", text);
    let report = report_of(&path);
    let mut expected = valid_rows();
    expected.push(("deep_args_kernel".to_string(), 1, 5.0));
    assert_eq!(kernel_rows(&report), expected);
    assert_eq!(notes(&report), Vec::<String>::new());
}

#[test]
fn a_100_mb_string_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "x".repeat(100 << 20);
    let events = valid_events();

    let path = write(dir.path(), "string.trace.json", format!("\"{huge}\""));
    assert_refused(
        &triage(&path),
        3,
        &["string.trace.json: not a torch.profiler trace: the top level is a string"],
    );
    let path = write(
        dir.path(),
        "open.trace.json",
        format!("{{\"traceEvents\": [\"{huge}"),
    );
    assert_refused(&triage(&path), 3, &["open.trace.json: truncated JSON"]);

    // An unknown top-level key: skipped unread.
    let text = trace_text(&events).replacen('{', &format!("{{\"junk\": \"{huge}\", "), 1);
    let path = write(dir.path(), "key.trace.json", text);
    let report = report_of(&path);
    assert_eq!(kernel_rows(&report), valid_rows());
    assert_eq!(notes(&report), Vec::<String>::new());

    // An element of the events array: one malformed event.
    let text = trace_text_with_raw(&events, &[&format!("\"{huge}\"")]);
    let path = write(dir.path(), "element.trace.json", text);
    let report = report_of(&path);
    assert_eq!(kernel_rows(&report), valid_rows());
    assert_eq!(
        notes(&report),
        ["element.trace.json: skipped 1 events (1 malformed, 0 with a missing, negative or NaN time, 0 GPU events of zero duration)"]
    );

    // A kernel's name: no name is that long; the event is skipped and counted by its
    // field, not analysed for minutes.
    let kernel = format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{huge}", "pid": 0, "tid": 7, "ts": 3000, "dur": 5, "args": {{"stream": 7, "correlation": 1}}}}"#
    );
    let path = write(
        dir.path(),
        "name.trace.json",
        trace_text_with_raw(&events, &[&kernel]),
    );
    let report = report_of(&path);
    assert_eq!(kernel_rows(&report), valid_rows());
    assert_eq!(
        notes(&report),
        ["name.trace.json: skipped 1 events (0 malformed, 0 with a missing, negative or NaN time, 0 GPU events of zero duration, 1 with a value over the reader's 64 KiB limit (name 1))"]
    );

    // A CPU op's shapes: an optional fact, left out and counted; the op is kept (it is
    // still the launching op of its kernels).
    let op = format!(
        r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": 999, "dur": 5, "args": {{"Input Dims": ["{huge}"], "Input type": ["float"]}}}}"#
    );
    let path = write(
        dir.path(),
        "dims.trace.json",
        trace_text_with_raw(&events, &[&op]),
    );
    let report = report_of(&path);
    assert_eq!(kernel_rows(&report), valid_rows());
    assert_eq!(
        notes(&report),
        ["dims.trace.json: optional values over the reader's 64 KiB limit left out of events that were kept: args.Input Dims 1"]
    );
}

// ---------------------------------------------------------------------------------------
// Bad events inside a valid trace: skipped, counted in the notes, the rest analysed

#[test]
fn events_with_wrong_field_types_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let kernel_with = |field: &str, value: serde_json::Value| {
        let mut k = kernel("bad_kernel", 5000, 5, 1);
        k[field] = value;
        k
    };
    let mut events = valid_events();
    // Malformed: not objects, or a field of a type no reader can use.
    let malformed = [
        json!("a string"),
        json!(5),
        json!(null),
        json!([1, 2]),
        kernel_with("name", json!(5)),
        kernel_with("ph", json!(["X"])),
        kernel_with("cat", json!(7)),
        kernel_with("pid", json!({})),
        kernel_with("args", json!({"correlation": {"a": 1}})),
    ];
    // Readable but without a usable time.
    let bad_time = [
        kernel_with("ts", json!("abc")),
        kernel_with("dur", json!(true)),
    ];
    // Wrong type but usable: a numeric string is a time, as Python's json writes it.
    let usable = kernel_with("dur", json!("12.5"));
    events.extend(malformed.iter().cloned());
    events.extend(bad_time.iter().cloned());
    events.push(usable);
    events.push(json!({})); // an event with nothing in it: not kept, not malformed
    let path = write(dir.path(), "types.trace.json", trace_text(&events));
    let report = report_of(&path);
    let mut expected = valid_rows();
    expected.push(("bad_kernel".to_string(), 1, 12.5));
    assert_eq!(kernel_rows(&report), expected);
    assert_eq!(
        notes(&report),
        [format!(
            "types.trace.json: skipped {} events ({} malformed, {} with a missing, negative or NaN time, 0 GPU events of zero duration)",
            malformed.len() + bad_time.len(),
            malformed.len(),
            bad_time.len()
        )]
    );
    assert_eq!(report["inputs"][0]["events"], events.len());
}

#[test]
fn negative_nan_infinite_and_zero_durations_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let k = |ts: &str, dur: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "odd_time", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"stream": 7, "correlation": 1}}}}"#
        )
    };
    let bad_time = [
        k("NaN", "NaN"),
        k("5000", "-3"),
        k("-5", "3"),
        k("5000", "Infinity"),
        k("5000", "-Infinity"),
        k("1e400", "3"),
        k("5000", "99999999999999999999999"),
        // A launch (kept for linking) with a NaN start.
        r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": NaN, "dur": 2, "args": {"correlation": 77}}"#.to_string(),
    ];
    let zero = [k("5000", "0"), k("5000", "-0.0"), k("5000", "0.0001")];
    let raw: Vec<&str> = bad_time.iter().chain(&zero).map(String::as_str).collect();
    let path = write(
        dir.path(),
        "nan.trace.json",
        trace_text_with_raw(&valid_events(), &raw),
    );
    let report = report_of(&path);
    assert_eq!(kernel_rows(&report), valid_rows());
    assert_eq!(
        notes(&report),
        [format!(
            "nan.trace.json: skipped {} events (0 malformed, {} with a missing, negative or NaN time, {} GPU events of zero duration)",
            bad_time.len() + zero.len(),
            bad_time.len(),
            zero.len()
        )]
    );
}

#[test]
fn duplicate_correlation_ids_count_every_kernel_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = valid_events();
    // A second process reusing correlations 1..=4 (two ranks merged into one file),
    // and a kernel whose correlation two launches claim.
    for i in 0..4u64 {
        let mut launch_again = launch(3000 + i * 100, i + 1);
        launch_again["pid"] = json!(200);
        launch_again["tid"] = json!(200);
        events.push(launch_again);
        let mut k = kernel("dup_kernel", 3010 + i * 100, 5, i + 1);
        k["tid"] = json!(9);
        k["args"]["stream"] = json!(9);
        events.push(k);
    }
    events.push(launch(4000, 1));
    let path = write(dir.path(), "dup.trace.json", trace_text(&events));
    let report = report_of(&path);
    let mut expected = valid_rows();
    expected.push(("dup_kernel".to_string(), 4, 20.0));
    assert_eq!(kernel_rows(&report), expected);
    assert_eq!(report["inputs"][0]["gpu_events"], 12);
}

#[test]
fn events_out_of_time_order_give_the_same_report() {
    let dir = tempfile::tempdir().unwrap();
    let events = valid_events();
    let in_order = report_of(&write(dir.path(), "a.trace.json", trace_text(&events)));
    let mut reversed = events.clone();
    reversed.reverse();
    // A fixed shuffle: every third event moved to the front.
    let (front, back): (Vec<_>, Vec<_>) = events
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 3 == 2);
    let shuffled: Vec<_> = front.into_iter().chain(back).map(|(_, e)| e).collect();
    for (name, order) in [("b.trace.json", reversed), ("c.trace.json", shuffled)] {
        let report = report_of(&write(dir.path(), name, trace_text(&order)));
        assert_eq!(report["stages"], in_order["stages"], "{name}");
        assert_eq!(kernel_rows(&report), valid_rows());
    }
}

#[test]
fn kernels_without_launches_are_analysed_unresolved() {
    let dir = tempfile::tempdir().unwrap();
    let events: Vec<_> = (0..5u64)
        .map(|i| kernel("orphan_kernel", 1000 + i * 10, 5, 9000 + i))
        .collect();
    let report = report_of(&write(
        dir.path(),
        "orphans.trace.json",
        trace_text(&events),
    ));
    assert_eq!(
        kernel_rows(&report),
        [("orphan_kernel".to_string(), 5, 25.0)]
    );
    let row = &report["stages"][0]["kernels"][0];
    assert_eq!(
        row["python_locations"],
        json!([{"location": "unresolved", "share_pct": 100.0}])
    );
    // Said out loud, not silently unresolved.
    let stage_notes = report["stages"][0]["notes"].as_array().unwrap();
    assert!(
        stage_notes
            .iter()
            .any(|n| n == "5 GPU ops not linked to a launch (no runtime call or cpu_op)"),
        "{stage_notes:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Paths that cannot be read

#[test]
fn directory_with_no_traces() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "README.md", "# notes");
    write(dir.path(), "server.log", "INFO started");
    std::fs::create_dir(dir.path().join("empty.trace.json")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/x", dir.path().join("dead.trace.json")).unwrap();
    mkfifo(&dir.path().join("pipe.trace.json"));
    let input = dir.path().to_str().unwrap();
    assert_refused(
        &run(&["--input", input]),
        3,
        &[&format!("{input}: no trace files found under {input}")],
    );
}

#[test]
fn unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    // A named pipe nobody writes to: refused at once, never waited on.
    let fifo = dir.path().join("pipe.trace.json");
    mkfifo(&fifo);
    assert_refused(&triage(&fifo), 3, &["pipe.trace.json: not a regular file"]);
    // A file whose read fails (EIO), even for root.
    assert_refused(
        &triage(Path::new("/proc/self/mem")),
        3,
        &["/proc/self/mem: cannot read"],
    );
    // A directory named like a trace.
    let named = dir.path().join("dir.trace.json");
    std::fs::create_dir(&named).unwrap();
    assert_refused(
        &triage(&named),
        3,
        &["dir.trace.json: no trace files found"],
    );
    // Permission bits stop everyone but root.
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let locked = write(dir.path(), "locked.trace.json", trace_text(&valid_events()));
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let ran = triage(&locked);
    if root {
        assert_eq!(ran.code, 0, "root reads mode 000: {}", ran.stderr);
    } else {
        assert_refused(&ran, 3, &["locked.trace.json: permission denied"]);
    }
}

/// Issue 15 point 11: links to devices named like traces are skipped, and the notes
/// say so (the README promises every skipped `*.json[.gz]` is listed with why).
#[test]
fn trace_named_links_to_devices_are_listed_as_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "run.trace.json", trace_text(&valid_events()));
    let zero = dir.path().join("trace.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let null = dir.path().join("other.json.gz");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let report = report_of(dir.path());
    assert_eq!(kernel_rows(&report), valid_rows());
    let skipped: Vec<String> = notes(&report)
        .into_iter()
        .filter(|n| n.contains("not a regular file"))
        .collect();
    assert_eq!(
        skipped,
        [
            format!(
                "not a trace, skipped: {} (not a regular file: a device)",
                null.display()
            ),
            format!(
                "not a trace, skipped: {} (not a regular file: a device)",
                zero.display()
            ),
        ]
    );
}

#[test]
fn missing_paths() {
    assert_refused(
        &triage(Path::new("/nonexistent/trace.json.gz")),
        3,
        &["/nonexistent/trace.json.gz: no such file or directory"],
    );
    let dir = tempfile::tempdir().unwrap();
    let dangling = dir.path().join("gone.trace.json");
    std::os::unix::fs::symlink(dir.path().join("deleted"), &dangling).unwrap();
    assert_refused(&triage(&dangling), 3, &["gone.trace.json: no such file"]);
}

#[test]
fn control_characters_in_a_file_name_stay_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a\nb\u{1b}[31m.trace.json", b"bad");
    assert_refused(
        &triage(&path),
        3,
        &["a\\nb\\u{1b}[31m.trace.json: invalid JSON at byte 0"],
    );
}

#[test]
fn symlink_loops() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        dir.path().join("a.trace.json"),
        dir.path().join("b.trace.json"),
    );
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    assert_refused(
        &triage(&a),
        3,
        &["a.trace.json: cannot access", "symbolic links"],
    );
    // A directory holding a link to itself and to its parent: scanned once, in bounds.
    let root = dir.path().join("run");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::symlink(&root, root.join("self")).unwrap();
    std::os::unix::fs::symlink("..", root.join("up")).unwrap();
    std::os::unix::fs::symlink(&a, root.join("loop.trace.json")).unwrap();
    write(&root, "only.trace.json", trace_text(&valid_events()));
    let report = report_of(&root);
    assert_eq!(kernel_rows(&report), valid_rows());
    assert_eq!(report["inputs"].as_array().unwrap().len(), 1);
    assert!(report["inputs"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("/run/only.trace.json"));
}
