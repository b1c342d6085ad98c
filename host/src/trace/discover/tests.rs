//! Tests of input discovery: rank patterns, missing and empty inputs, each engine's
//! capture layout, the choice of layout, rank and newest file per stage with the notes
//! naming every file left out, content sniffing, symlink loops, and `server_args.json`
//! lookup.

use super::*;
use std::time::Duration;

const TRACE: &str = r#"{"schemaVersion": 1, "traceEvents": []}"#;

/// Creates `rel` under `root` with `text`, its mtime `age_s` seconds in the past.
fn put(root: &Path, rel: &str, text: &str, age_s: u64) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    let when = SystemTime::now() - Duration::from_secs(age_s);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(when)
        .unwrap();
    path
}

fn names(set: &TraceSet) -> Vec<String> {
    set.files.iter().map(|f| file_name(&f.path)).collect()
}

fn err(result: Result<TraceSet, TriageError>) -> String {
    match result {
        Ok(set) => panic!("expected an error, got {:?}", names(&set)),
        Err(e) => e.to_string(),
    }
}

fn shared(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces")).join(name)
}

#[test]
fn rank_patterns() {
    let cases = [
        ("trace_tp1.json", Some(1)),
        ("1761000000.5-TP-0-EXTEND.trace.json.gz", Some(0)),
        ("ts-triage-prefill-TP-3.trace.json.gz", Some(3)),
        ("1761000000.5-DP1-CP0-TP2-DECODE.trace.json.gz", Some(2)),
        ("1761000000.5-TP5.trace.json.gz", Some(5)),
        ("rank0.pt.trace.json.gz", Some(0)),
        ("trace-prefill-rank-6.json", Some(6)),
        ("worker0.pt.trace.json.gz", Some(0)),
        ("gpu-host_12345.1700000000123.pt.trace.json.gz", None),
        ("http_trace.json", None),
        ("decode_gpu_0.json", None),
        (
            "mixed_steady_state_prefilldecode_0_decode_31_bs511_conc31_1779988386.8841596-TP-0.trace_annotation_iteration_1.json",
            Some(0),
        ),
    ];
    for (name, want) in cases {
        assert_eq!(rank_from_name(name), want, "{name}");
    }
}

#[test]
fn missing_and_empty_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let e = err(discover(&dir.path().join("nope"), None));
    assert!(e.ends_with("nope: no such file or directory"), "{e}");
    put(dir.path(), "server_args.json", "{}", 0);
    put(dir.path(), "notes.txt", "x", 0);
    put(dir.path(), "bench.json", r#"{"requests": [{"ph": 1}]}"#, 0);
    let e = err(discover(dir.path(), None));
    let want = format!(
        "no trace files found under {} (looked for *.trace.json[.gz], *.pt.trace.json[.gz], *.json[.gz]); \
         not traces: {} (a JSON object with neither traceEvents nor a torch.profiler key in its first 64 KiB)",
        dir.path().display(),
        dir.path().join("bench.json").display()
    );
    assert!(e.ends_with(&want), "{e}");
}

