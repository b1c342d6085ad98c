//! `llm-triage probe`: a latency and correctness smoke test of a running server over
//! the engine's own generate API, printed as JSON.

use std::time::{Duration, Instant};

use llm_triage_plugin_api::{HttpMethod, Workload};

use super::options::check_url;
use super::{http, run, workload};
use crate::error::TriageError;
use crate::plugins::PluginSet;

/// What `probe` sends, and to which server.
#[derive(Clone, Debug)]
pub(crate) struct ProbeRequest {
    pub url: String,
    /// `auto` (detect from the server's answers), or a plugin name or alias.
    pub framework: String,
    /// TokenSpeed's control sidecar, for detection.
    pub control_url: Option<String>,
    pub requests: u32,
    pub max_tokens: u32,
    /// Seconds per request.
    pub timeout: f64,
    /// Prompts to cycle through; empty: the built-in ones.
    pub prompts: Vec<String>,
}

/// `llm-triage probe`: sends requests one at a time; returns the JSON statistics and
/// whether every request answered with text (the caller fails with exit 5 if not).
pub(crate) fn probe(
    request: &ProbeRequest,
    plugins: &PluginSet,
) -> Result<(String, bool), TriageError> {
    check_url(&request.url).map_err(TriageError::Usage)?;
    if request.requests == 0 || request.max_tokens == 0 {
        return Err(TriageError::Usage(
            "--requests and --max-tokens must be at least 1".to_string(),
        ));
    }
    if !(request.timeout.is_finite() && request.timeout > 0.0) {
        return Err(TriageError::Usage(format!(
            "--timeout must be a positive number of seconds, got {}",
            request.timeout
        )));
    }
    let rt = run::runtime()?;
    let client = http::client()?;
    let url = http::base(&request.url);
    let probed = rt.block_on(http::gather_evidence(
        &client,
        &url,
        request.control_url.as_deref(),
    ));
    for note in &probed.notes {
        eprintln!("llm-triage: warning: {note}");
    }
    let evidence = &probed.evidence;
    if evidence
        .probes
        .iter()
        .filter(|p| !p.control)
        .all(|p| p.status == 0)
    {
        return Err(TriageError::Capture(format!(
            "cannot reach {url} (every probe went unanswered)"
        )));
    }
    let (engine, _) =
        run::choose_engine(plugins, &request.framework, evidence).map_err(|e| probed.explain(e))?;
    let legacy = llm_triage_plugin_api::CaptureRequest {
        workload: Workload::Legacy,
        output_dir: "/".into(),
        num_steps: 1,
        warmup_steps: 0,
        profile_prefix: "".into(),
        prefix_explicit: false,
        profile_by_stage: None.into(),
        merge_profiles: false,
        start_step: None.into(),
        guard_step: None.into(),
    };
    let mut plan = engine.capture_plan(&legacy, evidence)?;
    // A smoke probe wants natural answers: stop at EOS like a user request would.
    plan.ignore_eos = false;
    plan.min_tokens = false;
    let model = run::model_id(evidence);
    let prompts: Vec<String> = if request.prompts.is_empty() {
        [
            "Introduce Shanghai in one short sentence.",
            "What is 2+2? Answer briefly.",
            "Write one short haiku about GPUs.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    } else {
        request.prompts.clone()
    };
    let generator = workload::Generator {
        client: &client,
        base_url: &url,
        plan: &plan,
        model: model.clone(),
        timeout: Duration::from_secs_f64(request.timeout),
        tokenizer_failed: None,
    };
    let mut samples = Vec::new();
    let mut errors = Vec::new();
    let mut latencies = Vec::new();
    for i in 0..request.requests {
        let prompt = &prompts[i as usize % prompts.len()];
        let (path, body) =
            generator.body(&workload::Prompt::Text(prompt.clone()), request.max_tokens);
        let full = format!("{url}{path}");
        let started = Instant::now();
        let answer = rt.block_on(http::send(
            &client,
            HttpMethod::Post,
            &full,
            Some(&body.to_string()),
            generator.timeout,
            http::GENERATE_BODY_LIMIT,
        ));
        let latency = started.elapsed().as_secs_f64();
        let outcome = match answer {
            Err(why) => Err(why),
            Ok(a) if !a.ok() => Err(http::status_text(&a)),
            Ok(a) => match serde_json::from_str::<serde_json::Value>(&a.body) {
                Err(_) => Err(format!("non-JSON answer: {}", http::snippet(&a.body))),
                Ok(v) => Ok(workload::answer_text(&v).unwrap_or_default()),
            },
        };
        match outcome {
            Ok(text) => {
                latencies.push(latency);
                samples.push(serde_json::json!({
                    "prompt": prompt,
                    "latency_s": round3(latency),
                    "content": text.chars().take(240).collect::<String>(),
                    "non_empty": !text.trim().is_empty(),
                }));
            }
            Err(why) => errors.push(
                serde_json::json!({"prompt": prompt, "error": format!("POST {full}: {why}")}),
            ),
        }
    }
    let all_non_empty = !samples.is_empty() && samples.iter().all(|s| s["non_empty"] == true);
    let avg = (!latencies.is_empty())
        .then(|| round3(latencies.iter().sum::<f64>() / latencies.len() as f64));
    let p95 = {
        let mut sorted = latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((0.95 * sorted.len() as f64).ceil() as usize).max(1);
        sorted.get(rank - 1).map(|v| round3(*v))
    };
    let ok = errors.is_empty() && all_non_empty;
    let report = serde_json::json!({
        "framework": engine.name(),
        "url": url,
        "model": model,
        "requests": request.requests,
        "success": samples.len(),
        "errors": errors.len(),
        "all_non_empty": all_non_empty,
        "avg_latency_s": avg,
        "p95_latency_s": p95,
        "samples": samples.iter().take(3).collect::<Vec<_>>(),
        "error_samples": errors.iter().take(3).collect::<Vec<_>>(),
    });
    Ok((
        serde_json::to_string_pretty(&report).unwrap_or_default(),
        ok,
    ))
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
