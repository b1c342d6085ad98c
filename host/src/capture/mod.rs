//! Live capture: point the tool at a running server and get the report.
//!
//! The engine plugin turns a capture request into a declarative plan (its protocol:
//! routes, bodies, which answers are success, where traces appear); this module executes
//! it with `reqwest` on a small `tokio` runtime, waits until the new trace files are
//! complete, and hands the run directory to the triage as if it were `--input`.
//!
//! * [`http`]: requests, probes and one-line failures (exit 5).
//! * [`workload`]: prefill/decode/legacy load with exact token counts.
//! * [`wait`]: new, complete trace files only.
//! * [`run`]: one capture from one server.

pub mod http;
pub mod interrupt;
pub mod run;
pub mod wait;
pub mod workload;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use llm_triage_plugin_api::{HttpMethod, Workload};

use crate::cli::capture::{check_url, given, CapturePlanArgs, ProbeArgs};
use crate::cli::{InputMode, TriageArgs};
use crate::error::TriageError;
use crate::plugins::PluginSet;
use run::Target;

/// The traces a triage reads, after any live capture.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub input: PathBuf,
    pub mapping_input: Option<PathBuf>,
    /// The engine decided before a capture (kept, never re-detected); else `--framework`.
    pub framework: String,
    /// Facts about the capture for the report.
    pub notes: Vec<String>,
}

/// Resolves the flags to trace paths, capturing from every URL first (mapping, then
/// formal). Without any URL this is exactly `--input` / `--mapping-input` + `--formal-input`.
pub fn resolve_inputs(
    args: &TriageArgs,
    plugins: impl Fn() -> Result<PluginSet, TriageError>,
) -> Result<Inputs, TriageError> {
    let capture = &args.capture;
    capture.validate().map_err(TriageError::Usage)?;
    if !capture.any_url() {
        let (input, mapping_input) = match args.input_mode().map_err(TriageError::Usage)? {
            InputMode::Single(input) => (input, None),
            InputMode::MappingFormal { mapping, formal } => (formal, Some(mapping)),
        };
        return Ok(Inputs {
            input,
            mapping_input,
            framework: args.framework.clone(),
            notes: Vec::new(),
        });
    }
    let path = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
    let single_url = given(&capture.url).map(str::to_string);
    let mapping_url = given(&capture.mapping_url).map(str::to_string);
    let formal_url = given(&capture.formal_url).map(str::to_string);
    let input = path(&args.input);
    let mapping_input = path(&args.mapping_input);
    let formal_input = path(&args.formal_input);
    let plugin_set = plugins()?;
    if let Some(url) = single_url {
        if input.is_some() {
            return Err(TriageError::Usage(
                "pass either --input or --url, not both".to_string(),
            ));
        }
        if mapping_input.is_some()
            || formal_input.is_some()
            || mapping_url.is_some()
            || formal_url.is_some()
        {
            return Err(TriageError::Usage(
                "--url (single-trace capture) cannot be combined with the --mapping-*/--formal-* flags; pass one mode".to_string(),
            ));
        }
        let target = Target {
            url,
            output_dir: capture.output_dir.clone(),
            prefix: capture.profile_prefix.clone(),
            default_prefix: "triage-trace",
        };
        let captured = run::capture(capture, &target, &args.framework, &plugin_set)?;
        return Ok(Inputs {
            input: captured.root,
            mapping_input: None,
            framework: captured.framework,
            notes: captured.notes,
        });
    }
    if input.is_some() {
        return Err(TriageError::Usage(
            "--input (single-trace mode) cannot be combined with --mapping-url/--formal-url; pass one mode".to_string(),
        ));
    }
    let side = |name: &str, input: Option<PathBuf>, url: Option<String>| match (input, url) {
        (Some(_), Some(_)) => Err(TriageError::Usage(format!(
            "pass either --{name}-input or --{name}-url, not both"
        ))),
        (None, None) => Err(TriageError::Usage(format!(
            "mapping+formal mode needs --{name}-input PATH or --{name}-url URL too"
        ))),
        (input, url) => Ok((input, url)),
    };
    let mapping = side("mapping", mapping_input, mapping_url)?;
    let formal = side("formal", formal_input, formal_url)?;
    let mut notes = Vec::new();
    let mut framework = args.framework.clone();
    let mut resolve = |which: &str,
                       (input, url): (Option<PathBuf>, Option<String>)|
     -> Result<PathBuf, TriageError> {
        if let Some(input) = input {
            return Ok(input);
        }
        // `side` lets exactly one of the two through.
        let Some(url) = url else {
            return Err(TriageError::Usage(format!(
                "mapping+formal mode needs --{which}-input PATH or --{which}-url URL"
            )));
        };
        let (output_dir, prefix, default_prefix) = if which == "mapping" {
            (
                capture.mapping_output_dir.clone(),
                capture.mapping_profile_prefix.clone(),
                "mapping-trace",
            )
        } else {
            (
                capture.formal_output_dir.clone(),
                capture.formal_profile_prefix.clone(),
                "formal-trace",
            )
        };
        let target = Target {
            url,
            output_dir,
            prefix,
            default_prefix,
        };
        let captured = run::capture(capture, &target, &args.framework, &plugin_set)?;
        notes.extend(captured.notes.into_iter().map(|n| format!("{which} {n}")));
        framework = captured.framework;
        Ok(captured.root)
    };
    let mapping_path = resolve("mapping", mapping)?;
    let formal_path = resolve("formal", formal)?;
    Ok(Inputs {
        input: formal_path,
        mapping_input: Some(mapping_path),
        framework,
        notes,
    })
}