#[test]
fn a_non_trace_is_skipped_and_listed_whether_or_not_its_name_says_trace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "run-TP-0.trace.json", TRACE, 0);
    let named = put(root, "bench.trace.json", r#"{"requests": []}"#, 0);
    let generic = put(root, "bench.json", r#"{"requests": []}"#, 0);
    let empty = put(root, "empty.pt.trace.json", "", 0);
    let text = put(root, "log.trace.json.gz", "INFO started", 0);
    put(root, "server_args.json", r#"{"tp_size": 1}"#, 0);
    let set = discover(root, None).unwrap();
    assert_eq!(names(&set), ["run-TP-0.trace.json"]);
    let object =
        "a JSON object with neither traceEvents nor a torch.profiler key in its first 64 KiB";
    // server_args.json is read as the server's arguments, so it is not listed.
    assert_eq!(
        set.notes,
        [
            format!("not a trace, skipped: {} ({object})", generic.display()),
            format!("not a trace, skipped: {} ({object})", named.display()),
            format!(
                "not a trace, skipped: {} (the file is empty)",
                empty.display()
            ),
            format!(
                "not a trace, skipped: {} (not JSON: it starts with \"INFO start\")",
                text.display()
            ),
        ]
    );
}

#[test]
fn no_traces_error_names_each_json_that_is_not_a_trace_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let list = put(root, "a.trace.json", "[1, 2]", 0);
    let lonely = put(root, "b.json", r#"{"model": "x"}"#, 0);
    let e = err(discover(root, None));
    assert!(
        e.ends_with(&format!(
            "; not traces: {} (a JSON list without event objects in its first 64 KiB), {} (a JSON \
             object with neither traceEvents nor a torch.profiler key in its first 64 KiB)",
            list.display(),
            lonely.display()
        )),
        "{e}"
    );
}

#[test]
fn single_file_is_taken_as_is_with_server_args_two_levels_up() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "server_args.json",
        r#"{"model_path": "Qwen/Qwen3-8B", "tp_size": 2}"#,
        0,
    );
    let file = put(dir.path(), "decode/run/anything.bin", "not even JSON", 0);
    let set = discover(&file, Some(1)).unwrap();
    assert_eq!(set.files.len(), 1);
    assert_eq!(set.files[0].path, file);
    assert_eq!(set.files[0].path_stage, Stage::Decode);
    assert_eq!(set.files[0].rank, None);
    assert!(
        set.server_args.is_none(),
        "two levels up is too far for a file"
    );
    assert_eq!(
        set.notes,
        ["--rank 1 ignored: the input is a single file, read as given"]
    );

    let file = put(dir.path(), "decode/x-TP-1.trace.json", TRACE, 0);
    let set = discover(&file, None).unwrap();
    assert_eq!(set.files[0].rank, Some(1));
    let args = set.server_args.unwrap();
    assert_eq!(args.path, dir.path().join("server_args.json"));
    assert_eq!(args.values["model_path"], "Qwen/Qwen3-8B");
}

#[test]
fn direct_files_rank_zero_preferred_others_noted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for r in 0..8 {
        put(root, &format!("1761.5-TP-{r}.trace.json.gz"), TRACE, 10);
    }
    put(root, "server_args.json", r#"{"tp_size": 8}"#, 0);
    put(root, "config.json", r#"{"traceEvents": []}"#, 0);
    put(root, "MERGED-all.trace.json", TRACE, 0);
    let set = discover(root, None).unwrap();
    assert_eq!(names(&set), ["1761.5-TP-0.trace.json.gz"]);
    assert_eq!(set.files[0].rank, Some(0));
    assert_eq!(set.server_args.unwrap().values["tp_size"], 8);
    assert!(
        set.notes
            .contains(&"ranks 1-7 not analysed (pass --rank N)".to_string()),
        "{:?}",
        set.notes
    );
    assert!(
        set.notes
            .iter()
            .any(|n| n.contains("MERGED-all.trace.json")),
        "{:?}",
        set.notes
    );
    assert!(
        set.notes.iter().any(|n| n.contains("config.json")),
        "{:?}",
        set.notes
    );

    let set = discover(root, Some(3)).unwrap();
    assert_eq!(names(&set), ["1761.5-TP-3.trace.json.gz"]);
    assert!(set
        .notes
        .contains(&"ranks 0-2, 4-7 not analysed (pass --rank N)".to_string()));
    let e = err(discover(root, Some(9)));
    assert!(
        e.ends_with("no trace of rank 9 found (available ranks: 0-7)"),
        "{e}"
    );
}

#[test]
fn merged_traces_when_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "merged-abc.trace.json", TRACE, 0);
    let set = discover(dir.path(), None).unwrap();
    assert_eq!(names(&set), ["merged-abc.trace.json"]);
    assert!(set.notes.is_empty());
}

