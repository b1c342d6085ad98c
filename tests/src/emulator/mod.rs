//! Engine emulators: one real HTTP server per engine on 127.0.0.1 (ephemeral port) that
//! implements that engine's profiler contract as its current upstream sources do
//! (listed below per engine) and writes real traces from the fixture generator.
//!
//! * SGLang: `/start_profile` and `/stop_profile` (GET or POST) answer plain text; a
//!   second start or a stop when idle is a 500; `num_steps` auto-stops counted in forward
//!   steps (one short on builds before sgl-project/sglang#30215, the `version` decides);
//!   an auto-stop flushes asynchronously, in pieces, while an explicit stop answers after
//!   the file is written. `/server_info` (new) or only `/get_server_info` (old builds),
//!   `/generate`, `/tokenize`, `/v1/models` (`owned_by: sglang`).
//! * vLLM: POST-only routes, no body read, empty 200; 404 when started without a profiler
//!   config; every step between start and stop is recorded, the trace is written at the
//!   stop into the server's own dir as `dp0_pp0_tp0_dcp0_ep0_rank0.<ms>.pt.trace.json.gz`.
//! * TensorRT-LLM: no profiler routes (404); a `TLLM_PROFILE_START_STOP`-style iteration
//!   window and trace base set at start-up; `<base>-rank-0.json` written at the stop
//!   iteration. `/server_info` answers `{"disaggregated_params": null}`.
//! * TokenSpeed: serving port with `/readiness`, `/v1/models`, `/v1/completions`; a
//!   control port with `/start_profile`/`/stop_profile` (body fields, `profile_id`,
//!   `num_steps`), `/get_server_info`; files `<profile_id>-TP0.trace.json.gz`.
//!
//! One forward step per generated token (the first is the request's prefill). Requests
//! without `ignore_eos`/`min_tokens` stop early at an "EOS" after 7 tokens.

pub mod http;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::{write_fixture, Engine, FixtureSpec, StageKind};
use http::{serve_until, Request, Response, Server};

/// Tokens a request generates when it may stop at EOS.
pub const EOS_AFTER: u64 = 7;

/// What to break, and other knobs.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Answer `/start_profile` with this instead.
    pub start_answer: Option<(u16, String)>,
    /// Answer `/stop_profile` with this instead (after doing nothing).
    pub stop_answer: Option<(u16, String)>,
    /// Answer generation requests with this.
    pub generate_answer: Option<(u16, String)>,
    /// `/v1/models` answers HTML.
    pub models_not_json: bool,
    /// Each generation request takes this long.
    pub generate_delay: Option<Duration>,
    /// Never write a trace.
    pub no_trace: bool,
    /// Write a trace whose gzip stream is cut (never complete).
    pub truncated_trace: bool,
    /// Write every trace in this many pieces with this pause between them.
    pub slow_flush: Option<(usize, Duration)>,
    /// vLLM started without `--profiler-config`.
    pub no_profiler: bool,
    /// `/tokenize` missing.
    pub no_tokenizer: bool,
    /// The server dies right after answering the profiler start: every later
    /// connection is refused.
    pub die_after_start: bool,
    /// `/stop_profile` takes this long to answer (the stop itself happens at arrival).
    pub stop_delay: Option<Duration>,
    /// `/start_profile` takes this long to answer (the profiler starts at arrival).
    pub start_delay: Option<Duration>,
    /// This long after a trace is complete, a cut copy is renamed over it (another
    /// writer, a rotated file).
    pub replace_with_truncated: Option<Duration>,
    /// This path answers 200 with a body that never ends (`/server_info`, `/generate`).
    pub endless_body: Option<String>,
    /// This path answers with a body that never ends while a profile runs (after a
    /// successful `/start_profile`).
    pub endless_while_profiling: Option<String>,
    /// Every GET answers `302 Found` to the same path on this base URL (another server).
    pub redirect_to: Option<String>,
}

