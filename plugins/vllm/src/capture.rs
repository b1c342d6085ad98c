//! vLLM's live-capture protocol (`vllm/entrypoints/serve/profile/api_router.py`,
//! `vllm/config/profiler.py`, as read upstream).
//!
//! `POST /start_profile` and `POST /stop_profile` read no body and answer an empty 200.
//! They exist only when the server was started with `--profiler-config` (older builds:
//! `VLLM_TORCH_PROFILER_DIR`), so a 404 says how to start it. Traces land in the
//! server's own `torch_profiler_dir`, which must be the `--output-dir` given here; every
//! step between start and stop is recorded and written when the stop runs.

use llm_triage_plugin_api::capture::{build, flush};
use llm_triage_plugin_api::scan::{best_claim, Signal};
use llm_triage_plugin_api::{
    rstrings, score, CapturePlan, CaptureRequest, Claim, EndpointEvidence, GenerateApi, TraceFiles,
};

pub fn plan(request: &CaptureRequest, _evidence: &EndpointEvidence) -> Result<CapturePlan, String> {
    if request.start_step.is_some() {
        return Err(build::usage(
            "--start-step is only supported for SGLang live capture",
        ));
    }
    if request.merge_profiles {
        return Err(build::usage(
            "--merge-profiles is only supported for SGLang live capture",
        ));
    }
    if request.profile_by_stage.into_option() == Some(true) {
        return Err(build::usage(
            "--profile-by-stage is only supported for SGLang live capture; vLLM records every step between start and stop",
        ));
    }
    let dir = request.output_dir.as_str();
    let mut start = build::post("/start_profile", None);
    start.if_missing = format!(
        "the server was started without a torch profiler: restart it with --profiler-config '{{\"profiler\":\"torch\",\"torch_profiler_dir\":\"{dir}\"}}' (older vLLM: VLLM_TORCH_PROFILER_DIR={dir})"
    )
    .into();
    let mut notes = vec![format!(
        "vLLM records every step between /start_profile and /stop_profile; bound it with \"max_iterations\" in --profiler-config if traces get large"
    )];
    if request.prefix_explicit {
        notes.push(
            "vLLM ignores --profile-prefix (its file names come from the worker)".to_string(),
        );
    }
    Ok(CapturePlan {
        start: Some(start).into(),
        stop: Some(build::post("/stop_profile", None)).into(),
        traces: TraceFiles {
            server_owned_dir: true,
            suffixes: rstrings([".pt.trace.json.gz", ".pt.trace.json"]),
            name_prefix: "".into(),
            flush_timeout_ms: flush::PROMPT,
        },
        generate: GenerateApi::OpenAiCompletions,
        tokenize_path: "/tokenize".into(),
        ignore_eos: true,
        min_tokens: true,
        server_args_probe: "".into(),
        notes: notes.into_iter().map(Into::into).collect(),
    })
}

/// A claim on a server: `/v1/models` says `owned_by: vllm`, or `/version` answers a
/// `{"version": ...}` object while `/server_info` is absent (TensorRT-LLM has one).
pub fn detect_endpoint(evidence: &EndpointEvidence) -> Option<Claim> {
    let mut signals = Vec::new();
    if let Some(owner) = models_owner(evidence).filter(|o| o == "vllm") {
        signals.push(Signal {
            score: score::SERVER_ARGS,
            evidence: format!("/v1/models owned_by {owner}"),
        });
    }
    let version = evidence
        .ok_body("/version")
        .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
        .and_then(|v| {
            v.get("version")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
    if let (Some(version), false) = (version, evidence.ok_body("/server_info").is_some()) {
        if !signals.is_empty() {
            signals.push(Signal {
                score: score::FILE_NAME,
                evidence: format!("/version {version}"),
            });
        }
    }
    best_claim(signals)
}

fn models_owner(evidence: &EndpointEvidence) -> Option<String> {
    let body: serde_json::Value = serde_json::from_str(evidence.ok_body("/v1/models")?).ok()?;
    body.get("data")?
        .get(0)?
        .get("owned_by")?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_triage_plugin_api::{ProbeAnswer, Workload};

    fn request() -> CaptureRequest {
        CaptureRequest {
            workload: Workload::Decode,
            output_dir: "/data/vllm_profile".into(),
            num_steps: 5,
            warmup_steps: 10,
            profile_prefix: "triage-trace".into(),
            prefix_explicit: false,
            profile_by_stage: None.into(),
            merge_profiles: false,
            start_step: None.into(),
            guard_step: None.into(),
        }
    }

    #[test]
    fn post_without_body_and_the_profiler_config_hint() {
        let plan = plan(&request(), &EndpointEvidence::default()).unwrap();
        let start = plan.start.clone().unwrap();
        assert!(start.body.is_none());
        assert_eq!(start.path.as_str(), "/start_profile");
        assert!(start.if_missing.as_str().contains(
            "--profiler-config '{\"profiler\":\"torch\",\"torch_profiler_dir\":\"/data/vllm_profile\"}'"
        ));
        assert!(plan.traces.server_owned_dir);
        assert!(plan.ignore_eos && plan.min_tokens);
    }

    #[test]
    fn sglang_only_flags_are_usage_errors() {
        let mut r = request();
        r.start_step = Some(2).into();
        assert!(plan(&r, &EndpointEvidence::default())
            .unwrap_err()
            .starts_with("usage: --start-step"));
        let mut r = request();
        r.profile_by_stage = Some(true).into();
        assert!(plan(&r, &EndpointEvidence::default())
            .unwrap_err()
            .starts_with("usage: --profile-by-stage"));
        let mut r = request();
        r.profile_by_stage = Some(false).into();
        assert!(plan(&r, &EndpointEvidence::default()).is_ok());
    }

    #[test]
    fn claims_by_model_owner() {
        let answer = |path: &str, body: &str| ProbeAnswer {
            path: path.into(),
            status: 200,
            body: body.into(),
            control: false,
        };
        let evidence = EndpointEvidence {
            probes: vec![
                answer(
                    "/v1/models",
                    r#"{"object":"list","data":[{"id":"m","owned_by":"vllm"}]}"#,
                ),
                answer("/version", r#"{"version":"0.11.0"}"#),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        let claim = detect_endpoint(&evidence).unwrap();
        assert_eq!(claim.score, score::SERVER_ARGS);
        assert_eq!(claim.evidence.len(), 2);
        assert!(detect_endpoint(&EndpointEvidence::default()).is_none());
    }
}