#[test]
fn sglang_workload_layout_finds_nested_server_args() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(
        root,
        "prefill/1761.1/server_args.json",
        r#"{"model_path": "m"}"#,
        0,
    );
    put(
        root,
        "prefill/1761.1/ts-prefill-1761.1-TP-0.trace.json.gz",
        TRACE,
        5,
    );
    put(
        root,
        "prefill/1761.1/ts-prefill-1761.1-TP-1.trace.json.gz",
        TRACE,
        5,
    );
    put(
        root,
        "decode/1761.2/server_args.json",
        r#"{"model_path": "m"}"#,
        0,
    );
    put(
        root,
        "decode/1761.2/ts-decode-1761.2-TP-0.trace.json.gz",
        TRACE,
        4,
    );
    put(
        root,
        "decode/1761.2/ts-decode-1761.2-TP-1.trace.json.gz",
        TRACE,
        4,
    );
    let set = discover(root, None).unwrap();
    assert_eq!(
        names(&set),
        [
            "ts-prefill-1761.1-TP-0.trace.json.gz",
            "ts-decode-1761.2-TP-0.trace.json.gz"
        ]
    );
    let stages: Vec<Stage> = set.files.iter().map(|f| f.path_stage).collect();
    assert_eq!(stages, [Stage::Extend, Stage::Decode]);
    let args = set.server_args.unwrap();
    assert_eq!(args.path, root.join("prefill/1761.1/server_args.json"));
    assert_eq!(set.notes, ["rank 1 not analysed (pass --rank N)"]);
}

#[test]
fn server_args_one_level_inside_stage_dirs() {
    // Traces moved up to root/<stage>/, server_args left in root/<stage>/<ts>/.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(
        root,
        "decode/1761.2/server_args.json",
        r#"{"tp_size": 1}"#,
        0,
    );
    put(root, "decode/x-TP-0.trace.json.gz", TRACE, 0);
    let set = discover(root, None).unwrap();
    assert_eq!(
        set.server_args.unwrap().path,
        root.join("decode/1761.2/server_args.json")
    );
}

#[test]
fn invalid_server_args_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "a.trace.json", TRACE, 0);
    let bad = put(dir.path(), "server_args.json", "{not json", 0);
    let e = err(discover(dir.path(), None));
    assert!(
        e.starts_with(&format!("{}: invalid server_args.json: ", bad.display())),
        "{e}"
    );
    put(dir.path(), "server_args.json", "[1]", 0);
    let e = err(discover(dir.path(), None));
    assert!(
        e.ends_with("invalid server_args.json: not a JSON object"),
        "{e}"
    );
}

#[test]
fn sglang_legacy_newest_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "1761.0/1761.0-TP-0-EXTEND.trace.json.gz", TRACE, 100);
    put(root, "1761.0/1761.0-TP-0-DECODE.trace.json.gz", TRACE, 100);
    put(root, "1762.0/1762.0-TP-0-EXTEND.trace.json.gz", TRACE, 10);
    put(root, "1762.0/1762.0-TP-0-DECODE.trace.json.gz", TRACE, 9);
    put(root, "1762.0/1762.0-TP-0.trace.json.gz", TRACE, 8);
    put(root, "1762.0/server_args.json", r#"{"tp_size": 1}"#, 0);
    let set = discover(root, None).unwrap();
    assert_eq!(
        names(&set),
        [
            "1762.0-TP-0-EXTEND.trace.json.gz",
            "1762.0-TP-0-DECODE.trace.json.gz"
        ]
    );
    assert_eq!(
        set.server_args.unwrap().path,
        root.join("1762.0/server_args.json")
    );
    assert_eq!(set.notes.len(), 2, "{:?}", set.notes);
    assert!(
        set.notes[0].starts_with("1 older trace directory under "),
        "{:?}",
        set.notes
    );
    assert!(
        set.notes[1].contains("1762.0-TP-0.trace.json.gz (its path names no stage"),
        "{:?}",
        set.notes
    );
}

#[test]
fn older_duplicates_per_stage_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "1.5-DP0-TP-0-DECODE.trace.json.gz", TRACE, 30);
    put(root, "1.5-DP1-TP-0-DECODE.trace.json.gz", TRACE, 20);
    let set = discover(root, None).unwrap();
    assert_eq!(names(&set), ["1.5-DP1-TP-0-DECODE.trace.json.gz"]);
    assert_eq!(set.notes.len(), 1);
    assert!(set.notes[0].contains("1.5-DP0-TP-0-DECODE.trace.json.gz (an older decode trace"));
}