/// `llm-triage capture-plan`: the engine's protocol for each workload, as it would run.
pub fn capture_plan_text(
    args: &CapturePlanArgs,
    plugins: &PluginSet,
) -> Result<String, TriageError> {
    let capture = &args.capture;
    capture.validate_values().map_err(TriageError::Usage)?;
    let engine = plugins.find(&args.framework).ok_or_else(|| {
        TriageError::Usage(format!(
            "--framework {}: no such engine plugin",
            args.framework
        ))
    })?;
    let url = given(&capture.url)
        .map(http::base)
        .unwrap_or_else(|| "http://HOST:PORT".to_string());
    let evidence = match given(&capture.url) {
        Some(u) => {
            let rt = run::runtime()?;
            let client = http::client()?;
            rt.block_on(http::gather_evidence(
                &client,
                u,
                capture.control_url.as_deref(),
            ))
        }
        None => llm_triage_plugin_api::EndpointEvidence::default(),
    };
    let out = capture
        .output_dir
        .clone()
        .map(|d| std::path::absolute(&d).unwrap_or(d))
        .unwrap_or_else(|| PathBuf::from("OUT"));
    let target = Target {
        url: url.clone(),
        output_dir: Some(out.clone()),
        prefix: capture.profile_prefix.clone(),
        default_prefix: "triage-trace",
    };
    let control = given(&capture.control_url)
        .map(http::base)
        .unwrap_or_else(|| url.clone());
    let mut text = format!(
        "# {} live capture plan for {url}\n",
        engine.manifest.display_name
    );
    for workload in run::workloads(capture.profile_workload) {
        // Servers with their own trace dir are told nothing; others get the run's stage dir.
        let mut dir = out.clone();
        let mut plan =
            engine.capture_plan(&run::request(capture, &target, workload, &dir), &evidence)?;
        if !plan.traces.server_owned_dir {
            dir = out.join("capture-<time>");
            if workload != Workload::Legacy {
                dir = dir.join(workload.label());
            }
            plan =
                engine.capture_plan(&run::request(capture, &target, workload, &dir), &evidence)?;
        }
        let shape = workload::shape(workload, &run::shape_flags(capture));
        text.push_str(&format!("\n## {}\n", workload.label()));
        for note in plan.notes.iter() {
            text.push_str(&format!("{note}\n"));
        }
        text.push_str(&format!(
            "warm-up: {} request(s) x {} tokens; capture: {} request(s) x {} tokens, prompt {}\n",
            shape.warmup_requests,
            shape.warmup_tokens,
            shape.capture_requests,
            shape.capture_tokens,
            shape
                .input_len
                .map(|n| format!("{n} tokens"))
                .unwrap_or_else(|| "the legacy prompt".to_string()),
        ));
        let curl = |call: &llm_triage_plugin_api::HttpCall| {
            let root = if call.on_control_url { &control } else { &url };
            let body = match call.body.as_ref().into_option() {
                Some(b) => format!(" -H 'content-type: application/json' -d '{}'", b.as_str()),
                None => String::new(),
            };
            let optional = if call.optional {
                "  # only where the server has this route"
            } else {
                ""
            };
            format!(
                "curl -X {} {root}{}{body}{optional}\n",
                call.method.as_str(),
                call.path
            )
        };
        if let Some(call) = plan.start.as_ref().into_option() {
            text.push_str(&format!("start: {}", curl(call)));
        }
        if let Some(call) = plan.stop.as_ref().into_option() {
            text.push_str(&format!("stop:  {}", curl(call)));
        }
        let where_ = if plan.traces.server_owned_dir {
            format!(
                "{} (the server's own trace dir; new files are moved into <run>/{}/)",
                out.display(),
                workload.label()
            )
        } else {
            dir.display().to_string()
        };
        let suffixes: Vec<&str> = plan.traces.suffixes.iter().map(|s| s.as_str()).collect();
        text.push_str(&format!(
            "traces: {where_}: {}*{}, complete within {} s of the stop\n",
            plan.traces.name_prefix,
            suffixes.join(" | *"),
            plan.traces.flush_timeout_ms / 1000
        ));
    }
    Ok(text)
}

