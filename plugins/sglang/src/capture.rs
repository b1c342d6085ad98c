//! SGLang's live-capture protocol (`python/sglang/srt/entrypoints/http_server.py`,
//! `ProfileReqInput`, the scheduler's profiler mixin, as read upstream).
//!
//! `/start_profile` takes a JSON body and answers plain text `Start profiling.`; failures
//! ("already in progress") are HTTP 500. The server stops by itself after `num_steps`
//! forwards, so the explicit stop may answer 500 "not in progress", which is fine.
//! Builds before sgl-project/sglang#30215 (merged 2026-07-10) stop one forward early, so
//! the plan asks them for one guard step more; the version comes from `/server_info`.

use llm_triage_plugin_api::capture::{build, flush};
use llm_triage_plugin_api::{
    CapturePlan, CaptureRequest, EndpointEvidence, GenerateApi, TraceFiles, Workload,
};

/// The first release known to carry the step-range fix (v0.5.17 was released 2026-08-08,
/// after the fix merged); older or unknown versions get the guard step. Over-capturing
/// one forward is harmless, missing the prefill forward is not.
const FIRST_FIXED_RELEASE: (u64, u64, u64) = (0, 5, 17);

pub fn plan(request: &CaptureRequest, evidence: &EndpointEvidence) -> Result<CapturePlan, String> {
    let version = server_version(evidence);
    let workload_mode = request.workload != Workload::Legacy;
    let mut notes = Vec::new();
    // The guard step only applies to the immediate-start path the workloads use.
    let guard = if !workload_mode || request.start_step.is_some() {
        0
    } else {
        match request.guard_step.into_option() {
            Some(g) => {
                notes.push(format!("guard step {g} (--sglang-guard-step)"));
                g
            }
            None => {
                let fixed = version
                    .as_deref()
                    .and_then(parse_version)
                    .is_some_and(|v| v >= FIRST_FIXED_RELEASE);
                let shown = version.as_deref().unwrap_or("unknown");
                if fixed {
                    notes.push(format!(
                        "SGLang {shown} records exactly num_steps={} forwards (sgl-project/sglang#30215), no guard step",
                        request.num_steps
                    ));
                    0
                } else {
                    notes.push(format!(
                        "SGLang version {shown}: asked num_steps={} (one guard step; builds before sgl-project/sglang#30215 stop one forward early)",
                        request.num_steps + 1
                    ));
                    1
                }
            }
        }
    };
    let prefix = profile_prefix(request);
    // By-stage only where the user wants SGLang's own EXTEND/DECODE split: the legacy
    // mixed capture (default on there). Workload captures label the stage by directory.
    let by_stage = if workload_mode {
        if request.profile_by_stage.into_option() == Some(true) {
            notes.push(
                "--profile-by-stage applies to --profile-workload legacy only; the prefill and decode workloads are captured separately".to_string(),
            );
        }
        false
    } else {
        request.profile_by_stage.into_option().unwrap_or(true)
    };
    let mut body = serde_json::json!({
        "output_dir": request.output_dir.as_str(),
        "num_steps": request.num_steps + guard,
        "activities": ["CPU", "GPU"],
        "profile_by_stage": by_stage,
        "merge_profiles": request.merge_profiles,
        "profile_prefix": prefix,
    });
    if let Some(start) = request.start_step.into_option() {
        body["start_step"] = start.into();
    }
    let mut start = build::post("/start_profile", Some(body.to_string()));
    start.if_missing = "this server has no /start_profile route; is it an SGLang server?".into();
    let stop = build::accepting(build::post("/stop_profile", None), 500, "not in progress");
    let server_args_probe = if evidence.ok_body("/server_info").is_some() {
        "/server_info"
    } else {
        "/get_server_info"
    };
    Ok(CapturePlan {
        start: Some(start).into(),
        stop: Some(stop).into(),
        traces: TraceFiles {
            server_owned_dir: false,
            suffixes: llm_triage_plugin_api::rstrings([".trace.json.gz", ".trace.json"]),
            name_prefix: prefix.as_str().into(),
            flush_timeout_ms: flush::SLOW,
        },
        generate: GenerateApi::SglangNative,
        tokenize_path: "/tokenize".into(),
        ignore_eos: true,
        min_tokens: false,
        server_args_probe: server_args_probe.into(),
        notes: notes.into_iter().map(Into::into).collect(),
    })
}

/// `<prefix>-<stage>` for workload captures (the directory already names the stage, the
/// file name keeps it too), the bare prefix for legacy.
fn profile_prefix(request: &CaptureRequest) -> String {
    let base = request.profile_prefix.as_str();
    match request.workload {
        Workload::Legacy => base.to_string(),
        w if base.is_empty() => w.label().to_string(),
        w => format!("{base}-{}", w.label()),
    }
}

/// `version` from `/server_info` (newer builds) or `/get_server_info` (older ones).
pub fn server_version(evidence: &EndpointEvidence) -> Option<String> {
    ["/server_info", "/get_server_info"]
        .iter()
        .find_map(|path| {
            let body: serde_json::Value = serde_json::from_str(evidence.ok_body(path)?).ok()?;
            body.get("version")?.as_str().map(str::to_string)
        })
}

