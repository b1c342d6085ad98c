//! Live capture end to end: the real binary against each engine emulator, for every
//! workload, with the report checked and the emulator's record of what it was asked.

use std::path::Path;

use llm_triage_tests::emulator::{Config, Emulator, Served};
use llm_triage_tests::{Engine, StageKind};
use serde_json::Value;

use crate::util::llm_triage;

/// Small shapes keep the suite fast: 2 warm-ups, 3 steps, 64-token prompts, 16 tokens.
const QUICK: [&str; 14] = [
    "--warmup-steps",
    "2",
    "--num-steps",
    "3",
    "--prefill-input-len",
    "64",
    "--decode-output-len",
    "16",
    "--probe-delay",
    "0",
    "--flush-timeout",
    "10",
    "--format",
    "json",
];

fn capture(args: &[&str]) -> Value {
    let out = llm_triage().args(args).args(QUICK).output().unwrap();
    assert!(
        out.status.success(),
        "llm-triage {args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn stages(report: &Value) -> Vec<String> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap().to_string())
        .collect()
}

fn notes(report: &Value) -> Vec<String> {
    report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

fn calls<'a>(served: &'a [Served], path: &str) -> Vec<&'a Served> {
    served.iter().filter(|s| s.path == path).collect()
}

/// Every input the report read lies in this run's capture dir under `dir`.
fn inputs_under(report: &Value, dir: &Path) -> Vec<String> {
    let inputs: Vec<String> = report["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect();
    for input in &inputs {
        assert!(input.starts_with(&dir.display().to_string()), "{input}");
        assert!(input.contains("/capture-"), "{input}");
    }
    inputs
}

#[test]
fn sglang_auto_both_workloads() {
    let emu = Emulator::start(Config::new(Engine::Sglang));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let report = capture(&[
        "--framework",
        "auto",
        "--url",
        &emu.url(),
        "--output-dir",
        &out,
    ]);
    assert_eq!(report["framework"]["name"], "sglang");
    assert_eq!(report["model"], "Qwen/Qwen3-8B");
    assert_eq!(stages(&report), ["extend/prefill", "decode"]);
    let inputs = inputs_under(&report, dir.path());
    assert!(
        inputs[0].contains("/prefill/triage-trace-prefill-"),
        "{inputs:?}"
    );
    assert!(
        inputs[1].contains("/decode/triage-trace-decode-"),
        "{inputs:?}"
    );

    // v0.5.18 has the step fix: num_steps as asked, exactly 3 prefill forwards recorded.
    let served = emu.served();
    let starts = calls(&served, "/start_profile");
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0].body["num_steps"], 3);
    assert_eq!(starts[0].body["profile_by_stage"], false);
    assert!(starts[0].body["output_dir"]
        .as_str()
        .unwrap()
        .ends_with("/prefill"));
    let recorded = emu.recorded();
    assert_eq!(recorded[0].steps, vec![StageKind::Extend; 3]);
    // The decode capture's first forward is its own request's prefill.
    assert_eq!(
        recorded[1].steps,
        [StageKind::Extend, StageKind::Decode, StageKind::Decode]
    );
    // Prompts are token ids cut to exactly 64, each with its own marker; decode ran 16.
    let generates = calls(&served, "/generate");
    assert_eq!(generates.len(), 2 + 3 + 1 + 1);
    for g in &generates[..5] {
        assert_eq!(g.prompt_len, Some(64));
        assert_eq!(g.body["sampling_params"]["ignore_eos"], true);
    }
    let firsts: std::collections::BTreeSet<String> = generates[..5]
        .iter()
        .map(|g| g.body["input_ids"][2].to_string())
        .collect();
    assert_eq!(firsts.len(), 5, "every prefill prompt has its own marker");
    assert_eq!(generates[6].generated, Some(16));
    assert!(!emu.profiling());
    let notes = notes(&report);
    assert!(
        notes.iter().any(|n| n.contains("decode: 1 warm-up + 1 capture request(s), 1-token prompts, asked for 16 output tokens, the server generated 16")),
        "{notes:?}"
    );
    assert!(dir.path().read_dir().unwrap().count() == 1);
}

