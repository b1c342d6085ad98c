//! What a triage's traces and a live capture are asked for, as plain values: the
//! command line (`commands/`) builds them from its flags, so capture never sees clap.
//! The checks clap cannot express live here with the values they check; each failure is
//! a usage error (exit 2) that names the flag to fix.

use std::path::PathBuf;

use llm_triage_plugin_api::Workload;

/// Where the traces of one triage come from: paths, or servers to capture from first.
#[derive(Clone, Debug)]
pub(crate) struct Sources {
    /// `--input`: one trace file or profile directory (single-trace mode).
    pub input: Option<PathBuf>,
    /// `--mapping-input`: mapping+formal mode's mapping trace.
    pub mapping_input: Option<PathBuf>,
    /// `--formal-input`: mapping+formal mode's formal trace.
    pub formal_input: Option<PathBuf>,
    /// `--framework`: `auto`, or a plugin name or alias.
    pub framework: String,
    pub capture: Options,
}

/// Which traces a triage reads, when nothing is captured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum InputMode {
    /// `--input`: one trace (or directory) for every table.
    Single(PathBuf),
    /// `--mapping-input` + `--formal-input`.
    MappingFormal { mapping: PathBuf, formal: PathBuf },
}

impl Sources {
    /// The input mode the paths ask for, or the usage error that says what to pass.
    /// An empty path counts as not given.
    pub(crate) fn input_mode(&self) -> Result<InputMode, String> {
        let given = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
        let input = given(&self.input);
        let mapping = given(&self.mapping_input);
        let formal = given(&self.formal_input);
        match (input, mapping, formal) {
            (Some(input), None, None) => Ok(InputMode::Single(input)),
            (None, Some(mapping), Some(formal)) => Ok(InputMode::MappingFormal { mapping, formal }),
            (Some(_), _, _) => Err(
                "--input (single-trace mode) cannot be combined with --mapping-input/--formal-input (mapping+formal mode); pass one mode"
                    .to_string(),
            ),
            (None, Some(_), None) => Err(
                "mapping+formal mode needs --formal-input PATH too (the production-config trace the times come from)"
                    .to_string(),
            ),
            (None, None, Some(_)) => Err(
                "mapping+formal mode needs --mapping-input PATH too (a trace captured with CUDA graphs off, for Python scopes)"
                    .to_string(),
            ),
            (None, None, None) => Err(
                "nothing to triage: pass --input PATH (a trace file or profile directory), or --mapping-input PATH with --formal-input PATH; see --help"
                    .to_string(),
            ),
        }
    }
}

/// Which workloads a live capture profiles (`--profile-workload`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workloads {
    /// One mixed capture of a short instruction prompt (the predecessor's `legacy`
    /// workload: prefill and decode in one trace).
    Legacy,
    Prefill,
    Decode,
    /// Prefill, then decode, each in its own stage directory.
    Both,
}

impl Workloads {
    /// The workloads, in the order they are captured.
    pub(crate) fn in_order(self) -> Vec<Workload> {
        match self {
            Workloads::Both => vec![Workload::Prefill, Workload::Decode],
            Workloads::Prefill => vec![Workload::Prefill],
            Workloads::Decode => vec![Workload::Decode],
            Workloads::Legacy => vec![Workload::Legacy],
        }
    }
}

/// Everything a live capture is told, one field per flag (`cli::capture::CaptureArgs`
/// documents each).
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub url: Option<String>,
    pub output_dir: Option<PathBuf>,
    pub control_url: Option<String>,
    pub mapping_url: Option<String>,
    pub formal_url: Option<String>,
    pub mapping_output_dir: Option<PathBuf>,
    pub formal_output_dir: Option<PathBuf>,
    pub workloads: Workloads,
    pub warmup_steps: u32,
    pub num_steps: u32,
    pub prefill_input_len: u32,
    pub prefill_output_len: u32,
    pub decode_input_len: u32,
    pub decode_output_len: u32,
    pub profile_prefix: Option<String>,
    pub mapping_profile_prefix: Option<String>,
    pub formal_profile_prefix: Option<String>,
    /// SGLang legacy workload: split EXTEND/DECODE (`None`: the engine's default).
    pub profile_by_stage: Option<bool>,
    pub merge_profiles: bool,
    pub start_step: Option<u64>,
    pub sglang_guard_step: Option<u32>,
    pub probe_requests: u32,
    pub probe_prompt: String,
    pub probe_max_new_tokens: Option<u32>,
    /// Seconds between starting the profiler and the first capture request.
    pub probe_delay: f64,
    /// Seconds each HTTP request may take.
    pub request_timeout: f64,
    /// Seconds to wait for complete traces after the stop (`None`: the engine's).
    pub flush_timeout: Option<f64>,
}

