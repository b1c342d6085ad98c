//! One live capture from one server: probe, choose the engine, then per workload: warm
//! up, start, send the capture requests, stop (always, once started), wait for complete
//! new traces, move them into `<run>/<stage>/`. The run directory is new for every
//! capture, so the triage that follows reads exactly this run's files.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use llm_triage_plugin_api::{CapturePlan, CaptureRequest, EndpointEvidence, HttpCall, Workload};

use super::capture_dir;
use super::http::{self, Answer};
use super::interrupt;
use super::options::Options;
use super::wait;
use super::workload::{self, Generator, Sent, ShapeFlags};
use crate::error::TriageError;
use crate::plugins::{Engine, PluginSet};

/// One side's capture target (single mode, or the mapping / formal side).
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub url: String,
    pub output_dir: Option<PathBuf>,
    pub prefix: Option<String>,
    pub default_prefix: &'static str,
}

/// What a capture left behind.
#[derive(Clone, Debug)]
pub(crate) struct Captured {
    /// The run directory: `<stage>/` subdirectories plus `server_args.json`.
    pub root: PathBuf,
    /// The engine plugin name, decided before the capture (and kept for the triage).
    pub framework: String,
    pub notes: Vec<String>,
}

/// The engine for `url`: the one `--framework` names, or the single strongest claim on
/// the probe answers (none or a tie: exit 4).
pub(crate) fn choose_engine<'p>(
    plugins: &'p PluginSet,
    framework: &str,
    evidence: &EndpointEvidence,
) -> Result<(&'p Engine, String), TriageError> {
    let url = evidence.base_url.as_str();
    if crate::plugins::load::normalize_name(framework) != "auto" {
        let engine = plugins.find(framework).ok_or_else(|| {
            let names: Vec<&str> = plugins.engines.iter().map(|e| e.name()).collect();
            TriageError::Usage(format!(
                "--framework {framework}: no such engine plugin (loaded: {})",
                names.join(", ")
            ))
        })?;
        return Ok((engine, format!("--framework {}", engine.name())));
    }
    let mut claims = Vec::new();
    for engine in &plugins.engines {
        if let Some(claim) = engine.detect_endpoint(evidence)? {
            claims.push((engine, claim));
        }
    }
    claims.sort_by_key(|(_, c)| std::cmp::Reverse(c.score));
    let probes = http::probe_summary(evidence);
    match claims.as_slice() {
        [] => Err(TriageError::FrameworkRefused(format!(
            "cannot determine the framework of {url}: no engine plugin recognises its answers, probes={probes}; pass --framework"
        ))),
        [(a, ca), (b, cb), ..] if ca.score == cb.score => Err(TriageError::FrameworkRefused(format!(
            "cannot determine the framework of {url}: {} ({}) and {} ({}) claim it equally, probes={probes}; pass --framework",
            a.name(),
            ca.evidence.join("; "),
            b.name(),
            cb.evidence.join("; ")
        ))),
        [(engine, claim), ..] => Ok((*engine, format!("{} ({})", engine.name(), claim.evidence.join("; ")))),
    }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, TriageError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| TriageError::Capture(format!("cannot start the async runtime: {e}")))
}

/// The capture request of one workload.
pub(crate) fn request(
    args: &Options,
    target: &Target,
    workload: Workload,
    output_dir: &Path,
) -> CaptureRequest {
    CaptureRequest {
        workload,
        output_dir: output_dir.display().to_string().as_str().into(),
        num_steps: args.num_steps,
        warmup_steps: args.warmup_steps,
        profile_prefix: target
            .prefix
            .as_deref()
            .unwrap_or(target.default_prefix)
            .into(),
        prefix_explicit: target.prefix.is_some(),
        profile_by_stage: args.profile_by_stage.into(),
        merge_profiles: args.merge_profiles,
        start_step: args.start_step.into(),
        guard_step: args.sglang_guard_step.into(),
    }
}

pub(crate) fn shape_flags(args: &Options) -> ShapeFlags {
    ShapeFlags {
        warmup_steps: args.warmup_steps,
        num_steps: args.num_steps,
        probe_requests: args.probe_requests,
        prefill_input_len: args.prefill_input_len,
        prefill_output_len: args.prefill_output_len,
        decode_input_len: args.decode_input_len,
        decode_output_len: args.decode_output_len,
        probe_prompt: args.probe_prompt.clone(),
        probe_max_new_tokens: args.probe_max_new_tokens,
    }
}

