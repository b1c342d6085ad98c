//! Synthetic load: the requests of one stage, as the predecessor planned them, with its
//! flaws fixed:
//!
//! * Prompt lengths are in tokens when the server has a tokenizer endpoint (the prompt is
//!   then sent as token ids, cut to exactly the length asked), in words otherwise (noted).
//! * Every request starts with its own marker (`req-<k>`), so no prefix cache can turn a
//!   measured prefill into a cache hit; warm-up and capture markers never repeat.
//! * Decode asks for exactly N tokens (`ignore_eos`, `min_tokens` where the engine takes
//!   them) and the notes say how many the server generated.
//! * The API is the engine's (SGLang native `/generate`, else `/v1/completions`), chosen
//!   by the plugin, never by trial and error.

use std::time::{Duration, Instant};

use llm_triage_plugin_api::{CapturePlan, GenerateApi, HttpMethod, Workload};
use serde_json::{json, Value};

use super::http::{self, send};
use crate::error::TriageError;

/// The shape of one stage's load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub workload: Workload,
    /// Prompt length (tokens, or words without a tokenizer); `None`: the legacy prompt.
    pub input_len: Option<u32>,
    pub legacy_prompt: String,
    pub warmup_requests: u32,
    pub warmup_tokens: u32,
    pub capture_requests: u32,
    pub capture_tokens: u32,
}

/// The flags a shape is built from.
#[derive(Clone, Debug)]
pub(crate) struct ShapeFlags {
    pub warmup_steps: u32,
    pub num_steps: u32,
    pub probe_requests: u32,
    pub prefill_input_len: u32,
    pub prefill_output_len: u32,
    pub decode_input_len: u32,
    pub decode_output_len: u32,
    pub probe_prompt: String,
    pub probe_max_new_tokens: Option<u32>,
}

/// Requests per stage (the predecessor's plans): prefill sends at least `num_steps` one-token
/// requests
/// after as many warm-ups as `--warmup-steps`; decode sends one long generation after one
/// warm-up generation of `--warmup-steps` tokens; legacy sends the instruction prompt.
pub(crate) fn shape(workload: Workload, f: &ShapeFlags) -> Shape {
    let c = f.probe_requests.max(1);
    let n = f.num_steps.max(1);
    match workload {
        Workload::Prefill => Shape {
            workload,
            input_len: Some(f.prefill_input_len),
            legacy_prompt: String::new(),
            warmup_requests: f.warmup_steps,
            warmup_tokens: f.prefill_output_len.max(1),
            capture_requests: c.max(n),
            capture_tokens: f.prefill_output_len.max(1),
        },
        Workload::Decode => Shape {
            workload,
            input_len: Some(f.decode_input_len),
            legacy_prompt: String::new(),
            warmup_requests: u32::from(f.warmup_steps > 0),
            warmup_tokens: f.warmup_steps.max(1),
            capture_requests: c,
            capture_tokens: f.decode_output_len.max(1),
        },
        Workload::Legacy => {
            let tokens = f.probe_max_new_tokens.unwrap_or((n * 8).max(64));
            Shape {
                workload,
                input_len: None,
                legacy_prompt: f.probe_prompt.clone(),
                warmup_requests: f.warmup_steps,
                warmup_tokens: tokens,
                capture_requests: c,
                capture_tokens: tokens,
            }
        }
    }
}

/// A prompt: token ids (exact length) or text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Prompt {
    Tokens(Vec<u64>),
    Text(String),
}

/// How prompts are made for one server.
pub(crate) struct Generator<'a> {
    pub client: &'a reqwest::Client,
    pub base_url: &'a str,
    pub plan: &'a CapturePlan,
    /// The model id the OpenAI API needs.
    pub model: Option<String>,
    pub timeout: Duration,
    /// Set once the tokenizer endpoint failed, so prompts fall back to words.
    pub tokenizer_failed: Option<String>,
}

/// The text of request `k`: its marker, then words up to `len` words in all.
pub(crate) fn prompt_text(k: u32, len: u32) -> String {
    let mut words = vec![format!("req-{k}")];
    words.extend(std::iter::repeat_n(
        "profile".to_string(),
        len.saturating_sub(1) as usize,
    ));
    words.join(" ")
}

/// The legacy prompt with its marker in front.
pub(crate) fn legacy_text(k: u32, prompt: &str) -> String {
    format!("req-{k} {prompt}")
}

/// What the capture requests of a stage produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    pub requests: u32,
    /// Tokens the server said it generated, summed; `None` when it did not say.
    pub generated: Option<u64>,
    pub asked: u64,
}