#[test]
fn vllm_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(
        root,
        "vllm_profile/prefill/rank0.1700.pt.trace.json.gz",
        TRACE,
        5,
    );
    put(
        root,
        "vllm_profile/prefill/rank1.1700.pt.trace.json.gz",
        TRACE,
        5,
    );
    put(
        root,
        "vllm_profile/decode/gpu-host_4242.1700000000123.pt.trace.json.gz",
        TRACE,
        5,
    );
    let set = discover(&root.join("vllm_profile"), None).unwrap();
    // The unranked decode trace stays: no rank-0 trace covers its stage.
    assert_eq!(
        names(&set),
        [
            "rank0.1700.pt.trace.json.gz",
            "gpu-host_4242.1700000000123.pt.trace.json.gz"
        ]
    );
    assert_eq!(set.files[1].rank, None);
    assert!(set.server_args.is_none());
}

#[test]
fn tensorrt_llm_generic_names_are_sniffed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "trace-prefill-rank-0.json", TRACE, 5);
    put(
        root,
        "trace-decode-rank-0.json",
        r#"[{"ph": "X", "name": "k"}]"#,
        5,
    );
    put(root, "trace-decode-rank-1.json", TRACE, 5);
    put(
        root,
        "benchmark-prefill.json",
        r#"{"results": [{"ph": "X"}]}"#,
        0,
    );
    put(root, "list.json", r#"[1, 2]"#, 0);
    let set = discover(root, None).unwrap();
    assert_eq!(
        names(&set),
        ["trace-prefill-rank-0.json", "trace-decode-rank-0.json"]
    );
    // The JSON files that are not traces are listed, with why (point 15 of issue 14).
    assert_eq!(
        set.notes,
        [
            format!(
                "not a trace, skipped: {} (a JSON object with neither traceEvents nor a \
                 torch.profiler key in its first 64 KiB)",
                root.join("benchmark-prefill.json").display()
            ),
            format!(
                "not a trace, skipped: {} (a JSON list without event objects in its first 64 KiB)",
                root.join("list.json").display()
            ),
            "rank 1 not analysed (pass --rank N)".to_string(),
        ]
    );
}

#[test]
fn sniffing_reads_only_the_head() {
    // torch.profiler's first key decides even when traceEvents is far away.
    let padding = "x".repeat(200_000);
    let late = format!(r#"{{"schemaVersion": 1, "pad": "{padding}", "traceEvents": []}}"#);
    assert!(trace_shape(late.as_bytes()).is_ok());
    assert!(trace_shape(br#"  {"metadata": {}, "traceEvents": []}"#).is_ok());
    assert!(trace_shape(br#"{"model_path": "x"}"#).is_err());
    assert!(trace_shape(b"[]").is_err());
    assert!(trace_shape(b"").is_err());
    // Every shared trace has a generic .json[.gz] name and must be recognised.
    let dir = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(shared("")).unwrap() {
        let path = entry.unwrap().path();
        let name = file_name(&path);
        if name.ends_with(".md") {
            continue;
        }
        let link = dir.path().join(&name);
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(judge_file(&link), Ok(()), "{name}");
    }
}

#[test]
fn symlink_loops_terminate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "a/b/x-TP-0.trace.json", TRACE, 0);
    std::os::unix::fs::symlink(root, root.join("a/b/loop")).unwrap();
    std::os::unix::fs::symlink(root.join("a"), root.join("a/b/up")).unwrap();
    let set = discover(root, None).unwrap();
    assert_eq!(names(&set), ["x-TP-0.trace.json"]);
}

#[test]
fn direct_traces_win_over_nested_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "a.trace.json", TRACE, 50);
    put(root, "decode/b.trace.json", TRACE, 0);
    let set = discover(root, None).unwrap();
    assert_eq!(names(&set), ["a.trace.json"]);
    assert_eq!(set.notes.len(), 1);
    assert!(set.notes[0].starts_with("1 trace file(s) in subdirectories of"));
}

#[test]
fn outer_stage_words_do_not_make_a_workload_layout() {
    // `x_prefill_study/` is the input itself; only stage names below it pick the
    // workload layout, so the newest run directory is chosen.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("x_prefill_study");
    put(&root, "run1/a.trace.json", TRACE, 50);
    put(&root, "run2/b.trace.json", TRACE, 10);
    let set = discover(&root, None).unwrap();
    assert_eq!(names(&set), ["b.trace.json"]);
    assert_eq!(set.files[0].path_stage, Stage::Extend);
}

/// Issue 15 point 11: a trace-named link to a device (or a FIFO) is never opened, and
/// the notes say it was skipped and why, as for any other JSON file that is not a trace.
#[test]
fn trace_named_special_files_are_skipped_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "run-TP-0.trace.json", TRACE, 0);
    let zero = root.join("trace.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let null = root.join("null.json.gz");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let pipe = root.join("pipe.pt.trace.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(status.success());
    let dead = root.join("dead.trace.json");
    std::os::unix::fs::symlink(root.join("gone"), &dead).unwrap();
    // Not JSON-named: a directory holds many files, only JSON ones are listed.
    std::os::unix::fs::symlink("/dev/zero", root.join("zero.bin")).unwrap();
    let set = discover(root, None).unwrap();
    assert_eq!(names(&set), ["run-TP-0.trace.json"]);
    assert_eq!(
        set.notes,
        [
            format!(
                "not a trace, skipped: {} (a broken symbolic link)",
                dead.display()
            ),
            format!(
                "not a trace, skipped: {} (not a regular file: a device)",
                null.display()
            ),
            format!(
                "not a trace, skipped: {} (not a regular file: a named pipe)",
                pipe.display()
            ),
            format!(
                "not a trace, skipped: {} (not a regular file: a device)",
                zero.display()
            ),
        ]
    );
}