/// Captures from `target` and returns the run directory to triage.
pub(crate) fn capture(
    args: &Options,
    target: &Target,
    framework: &str,
    plugins: &PluginSet,
) -> Result<Captured, TriageError> {
    let rt = runtime()?;
    let client = http::client()?;
    interrupt::install();
    let url = http::base(&target.url);
    let control = args.control_url.as_deref().map(http::base);
    let probed = rt.block_on(http::gather_evidence(&client, &url, control.as_deref()));
    let evidence = &probed.evidence;
    if evidence
        .probes
        .iter()
        .filter(|p| !p.control)
        .all(|p| p.status == 0)
    {
        let why = rt
            .block_on(http::send(
                &client,
                llm_triage_plugin_api::HttpMethod::Get,
                &format!("{url}/v1/models"),
                None,
                http::PROBE_TIMEOUT,
                http::SMALL_BODY_LIMIT,
            ))
            .err()
            .unwrap_or_else(|| "no answer".to_string());
        return Err(TriageError::Capture(format!(
            "cannot reach {url}: GET {url}/v1/models: {why}"
        )));
    }
    let (engine, decided_by) =
        choose_engine(plugins, framework, evidence).map_err(|e| probed.explain(e))?;
    let mut notes = vec![format!("captured live from {url}; engine {decided_by}")];
    notes.extend(probed.notes.iter().cloned());
    let model = model_id(evidence);

    let stages = args.workloads.in_order();
    // The first plan says whether the server writes into a dir of its own choosing.
    let probe_plan =
        engine.capture_plan(&request(args, target, stages[0], Path::new("/")), evidence)?;
    let server_dir = probe_plan.traces.server_owned_dir;
    let out = match (&target.output_dir, server_dir) {
        (Some(dir), _) => {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
            capture_dir::check_given(&dir, server_dir)?;
            dir
        }
        (None, true) => {
            return Err(TriageError::Usage(format!(
                "{} live capture needs --output-dir: the directory the server writes its traces to, as seen from this machine",
                engine.manifest.display_name
            )))
        }
        (None, false) => capture_dir::fresh()?,
    };
    let root = out.join(format!("capture-{}", unique()));
    std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::create_dir(&root))
        .map_err(|e| TriageError::Capture(format!("cannot create {}: {e}", root.display())))?;

    let timeout = Duration::from_secs_f64(args.request_timeout);
    let mut tokenizer_failed: Option<String> = None;
    let mut seed = 0u32;
    let stage_count = stages.len();
    for workload in stages {
        let stage_dir = match workload {
            Workload::Legacy => root.clone(),
            w => root.join(w.label()),
        };
        std::fs::create_dir_all(&stage_dir).map_err(|e| {
            TriageError::Capture(format!("cannot create {}: {e}", stage_dir.display()))
        })?;
        let target_dir = if server_dir {
            out.clone()
        } else {
            stage_dir.clone()
        };
        let plan = engine.capture_plan(&request(args, target, workload, &target_dir), evidence)?;
        notes.extend(
            plan.notes
                .iter()
                .map(|n| format!("{}: {n}", workload.label())),
        );
        if plan.generate == llm_triage_plugin_api::GenerateApi::OpenAiCompletions && model.is_none()
        {
            return Err(TriageError::Capture(format!(
                "GET {url}/v1/models (model discovery): no model id in the answer ({})",
                http::probe_summary(evidence)
            )));
        }
        let shape = workload::shape(workload, &shape_flags(args));
        let mut generator = Generator {
            client: &client,
            base_url: &url,
            plan: &plan,
            model: model.clone(),
            timeout,
            tokenizer_failed: tokenizer_failed.take(),
        };
        let before = wait::snapshot(&target_dir, &plan.traces, Some(&root));

        let sent = rt.block_on(async {
            let warm = generator
                .run(&shape, seed, shape.warmup_requests, shape.warmup_tokens, &format!("{} warm-up", workload.label()))
                .await?;
            seed += warm.requests;
            // From here until the stop is answered, Ctrl-C stops the profiler first.
            let armed = interrupt::arm();
            let started = match plan.start.as_ref().into_option() {
                Some(call) => match control_call(&client, &url, control.as_deref(), call, "start the profiler", timeout).await {
                    Ok(started) => started,
                    // No answer leaves it open whether the profiler started: the stop is
                    // sent anyway, so a profiler never runs on unattended.
                    Err(failed) if failed.unanswered => {
                        let error = failed.error.to_string();
                        let stop = match plan.stop.as_ref().into_option() {
                            Some(call) => control_call(&client, &url, control.as_deref(), call, "stop the profiler", timeout).await,
                            None => return Err(failed.error),
                        };
                        return Err(TriageError::Capture(match stop {
                            Ok(_) => format!("{error} (a stop was sent in case it had started)"),
                            Err(stop) => format!("{error}; the stop sent in case it had started failed too: {}", stop.error),
                        }));
                    }
                    Err(failed) => return Err(failed.error),
                },
                None => Started::NoRoute,
            };
            if started == Started::NoRoute && stage_count > 1 {
                return Err(TriageError::Usage(format!(
                    "{} has no profiler routes: it profiles the iteration window it was started with, one stage per server run; pass --profile-workload prefill or decode (`llm-triage capture-plan --framework {}` prints the commands)",
                    url,
                    engine.name()
                )));
            }
            if started == Started::Yes {
                tokio::time::sleep(Duration::from_secs_f64(args.probe_delay)).await;
            }
            let what = format!("{} capture", workload.label());
            let captured = tokio::select! {
                sent = generator.run(&shape, seed, shape.capture_requests, shape.capture_tokens, &what) => sent,
                () = interrupt::interrupted() => Err(TriageError::Capture(format!(
                    "interrupted by Ctrl-C during the {} capture requests",
                    workload.label()
                ))),
            };
            seed += shape.capture_requests;
            // Stop is always attempted once the start succeeded, even after a failure.
            let stopped = match (started, plan.stop.as_ref().into_option()) {
                (Started::Yes, Some(call)) => {
                    Some(control_call(&client, &url, control.as_deref(), call, "stop the profiler", timeout).await.map_err(|f| f.error))
                }
                _ => None,
            };
            drop(armed);
            match (captured, stopped) {
                (Err(e), Some(Err(stop))) => Err(TriageError::Capture(format!("{e}; then the stop failed too: {stop}"))),
                (Err(e), Some(Ok(_))) => Err(TriageError::Capture(format!("{e} (the profiler was stopped)"))),
                (Err(e), None) => Err(e),
                (Ok(_), Some(Err(stop))) => Err(stop),
                (Ok(sent), _) => Ok((sent, started)),
            }
        });
        let (sent, started) = sent?;
        if started == Started::NoRoute {
            notes.push(format!(
                "{}: {url} has no /start_profile; used the profiling window the server was started with",
                workload.label()
            ));
        }
        notes.push(sent_note(workload, &shape, &sent, &generator));
        tokenizer_failed = generator.tokenizer_failed.take();

        let limit = match args.flush_timeout {
            Some(s) => Duration::from_secs_f64(s),
            None => Duration::from_millis(plan.traces.flush_timeout_ms),
        };
        let hint = if server_dir {
            format!(
                "is {} the directory the {} server writes traces to?",
                target_dir.display(),
                engine.manifest.display_name
            )
        } else {
            String::new()
        };
        let files = wait::wait_for_traces(
            &target_dir,
            &plan.traces,
            &before,
            Some(&root),
            limit,
            &hint,
        )?;
        if server_dir {
            wait::move_into(&files, &stage_dir)?;
        }
    }
    write_server_args(&root, engine, evidence, &probe_plan, model.as_deref())?;
    if let Some(why) = &tokenizer_failed {
        notes.push(format!("prompt lengths are in words, not tokens: {why}"));
    } else if probe_plan.tokenize_path.is_empty() {
        notes.push(format!(
            "prompt lengths are in words, not tokens: {} has no tokenizer endpoint",
            engine.manifest.display_name
        ));
    }
    notes.push(format!("traces of this capture: {}", root.display()));
    Ok(Captured {
        root,
        framework: engine.name().to_string(),
        notes,
    })
}

