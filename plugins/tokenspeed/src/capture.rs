//! TokenSpeed's live-capture protocol (`control_server.py`, `scheduler_control_client.py`,
//! `request_handler.py` at f4d8ec6e).
//!
//! A control sidecar (by default the serving port + 1, `--control-url`) proxies
//! `/start_profile` and `/stop_profile`. The body carries `output_dir`, `activities`,
//! `with_stack`, `record_shapes`, `profile_id` and `num_steps`; files are
//! `<profile_id>-[DP<d>-][CP<c>-]TP<t>[-STAGE].trace.json.gz` (before 2026-07-13:
//! `-TP-<t>`), written before the stop answers.

use llm_triage_plugin_api::capture::{build, flush};
use llm_triage_plugin_api::scan::{best_claim, Signal};
use llm_triage_plugin_api::{
    rstrings, score, CapturePlan, CaptureRequest, Claim, EndpointEvidence, GenerateApi, TraceFiles,
    Workload,
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
            "--profile-by-stage is only supported for SGLang live capture; TokenSpeed workloads are captured one stage at a time",
        ));
    }
    let base = match request.profile_prefix.as_str() {
        "" => "triage-trace",
        p => p,
    };
    let profile_id = match request.workload {
        Workload::Legacy => base.to_string(),
        w => format!("{base}-{}", w.label()),
    };
    // The auto-stop target is forward_ct + num_steps, the formula SGLang had before its
    // fix; one guard step keeps the last requested forward in the window.
    let body = serde_json::json!({
        "output_dir": request.output_dir.as_str(),
        "activities": ["CPU", "GPU"],
        "with_stack": true,
        "record_shapes": false,
        "profile_id": profile_id,
        "num_steps": request.num_steps + 1,
    });
    let mut start = build::post("/start_profile", Some(body.to_string()));
    start.on_control_url = true;
    start.if_missing = "no /start_profile here: pass the control sidecar's URL with --control-url (by default the serving port + 1)".into();
    let mut stop = build::accepting(build::post("/stop_profile", None), 500, "not in progress");
    stop.on_control_url = true;
    Ok(CapturePlan {
        start: Some(start).into(),
        stop: Some(stop).into(),
        traces: TraceFiles {
            server_owned_dir: false,
            suffixes: rstrings([".trace.json.gz", ".trace.json"]),
            name_prefix: profile_id.as_str().into(),
            flush_timeout_ms: flush::PROMPT,
        },
        generate: GenerateApi::OpenAiCompletions,
        tokenize_path: "".into(),
        ignore_eos: true,
        min_tokens: false,
        server_args_probe: "/get_server_info".into(),
        notes: rstrings([format!(
            "TokenSpeed profile_id {profile_id}, num_steps {} (one guard step)",
            request.num_steps + 1
        )
        .as_str()]),
    })
}

/// A claim on a server: `/readiness` answers on the serving port (the gateway), or the
/// control sidecar's `/get_server_info` carries TokenSpeed-only server args.
pub fn detect_endpoint(evidence: &EndpointEvidence) -> Option<Claim> {
    let mut signals = Vec::new();
    for control in [false, true] {
        let Some(answer) = evidence.probe("/get_server_info", control) else {
            continue;
        };
        if !(200..300).contains(&answer.status) {
            continue;
        }
        let Ok(serde_json::Value::Object(info)) = serde_json::from_str(answer.body.as_str()) else {
            continue;
        };
        let keys: Vec<&str> = crate::TOKENSPEED_ONLY_KEYS
            .iter()
            .copied()
            .filter(|k| info.contains_key(*k))
            .collect();
        if !keys.is_empty() {
            signals.push(Signal {
                score: score::SERVER_ARGS + 100 + keys.len() as u32,
                evidence: format!(
                    "/get_server_info has TokenSpeed server args ({})",
                    keys.join(", ")
                ),
            });
        }
    }
    if evidence
        .probe("/readiness", false)
        .is_some_and(|p| (200..300).contains(&p.status))
    {
        signals.push(Signal {
            score: score::ANNOTATIONS + 500,
            evidence: "/readiness answers (TokenSpeed's smg gateway)".to_string(),
        });
    }
    best_claim(signals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_fields_and_control_url() {
        let request = CaptureRequest {
            workload: Workload::Prefill,
            output_dir: "/out/run/prefill".into(),
            num_steps: 5,
            warmup_steps: 10,
            profile_prefix: "ts".into(),
            prefix_explicit: true,
            profile_by_stage: None.into(),
            merge_profiles: false,
            start_step: None.into(),
            guard_step: None.into(),
        };
        let plan = plan(&request, &EndpointEvidence::default()).unwrap();
        let start = plan.start.clone().unwrap();
        assert!(start.on_control_url);
        let body: serde_json::Value =
            serde_json::from_str(start.body.clone().unwrap().as_str()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"output_dir": "/out/run/prefill", "activities": ["CPU", "GPU"],
                "with_stack": true, "record_shapes": false, "profile_id": "ts-prefill", "num_steps": 6})
        );
        assert_eq!(plan.traces.name_prefix.as_str(), "ts-prefill");
    }
}
