//! Live capture: point the tool at a running server and get the report.
//!
//! The engine plugin turns a capture request into a declarative plan (its protocol:
//! routes, bodies, which answers are success, where traces appear); this module executes
//! it with `reqwest` on a small `tokio` runtime, waits until the new trace files are
//! complete, and hands the run directory to the triage as if it were `--input`.
//!
//! * [`options`]: what a capture is asked for, and its checks (usage errors, exit 2).
//! * [`http`]: requests, probes and one-line failures (exit 5).
//! * [`workload`]: prefill/decode/legacy load with exact token counts.
//! * [`wait`]: new, complete trace files only.
//! * [`run`]: one capture from one server.
//! * [`plan`]: `capture-plan`, the protocol printed instead of run.
//! * [`probe`](mod@probe): `probe`, a smoke test of a running server.

pub(crate) mod capture_dir;
pub(crate) mod http;
pub(crate) mod interrupt;
pub(crate) mod options;
pub(crate) mod plan;
pub(crate) mod probe;
pub(crate) mod run;
pub(crate) mod wait;
pub(crate) mod workload;

pub(crate) use options::{Options, Sources, Workloads};
pub(crate) use plan::capture_plan_text;
pub(crate) use probe::{probe, ProbeRequest};

use std::path::PathBuf;

use crate::error::TriageError;
use crate::plugins::PluginSet;
use options::{given, InputMode};
use run::Target;

/// The traces a triage reads, after any live capture.
#[derive(Clone, Debug)]
pub(crate) struct Inputs {
    pub input: PathBuf,
    pub mapping_input: Option<PathBuf>,
    /// The engine decided before a capture (kept, never re-detected); else `--framework`.
    pub framework: String,
    /// Facts about the capture for the report.
    pub notes: Vec<String>,
}

/// Resolves the sources to trace paths, capturing from every URL first (mapping, then
/// formal). Without any URL this is exactly `--input` / `--mapping-input` + `--formal-input`.
pub(crate) fn resolve_inputs(
    sources: &Sources,
    plugins: impl Fn() -> Result<PluginSet, TriageError>,
) -> Result<Inputs, TriageError> {
    let capture = &sources.capture;
    capture.validate().map_err(TriageError::Usage)?;
    if !capture.any_url() {
        let (input, mapping_input) = match sources.input_mode().map_err(TriageError::Usage)? {
            InputMode::Single(input) => (input, None),
            InputMode::MappingFormal { mapping, formal } => (formal, Some(mapping)),
        };
        return Ok(Inputs {
            input,
            mapping_input,
            framework: sources.framework.clone(),
            notes: Vec::new(),
        });
    }
    let path = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
    let single_url = given(&capture.url).map(str::to_string);
    let mapping_url = given(&capture.mapping_url).map(str::to_string);
    let formal_url = given(&capture.formal_url).map(str::to_string);
    let input = path(&sources.input);
    let mapping_input = path(&sources.mapping_input);
    let formal_input = path(&sources.formal_input);
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
        let captured = run::capture(capture, &target, &sources.framework, &plugin_set)?;
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
    let mut framework = sources.framework.clone();
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
        let captured = run::capture(capture, &target, &sources.framework, &plugin_set)?;
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