/// How the start went.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Started {
    Yes,
    /// The (optional) route does not exist: the engine profiles on its own.
    NoRoute,
}

/// A failed profiler call, and whether the server answered at all (a timeout or a
/// dropped connection leaves open what it did).
struct CallFailed {
    error: TriageError,
    unanswered: bool,
}

async fn control_call(
    client: &reqwest::Client,
    url: &str,
    control: Option<&str>,
    call: &HttpCall,
    step: &str,
    timeout: Duration,
) -> Result<Started, CallFailed> {
    let answered = |error| CallFailed {
        error,
        unanswered: false,
    };
    let root = if call.on_control_url {
        control.unwrap_or(url)
    } else {
        url
    };
    let full = format!("{root}{}", call.path);
    let body = call.body.as_ref().map(|b| b.as_str()).into_option();
    let answer: Answer = http::send(
        client,
        call.method,
        &full,
        body,
        timeout,
        http::SMALL_BODY_LIMIT,
    )
    .await
    .map_err(|why| CallFailed {
        error: http::failure(call.method, &full, step, &why),
        unanswered: true,
    })?;
    if http::accepted(call, &answer) {
        return Ok(Started::Yes);
    }
    if answer.status == 404 && call.optional {
        return Ok(Started::NoRoute);
    }
    let mut what = http::status_text(&answer);
    if answer.status == 404 && !call.if_missing.is_empty() {
        what = format!("{what}; {}", call.if_missing);
    }
    Err(answered(http::failure(call.method, &full, step, &what)))
}

