//! TensorRT-LLM's capture protocol (`tensorrt_llm/_torch/pyexecutor/py_executor.py` at
//! 00043967, `tensorrt_llm/serve/openai_server.py` at 00057725).
//!
//! Upstream `trtllm-serve` has no profiler routes. The PyTorch executor profiles the
//! iteration window of `TLLM_PROFILE_START_STOP` (`<start>-<stop>`) when
//! `TLLM_TORCH_PROFILE_TRACE=<base><ext>` is also set, and writes
//! `<base>-rank-<r><ext>` at the stop iteration. So one server run yields one stage: the
//! plan's start/stop are optional (used only where a build has them), and the window is
//! placed after the warm-up requests the host sends.

use llm_triage_plugin_api::capture::{build, flush};
use llm_triage_plugin_api::scan::{best_claim, Signal};
use llm_triage_plugin_api::{
    rstrings, score, CapturePlan, CaptureRequest, Claim, EndpointEvidence, GenerateApi, TraceFiles,
    Workload,
};

pub fn plan(request: &CaptureRequest, _evidence: &EndpointEvidence) -> Result<CapturePlan, String> {
    if request.start_step.is_some() {
        return Err(build::usage("--start-step is only supported for SGLang live capture; TensorRT-LLM's window is TLLM_PROFILE_START_STOP"));
    }
    if request.merge_profiles {
        return Err(build::usage(
            "--merge-profiles is only supported for SGLang live capture",
        ));
    }
    if request.profile_by_stage.into_option() == Some(true) {
        return Err(build::usage(
            "--profile-by-stage is only supported for SGLang live capture",
        ));
    }
    let (first, last) = window(request);
    let dir = request.output_dir.as_str().trim_end_matches('/');
    let stage = request.workload.label();
    let mut start = build::post("/start_profile", None);
    start.optional = true;
    let mut stop = build::post("/stop_profile", None);
    stop.optional = true;
    let mut notes = vec![
        format!("TensorRT-LLM profiles the iteration window its server was started with; for this {stage} capture start it with:"),
        format!("  TLLM_PROFILE_START_STOP={first}-{last}"),
        format!("  TLLM_TORCH_PROFILE_TRACE={dir}/trace-{stage}.json"),
        format!("  trtllm-serve serve <model> --backend pytorch ... (then run this capture; the trace is {dir}/trace-{stage}-rank-0.json)"),
        "the torch profiler of upstream py_executor records no Python stacks (with_stack is off), so locations need the py-executor override".to_string(),
    ];
    if request.prefix_explicit {
        notes.push(
            "TensorRT-LLM ignores --profile-prefix (TLLM_TORCH_PROFILE_TRACE names the file)"
                .to_string(),
        );
    }
    Ok(CapturePlan {
        start: Some(start).into(),
        stop: Some(stop).into(),
        traces: TraceFiles {
            server_owned_dir: true,
            suffixes: rstrings([".json", ".json.gz"]),
            name_prefix: "".into(),
            flush_timeout_ms: flush::PROMPT,
        },
        generate: GenerateApi::OpenAiCompletions,
        tokenize_path: "".into(),
        ignore_eos: true,
        min_tokens: true,
        server_args_probe: "".into(),
        notes: notes.into_iter().map(Into::into).collect(),
    })
}

/// The executor iterations the capture requests run in (1-based, as the per-stage runner
/// counts them): prefill requests are one iteration each after `W` warm-up requests;
/// decode's warm-up is one request of `W` tokens, and the capture request's own prefill
/// comes before its decodes.
pub fn window(request: &CaptureRequest) -> (u64, u64) {
    let w = u64::from(request.warmup_steps);
    let n = u64::from(request.num_steps.max(1));
    let first = match request.workload {
        Workload::Decode => w + 2,
        Workload::Prefill | Workload::Legacy => w + 1,
    };
    (first, first + n - 1)
}

/// A claim on a server: `/server_info` answers `{"disaggregated_params": ...}` (only
/// trtllm-serve does), or `/v1/models` says `owned_by: tensorrt_llm`.
pub fn detect_endpoint(evidence: &EndpointEvidence) -> Option<Claim> {
    let mut signals = Vec::new();
    let info = evidence
        .ok_body("/server_info")
        .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok());
    if info
        .as_ref()
        .is_some_and(|i| i.get("disaggregated_params").is_some())
    {
        signals.push(Signal {
            score: score::SERVER_ARGS,
            evidence: "/server_info has disaggregated_params (trtllm-serve)".to_string(),
        });
    }
    let owner = evidence
        .ok_body("/v1/models")
        .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
        .and_then(|v| v["data"][0]["owned_by"].as_str().map(str::to_string));
    if owner.as_deref() == Some("tensorrt_llm") {
        signals.push(Signal {
            score: score::ANNOTATIONS,
            evidence: "/v1/models owned_by tensorrt_llm".to_string(),
        });
    }
    best_claim(signals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(workload: Workload) -> CaptureRequest {
        CaptureRequest {
            workload,
            output_dir: "/data/trt/".into(),
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
    fn windows_follow_the_per_stage_runner() {
        assert_eq!(window(&request(Workload::Prefill)), (11, 15));
        assert_eq!(window(&request(Workload::Decode)), (12, 16));
        let plan = plan(&request(Workload::Decode), &EndpointEvidence::default()).unwrap();
        let notes: Vec<&str> = plan.notes.iter().map(|n| n.as_str()).collect();
        assert!(notes.contains(&"  TLLM_PROFILE_START_STOP=12-16"));
        assert!(notes.contains(&"  TLLM_TORCH_PROFILE_TRACE=/data/trt/trace-decode.json"));
        assert!(plan.start.clone().unwrap().optional);
    }
}
