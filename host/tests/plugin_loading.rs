//! Real plugin libraries loaded through abi_stable: the four engine plugins, broken files,
//! an incompatible API, duplicate names, a panicking plugin, install/remove, selection.
//!
//! The plugin cdylibs are built once per test run with a nested `cargo build`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use llm_triage::error::TriageError;
use llm_triage::plugins::{self, load_all, select, PluginSet};
use llm_triage::trace::stage::{MarkerKind, StageHint};
use llm_triage_plugin_api::abi_stable::std_types::RVec;
use llm_triage_plugin_api::{Counted, KeyValue, TraceEvidence};

const ENGINE_CRATES: &[&str] = &[
    "llm-triage-plugin-sglang",
    "llm-triage-plugin-vllm",
    "llm-triage-plugin-trtllm",
    "llm-triage-plugin-tokenspeed",
];
const TEST_CRATES: &[&str] = &[
    "llm-triage-test-plugin-panicky",
    "llm-triage-test-plugin-api2",
    "llm-triage-test-plugin-old-sglang",
];

/// `target/<profile>`, after building every plugin crate into it.
fn plugin_build_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // This test binary is target/<profile>/deps/<name>.
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf();
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root");
        let mut cargo = Command::new(env!("CARGO"));
        cargo.arg("build").current_dir(workspace);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        for krate in ENGINE_CRATES.iter().chain(TEST_CRATES) {
            cargo.args(["-p", krate]);
        }
        let status = cargo.status().expect("run cargo build for the plugins");
        assert!(status.success(), "building the plugin crates failed");
        profile_dir
    })
}