/// Issue 15 point 7: a `server_args.json` planted in a parent of the input (say, in a
/// shared `/tmp`) is outside the input's capture layout and never read; the layout's own
/// file is.
#[test]
fn server_args_above_the_capture_layout_are_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path();
    put(
        shared,
        "server_args.json",
        r#"{"model_path": "planted/Model", "tp_size": 8}"#,
        0,
    );
    let trace = put(shared, "run/trace.json.gz", TRACE, 0);
    assert_eq!(discover(&trace, None).unwrap().server_args, None);
    assert_eq!(
        discover(&shared.join("run"), None).unwrap().server_args,
        None
    );
    // A trace nested below the input: its directory's parent is the input, still inside.
    put(shared, "run/nested/deeper/x.trace.json", TRACE, 0);
    let own = put(shared, "run/server_args.json", r#"{"tp_size": 1}"#, 0);
    for input in [trace, shared.join("run")] {
        let args = discover(&input, None).unwrap().server_args.unwrap();
        assert_eq!(
            (args.path, &args.values["tp_size"]),
            (own.clone(), &1.into())
        );
    }
}

/// The capture command's own layout, `capture-<ms>/{prefill,decode}/<trace>` with
/// `capture-<ms>/server_args.json`, keeps working when a stage directory or one of its
/// traces is the input.
#[test]
fn server_args_of_the_capture_root_serve_its_stage_directories() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("capture-1761");
    let args = put(&root, "server_args.json", r#"{"tp_size": 2}"#, 0);
    let trace = put(&root, "decode/x-TP-0.trace.json.gz", TRACE, 0);
    for input in [root.clone(), root.join("decode"), trace] {
        let found = discover(&input, None).unwrap().server_args;
        assert_eq!(
            found.map(|a| a.path),
            Some(args.clone()),
            "{}",
            input.display()
        );
    }
}

#[test]
fn discover_ranks_lists_every_rank_of_the_competing_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for r in [0, 1, 2, 5] {
        put(
            root,
            &format!("1761.5-TP-{r}-DECODE.trace.json.gz"),
            TRACE,
            10,
        );
    }
    // A merged trace's rank and a nested older run's do not count.
    put(root, "merged-TP-9.trace.json", TRACE, 0);
    put(root, "old/1760.1-TP-7.trace.json.gz", TRACE, 100);
    assert_eq!(discover_ranks(root).unwrap(), [0, 1, 2, 5]);
    let file = root.join("1761.5-TP-1-DECODE.trace.json.gz");
    assert!(discover_ranks(&file).unwrap().is_empty());
    let empty = tempfile::tempdir().unwrap();
    let error = discover_ranks(empty.path()).unwrap_err().one_line();
    assert!(error.contains("no trace files found"), "{error}");
}
