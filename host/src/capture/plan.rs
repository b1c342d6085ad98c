//! `llm-triage capture-plan`: an engine's live-capture protocol for each workload
//! (environment, start/stop requests as curl lines, where the traces appear), printed
//! instead of run, so a capture can be checked or done by hand.

use std::fmt::Write as _;
use std::path::PathBuf;

use llm_triage_plugin_api::Workload;

use super::options::{given, Options};
use super::run::{self, Target};
use super::{http, workload};
use crate::error::TriageError;
use crate::plugins::PluginSet;

/// `llm-triage capture-plan`: the protocol of the engine `framework` names, for each
/// workload, as a capture with `capture` would run it.
pub(crate) fn capture_plan_text(
    framework: &str,
    capture: &Options,
    plugins: &PluginSet,
) -> Result<String, TriageError> {
    capture.validate_values().map_err(TriageError::Usage)?;
    let engine = plugins.find(framework).ok_or_else(|| {
        TriageError::Usage(format!("--framework {framework}: no such engine plugin"))
    })?;
    let url = given(&capture.url)
        .map(http::base)
        .unwrap_or_else(|| "http://HOST:PORT".to_string());
    let evidence = match given(&capture.url) {
        Some(u) => {
            let rt = run::runtime()?;
            let client = http::client()?;
            let probed = rt.block_on(http::gather_evidence(
                &client,
                u,
                capture.control_url.as_deref(),
            ));
            for note in &probed.notes {
                eprintln!("llm-triage: warning: {note}");
            }
            probed.evidence
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
    for workload in capture.workloads.in_order() {
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
        let _ = writeln!(text, "\n## {}", workload.label());
        for note in plan.notes.iter() {
            let _ = writeln!(text, "{note}");
        }
        let _ = writeln!(
            text,
            "warm-up: {} request(s) x {} tokens; capture: {} request(s) x {} tokens, prompt {}",
            shape.warmup_requests,
            shape.warmup_tokens,
            shape.capture_requests,
            shape.capture_tokens,
            shape
                .input_len
                .map(|n| format!("{n} tokens"))
                .unwrap_or_else(|| "the legacy prompt".to_string()),
        );
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
            let _ = write!(text, "start: {}", curl(call));
        }
        if let Some(call) = plan.stop.as_ref().into_option() {
            let _ = write!(text, "stop:  {}", curl(call));
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
        let _ = writeln!(
            text,
            "traces: {where_}: {}*{}, complete within {} s of the stop",
            plan.traces.name_prefix,
            suffixes.join(" | *"),
            plan.traces.flush_timeout_ms / 1000
        );
    }
    Ok(text)
}
