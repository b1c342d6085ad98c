//! Live capture across the ABI (since plugin API 1.2.0): what the host saw at a server's
//! URL ([`EndpointEvidence`]), what the user asked to capture ([`CaptureRequest`]), and the
//! engine's answer, a declarative [`CapturePlan`] the host executes over HTTP.
//!
//! Plugins stay pure: a plan is data (paths, JSON bodies, which answers count as success,
//! where trace files appear). The host does all I/O: probing, warm-up and workload
//! requests, start/stop, waiting for complete trace files, moving them into stage dirs.

use abi_stable::{
    std_types::{ROption, RString, RVec},
    StableAbi,
};

/// One GET probe the host sent before choosing an engine or asking for a plan.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeAnswer {
    /// The path probed, e.g. `/server_info`.
    pub path: RString,
    /// HTTP status; 0 when there was no answer (refused, timed out, reset).
    pub status: u16,
    /// The start of the answer's body (the host caps it at 64 KiB).
    pub body: RString,
    /// True when the probe went to the control URL (`--control-url`) rather than `--url`.
    pub control: bool,
}

/// The answers of a few GET probes of a server: `/server_info`, `/get_server_info`,
/// `/version`, `/v1/models`, `/readiness` (and `/get_server_info` on the control URL).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointEvidence {
    pub base_url: RString,
    /// The profiler control URL when it differs from `base_url` (TokenSpeed's sidecar);
    /// empty otherwise.
    pub control_url: RString,
    pub probes: RVec<ProbeAnswer>,
}

impl EndpointEvidence {
    /// The answer to `path` on the serving URL (`control == false`) or the control URL.
    pub fn probe(&self, path: &str, control: bool) -> Option<&ProbeAnswer> {
        self.probes
            .iter()
            .find(|p| p.path.as_str() == path && p.control == control)
    }

    /// The raw body of a 2xx answer to `path` on the serving URL.
    pub fn ok_body(&self, path: &str) -> Option<&str> {
        self.probe(path, false)
            .filter(|p| (200..300).contains(&p.status))
            .map(|p| p.body.as_str())
    }
}

/// What one capture profiles.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Long prompts, one output token each: every captured step is a prefill.
    Prefill,
    /// One short prompt generating many tokens: the captured steps are decodes.
    Decode,
    /// The predecessor's single mixed capture (one prompt, a few dozen tokens).
    Legacy,
}

impl Workload {
    /// The stage directory name (`prefill`, `decode`); `legacy` has none of its own.
    pub fn label(self) -> &'static str {
        match self {
            Workload::Prefill => "prefill",
            Workload::Decode => "decode",
            Workload::Legacy => "legacy",
        }
    }
}

/// What the user asked the host to capture, for one workload.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct CaptureRequest {
    pub workload: Workload,
    /// Absolute directory (as this machine sees it) this capture's traces should land in.
    /// For engines that write to a directory of their own choosing (vLLM's
    /// `torch_profiler_dir`, TensorRT-LLM's `TLLM_TORCH_PROFILE_TRACE`), the server's dir.
    pub output_dir: RString,
    /// Forward steps to record.
    pub num_steps: u32,
    /// Warm-up requests sent before the profiler starts (engines with a fixed iteration
    /// window, TensorRT-LLM, place the window after them).
    pub warmup_steps: u32,
    /// File-name prefix (SGLang `profile_prefix`, TokenSpeed `profile_id` base).
    pub profile_prefix: RString,
    /// True when the user passed `--profile-prefix` (engines that ignore it say so then).
    pub prefix_explicit: bool,
    /// `--profile-by-stage` / `--no-profile-by-stage`; `RNone` when not given.
    pub profile_by_stage: ROption<bool>,
    pub merge_profiles: bool,
    pub start_step: ROption<u64>,
    /// `--sglang-guard-step`: `RNone` = decide from the server version.
    pub guard_step: ROption<u32>,
}

#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
        }
    }
}

/// A non-2xx answer that still counts as success: its status, and text its body must
/// contain (empty: any body). E.g. SGLang's 500 "Profiling is not in progress" on an
/// explicit stop after the server already stopped at `num_steps`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub status: u16,
    pub body_contains: RString,
}