/// The built library of `lib_name` (the crate's `[lib] name`).
fn built_library(lib_name: &str) -> PathBuf {
    let file = format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let path = plugin_build_dir().join(file);
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Copies a built library into `dir` under `file_name`; returns the new path.
fn copy_into(dir: &Path, lib_name: &str, file_name: &str) -> PathBuf {
    let to = dir.join(file_name);
    std::fs::copy(built_library(lib_name), &to).expect("copy plugin");
    to
}

fn so(name: &str) -> String {
    format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// A temp dir holding copies of the four engine plugins.
fn dir_with_engines() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for engine in ["sglang", "vllm", "trtllm", "tokenspeed"] {
        let lib = format!("llm_triage_plugin_{engine}");
        copy_into(dir.path(), &lib, &so(&lib));
    }
    dir
}

fn engines() -> (tempfile::TempDir, PluginSet) {
    let dir = dir_with_engines();
    let set = load_all(&[dir.path().to_path_buf()]);
    (dir, set)
}

fn counted(items: &[(&str, u64)]) -> RVec<Counted> {
    let one = |(text, count): &(&str, u64)| Counted {
        text: (*text).into(),
        count: *count,
    };
    items.iter().map(one).collect()
}

fn names(set: &PluginSet) -> Vec<&str> {
    set.engines.iter().map(|e| e.name()).collect()
}

#[test]
fn the_four_engine_plugins_load_as_four_modules() {
    let (_dir, set) = engines();
    assert!(set.rejected.is_empty(), "{:?}", set.rejected);
    // Sorted by file name within the directory.
    assert_eq!(names(&set), ["sglang", "tokenspeed", "trtllm", "vllm"]);
    let displays: Vec<&str> = set
        .engines
        .iter()
        .map(|e| e.manifest.display_name.as_str())
        .collect();
    assert_eq!(displays, ["SGLang", "TokenSpeed", "TensorRT-LLM", "vLLM"]);
    for e in &set.engines {
        assert_eq!(
            e.manifest.api_version,
            llm_triage_plugin_api::PLUGIN_API_VERSION
        );
        assert_eq!(e.manifest.upstream.commit.len(), 40, "{}", e.name());
        assert_eq!(e.manifest.capabilities.len(), 6, "{}", e.name());
    }
    assert_eq!(set.find("tensorrt_llm").unwrap().name(), "trtllm");
    assert_eq!(set.find("ts").unwrap().name(), "tokenspeed");

    // Distinct modules, not abi_stable's cached first library: each answers for itself.
    let vllm_trace = TraceEvidence {
        python_files: counted(&[("vllm/v1/worker/gpu_model_runner.py", 33)]),
        ..Default::default()
    };
    let claims: Vec<bool> = set
        .engines
        .iter()
        .map(|e| e.detect(&vllm_trace).unwrap().is_some())
        .collect();
    assert_eq!(claims, [false, false, false, true]);
    let roots: Vec<String> = set
        .engines
        .iter()
        .map(|e| {
            e.attribution()
                .unwrap()
                .source_roots
                .last()
                .unwrap()
                .clone()
        })
        .collect();
    assert_eq!(
        roots,
        ["sgl_kernel/", "tokenspeed/", "tensorrt_llm/", "vllm/"]
    );
    let sglang = set.find("sglang").unwrap();
    assert_eq!(
        sglang
            .stage_of(MarkerKind::Annotation, "step[DECODE bs=32]")
            .unwrap(),
        StageHint::Decode
    );
}

#[test]
fn a_missing_directory_is_fine() {
    let missing = PathBuf::from("/nonexistent/llm-triage-plugins");
    let set = load_all(std::slice::from_ref(&missing));
    assert!(set.engines.is_empty() && set.rejected.is_empty());
    let doctor = plugins::doctor(&[missing]).unwrap();
    assert!(
        doctor.contains("1. /nonexistent/llm-triage-plugins (missing)"),
        "{doctor}"
    );
    assert!(
        doctor.contains("Summary: 0 loaded, 0 rejected."),
        "{doctor}"
    );
}

#[test]
fn corrupt_and_non_library_files_are_rejected_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    copy_into(
        dir.path(),
        "llm_triage_plugin_vllm",
        &so("llm_triage_plugin_vllm"),
    );
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let bad = dir.path().join("libllm_triage_plugin_bad.so");
    std::fs::write(&bad, garbage).unwrap();
    let script = dir.path().join("libllm_triage_plugin_script.so");
    std::fs::write(&script, "#!/bin/sh\necho not a library\n").unwrap();

    let set = load_all(&[dir.path().to_path_buf()]);
    assert_eq!(names(&set), ["vllm"]);
    let rejected: Vec<&Path> = set.rejected.iter().map(|r| r.path.as_path()).collect();
    assert_eq!(rejected, [bad.as_path(), script.as_path()]);
    for r in &set.rejected {
        assert!(
            r.reason.starts_with("not a loadable plugin library: "),
            "{}",
            r.reason
        );
        assert!(!r.reason.contains('\n'), "one line: {}", r.reason);
    }
}

#[test]
fn an_incompatible_plugin_api_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_into(
        dir.path(),
        "triage_test_api2",
        &so("llm_triage_plugin_api2"),
    );
    let set = load_all(&[dir.path().to_path_buf()]);
    assert!(set.engines.is_empty());
    assert_eq!(set.rejected.len(), 1);
    assert_eq!(set.rejected[0].path, path);
    let reason = &set.rejected[0].reason;
    assert!(reason.contains("built for plugin API 2.0.0"), "{reason}");
    assert!(
        reason.contains(&format!(
            "this host speaks plugin API {}",
            llm_triage_plugin_api::PLUGIN_API_VERSION
        )),
        "{reason}"
    );
}

#[test]
fn the_first_plugin_of_a_name_wins_the_copy_is_rejected() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let original = copy_into(
        first.path(),
        "llm_triage_plugin_sglang",
        &so("llm_triage_plugin_sglang"),
    );
    let copy = copy_into(
        second.path(),
        "llm_triage_plugin_sglang",
        &so("llm_triage_plugin_sglang_copy"),
    );
    let set = load_all(&[first.path().to_path_buf(), second.path().to_path_buf()]);
    assert_eq!(names(&set), ["sglang"]);
    assert_eq!(set.engines[0].path, original);
    assert_eq!(set.rejected.len(), 1);
    assert_eq!(set.rejected[0].path, copy);
    assert_eq!(
        set.rejected[0].reason,
        format!(
            "duplicate plugin name sglang, already loaded from {}",
            original.display()
        )
    );
}