/// `0.5.17`, `v0.5.17.post1`, `0.5.18rc0` -> (0, 5, 17) / (0, 5, 18).
fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let text = text.trim().trim_start_matches('v');
    let mut parts = text.split('.').map(|p| {
        let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse::<u64>().ok()
    });
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// A claim on a server: its `/server_info` (or `/get_server_info`) carries SGLang's
/// server args (and no TokenSpeed-only key), or `/v1/models` says `owned_by: sglang`.
pub fn detect_endpoint(evidence: &EndpointEvidence) -> Option<llm_triage_plugin_api::Claim> {
    use llm_triage_plugin_api::scan::{best_claim, Signal};
    use llm_triage_plugin_api::score;
    let mut signals = Vec::new();
    for path in ["/server_info", "/get_server_info"] {
        let Some(body) = evidence.ok_body(path) else {
            continue;
        };
        let Ok(serde_json::Value::Object(info)) = serde_json::from_str::<serde_json::Value>(body)
        else {
            continue;
        };
        if crate::TOKENSPEED_ONLY_KEYS
            .iter()
            .any(|k| info.contains_key(*k))
        {
            return None;
        }
        let keys: Vec<&str> = crate::SGLANG_ARG_KEYS
            .iter()
            .chain(["internal_states", "tokenizer_path"].iter())
            .copied()
            .filter(|k| info.contains_key(*k))
            .collect();
        if keys.len() >= 2 {
            signals.push(Signal {
                score: score::SERVER_ARGS + keys.len() as u32,
                evidence: format!("{path} has SGLang server args ({})", keys.join(", ")),
            });
        }
    }
    if let Some(owner) = models_owner(evidence).filter(|o| o == "sglang") {
        signals.push(Signal {
            score: score::ANNOTATIONS,
            evidence: format!("/v1/models owned_by {owner}"),
        });
    }
    best_claim(signals)
}

/// `data[0].owned_by` of `/v1/models`.
pub fn models_owner(evidence: &EndpointEvidence) -> Option<String> {
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
    use llm_triage_plugin_api::ProbeAnswer;

    fn request(workload: Workload) -> CaptureRequest {
        CaptureRequest {
            workload,
            output_dir: "/out/run/prefill".into(),
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

    fn evidence(version: Option<&str>) -> EndpointEvidence {
        let body = match version {
            Some(v) => format!("{{\"version\": \"{v}\", \"model_path\": \"Qwen/Qwen3-8B\"}}"),
            None => "{\"model_path\": \"Qwen/Qwen3-8B\"}".to_string(),
        };
        EndpointEvidence {
            base_url: "http://127.0.0.1:30000".into(),
            control_url: "".into(),
            probes: vec![ProbeAnswer {
                path: "/server_info".into(),
                status: 200,
                body: body.into(),
                control: false,
            }]
            .into_iter()
            .collect(),
        }
    }

    fn start_body(plan: &CapturePlan) -> serde_json::Value {
        let start = plan.start.clone().unwrap();
        serde_json::from_str(start.body.clone().unwrap().as_str()).unwrap()
    }

    #[test]
    fn old_builds_get_a_guard_step_new_ones_do_not() {
        for (version, steps) in [
            (Some("0.5.6"), 6),
            (None, 6),
            (Some("0.5.17"), 5),
            (Some("v0.6.0rc1"), 5),
        ] {
            let plan = plan(&request(Workload::Prefill), &evidence(version)).unwrap();
            let body = start_body(&plan);
            assert_eq!(body["num_steps"], steps, "{version:?}");
            assert_eq!(body["profile_by_stage"], false);
            assert_eq!(body["profile_prefix"], "triage-trace-prefill");
            assert_eq!(body["output_dir"], "/out/run/prefill");
            assert_eq!(body["activities"], serde_json::json!(["CPU", "GPU"]));
            assert!(body.get("start_step").is_none());
        }
    }

    #[test]
    fn stop_accepts_the_auto_stop_answer_and_legacy_splits_by_stage() {
        let mut legacy = request(Workload::Legacy);
        legacy.start_step = Some(3).into();
        let plan = plan(&legacy, &evidence(Some("0.5.6"))).unwrap();
        let body = start_body(&plan);
        assert_eq!(body["num_steps"], 5);
        assert_eq!(body["start_step"], 3);
        assert_eq!(body["profile_by_stage"], true);
        assert_eq!(body["profile_prefix"], "triage-trace");
        let stop = plan.stop.clone().unwrap();
        assert_eq!(stop.also_accept[0].status, 500);
        assert_eq!(
            stop.also_accept[0].body_contains.as_str(),
            "not in progress"
        );
        assert!(stop.body.is_none());
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("0.5.17.post2"), Some((0, 5, 17)));
        assert_eq!(parse_version("v0.6"), Some((0, 6, 0)));
        assert_eq!(parse_version("dev"), None);
    }
}
