//! Live-capture flags (flattened into the triage arguments) and the `probe` and
//! `capture-plan` subcommands' arguments. `commands/` turns them into
//! `capture::Options`, where the checks clap cannot express live.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Which workloads a live capture profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileWorkload {
    /// One mixed capture of a short instruction prompt (the predecessor's first mode).
    Legacy,
    Prefill,
    Decode,
    /// Prefill, then decode, each in its own stage directory.
    Both,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Live capture (http only)")]
pub struct CaptureArgs {
    /// Capture from a running server at URL (http://host:port), then triage the traces.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Where the traces land. SGLang and TokenSpeed: any directory the server can write
    /// (default: a new temp dir). vLLM and TensorRT-LLM: required, the server's own trace
    /// directory (torch_profiler_dir / TLLM_TORCH_PROFILE_TRACE's dir) as seen from here.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// TokenSpeed: the control sidecar's URL when /start_profile is not on --url
    /// (by default the serving port + 1).
    #[arg(long, value_name = "URL")]
    pub control_url: Option<String>,
    /// Mapping+formal mode: capture the mapping trace (CUDA graphs off) from URL.
    #[arg(long, value_name = "URL")]
    pub mapping_url: Option<String>,
    /// Mapping+formal mode: capture the formal trace (production config) from URL.
    #[arg(long, value_name = "URL")]
    pub formal_url: Option<String>,
    /// Like --output-dir, for --mapping-url.
    #[arg(long, value_name = "DIR")]
    pub mapping_output_dir: Option<PathBuf>,
    /// Like --output-dir, for --formal-url.
    #[arg(long, value_name = "DIR")]
    pub formal_output_dir: Option<PathBuf>,
    /// Workloads to profile, in order.
    #[arg(long, value_enum, default_value_t = ProfileWorkload::Both)]
    pub profile_workload: ProfileWorkload,
    /// Requests of the same shape sent before the profiler starts (decode: the tokens of
    /// one warm-up request).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub warmup_steps: u32,
    /// Forward steps to record (and at least this many prefill requests).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub num_steps: u32,
    /// Prompt tokens of each prefill request.
    #[arg(long, value_name = "TOKENS", default_value_t = 4090)]
    pub prefill_input_len: u32,
    /// Output tokens of each prefill request.
    #[arg(long, value_name = "TOKENS", default_value_t = 1)]
    pub prefill_output_len: u32,
    /// Prompt tokens of the decode request.
    #[arg(long, value_name = "TOKENS", default_value_t = 1)]
    pub decode_input_len: u32,
    /// Output tokens of the decode request (exactly: ignore_eos / min_tokens).
    #[arg(long, value_name = "TOKENS", default_value_t = 2048)]
    pub decode_output_len: u32,
    /// Trace name prefix (SGLang profile_prefix, TokenSpeed profile_id) [default: triage-trace].
    #[arg(long, value_name = "TEXT")]
    pub profile_prefix: Option<String>,
    /// Like --profile-prefix, for --mapping-url [default: mapping-trace].
    #[arg(long, value_name = "TEXT")]
    pub mapping_profile_prefix: Option<String>,
    /// Like --profile-prefix, for --formal-url [default: formal-trace].
    #[arg(long, value_name = "TEXT")]
    pub formal_profile_prefix: Option<String>,
    /// SGLang legacy workload: let SGLang split EXTEND/DECODE itself (on by default there).
    #[arg(long, overrides_with = "no_profile_by_stage")]
    pub profile_by_stage: bool,
    #[arg(long, hide = true)]
    pub no_profile_by_stage: bool,
    /// SGLang only: rank 0 also writes a merged trace.
    #[arg(long)]
    pub merge_profiles: bool,
    /// SGLang only: start recording at this forward step.
    #[arg(long, value_name = "STEP")]
    pub start_step: Option<u64>,
    /// SGLang only: extra steps asked beyond --num-steps (builds before
    /// sgl-project/sglang#30215 stop one early) [default: from the server version].
    #[arg(long, value_name = "0|1")]
    pub sglang_guard_step: Option<u32>,
    /// Capture requests per stage (prefill sends at least --num-steps).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub probe_requests: u32,
    /// Legacy workload prompt.
    #[arg(
        long,
        value_name = "TEXT",
        default_value = "Repeat the word profiler many times with spaces so the server performs several decode steps. Do not add explanations."
    )]
    pub probe_prompt: String,
    /// Legacy workload output tokens [default: max(64, 8 x --num-steps)].
    #[arg(long, value_name = "TOKENS")]
    pub probe_max_new_tokens: Option<u32>,
    /// Seconds between starting the profiler and the first capture request.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.5)]
    pub probe_delay: f64,
    /// Seconds each HTTP request may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub request_timeout: f64,
    /// Seconds to wait for complete trace files after the stop [default: per engine].
    #[arg(long, value_name = "SECONDS")]
    pub flush_timeout: Option<f64>,
}

/// `llm-triage probe`: a latency and correctness smoke test over the engine's API.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// Engine (auto detects from the server's answers).
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub framework: String,
    /// TokenSpeed control sidecar, when probing for detection.
    #[arg(long, value_name = "URL")]
    pub control_url: Option<String>,
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub requests: u32,
    #[arg(long, value_name = "TOKENS", default_value_t = 48)]
    pub max_tokens: u32,
    /// Seconds per request.
    #[arg(long, value_name = "SECONDS", default_value_t = 180.0)]
    pub timeout: f64,
    /// Prompts to cycle through (repeatable; replaces the defaults).
    #[arg(long = "prompt", value_name = "TEXT")]
    pub prompts: Vec<String>,
}

/// `llm-triage capture-plan`: print what a capture would do, without doing it.
#[derive(Debug, Clone, Args)]
pub struct CapturePlanArgs {
    /// Engine whose protocol to print (a plugin name or alias).
    #[arg(long, value_name = "NAME")]
    pub framework: String,
    #[command(flatten)]
    pub capture: CaptureArgs,
}
