//! Live-capture failures end to end: each is one line on stderr naming the URL, the step
//! and the answer, with exit 5 (capture), 4 (framework refused) or 2 (usage); and once a
//! profiler started, it is always stopped.

use std::time::{Duration, Instant};

use llm_triage_tests::emulator::{Config, Emulator, Faults};
use llm_triage_tests::Engine;

use crate::util::llm_triage;

const QUICK: [&str; 12] = [
    "--warmup-steps",
    "1",
    "--num-steps",
    "2",
    "--prefill-input-len",
    "16",
    "--decode-output-len",
    "8",
    "--probe-delay",
    "0",
    "--flush-timeout",
    "3",
];

/// Runs the binary; returns (exit code, stderr).
fn fails(args: &[&str]) -> (i32, String) {
    // QUICK's values unless the test sets the flag itself.
    let quick: Vec<&str> = QUICK
        .chunks(2)
        .filter(|pair| !args.contains(&pair[0]))
        .flatten()
        .copied()
        .collect();
    let out = llm_triage().args(args).args(quick).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "expected a failure: {args:?}");
    (out.status.code().unwrap(), stderr)
}

fn sglang(faults: Faults) -> Emulator {
    Emulator::start(Config {
        faults,
        ..Config::new(Engine::Sglang)
    })
}

fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    lines[0]
}

#[test]
fn server_down_is_exit_5() {
    // Bind then drop a listener: nothing listens on that port now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let (code, stderr) = fails(&["--url", &url]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(line.contains(&format!("cannot reach {url}")), "{line}");
    assert!(line.contains("Connection refused"), "{line}");
}

#[test]
fn no_claim_is_exit_4_with_the_probes() {
    // A vLLM emulator whose /v1/models answers HTML: nothing claims it.
    let emu = Emulator::start(Config {
        faults: Faults {
            models_not_json: true,
            ..Faults::default()
        },
        ..Config::new(Engine::Vllm)
    });
    let (code, stderr) = fails(&["--url", &emu.url()]);
    assert_eq!(code, 4);
    let line = one_line(&stderr);
    assert!(line.contains("cannot determine the framework of"), "{line}");
    assert!(
        line.contains("/server_info: 404") && line.contains("/v1/models: 200"),
        "{line}"
    );
    assert!(line.ends_with("pass --framework"), "{line}");
}