/// `llm-triage probe`: sends requests one at a time and prints JSON statistics; fails
/// (exit 5) when a request fails or returns empty text.
pub fn probe(args: &ProbeArgs, plugins: &PluginSet) -> Result<(String, bool), TriageError> {
    check_url(&args.url).map_err(TriageError::Usage)?;
    if args.requests == 0 || args.max_tokens == 0 {
        return Err(TriageError::Usage(
            "--requests and --max-tokens must be at least 1".to_string(),
        ));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(TriageError::Usage(format!(
            "--timeout must be a positive number of seconds, got {}",
            args.timeout
        )));
    }
    let rt = run::runtime()?;
    let client = http::client()?;
    let url = http::base(&args.url);
    let evidence = rt.block_on(http::gather_evidence(
        &client,
        &url,
        args.control_url.as_deref(),
    ));
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
    let (engine, _) = run::choose_engine(plugins, &args.framework, &evidence)?;
    let request = llm_triage_plugin_api::CaptureRequest {
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
    let mut plan = engine.capture_plan(&request, &evidence)?;
    // A smoke probe wants natural answers: stop at EOS like a user request would.
    plan.ignore_eos = false;
    plan.min_tokens = false;
    let model = run::model_id(&evidence);
    let prompts: Vec<String> = if args.prompts.is_empty() {
        [
            "Introduce Shanghai in one short sentence.",
            "What is 2+2? Answer briefly.",
            "Write one short haiku about GPUs.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    } else {
        args.prompts.clone()
    };
    let generator = workload::Generator {
        client: &client,
        base_url: &url,
        plan: &plan,
        model: model.clone(),
        timeout: Duration::from_secs_f64(args.timeout),
        tokenizer_failed: None,
    };
    let mut samples = Vec::new();
    let mut errors = Vec::new();
    let mut latencies = Vec::new();
    for i in 0..args.requests {
        let prompt = &prompts[i as usize % prompts.len()];
        let (path, body) = generator.body(&workload::Prompt::Text(prompt.clone()), args.max_tokens);
        let full = format!("{url}{path}");
        let started = Instant::now();
        let answer = rt.block_on(http::send(
            &client,
            HttpMethod::Post,
            &full,
            Some(&body.to_string()),
            generator.timeout,
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
        "requests": args.requests,
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