fn sent_note(
    workload: Workload,
    shape: &workload::Shape,
    sent: &Sent,
    generator: &Generator<'_>,
) -> String {
    let unit = match (
        shape.input_len,
        &generator.tokenizer_failed,
        generator.plan.tokenize_path.is_empty(),
    ) {
        (None, _, _) => "the legacy prompt".to_string(),
        (Some(n), None, false) => format!("{n}-token prompts"),
        (Some(n), _, _) => format!("{n}-word prompts"),
    };
    let generated = match sent.generated {
        Some(g) => format!("the server generated {g}"),
        None => "the server did not report how many it generated".to_string(),
    };
    format!(
        "{}: {} warm-up + {} capture request(s), {unit}, asked for {} output tokens, {generated}",
        workload.label(),
        shape.warmup_requests,
        sent.requests,
        sent.asked
    )
}

/// `data[0].id` of `/v1/models`, else the model path in the server info.
pub(crate) fn model_id(evidence: &EndpointEvidence) -> Option<String> {
    let json = |path: &str| -> Option<serde_json::Value> {
        serde_json::from_str(evidence.ok_body(path)?).ok()
    };
    json("/v1/models")
        .and_then(|v| {
            v.pointer("/data/0/id")
                .and_then(|id| id.as_str())
                .map(str::to_string)
        })
        .or_else(|| {
            ["/server_info", "/get_server_info"].iter().find_map(|p| {
                json(p).and_then(|v| {
                    v.get("model_path")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                })
            })
        })
}

/// `server_args.json` in the run dir: the engine's own server args when it publishes
/// them, else just the model id, so the report names the model.
fn write_server_args(
    root: &Path,
    engine: &Engine,
    evidence: &EndpointEvidence,
    plan: &CapturePlan,
    model: Option<&str>,
) -> Result<(), TriageError> {
    let path = plan.server_args_probe.as_str();
    let published = (!path.is_empty())
        .then(|| {
            [false, true].iter().find_map(|control| {
                let answer = evidence.probe(path, *control)?;
                if !(200..300).contains(&answer.status) {
                    return None;
                }
                match serde_json::from_str::<serde_json::Value>(answer.body.as_str()) {
                    Ok(serde_json::Value::Object(map)) => Some(map),
                    _ => None,
                }
            })
        })
        .flatten();
    let mut args = published.unwrap_or_default();
    if let Some(model) = model {
        if !args.contains_key("model_path") && !args.contains_key("model") {
            args.insert("model".to_string(), model.into());
        }
    }
    if args.is_empty() {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(args)).unwrap_or_default();
    std::fs::write(root.join("server_args.json"), text + "\n").map_err(|e| {
        TriageError::Capture(format!(
            "cannot write {} server args into {}: {e}",
            engine.manifest.display_name,
            root.display()
        ))
    })
}

/// Milliseconds since the epoch, then a counter: unique within this process.
fn unique() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    match COUNT.fetch_add(1, Ordering::Relaxed) {
        0 => format!("{ms}"),
        n => format!("{ms}-{n}"),
    }
}