/// One profiler control request. Any 2xx answer is success, whatever its body (SGLang
/// answers plain text); so is an answer listed in `also_accept`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct HttpCall {
    pub method: HttpMethod,
    /// Path on the base (or control) URL, e.g. `/start_profile`.
    pub path: RString,
    /// JSON text of the body; `RNone` sends no body at all (vLLM reads none).
    pub body: ROption<RString>,
    /// Send to the control URL (`--control-url`) when one is given.
    pub on_control_url: bool,
    pub also_accept: RVec<Accepted>,
    /// A 404 means "this server has no such route" and is not an error (the host then
    /// skips the matching stop and relies on the engine's own window, see plan notes).
    pub optional: bool,
    /// What to tell the user when the route answers 404 and is not optional, e.g. how to
    /// start the server so the route exists.
    pub if_missing: RString,
}

/// How the host sends workload requests.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenerateApi {
    /// SGLang's native `POST /generate` (`text` or `input_ids`, `sampling_params`).
    SglangNative,
    /// OpenAI-compatible `POST /v1/completions` (no chat template on synthetic load).
    OpenAiCompletions,
}

/// Where trace files appear and how the host knows they are this capture's.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct TraceFiles {
    /// The server writes into a directory it was started with (vLLM, TensorRT-LLM), which
    /// must be the `--output-dir` the user passed; the host moves the files that appeared
    /// after the start into the stage directory. When false the server writes into the
    /// `output_dir` of the request (sent in the start body).
    pub server_owned_dir: bool,
    /// File-name endings that mark a trace, e.g. `.trace.json.gz`.
    pub suffixes: RVec<RString>,
    /// Names must start with this (empty: any name).
    pub name_prefix: RString,
    /// How long to wait after the stop for every new file to be complete, in ms.
    pub flush_timeout_ms: u64,
}

/// The engine's protocol for one capture, executed by the host.
///
/// Order: warm-up requests; `start`; the workload's capture requests; `stop` (always
/// attempted once `start` succeeded); wait until new trace files are complete.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct CapturePlan {
    /// `RNone`: the server profiles on its own (a window set when it was started).
    pub start: ROption<HttpCall>,
    pub stop: ROption<HttpCall>,
    pub traces: TraceFiles,
    pub generate: GenerateApi,
    /// Path of a tokenizer endpoint answering `{"tokens": [...]}`; empty when none.
    pub tokenize_path: RString,
    /// Send `ignore_eos: true` so decode runs the full length.
    pub ignore_eos: bool,
    /// Send `min_tokens` equal to the token budget.
    pub min_tokens: bool,
    /// The probe path whose JSON answer is the server's args (saved as
    /// `server_args.json`); empty when the engine has none.
    pub server_args_probe: RString,
    /// Facts the report should show (the window captured, the guard step and why, ...).
    pub notes: RVec<RString>,
}

/// Suggested flush limits, in ms.
pub mod flush {
    /// SGLang's asynchronous export can finish well after the stop answer.
    pub const SLOW: u64 = 180_000;
    /// Engines that export before answering the stop.
    pub const PROMPT: u64 = 60_000;
}

/// Constructors that keep plan builders short. Plain Rust: plugins compile them in.
pub mod build {
    use super::{Accepted, HttpCall, HttpMethod};
    use abi_stable::std_types::{ROption, RString, RVec};

    /// `POST path` with an optional JSON body; 2xx is success, 404 is an error.
    pub fn post(path: &str, body: Option<String>) -> HttpCall {
        HttpCall {
            method: HttpMethod::Post,
            path: path.into(),
            body: match body {
                Some(b) => ROption::RSome(RString::from(b)),
                None => ROption::RNone,
            },
            on_control_url: false,
            also_accept: RVec::new(),
            optional: false,
            if_missing: RString::new(),
        }
    }

    /// `call` also succeeding on `status` when the body contains `text`.
    pub fn accepting(mut call: HttpCall, status: u16, text: &str) -> HttpCall {
        call.also_accept.push(Accepted {
            status,
            body_contains: text.into(),
        });
        call
    }

    /// A usage error: the host exits 2 with `message` (the flags do not fit this engine).
    pub fn usage(message: impl Into<String>) -> String {
        format!("{USAGE_PREFIX}{}", message.into())
    }

    /// Marks a plan refusal that is the user's flags' fault (exit 2), not the server's.
    pub const USAGE_PREFIX: &str = "usage: ";
}