#[test]
fn a_panicking_plugin_is_an_exit_6_error_and_the_host_lives() {
    let dir = tempfile::tempdir().unwrap();
    copy_into(
        dir.path(),
        "triage_test_panicky",
        &so("llm_triage_plugin_panicky"),
    );
    let set = load_all(&[dir.path().to_path_buf()]);
    assert_eq!(names(&set), ["panicky"]);
    let engine = &set.engines[0];
    for _ in 0..2 {
        let err = engine.detect(&TraceEvidence::default()).unwrap_err();
        assert_eq!(err.exit_code(), 6);
        assert_eq!(
            err.to_string(),
            "plugin panicky: plugin panicked in detect: boom in detect \
             (at tests/plugins/panicky/src/lib.rs:29)"
        );
    }
    let err = engine.stage_of(MarkerKind::Annotation, "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin panicky: plugin panicked in stage_of: boom in stage_of for x \
         (at tests/plugins/panicky/src/lib.rs:37)"
    );
    // The host keeps working with the same plugin.
    assert!(engine.attribution().unwrap().source_roots.is_empty());
    // Auto-selection surfaces the failure instead of guessing.
    let err = select(&set, "auto", &[TraceEvidence::default()]).unwrap_err();
    assert!(matches!(err, TriageError::Plugin { .. }));
}

#[test]
fn install_refuses_downgrades_and_bad_apis_remove_stays_in_the_user_dir() {
    let user = tempfile::tempdir().unwrap();
    let user_dir = user.path().join("llm-triage").join("plugins");
    let sglang = built_library("llm_triage_plugin_sglang");

    let text = plugins::install(&sglang, false, &user_dir).unwrap();
    let installed = user_dir.join(so("llm_triage_plugin_sglang"));
    assert_eq!(
        text,
        format!(
            "installed sglang 0.1.0 (plugin API {}) to {}\n",
            llm_triage_plugin_api::PLUGIN_API_VERSION,
            installed.display()
        )
    );
    assert!(installed.is_file());

    let old = built_library("triage_test_old_sglang");
    let err = plugins::install(&old, false, &user_dir).unwrap_err();
    assert_eq!(err.exit_code(), 6);
    assert!(
        err.to_string()
            .contains("refusing to downgrade sglang from 0.1.0"),
        "{err}"
    );
    let forced = plugins::install(&old, true, &user_dir).unwrap();
    assert!(
        forced.ends_with("(downgraded from 0.1.0 (--force))\n"),
        "{forced}"
    );
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(&old).unwrap()
    );

    let err = plugins::install(&built_library("triage_test_api2"), true, &user_dir).unwrap_err();
    assert_eq!(err.exit_code(), 6);
    assert!(err.to_string().contains("plugin API 2.0.0"), "{err}");

    let removed = plugins::remove("sgl", &user_dir).unwrap();
    assert_eq!(removed, format!("removed {}\n", installed.display()));
    assert!(!installed.exists());
    let err = plugins::remove("sglang", &user_dir).unwrap_err();
    assert_eq!(err.exit_code(), 2);
}