/// How an emulated server is set up.
#[derive(Clone, Debug)]
pub struct Config {
    pub engine: Engine,
    pub model: String,
    /// SGLang `version` (`None`: an old build with only `/get_server_info`).
    pub version: Option<String>,
    /// vLLM `torch_profiler_dir`; TensorRT-LLM trace dir.
    pub server_dir: Option<PathBuf>,
    /// TensorRT-LLM: `TLLM_PROFILE_START_STOP` window and `TLLM_TORCH_PROFILE_TRACE` base
    /// name (`trace-prefill.json`).
    pub trt_window: Option<(u64, u64, String)>,
    pub faults: Faults,
}

impl Config {
    pub fn new(engine: Engine) -> Self {
        Config {
            engine,
            model: "Qwen/Qwen3-8B".to_string(),
            version: Some("0.5.18".to_string()),
            server_dir: None,
            trt_window: None,
            faults: Faults::default(),
        }
    }
}

/// One request the emulator served, for assertions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub method: String,
    pub path: String,
    /// The JSON body (`Null` when none).
    pub body: Value,
    /// Generation: prompt length (tokens, or words for text) and tokens generated.
    pub prompt_len: Option<u64>,
    pub generated: Option<u64>,
}

/// One profile the emulator recorded: the kind of every forward in it, and the files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub steps: Vec<StageKind>,
    pub files: Vec<PathBuf>,
}

#[derive(Default)]
struct State {
    forward_ct: u64,
    active: Option<Active>,
    served: Vec<Served>,
    recorded: Vec<Recorded>,
    profiles: u64,
    /// `METHOD path` of every request, at its arrival (before any answer).
    arrived: Vec<String>,
}

struct Active {
    steps: Vec<StageKind>,
    /// Stop before the forward that reaches this count (auto-stop), if any.
    stop_at: Option<u64>,
    start_at: u64,
    output_dir: PathBuf,
    /// File name stem (prefix + profile id), engine-specific.
    stem: String,
    by_stage: bool,
}

/// A running emulated engine.
pub struct Emulator {
    pub config: Config,
    server: Server,
    control: Option<Server>,
    state: Arc<Mutex<State>>,
    /// Set when the emulated server dies (`Faults::die_after_start`).
    dead: Arc<AtomicBool>,
}

