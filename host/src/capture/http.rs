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

/// The most a probe, tokenizer or profiler-control answer may hold: they are a few KB
/// (an endless `/server_info` once grew to 4.6 GB in the probe window).
pub(crate) const SMALL_BODY_LIMIT: usize = 1 << 20;
/// The most a generation answer may hold (`--probe-max-new-tokens` of text is far less).
pub(crate) const GENERATE_BODY_LIMIT: usize = 64 << 20;

/// An answer: status, body text, and where a redirect (never followed) pointed.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
    pub location: Option<String>,
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

/// The client of every capture request. Redirects are not followed: a server's answer
/// picks the engine and the model, so it must be this server's answer, not that of
/// whichever host it points to.
pub(crate) fn client() -> Result<reqwest::Client, TriageError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| TriageError::Capture(format!("cannot start the HTTP client: {e}")))
}

/// Sends one request and reads at most `limit` bytes of the answer (`timeout` covers
/// the whole exchange, body included). `Err` is a failure to get an answer, or one
/// larger than `limit`, worded for a message.
pub(crate) async fn send(
    client: &reqwest::Client,
    method: HttpMethod,
    url: &str,
    body: Option<&str>,
    timeout: Duration,
    limit: usize,
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
    let mut response = request.send().await.map_err(|e| describe(&e, timeout))?;
    let status = response.status().as_u16();
    let location = response
        .status()
        .is_redirection()
        .then(|| response.headers().get(reqwest::header::LOCATION))
        .flatten()
        .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e, timeout))? {
        if bytes.len() + chunk.len() > limit {
            // Dropping the response closes the connection: nothing more is read.
            return Err(format!(
                "HTTP {status}, an answer larger than {}; read no further",
                size(limit)
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        location,
    })
}

/// `1 MiB`, `64 MiB`.
fn size(bytes: usize) -> String {
    format!("{} MiB", bytes >> 20)
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

/// `HTTP <status>: <first line of the body>`; a redirect says where to, and that it was
/// not followed.
pub(crate) fn status_text(answer: &Answer) -> String {
    if let Some(location) = &answer.location {
        return format!(
            "HTTP {}, a redirect to {location} (not followed)",
            answer.status
        );
    }
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

/// What the probes found, and one line per probe whose answer was not used as sent: a
/// redirect (not followed) or an answer over [`SMALL_BODY_LIMIT`].
pub(crate) struct Probed {
    pub evidence: EndpointEvidence,
    pub notes: Vec<String>,
}

impl Probed {
    /// `err` with the first probe note appended (a refusal made on probes a server
    /// redirected says where to), still one line.
    pub(crate) fn explain(&self, err: TriageError) -> TriageError {
        let Some(first) = self.notes.first() else {
            return err;
        };
        let more = match self.notes.len() - 1 {
            0 => String::new(),
            n => format!(" (+{n} more)"),
        };
        match err {
            TriageError::FrameworkRefused(m) => {
                TriageError::FrameworkRefused(format!("{m}; {first}{more}"))
            }
            TriageError::Capture(m) => TriageError::Capture(format!("{m}; {first}{more}")),
            other => other,
        }
    }
}

/// GETs every probe path at once. A probe that gets no answer, or one over
/// [`SMALL_BODY_LIMIT`], has status 0; a redirect keeps its status and an empty body.
pub(crate) async fn gather_evidence(
    client: &reqwest::Client,
    url: &str,
    control_url: Option<&str>,
) -> Probed {
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
            tokio::spawn(async move {
                let answer = send(
                    &client,
                    HttpMethod::Get,
                    &full,
                    None,
                    PROBE_TIMEOUT,
                    SMALL_BODY_LIMIT,
                )
                .await;
                (full, answer)
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(handles.len());
    let mut notes = Vec::new();
    for handle in handles {
        let answer = match handle.await {
            Ok((full, answer)) => {
                match &answer {
                    Err(why) if why.contains("read no further") => {
                        notes.push(format!("GET {full}: {why}, taken as no answer"));
                    }
                    Ok(a) if a.location.is_some() => {
                        notes.push(format!("GET {full}: {}", status_text(a)));
                    }
                    _ => {}
                }
                answer
            }
            Err(e) => Err(e.to_string()),
        };
        answers.push(answer);
    }
    let evidence = EndpointEvidence {
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
    };
    Probed { evidence, notes }
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
