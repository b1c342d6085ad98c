//! The HTTP side of a capture: one `reqwest` client, requests that say which step they
//! are, and failures worded as one line naming the URL, the step and the answer.

use std::time::Duration;

use llm_triage_plugin_api::{EndpointEvidence, HttpCall, HttpMethod, ProbeAnswer};

use crate::error::TriageError;

/// Bodies are cut to this in messages.
const SHOWN_BODY: usize = 200;
/// Probe bodies handed to plugins are cut to this.
const PROBE_BODY: usize = 64 * 1024;
/// GET probes are short: a live server answers them at once.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The GET probes of [`EndpointEvidence`], on the serving URL.
pub(crate) const PROBES: [&str; 5] = [
    "/server_info",
    "/get_server_info",
    "/version",
    "/v1/models",
    "/readiness",
];
/// Probes of the control URL (TokenSpeed's sidecar serves these itself).
pub(crate) const CONTROL_PROBES: [&str; 2] = ["/get_server_info", "/health"];

/// An answer: status and body text.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A base URL without its trailing `/`.
pub(crate) fn base(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

pub(crate) fn client() -> Result<reqwest::Client, TriageError> {
    reqwest::Client::builder()
        .build()
        .map_err(|e| TriageError::Capture(format!("cannot start the HTTP client: {e}")))
}

/// Sends one request. `Err` is a failure to get any answer, worded for a message.
pub(crate) async fn send(
    client: &reqwest::Client,
    method: HttpMethod,
    url: &str,
    body: Option<&str>,
    timeout: Duration,
) -> Result<Answer, String> {
    let mut request = match method {
        HttpMethod::Get => client.get(url),
        HttpMethod::Post => client.post(url),
    }
    .timeout(timeout);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.map_err(|e| describe(&e, timeout))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| describe(&e, timeout))?;
    Ok(Answer { status, body })
}

fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no answer within {}", seconds(timeout))
    } else if e.is_connect() {
        // The innermost cause says "Connection refused" and the like.
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        format!("cannot connect ({cause})")
    } else {
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(e);
        while let Some(c) = cause {
            text = format!("{text}: {c}");
            cause = c.source();
        }
        text
    }
}

pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// One line: `POST http://h/start_profile (start the profiler): HTTP 404: <body>`.
pub(crate) fn failure(method: HttpMethod, url: &str, step: &str, what: &str) -> TriageError {
    TriageError::Capture(format!("{} {url} ({step}): {what}", method.as_str()))
}

/// `HTTP <status>: <first line of the body>`.
pub(crate) fn status_text(answer: &Answer) -> String {
    let body = snippet(&answer.body);
    if body.is_empty() {
        format!("HTTP {} (empty body)", answer.status)
    } else {
        format!("HTTP {}: {body}", answer.status)
    }
}

/// The body on one line, cut to a readable length.
pub(crate) fn snippet(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > SHOWN_BODY {
        let cut: String = one_line.chars().take(SHOWN_BODY).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// Whether `answer` is success for `call`: any 2xx, or an accepted status + body text.
pub(crate) fn accepted(call: &HttpCall, answer: &Answer) -> bool {
    answer.ok()
        || call
            .also_accept
            .iter()
            .any(|a| a.status == answer.status && answer.body.contains(a.body_contains.as_str()))
}

/// GETs every probe path at once. A probe that gets no answer has status 0.
pub(crate) async fn gather_evidence(
    client: &reqwest::Client,
    url: &str,
    control_url: Option<&str>,
) -> EndpointEvidence {
    let base_url = base(url);
    let control = control_url.map(base);
    let mut targets: Vec<(String, bool)> = PROBES.iter().map(|p| (p.to_string(), false)).collect();
    if control.is_some() {
        targets.extend(CONTROL_PROBES.iter().map(|p| (p.to_string(), true)));
    }
    // All probes at once: a black-holed host costs one timeout, not five.
    let handles: Vec<_> = targets
        .iter()
        .map(|(path, on_control)| {
            let root = if *on_control {
                control.as_deref().unwrap_or(&base_url)
            } else {
                &base_url
            };
            let full = format!("{root}{path}");
            let client = client.clone();
            tokio::spawn(
                async move { send(&client, HttpMethod::Get, &full, None, PROBE_TIMEOUT).await },
            )
        })
        .collect();
    let mut answers = Vec::with_capacity(handles.len());
    for handle in handles {
        answers.push(handle.await.unwrap_or_else(|e| Err(e.to_string())));
    }
    EndpointEvidence {
        base_url: base_url.as_str().into(),
        control_url: control.unwrap_or_default().as_str().into(),
        probes: targets
            .iter()
            .zip(answers)
            .map(|((path, on_control), answer)| {
                let (status, body) = match answer {
                    Ok(a) => (a.status, cut(&a.body, PROBE_BODY)),
                    Err(_) => (0, String::new()),
                };
                ProbeAnswer {
                    path: path.as_str().into(),
                    status,
                    body: body.into(),
                    control: *on_control,
                }
            })
            .collect(),
    }
}

/// `[/server_info: 404, /v1/models: 200, /readiness: no answer]`.
pub(crate) fn probe_summary(evidence: &EndpointEvidence) -> String {
    let parts: Vec<String> = evidence
        .probes
        .iter()
        .map(|p| {
            let status = match p.status {
                0 => "no answer".to_string(),
                s => s.to_string(),
            };
            let at = if p.control { " (control)" } else { "" };
            format!("{}{at}: {status}", p.path)
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}