impl Generator<'_> {
    fn tokenizer(&self) -> Option<&str> {
        let path = self.plan.tokenize_path.as_str();
        (!path.is_empty() && self.tokenizer_failed.is_none()).then_some(path)
    }

    /// The prompt of request `k` with `len` tokens (words without a tokenizer).
    pub(crate) async fn prompt(&mut self, k: u32, shape: &Shape) -> Result<Prompt, TriageError> {
        let Some(len) = shape.input_len else {
            return Ok(Prompt::Text(legacy_text(k, &shape.legacy_prompt)));
        };
        let Some(path) = self.tokenizer().map(str::to_string) else {
            return Ok(Prompt::Text(prompt_text(k, len)));
        };
        // Words are about a token each; ask for a few more and cut to the exact length.
        let mut words = len + 8;
        for _ in 0..4 {
            match self.tokenize(&path, &prompt_text(k, words)).await {
                Ok(ids) if ids.len() >= len as usize => {
                    return Ok(Prompt::Tokens(ids[..len as usize].to_vec()));
                }
                Ok(ids) => {
                    // Fewer tokens than words (a merging tokenizer): grow the text.
                    let per_word = (ids.len().max(1) as f64 / words as f64).max(0.05);
                    words = ((len as f64 / per_word) as u32 + 8).max(words * 2);
                }
                Err(why) => {
                    self.tokenizer_failed = Some(why);
                    return Ok(Prompt::Text(prompt_text(k, len)));
                }
            }
        }
        self.tokenizer_failed = Some(format!("{path} gave fewer than {len} tokens"));
        Ok(Prompt::Text(prompt_text(k, len)))
    }

    async fn tokenize(&self, path: &str, text: &str) -> Result<Vec<u64>, String> {
        let url = format!("{}{path}", self.base_url);
        let mut body = json!({"prompt": text, "add_special_tokens": false});
        if let Some(model) = &self.model {
            body["model"] = model.clone().into();
        }
        let answer = send(
            self.client,
            HttpMethod::Post,
            &url,
            Some(&body.to_string()),
            self.timeout,
            http::SMALL_BODY_LIMIT,
        )
        .await?;
        if !answer.ok() {
            return Err(format!("POST {url}: {}", http::status_text(&answer)));
        }
        let value: Value = serde_json::from_str(&answer.body).map_err(|_| {
            format!(
                "POST {url}: non-JSON answer: {}",
                http::snippet(&answer.body)
            )
        })?;
        value
            .get("tokens")
            .and_then(Value::as_array)
            .and_then(|ids| ids.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            .ok_or_else(|| format!("POST {url}: no \"tokens\" list in the answer"))
    }

    /// Sends one generation request; returns the tokens generated when the server says.
    pub(crate) async fn generate(
        &self,
        prompt: &Prompt,
        max_tokens: u32,
        step: &str,
    ) -> Result<Option<u64>, TriageError> {
        let (path, body) = self.body(prompt, max_tokens);
        let url = format!("{}{path}", self.base_url);
        let started = Instant::now();
        let answer = send(
            self.client,
            HttpMethod::Post,
            &url,
            Some(&body.to_string()),
            self.timeout,
            http::GENERATE_BODY_LIMIT,
        )
        .await
        .map_err(|why| http::failure(HttpMethod::Post, &url, step, &why))?;
        let _ = started;
        if !answer.ok() {
            return Err(http::failure(
                HttpMethod::Post,
                &url,
                step,
                &http::status_text(&answer),
            ));
        }
        let value: Value = serde_json::from_str(&answer.body).map_err(|_| {
            http::failure(
                HttpMethod::Post,
                &url,
                step,
                &format!("answered non-JSON: {}", http::snippet(&answer.body)),
            )
        })?;
        Ok(generated_tokens(&value))
    }

    /// The request body of the plan's API.
    pub(crate) fn body(&self, prompt: &Prompt, max_tokens: u32) -> (&'static str, Value) {
        match self.plan.generate {
            GenerateApi::SglangNative => {
                let mut sampling = json!({"temperature": 0.0, "max_new_tokens": max_tokens});
                if self.plan.ignore_eos {
                    sampling["ignore_eos"] = true.into();
                }
                if self.plan.min_tokens {
                    sampling["min_new_tokens"] = max_tokens.into();
                }
                let mut body = json!({"sampling_params": sampling, "stream": false});
                match prompt {
                    Prompt::Tokens(ids) => body["input_ids"] = json!(ids),
                    Prompt::Text(text) => body["text"] = json!(text),
                }
                ("/generate", body)
            }
            GenerateApi::OpenAiCompletions => {
                let mut body = json!({
                    "model": self.model.clone().unwrap_or_default(),
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "stream": false,
                });
                body["prompt"] = match prompt {
                    Prompt::Tokens(ids) => json!(ids),
                    Prompt::Text(text) => json!(text),
                };
                if self.plan.ignore_eos {
                    body["ignore_eos"] = true.into();
                }
                if self.plan.min_tokens {
                    body["min_tokens"] = max_tokens.into();
                }
                ("/v1/completions", body)
            }
        }
    }

    /// Sends `count` requests of `tokens` each, numbered from `first`, one at a time.
    pub(crate) async fn run(
        &mut self,
        shape: &Shape,
        first: u32,
        count: u32,
        tokens: u32,
        what: &str,
    ) -> Result<Sent, TriageError> {
        let mut sent = Sent {
            requests: 0,
            generated: Some(0),
            asked: 0,
        };
        for i in 0..count {
            let prompt = self.prompt(first + i, shape).await?;
            let step = format!("{what} request {}/{count}", i + 1);
            let generated = self.generate(&prompt, tokens, &step).await?;
            sent.requests += 1;
            sent.asked += u64::from(tokens);
            sent.generated = match (sent.generated, generated) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        Ok(sent)
    }
}

/// `usage.completion_tokens` (OpenAI) or `meta_info.completion_tokens` (SGLang).
pub(crate) fn generated_tokens(value: &Value) -> Option<u64> {
    value
        .pointer("/usage/completion_tokens")
        .or_else(|| value.pointer("/meta_info/completion_tokens"))
        .or_else(|| {
            value
                .get(0)
                .and_then(|v| v.pointer("/meta_info/completion_tokens"))
        })
        .and_then(Value::as_u64)
}

/// The text a generation answer carries (probe): OpenAI choices, SGLang `text`.
pub(crate) fn answer_text(value: &Value) -> Option<String> {
    let choice = value.pointer("/choices/0");
    let candidates = [
        choice.and_then(|c| c.pointer("/message/content")),
        choice.and_then(|c| c.pointer("/message/reasoning_content")),
        choice.and_then(|c| c.get("text")),
        value.get("text"),
        value.get("output_text"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> ShapeFlags {
        ShapeFlags {
            warmup_steps: 10,
            num_steps: 7,
            probe_requests: 1,
            prefill_input_len: 4090,
            prefill_output_len: 1,
            decode_input_len: 1,
            decode_output_len: 321,
            probe_prompt: "Repeat".to_string(),
            probe_max_new_tokens: None,
        }
    }

    // The predecessor's plans: prefill max(requests, num_steps) x 1 token after
    // warmup_steps warm-ups; decode one long generation after one warm-up of warmup_steps
    // tokens.
    #[test]
    fn shapes_follow_the_predecessor_plans() {
        let p = shape(Workload::Prefill, &flags());
        assert_eq!(
            (
                p.warmup_requests,
                p.warmup_tokens,
                p.capture_requests,
                p.capture_tokens
            ),
            (10, 1, 7, 1)
        );
        let d = shape(Workload::Decode, &flags());
        assert_eq!(
            (
                d.warmup_requests,
                d.warmup_tokens,
                d.capture_requests,
                d.capture_tokens
            ),
            (1, 10, 1, 321)
        );
        let l = shape(Workload::Legacy, &flags());
        assert_eq!((l.capture_tokens, l.input_len), (64, None));
        let no_warmup = ShapeFlags {
            warmup_steps: 0,
            ..flags()
        };
        assert_eq!(shape(Workload::Decode, &no_warmup).warmup_requests, 0);
    }

    #[test]
    fn prompts_are_unique_and_of_the_asked_word_count() {
        assert_eq!(prompt_text(10, 3), "req-10 profile profile");
        assert_eq!(prompt_text(0, 1), "req-0");
        assert_ne!(prompt_text(1, 50), prompt_text(2, 50));
        assert_eq!(prompt_text(3, 4090).split(' ').count(), 4090);
    }

    #[test]
    fn generated_counts_and_text() {
        let openai = json!({"choices": [{"text": "hi"}], "usage": {"completion_tokens": 12}});
        assert_eq!(generated_tokens(&openai), Some(12));
        assert_eq!(answer_text(&openai).as_deref(), Some("hi"));
        let sglang = json!({"text": "yo", "meta_info": {"completion_tokens": 3}});
        assert_eq!(generated_tokens(&sglang), Some(3));
        assert_eq!(answer_text(&sglang).as_deref(), Some("yo"));
        assert_eq!(generated_tokens(&json!({})), None);
    }
}