impl Emulator {
    pub fn start(config: Config) -> Emulator {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::new(config.clone());
        let dead = Arc::new(AtomicBool::new(false));
        let (s, c, d) = (state.clone(), shared.clone(), dead.clone());
        let server = serve_until(move |req| handle(&c, &s, req, false, &d), dead.clone())
            .expect("bind emulator");
        let control = (config.engine == Engine::Tokenspeed).then(|| {
            let (s, c, d) = (state.clone(), shared.clone(), dead.clone());
            serve_until(move |req| handle(&c, &s, req, true, &d), dead.clone())
                .expect("bind control")
        });
        Emulator {
            config,
            server,
            control,
            state,
            dead,
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn control_url(&self) -> Option<String> {
        self.control.as_ref().map(Server::url)
    }

    pub fn served(&self) -> Vec<Served> {
        self.state.lock().unwrap().served.clone()
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().recorded.clone()
    }

    /// True while a profile is running (a stop was missed).
    pub fn profiling(&self) -> bool {
        self.state.lock().unwrap().active.is_some()
    }

    /// `METHOD path` of every request that reached the server, in arrival order, also
    /// those still unanswered.
    pub fn arrived(&self) -> Vec<String> {
        self.state.lock().unwrap().arrived.clone()
    }

    /// Whether the emulated server died.
    pub fn dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }
}

fn handle(
    config: &Config,
    state: &Mutex<State>,
    req: &Request,
    control: bool,
    dead: &AtomicBool,
) -> Response {
    state
        .lock()
        .unwrap()
        .arrived
        .push(format!("{} {}", req.method, req.path));
    let response = route(config, state, req, control);
    if let Some(delay) = config
        .faults
        .start_delay
        .filter(|_| req.path == "/start_profile")
    {
        std::thread::sleep(delay);
    }
    if config.faults.die_after_start
        && req.path == "/start_profile"
        && (200..300).contains(&response.0.status)
    {
        dead.store(true, Ordering::SeqCst);
    }
    let body = req.json().unwrap_or(Value::Null);
    let (prompt_len, generated) = match (&response.1, req.path.as_str()) {
        (Some(g), _) => (Some(g.0), Some(g.1)),
        _ => (None, None),
    };
    state.lock().unwrap().served.push(Served {
        method: req.method.clone(),
        path: req.path.clone(),
        body,
        prompt_len,
        generated,
    });
    response.0
}

type Routed = (Response, Option<(u64, u64)>);

fn route(config: &Config, state: &Mutex<State>, req: &Request, control: bool) -> Routed {
    let plain = |r: Response| (r, None);
    if config.faults.endless_body.as_deref() == Some(req.path.as_str()) {
        return plain(Response::endless());
    }
    let profiling = state.lock().unwrap().active.is_some();
    if profiling && config.faults.endless_while_profiling.as_deref() == Some(req.path.as_str()) {
        return plain(Response::endless());
    }
    if let Some(other) = config
        .faults
        .redirect_to
        .as_ref()
        .filter(|_| req.method == "GET")
    {
        return plain(Response::redirect(&format!("{other}{}", req.path)));
    }
    let get_or_post = req.method == "GET" || req.method == "POST";
    match (config.engine, req.path.as_str(), control) {
        (_, "/health", _) => plain(Response::text(200, "")),
        (Engine::Tokenspeed, "/start_profile" | "/stop_profile", false) => {
            plain(Response::not_found())
        }
        (Engine::Tokenspeed, "/get_server_info", true) => plain(Response::json(
            200,
            json!({
                "model_path": config.model, "attn_tp_size": 1, "dense_tp_size": 1, "tp_size": 1
            }),
        )),
        (Engine::Tokenspeed, _, true)
            if !matches!(req.path.as_str(), "/start_profile" | "/stop_profile") =>
        {
            plain(Response::not_found())
        }
        (_, "/v1/models", false) if config.faults.models_not_json => {
            plain(Response::text(200, "<html><body>gateway</body></html>"))
        }
        (engine, "/v1/models", false) => {
            let owner = match engine {
                Engine::Sglang => "sglang",
                Engine::Vllm => "vllm",
                Engine::Trtllm => "tensorrt_llm",
                Engine::Tokenspeed => "smg",
            };
            plain(Response::json(
                200,
                json!({"object": "list", "data": [{"id": config.model, "object": "model", "owned_by": owner}]}),
            ))
        }
        (Engine::Sglang, "/server_info", false) if config.version.is_some() => {
            plain(Response::json(200, sglang_info(config)))
        }
        (Engine::Sglang, "/get_server_info", false) => {
            plain(Response::json(200, sglang_info(config)))
        }
        (Engine::Vllm, "/version", false) => {
            plain(Response::json(200, json!({"version": "0.11.0"})))
        }
        (Engine::Trtllm, "/version", false) => {
            plain(Response::json(200, json!({"version": "1.2.0"})))
        }
        (Engine::Trtllm, "/server_info", false) => {
            plain(Response::json(200, json!({"disaggregated_params": null})))
        }
        (Engine::Tokenspeed, "/readiness", false) => {
            plain(Response::json(200, json!({"status": "ready"})))
        }
        (Engine::Sglang | Engine::Vllm, "/tokenize", false)
            if !config.faults.no_tokenizer && req.method == "POST" =>
        {
            let text = req
                .json()
                .and_then(|b| b["prompt"].as_str().map(str::to_string))
                .unwrap_or_default();
            let tokens = tokenize(&text);
            plain(Response::json(
                200,
                json!({"tokens": tokens, "count": tokens.len(), "max_model_len": 40960}),
            ))
        }
        (Engine::Sglang, "/generate", false) if req.method == "POST" => {
            generate(config, state, req, true)
        }
        (Engine::Vllm | Engine::Trtllm | Engine::Tokenspeed, "/v1/completions", false)
            if req.method == "POST" =>
        {
            generate(config, state, req, false)
        }
        (Engine::Sglang, "/start_profile", _) if get_or_post => {
            plain(sglang_start(config, state, req))
        }
        (Engine::Sglang, "/stop_profile", _) if get_or_post => plain(stop(
            config,
            state,
            "Stop profiling. This will take some time.\n",
        )),
        (Engine::Vllm, "/start_profile" | "/stop_profile", _) if config.faults.no_profiler => {
            plain(Response::not_found())
        }
        (Engine::Vllm, "/start_profile" | "/stop_profile", _) if req.method != "POST" => {
            plain(Response::method_not_allowed())
        }
        (Engine::Vllm, "/start_profile", _) => plain(vllm_start(config, state)),
        (Engine::Vllm, "/stop_profile", _) => plain(stop(config, state, "")),
        (Engine::Tokenspeed, "/start_profile", true) if get_or_post => {
            plain(tokenspeed_start(config, state, req))
        }
        (Engine::Tokenspeed, "/stop_profile", true) if get_or_post => {
            plain(stop(config, state, ""))
        }
        _ => plain(Response::not_found()),
    }
}

fn version_at_least(version: &str, wanted: (u64, u64, u64)) -> bool {
    let parts: Vec<u64> = version
        .trim_start_matches('v')
        .split('.')
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect();
    let at = |i: usize| parts.get(i).copied().unwrap_or(0);
    (at(0), at(1), at(2)) >= wanted
}

fn sglang_info(config: &Config) -> Value {
    let mut info = json!({
        "model_path": config.model,
        "tokenizer_path": config.model,
        "attention_backend": "flashinfer",
        "chunked_prefill_size": 8192,
        "schedule_policy": "fcfs",
        "tp_size": 1,
        "internal_states": [{"last_gen_throughput": 0.0}],
    });
    if let Some(v) = &config.version {
        info["version"] = v.clone().into();
    }
    info
}

/// One token per word; a `req-<k>` marker is three tokens (`req`, `-`, `<k>`).
fn tokenize(text: &str) -> Vec<u64> {
    let mut ids = Vec::new();
    for word in text.split_whitespace() {
        if let Some(k) = word.strip_prefix("req-") {
            ids.extend([900, 12, 1000 + k.parse::<u64>().unwrap_or(0)]);
        } else {
            ids.push(5000 + word.len() as u64);
        }
    }
    ids
}

fn generate(config: &Config, state: &Mutex<State>, req: &Request, native: bool) -> Routed {
    if let Some(delay) = config.faults.generate_delay {
        std::thread::sleep(delay);
    }
    if let Some((status, body)) = &config.faults.generate_answer {
        return (Response::text(*status, body), None);
    }
    let Some(body) = req.json() else {
        return (
            Response::json(400, json!({"detail": "body is not JSON"})),
            None,
        );
    };
    let (prompt, max, ignore_eos, min) = if native {
        let s = &body["sampling_params"];
        let prompt = body
            .get("input_ids")
            .cloned()
            .unwrap_or_else(|| body["text"].clone());
        (
            prompt,
            s["max_new_tokens"].as_u64(),
            s["ignore_eos"].as_bool(),
            s["min_new_tokens"].as_u64(),
        )
    } else {
        if body["model"] != json!(config.model) {
            return (
                Response::json(
                    404,
                    json!({"detail": format!("model {} not found", body["model"])}),
                ),
                None,
            );
        }
        (
            body["prompt"].clone(),
            body["max_tokens"].as_u64(),
            body["ignore_eos"].as_bool(),
            body["min_tokens"].as_u64(),
        )
    };
    let prompt_len = match &prompt {
        Value::Array(ids) => ids.len() as u64,
        Value::String(text) => text.split_whitespace().count() as u64,
        _ => return (Response::json(400, json!({"detail": "no prompt"})), None),
    };
    let max = max.unwrap_or(16).max(1);
    let generated = if ignore_eos == Some(true) || min.unwrap_or(0) >= max {
        max
    } else {
        max.min(EOS_AFTER)
    };
    for i in 0..generated {
        forward(
            config,
            state,
            if i == 0 {
                StageKind::Extend
            } else {
                StageKind::Decode
            },
        );
    }
    let text = vec!["profile"; generated as usize].join(" ");
    let answer = if native {
        json!({"text": text, "meta_info": {"prompt_tokens": prompt_len, "completion_tokens": generated}})
    } else {
        json!({"id": "cmpl-1", "object": "text_completion", "model": config.model,
               "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
               "usage": {"prompt_tokens": prompt_len, "completion_tokens": generated, "total_tokens": prompt_len + generated}})
    };
    (Response::json(200, answer), Some((prompt_len, generated)))
}

/// One forward step: counted, recorded while profiling, auto-stopped at the target.
fn forward(config: &Config, state: &Mutex<State>, kind: StageKind) {
    let mut st = state.lock().unwrap();
    st.forward_ct += 1;
    let ct = st.forward_ct;
    // TensorRT-LLM: the window set at start-up, 1-based iterations, written at its end.
    if let Some((first, last, base)) = &config.trt_window {
        if ct == *first {
            st.active = Some(Active {
                steps: Vec::new(),
                stop_at: None,
                start_at: ct,
                output_dir: config.server_dir.clone().expect("TensorRT-LLM trace dir"),
                stem: base.trim_end_matches(".json").to_string(),
                by_stage: false,
            });
        }
        if let Some(active) = st.active.as_mut() {
            active.steps.push(kind);
        }
        if ct == *last {
            if let Some(active) = st.active.take() {
                drop(st);
                let _ = finish(config, state, active, false);
            }
        }
        return;
    }
    // SGLang/TokenSpeed check the target after counting and before running the batch.
    let stop_now = st
        .active
        .as_ref()
        .is_some_and(|a| a.stop_at.is_some_and(|t| ct >= t));
    if stop_now {
        let active = st.active.take().expect("active");
        drop(st);
        let _ = finish(config, state, active, true);
        return;
    }
    if let Some(active) = st.active.as_mut() {
        if ct > active.start_at {
            active.steps.push(kind);
        }
    }
}

fn sglang_start(config: &Config, state: &Mutex<State>, req: &Request) -> Response {
    if let Some((status, body)) = &config.faults.start_answer {
        return Response::text(*status, body);
    }
    let body = req.json().unwrap_or(json!({}));
    let mut st = state.lock().unwrap();
    if st.active.is_some() {
        return Response::json(
            500,
            json!({"detail": "Profiling is already in progress. Call /stop_profile first."}),
        );
    }
    let num_steps = body["num_steps"].as_u64();
    // PR #30215 (v0.5.17 and later): the target counts the forward about to run.
    let fixed = config
        .version
        .as_deref()
        .is_some_and(|v| version_at_least(v, (0, 5, 17)));
    let ct = st.forward_ct;
    st.profiles += 1;
    let id = format!("{}.{:04}", 1_761_000_000 + st.profiles, st.profiles);
    let prefix = body["profile_prefix"].as_str().unwrap_or("");
    st.active = Some(Active {
        steps: Vec::new(),
        stop_at: num_steps.map(|n| ct + n + u64::from(fixed)),
        start_at: ct,
        output_dir: PathBuf::from(body["output_dir"].as_str().unwrap_or("/tmp")),
        stem: if prefix.is_empty() {
            id
        } else {
            format!("{prefix}-{id}")
        },
        by_stage: body["profile_by_stage"].as_bool().unwrap_or(false),
    });
    Response::text(200, "Start profiling.\n")
}

fn vllm_start(config: &Config, state: &Mutex<State>) -> Response {
    if let Some((status, body)) = &config.faults.start_answer {
        return Response::text(*status, body);
    }
    let mut st = state.lock().unwrap();
    // A second start while active is ignored.
    if st.active.is_none() {
        let ct = st.forward_ct;
        st.active = Some(Active {
            steps: Vec::new(),
            stop_at: None,
            start_at: ct,
            output_dir: config.server_dir.clone().expect("vLLM torch_profiler_dir"),
            stem: "dp0_pp0_tp0_dcp0_ep0_rank0".to_string(),
            by_stage: false,
        });
    }
    Response::text(200, "")
}

fn tokenspeed_start(config: &Config, state: &Mutex<State>, req: &Request) -> Response {
    if let Some((status, body)) = &config.faults.start_answer {
        return Response::text(*status, body);
    }
    let body = req.json().unwrap_or(json!({}));
    let mut st = state.lock().unwrap();
    if st.active.is_some() {
        return Response::json(
            500,
            json!({"detail": "Profiling is already in progress. Call /stop_profile first."}),
        );
    }
    let ct = st.forward_ct;
    st.active = Some(Active {
        steps: Vec::new(),
        stop_at: body["num_steps"].as_u64().map(|n| ct + n),
        start_at: ct,
        output_dir: PathBuf::from(body["output_dir"].as_str().unwrap_or("/tmp")),
        stem: body["profile_id"]
            .as_str()
            .unwrap_or("20260822-101500")
            .to_string(),
        by_stage: body["profile_by_stage"].as_bool().unwrap_or(false),
    });
    Response::json(200, json!({"success": true, "message": "Start profiling."}))
}

fn stop(config: &Config, state: &Mutex<State>, ok_text: &str) -> Response {
    if let Some((status, body)) = &config.faults.stop_answer {
        return Response::text(*status, body);
    }
    let active = state.lock().unwrap().active.take();
    let answer = stop_answer(config, state, active, ok_text);
    if let Some(delay) = config.faults.stop_delay {
        std::thread::sleep(delay);
    }
    answer
}

fn stop_answer(
    config: &Config,
    state: &Mutex<State>,
    active: Option<Active>,
    ok_text: &str,
) -> Response {
    match active {
        // An explicit stop answers after the file is on disk; a failed write (disk
        // full) is the export error the engine reports.
        Some(active) => {
            if let Err(e) = finish(config, state, active, false) {
                return Response::json(
                    500,
                    json!({"detail": format!("RuntimeError: torch profiler export failed: {e}")}),
                );
            }
            if config.engine == Engine::Tokenspeed {
                Response::json(200, json!({"success": true, "message": "Stop profiling."}))
            } else {
                Response::text(200, ok_text)
            }
        }
        None if config.engine == Engine::Vllm => Response::text(200, ""),
        None => Response::json(
            500,
            json!({"detail": "Profiling is not in progress. Call /start_profile first."}),
        ),
    }
}

/// Writes the trace(s) of a finished profile: at once, or on a background thread in
/// pieces (SGLang's asynchronous flush after an auto-stop, or `slow_flush`). A write
/// done at once can fail (the profile is recorded anyway).
fn finish(
    config: &Config,
    state: &Mutex<State>,
    active: Active,
    auto: bool,
) -> std::io::Result<()> {
    let mut files = Vec::new();
    let mut outcome = Ok(());
    let kinds: Vec<Vec<StageKind>> = if active.by_stage {
        let extend: Vec<_> = active
            .steps
            .iter()
            .copied()
            .filter(|k| *k == StageKind::Extend)
            .collect();
        let decode: Vec<_> = active
            .steps
            .iter()
            .copied()
            .filter(|k| *k == StageKind::Decode)
            .collect();
        [extend, decode]
            .into_iter()
            .filter(|v| !v.is_empty())
            .collect()
    } else {
        vec![active.steps.clone()]
    };
    for steps in &kinds {
        let stage = stage_of(steps);
        let name = file_name(config, &active, stage, active.by_stage);
        let path = active.output_dir.join(name);
        files.push(path.clone());
        if config.faults.no_trace {
            continue;
        }
        let bytes = trace_bytes(config.engine, stage, config.engine != Engine::Trtllm, &path);
        let bytes = if config.faults.truncated_trace {
            bytes[..bytes.len() * 2 / 3].to_vec()
        } else {
            bytes
        };
        let pieces = config
            .faults
            .slow_flush
            .or(if auto && config.engine == Engine::Sglang {
                Some((4, Duration::from_millis(150)))
            } else {
                None
            });
        match pieces {
            Some((n, pause)) => {
                std::thread::spawn(move || write_in_pieces(&path, &bytes, n, pause));
            }
            None => {
                let _ = std::fs::create_dir_all(path.parent().unwrap());
                match std::fs::write(&path, &bytes) {
                    Ok(()) => {
                        if let Some(delay) = config.faults.replace_with_truncated {
                            let cut = bytes[..bytes.len() / 2].to_vec();
                            std::thread::spawn(move || replace_later(&path, &cut, delay));
                        }
                    }
                    Err(e) => outcome = Err(e),
                }
            }
        }
    }
    state.lock().unwrap().recorded.push(Recorded {
        steps: active.steps,
        files,
    });
    outcome
}

/// After `delay`, renames a file holding `bytes` over `path`.
fn replace_later(path: &Path, bytes: &[u8], delay: Duration) {
    std::thread::sleep(delay);
    let tmp = path.with_extension("replacing");
    if std::fs::write(&tmp, bytes).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

fn stage_of(steps: &[StageKind]) -> StageKind {
    let extend = steps.contains(&StageKind::Extend);
    let decode = steps.contains(&StageKind::Decode);
    match (extend, decode) {
        (true, false) => StageKind::Extend,
        (false, true) => StageKind::Decode,
        _ => StageKind::Mixed,
    }
}

fn file_name(config: &Config, active: &Active, stage: StageKind, by_stage: bool) -> String {
    let suffix = match (by_stage, stage) {
        (true, StageKind::Extend) => "-EXTEND",
        (true, StageKind::Decode) => "-DECODE",
        _ => "",
    };
    match config.engine {
        Engine::Sglang => format!("{}-TP-0{suffix}.trace.json.gz", active.stem),
        Engine::Tokenspeed => format!("{}-TP0{suffix}.trace.json.gz", active.stem),
        Engine::Vllm => format!(
            "{}.{}.pt.trace.json.gz",
            active.stem,
            1_761_000_000_000u64 + active.start_at
        ),
        Engine::Trtllm => format!("{}-rank-0.json", active.stem),
    }
}

/// A fixture trace of `stage` as the bytes the engine would write to `path`.
fn trace_bytes(engine: Engine, stage: StageKind, gzip: bool, path: &Path) -> Vec<u8> {
    static SCRATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SCRATCH.fetch_add(1, Ordering::Relaxed);
    let _ = path;
    let scratch =
        std::env::temp_dir().join(format!("llm-triage-emulator-{}-{n}", std::process::id()));
    let spec = FixtureSpec {
        gzip,
        ..FixtureSpec::new(engine, stage)
    };
    let (written, _) = write_fixture(&scratch, &spec).expect("fixture");
    let bytes = std::fs::read(&written).expect("read fixture");
    let _ = std::fs::remove_dir_all(&scratch);
    bytes
}

/// Writes `bytes` in pieces; a failing write ends it (what remains is a cut file).
fn write_in_pieces(path: &Path, bytes: &[u8], pieces: usize, pause: Duration) {
    use std::io::Write;
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    let Ok(mut file) = std::fs::File::create(path) else {
        return;
    };
    let size = bytes.len().div_ceil(pieces.max(1)).max(1);
    for chunk in bytes.chunks(size) {
        if file.write_all(chunk).and_then(|_| file.flush()).is_err() {
            return;
        }
        std::thread::sleep(pause);
    }
}