#[test]
fn vllm_without_profiler_config_says_which_flag() {
    let dir = tempfile::tempdir().unwrap();
    let emu = Emulator::start(Config {
        server_dir: Some(dir.path().to_path_buf()),
        faults: Faults {
            no_profiler: true,
            ..Faults::default()
        },
        ..Config::new(Engine::Vllm)
    });
    let out = dir.path().display().to_string();
    let (code, stderr) = fails(&["--url", &emu.url(), "--output-dir", &out]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(
        line.contains(&format!(
            "POST {}/start_profile (start the profiler): HTTP 404",
            emu.url()
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "--profiler-config '{{\"profiler\":\"torch\",\"torch_profiler_dir\":\"{out}\"}}'"
        )),
        "{line}"
    );
}

#[test]
fn vllm_needs_its_output_dir() {
    let emu = Emulator::start(Config::new(Engine::Vllm));
    let (code, stderr) = fails(&["--url", &emu.url()]);
    assert_eq!(code, 2);
    assert!(
        one_line(&stderr).contains("vLLM live capture needs --output-dir"),
        "{stderr}"
    );
}

#[test]
fn start_500_is_exit_5_and_nothing_to_stop() {
    let emu = sglang(Faults {
        start_answer: Some((
            500,
            "Profiling is already in progress. Call /stop_profile first.".into(),
        )),
        ..Faults::default()
    });
    let (code, stderr) = fails(&["--url", &emu.url()]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(
        line.contains(
            "/start_profile (start the profiler): HTTP 500: Profiling is already in progress"
        ),
        "{line}"
    );
    assert!(emu.served().iter().all(|s| s.path != "/stop_profile"));
}

#[test]
fn generate_failure_after_start_still_stops() {
    let emu = sglang(Faults {
        generate_answer: Some((503, "overloaded".into())),
        ..Faults::default()
    });
    let (code, stderr) = fails(&["--url", &emu.url()]);
    assert_eq!(code, 5);
    // The warm-up fails first: the profiler was never started.
    let line = one_line(&stderr);
    assert!(
        line.contains("/generate (prefill warm-up request 1/1): HTTP 503: overloaded"),
        "{line}"
    );
    assert!(!emu.profiling());
}

#[test]
fn non_json_generation_answer_is_exit_5() {
    let emu = sglang(Faults {
        generate_answer: Some((200, "<html>proxy</html>".into())),
        ..Faults::default()
    });
    let (code, stderr) = fails(&["--url", &emu.url(), "--warmup-steps", "0"]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(
        line.contains("(prefill capture request 1/2): answered non-JSON: <html>proxy</html> (the profiler was stopped)"),
        "{line}"
    );
    assert!(!emu.profiling(), "the stop was sent");
    assert_eq!(
        emu.served()
            .iter()
            .filter(|s| s.path == "/stop_profile")
            .count(),
        1
    );
}

#[test]
fn request_timeout_is_exit_5() {
    let emu = Emulator::start(Config {
        faults: Faults {
            generate_delay: Some(Duration::from_millis(1500)),
            ..Faults::default()
        },
        ..Config::new(Engine::Tokenspeed)
    });
    let control = emu.control_url().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let started = Instant::now();
    let (code, stderr) = fails(&[
        "--url",
        &emu.url(),
        "--control-url",
        &control,
        "--output-dir",
        &out,
        "--request-timeout",
        "0.5",
    ]);
    assert_eq!(code, 5);
    assert!(started.elapsed() < Duration::from_secs(10));
    let line = one_line(&stderr);
    assert!(
        line.contains("/v1/completions (prefill warm-up request 1/1): no answer within 0.5 s"),
        "{line}"
    );
}

#[test]
fn start_ok_but_stop_failing_is_exit_5() {
    let emu = Emulator::start(Config {
        faults: Faults {
            stop_answer: Some((500, "RuntimeError: torch profiler export failed".into())),
            ..Faults::default()
        },
        ..Config::new(Engine::Tokenspeed)
    });
    let control = emu.control_url().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let (code, stderr) = fails(&[
        "--url",
        &emu.url(),
        "--control-url",
        &control,
        "--output-dir",
        &out,
    ]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(
        line.contains(&format!(
            "POST {control}/stop_profile (stop the profiler): HTTP 500: RuntimeError: torch profiler export failed"
        )),
        "{line}"
    );
}

#[test]
fn a_trace_that_never_completes_times_out_naming_the_dir() {
    let emu = sglang(Faults {
        truncated_trace: true,
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let (code, stderr) = fails(&[
        "--url",
        &emu.url(),
        "--output-dir",
        &out,
        "--profile-workload",
        "prefill",
    ]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(
        line.contains(&format!("no complete trace in {out}/capture-")),
        "{line}"
    );
    assert!(line.contains("/prefill after 3 s"), "{line}");
    assert!(line.contains("gzip stream not closed"), "{line}");
}

#[test]
fn no_trace_at_all_times_out_with_a_hint_for_server_dirs() {
    let dir = tempfile::tempdir().unwrap();
    let emu = Emulator::start(Config {
        server_dir: Some(dir.path().to_path_buf()),
        faults: Faults {
            no_trace: true,
            ..Faults::default()
        },
        ..Config::new(Engine::Vllm)
    });
    let out = dir.path().display().to_string();
    let (code, stderr) = fails(&[
        "--url",
        &emu.url(),
        "--output-dir",
        &out,
        "--profile-workload",
        "decode",
    ]);
    assert_eq!(code, 5);
    let line = one_line(&stderr);
    assert!(
        line.contains(&format!("no complete trace in {out} after 3 s")),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            "no new trace file appeared; is {out} the directory the vLLM server writes traces to?"
        )),
        "{line}"
    );
}

#[test]
fn a_slow_flush_is_waited_for() {
    let emu = sglang(Faults {
        slow_flush: Some((6, Duration::from_millis(200))),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let result = llm_triage()
        .args([
            "--url",
            &emu.url(),
            "--output-dir",
            &out,
            "--profile-workload",
            "prefill",
        ])
        .args(QUICK)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(report["stages"][0]["stage"], "extend/prefill");
}

#[test]
fn trtllm_both_without_routes_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let emu = Emulator::start(Config {
        server_dir: Some(dir.path().to_path_buf()),
        trt_window: Some((2, 3, "trace-prefill.json".to_string())),
        ..Config::new(Engine::Trtllm)
    });
    let out = dir.path().display().to_string();
    let (code, stderr) = fails(&["--url", &emu.url(), "--output-dir", &out]);
    assert_eq!(code, 2);
    let line = one_line(&stderr);
    assert!(
        line.contains("pass --profile-workload prefill or decode"),
        "{line}"
    );
    assert!(line.contains("capture-plan --framework trtllm"), "{line}");
}

#[test]
fn invalid_flag_combinations_are_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--output-dir", "/tmp/x", "--input", "x"],
            "--output-dir applies to live capture only",
        ),
        (&["--url", "https://h:1"], "https is not supported yet"),
        (&["--url", "localhost:30000"], "is not an http:// URL"),
        (
            &["--url", "http://127.0.0.1:9", "--input", "x"],
            "pass either --input or --url",
        ),
        (
            &["--url", "http://127.0.0.1:9", "--num-steps", "0"],
            "--num-steps must be at least 1",
        ),
        (
            &["--url", "http://127.0.0.1:9", "--probe-delay=-1"],
            "--probe-delay must be",
        ),
        (
            &["--mapping-url", "http://127.0.0.1:9"],
            "needs --formal-input PATH or --formal-url URL",
        ),
        (
            &["--url", "http://127.0.0.1:9", "--mapping-input", "x"],
            "cannot be combined with the --mapping-*/--formal-* flags",
        ),
        (
            &["--url", "http://127.0.0.1:9", "--sglang-guard-step", "2"],
            "must be 0 or 1",
        ),
    ];
    for (args, expected) in cases {
        let out = llm_triage().args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn sglang_only_flags_with_vllm_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let emu = Emulator::start(Config {
        server_dir: Some(dir.path().to_path_buf()),
        ..Config::new(Engine::Vllm)
    });
    let out = dir.path().display().to_string();
    for (flag, extra) in [
        ("--start-step", Some("2")),
        ("--merge-profiles", None),
        ("--profile-by-stage", None),
    ] {
        let mut args = vec![
            "--url",
            emu.url().leak() as &str,
            "--output-dir",
            &out,
            flag,
        ];
        args.extend(extra);
        let (code, stderr) = fails(&args);
        assert_eq!(code, 2, "{flag}: {stderr}");
        assert!(
            one_line(&stderr).contains(&format!("{flag} is only supported for SGLang")),
            "{stderr}"
        );
    }
    assert!(
        emu.served().iter().all(|s| s.path != "/v1/completions"),
        "no load was sent"
    );
}

#[test]
fn probe_reports_latency_and_fails_on_errors() {
    let emu = Emulator::start(Config::new(Engine::Vllm));
    let out = llm_triage()
        .args([
            "probe",
            "--url",
            &emu.url(),
            "--requests",
            "4",
            "--max-tokens",
            "5",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["framework"], "vllm");
    assert_eq!(report["model"], "Qwen/Qwen3-8B");
    assert_eq!(report["success"], 4);
    assert_eq!(report["errors"], 0);
    assert_eq!(report["all_non_empty"], true);
    assert_eq!(
        report["samples"][0]["content"],
        "profile profile profile profile profile"
    );
    assert!(report["p95_latency_s"].as_f64().unwrap() >= report["avg_latency_s"].as_f64().unwrap());

    let broken = Emulator::start(Config {
        faults: Faults {
            generate_answer: Some((500, "boom".into())),
            ..Faults::default()
        },
        ..Config::new(Engine::Sglang)
    });
    let out = llm_triage()
        .args(["probe", "--url", &broken.url(), "--requests", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["framework"], "sglang");
    assert_eq!(report["errors"], 2);
    assert!(report["error_samples"][0]["error"]
        .as_str()
        .unwrap()
        .ends_with("/generate: HTTP 500: boom"));
}