#[test]
fn list_info_and_doctor_describe_the_plugins() {
    let dir = dir_with_engines();
    std::fs::write(
        dir.path().join("libllm_triage_plugin_bad.so"),
        b"\x7fELF garbage",
    )
    .unwrap();
    std::fs::write(dir.path().join(so("unrelated")), b"not ours").unwrap();
    let dirs = vec![
        dir.path().to_path_buf(),
        PathBuf::from("/nonexistent/plugins"),
    ];

    let list = plugins::list(&dirs).unwrap();
    let row = |label: &str| -> Vec<String> {
        let line = list
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label} in\n{list}"));
        line[label.len()..]
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    // Columns: SGLang, TokenSpeed, TensorRT-LLM, vLLM (file-name order).
    assert_eq!(row("--profile-by-stage capture"), ["yes", "no", "no", "no"]);
    assert_eq!(row("Existing-trace triage"), ["yes", "yes", "yes", "yes"]);
    assert_eq!(
        row("--profile-prefix control"),
        ["yes", "yes [5]", "ignored", "ignored"]
    );
    assert!(
        list.contains("sgl-project/sglang@24c91001cf99 (2026-01-03, "),
        "{list}"
    );
    assert!(list.contains("1 plugin file could not be loaded"), "{list}");

    let info = plugins::info(&dirs, "TRT").unwrap();
    assert!(
        info.starts_with(
            "trtllm (TensorRT-LLM) 0.1.0\n  aliases:        trt, tllm, tensorrt-llm, tensorrtllm\n"
        ),
        "{info}"
    );
    assert!(
        info.contains("    tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py (any function)"),
        "{info}"
    );
    assert_eq!(plugins::info(&dirs, "nope").unwrap_err().exit_code(), 2);

    let doctor = plugins::doctor(&dirs).unwrap();
    assert!(doctor.contains("(exists, 5 candidate files)"), "{doctor}");
    assert!(
        doctor.contains("2. /nonexistent/plugins (missing)"),
        "{doctor}"
    );
    assert!(doctor.contains("  rejected  "), "{doctor}");
    assert!(
        doctor.contains(&format!(
            "  ignored   {}",
            dir.path().join(so("unrelated")).display()
        )),
        "{doctor}"
    );
    assert!(
        doctor.contains("Summary: 4 loaded, 1 rejected."),
        "{doctor}"
    );
}

#[test]
fn explicit_names_win_and_unknown_names_are_usage_errors() {
    let (_dir, set) = engines();
    let nothing = [TraceEvidence::default()];
    for (asked, chosen) in [
        ("sgl", "sglang"),
        ("TensorRT_LLM", "trtllm"),
        ("token-speed", "tokenspeed"),
        ("vllm", "vllm"),
    ] {
        let s = select(&set, asked, &nothing).unwrap();
        assert_eq!(s.engine.name(), chosen);
        assert_eq!(s.decided_by, [format!("--framework {asked}")]);
    }
    let err = select(&set, "nanovllm", &nothing).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert_eq!(
        err.to_string(),
        "unknown framework \"nanovllm\"; known: sglang (sgl), tokenspeed (token-speed, ts), \
         trtllm (trt, tllm, tensorrt-llm, tensorrtllm), vllm, or auto"
    );
}