impl Options {
    pub(crate) fn any_url(&self) -> bool {
        [&self.url, &self.mapping_url, &self.formal_url]
            .iter()
            .any(|u| given(u).is_some())
    }

    /// Flag checks clap cannot express; each error is a usage error (exit 2).
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.validate_values()?;
        let pairs = [
            (
                "--output-dir",
                self.output_dir.is_some(),
                "--url",
                &self.url,
            ),
            (
                "--control-url",
                self.control_url.is_some(),
                "--url",
                &self.url,
            ),
            (
                "--profile-prefix",
                self.profile_prefix.is_some(),
                "--url",
                &self.url,
            ),
            (
                "--mapping-output-dir",
                self.mapping_output_dir.is_some(),
                "--mapping-url",
                &self.mapping_url,
            ),
            (
                "--mapping-profile-prefix",
                self.mapping_profile_prefix.is_some(),
                "--mapping-url",
                &self.mapping_url,
            ),
            (
                "--formal-output-dir",
                self.formal_output_dir.is_some(),
                "--formal-url",
                &self.formal_url,
            ),
            (
                "--formal-profile-prefix",
                self.formal_profile_prefix.is_some(),
                "--formal-url",
                &self.formal_url,
            ),
        ];
        for (flag, present, needs, url) in pairs {
            if present && given(url).is_none() {
                return Err(format!(
                    "{flag} applies to live capture only: pass {needs} URL too"
                ));
            }
        }
        Ok(())
    }

    /// The values alone (also for `capture-plan`, which needs no URL).
    pub(crate) fn validate_values(&self) -> Result<(), String> {
        for url in [
            &self.url,
            &self.mapping_url,
            &self.formal_url,
            &self.control_url,
        ]
        .into_iter()
        .filter_map(given)
        {
            check_url(url)?;
        }
        let positive = [
            ("--num-steps", self.num_steps),
            ("--prefill-input-len", self.prefill_input_len),
            ("--prefill-output-len", self.prefill_output_len),
            ("--decode-input-len", self.decode_input_len),
            ("--decode-output-len", self.decode_output_len),
            ("--probe-requests", self.probe_requests),
        ];
        for (flag, value) in positive {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        if self.probe_max_new_tokens == Some(0) {
            return Err("--probe-max-new-tokens must be at least 1".to_string());
        }
        if self.sglang_guard_step.is_some_and(|g| g > 1) {
            return Err("--sglang-guard-step must be 0 or 1".to_string());
        }
        let seconds = [
            ("--probe-delay", Some(self.probe_delay), 0.0),
            (
                "--request-timeout",
                Some(self.request_timeout),
                f64::MIN_POSITIVE,
            ),
            ("--flush-timeout", self.flush_timeout, f64::MIN_POSITIVE),
        ];
        for (flag, value, min) in seconds {
            if let Some(v) = value {
                if !(v.is_finite() && v >= min && v <= 86_400.0) {
                    return Err(format!(
                        "{flag} must be a number of seconds between 0 and 86400, got {v}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// An option that is present and non-empty.
pub(crate) fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// Only `http://host[:port][/prefix]`: the client is built without TLS.
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with("https://") {
        return Err(format!(
            "{url}: https is not supported yet (the capture client speaks plain http)"
        ));
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(format!(
            "{url} is not an http:// URL (expected http://host:port)"
        ));
    };
    if rest.trim_matches('/').is_empty() {
        return Err(format!("{url} has no host"));
    }
    Ok(())
}