#[test]
fn sglang_old_build_gets_the_guard_step_and_legacy_splits_by_stage() {
    let emu = Emulator::start(Config {
        version: None,
        ..Config::new(Engine::Sglang)
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let report = capture(&[
        "--framework",
        "sglang",
        "--url",
        &emu.url(),
        "--output-dir",
        &out,
        "--profile-workload",
        "prefill",
    ]);
    assert_eq!(stages(&report), ["extend/prefill"]);
    // Only /get_server_info: version unknown, num_steps 3 + 1, still 3 forwards recorded.
    assert_eq!(
        calls(&emu.served(), "/start_profile")[0].body["num_steps"],
        4
    );
    assert_eq!(emu.recorded()[0].steps, vec![StageKind::Extend; 3]);
    assert_eq!(report["model"], "Qwen/Qwen3-8B");

    let legacy = capture(&[
        "--framework",
        "sglang",
        "--url",
        &emu.url(),
        "--output-dir",
        &out,
        "--profile-workload",
        "legacy",
        "--probe-max-new-tokens",
        "8",
    ]);
    assert_eq!(stages(&legacy), ["extend/prefill", "decode"]);
    let start = calls(&emu.served(), "/start_profile")[1].body.clone();
    assert_eq!(start["profile_by_stage"], true);
    assert_eq!(start["num_steps"], 3);
    let files = &emu.recorded()[1].files;
    assert!(files[0]
        .to_string_lossy()
        .ends_with("-EXTEND.trace.json.gz"));
    assert!(files[1]
        .to_string_lossy()
        .ends_with("-DECODE.trace.json.gz"));
}

#[test]
fn vllm_both_workloads_moves_new_files_only() {
    let dir = tempfile::tempdir().unwrap();
    // An old trace in the server's dir must neither end the wait nor be analysed.
    std::fs::write(
        dir.path()
            .join("dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz"),
        b"stale",
    )
    .unwrap();
    let emu = Emulator::start(Config {
        server_dir: Some(dir.path().to_path_buf()),
        ..Config::new(Engine::Vllm)
    });
    let out = dir.path().display().to_string();
    let report = capture(&["--url", &emu.url(), "--output-dir", &out]);
    assert_eq!(report["framework"]["name"], "vllm");
    assert_eq!(report["model"], "Qwen/Qwen3-8B");
    assert_eq!(stages(&report), ["extend/prefill", "decode"]);
    inputs_under(&report, dir.path());
    let served = emu.served();
    for call in calls(&served, "/start_profile") {
        assert_eq!(call.method, "POST");
        assert_eq!(call.body, Value::Null, "vLLM reads no body");
    }
    // Every step between start and stop: 3 prefills, then the whole 16-token decode.
    let recorded = emu.recorded();
    assert_eq!(recorded[0].steps, vec![StageKind::Extend; 3]);
    assert_eq!(recorded[1].steps.len(), 16);
    let completions = calls(&served, "/v1/completions");
    assert_eq!(completions[2].prompt_len, Some(64));
    assert_eq!(completions[2].body["min_tokens"], 1);
    assert_eq!(completions.last().unwrap().generated, Some(16));
    assert!(dir
        .path()
        .join("dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz")
        .exists());
}

#[test]
fn tokenspeed_prefill_and_decode_through_the_control_url() {
    let emu = Emulator::start(Config::new(Engine::Tokenspeed));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let control = emu.control_url().unwrap();
    let report = capture(&[
        "--url",
        &emu.url(),
        "--control-url",
        &control,
        "--output-dir",
        &out,
        "--profile-prefix",
        "ts",
    ]);
    assert_eq!(report["framework"]["name"], "tokenspeed");
    assert_eq!(report["model"], "Qwen/Qwen3-8B");
    assert_eq!(stages(&report), ["extend/prefill", "decode"]);
    let inputs = inputs_under(&report, dir.path());
    assert!(
        inputs[0].ends_with("/prefill/ts-prefill-TP0.trace.json.gz"),
        "{inputs:?}"
    );
    let served = emu.served();
    let starts = calls(&served, "/start_profile");
    assert_eq!(starts[1].body["profile_id"], "ts-decode");
    assert_eq!(starts[1].body["with_stack"], true);
    assert_eq!(starts[1].body["num_steps"], 4);
    assert_eq!(emu.recorded()[0].steps, vec![StageKind::Extend; 3]);
    // No tokenizer endpoint: lengths in words, said in the notes.
    let notes = notes(&report);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("prompt lengths are in words")),
        "{notes:?}"
    );
}

#[test]
fn trtllm_env_window_per_stage_run() {
    let dir = tempfile::tempdir().unwrap();
    // The server was started with the window `capture-plan` prints for these flags.
    let plan = llm_triage()
        .args([
            "capture-plan",
            "--framework",
            "trtllm",
            "--profile-workload",
            "prefill",
        ])
        .args(["--output-dir", &dir.path().display().to_string()])
        .args(&QUICK[..4])
        .output()
        .unwrap();
    let plan = String::from_utf8(plan.stdout).unwrap();
    assert!(plan.contains("TLLM_PROFILE_START_STOP=3-5"), "{plan}");
    let emu = Emulator::start(Config {
        server_dir: Some(dir.path().to_path_buf()),
        trt_window: Some((3, 5, "trace-prefill.json".to_string())),
        ..Config::new(Engine::Trtllm)
    });
    let out = dir.path().display().to_string();
    let report = capture(&[
        "--url",
        &emu.url(),
        "--output-dir",
        &out,
        "--profile-workload",
        "prefill",
    ]);
    assert_eq!(report["framework"]["name"], "trtllm");
    assert_eq!(report["model"], "Qwen/Qwen3-8B");
    assert_eq!(stages(&report), ["extend/prefill"]);
    let inputs = inputs_under(&report, dir.path());
    assert!(
        inputs[0].ends_with("/prefill/trace-prefill-rank-0.json"),
        "{inputs:?}"
    );
    assert_eq!(emu.recorded()[0].steps, vec![StageKind::Extend; 3]);
    let notes = notes(&report);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("has no /start_profile; used the profiling window")),
        "{notes:?}"
    );
}