#[test]
fn auto_detection_on_hand_built_evidence() {
    let (_dir, set) = engines();

    // nano-vllm is not vLLM: no claim at all, refused with the evidence and the advice.
    let nano = TraceEvidence {
        file_path: "/t/decode_gpu_0.json".into(),
        python_files: counted(&[
            ("torch/_dynamo/eval_frame.py", 168),
            ("nanovllm/engine/model_runner.py", 35),
        ]),
        ..Default::default()
    };
    let err = select(&set, "auto", &[nano]).unwrap_err();
    assert_eq!(err.exit_code(), 4);
    let msg = err.to_string();
    assert!(
        msg.starts_with("no engine plugin recognised decode_gpu_0.json ("),
        "{msg}"
    );
    assert!(
        msg.contains("python roots: torch/ x168, nanovllm/ x35"),
        "{msg}"
    );
    assert!(msg.contains("pass --framework NAME"), "{msg}");
    assert!(!msg.contains('\n'), "errors are one line: {msg}");

    // TensorRT-LLM kernel names inside a vLLM trace stay vLLM.
    let vllm = TraceEvidence {
        python_files: counted(&[
            ("vllm/model_executor/layers/fused_moe/layer.py", 1008),
            ("torch/_ops.py", 406),
        ]),
        kernel_names: counted(&[("tensorrt_llm::kernels::quantize_with_block_size", 36)]),
        ..Default::default()
    };
    let s = select(&set, "auto", &[vllm]).unwrap();
    assert_eq!(s.engine.name(), "vllm");
    assert_eq!(s.decided_by, ["1008 python frames under vllm/"]);

    // SGLang server args naming TensorRT-LLM kernels stay SGLang.
    let args = |kv: &[(&str, &str)]| -> RVec<KeyValue> {
        kv.iter()
            .map(|(k, v)| KeyValue {
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect()
    };
    let sglang = TraceEvidence {
        server_args: args(&[
            ("attention_backend", "\"trtllm_mla\""),
            ("moe_runner_backend", "\"flashinfer_trtllm\""),
            ("schedule_policy", "\"fcfs\""),
        ]),
        python_files: counted(&[
            ("/sgl/python/sglang/srt/managers/scheduler.py", 20),
            ("vllm/_custom_ops.py", 2),
        ]),
        ..Default::default()
    };
    let s = select(&set, "auto", &[sglang]).unwrap();
    assert_eq!(s.engine.name(), "sglang");
    assert_eq!(
        s.decided_by,
        [
            "server_args.json has SGLang keys: attention_backend, schedule_policy",
            "20 python frames under sglang/",
            "weaker claim: vLLM (score 2090 < 3002): 2 python frames under vllm/",
        ]
    );

    // Two engines with equally strong claims: a tie is refused, never guessed.
    let tie = TraceEvidence {
        python_files: counted(&[("vllm/a.py", 100), ("sglang/srt/b.py", 100)]),
        ..Default::default()
    };
    let err = select(&set, "auto", &[tie]).unwrap_err();
    assert_eq!(err.exit_code(), 4);
    assert!(err.to_string().contains("2 engines claim"), "{err}");
    assert!(
        err.to_string()
            .contains("sglang (score 2499): 100 python frames under sglang/"),
        "{err}"
    );
}

/// The verdicts shared/traces/SOURCES.md expects from `--framework auto`.
#[test]
fn real_traces_get_the_expected_verdicts() {
    use llm_triage::trace::evidence::evidence;
    use llm_triage::trace::read::read_trace;
    let (_dir, set) = engines();
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    let cases = [
        ("AMD-AGI__TraceLens__eager_trace.json.gz", Some("vllm")),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
            Some("sglang"),
        ),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
            Some("sglang"),
        ),
        (
            "AMD-AGI__TraceLens__vllm_decode_full__graph_execution.json.gz",
            Some("vllm"),
        ),
        (
            "AMD-AGI__TraceLens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            None,
        ),
        (
            "facebookresearch__HolisticTraceAnalysis__nccl_data.json.gz",
            None,
        ),
        ("pytorch__kineto__worker0.pt.trace.json.gz", None),
        ("zhang-yuhui__nano-vllm__decode_gpu_0.json", None),
    ];
    for (file, expected) in cases {
        let trace = read_trace(&traces.join(file), &mut |_| {}).expect(file);
        let ev = evidence(&trace, None);
        match (select(&set, "auto", std::slice::from_ref(&ev)), expected) {
            (Ok(s), Some(name)) => assert_eq!(s.engine.name(), name, "{file}: {:?}", s.decided_by),
            (Err(e), None) => assert_eq!(e.exit_code(), 4, "{file}: {e}"),
            (got, _) => panic!("{file}: expected {expected:?}, got {got:?}"),
        }
    }
}

#[test]
fn real_sglang_traces_name_their_stage() {
    use llm_triage::trace::evidence::evidence;
    use llm_triage::trace::read::read_trace;
    let (_dir, set) = engines();
    let sglang = set.find("sglang").unwrap();
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    // Frame counts as listed in shared/traces/SOURCES.md.
    for (file, stage, frames) in [
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
            StageHint::Decode,
            "83 python frames under sglang/",
        ),
        (
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
            StageHint::Extend,
            "5493 python frames under sglang/ (+108 under sgl_kernel/)",
        ),
    ] {
        let trace = read_trace(&traces.join(file), &mut |_| {}).expect(file);
        let stages: Vec<StageHint> = trace
            .annotations
            .iter()
            .map(|a| {
                sglang
                    .stage_of(MarkerKind::Annotation, trace.name(a.name))
                    .unwrap()
            })
            .filter(|h| *h != StageHint::Unknown)
            .collect();
        // One step[…] and one execute_…_generation_… annotation, agreeing.
        assert_eq!(stages, [stage, stage], "{file}");
        let ev = evidence(&trace, None);
        let claim = sglang.detect(&ev).unwrap().expect(file);
        assert_eq!(claim.evidence[0], frames, "{file}");
    }
}
