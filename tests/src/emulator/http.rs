//! A small HTTP/1.1 server on std threads: one thread accepts on 127.0.0.1:0, one thread
//! per connection reads one request (Content-Length bodies) and answers with
//! `Connection: close`. Enough for reqwest, and free of async in the tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One parsed request.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
}

impl Request {
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// One answer.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Send `body` again and again, without a length, until the client hangs up (a
    /// hostile or broken server).
    pub endless: bool,
    /// A `Location` header (redirects).
    pub location: Option<String>,
}

impl Response {
    pub fn json(status: u16, value: serde_json::Value) -> Self {
        Response {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
            endless: false,
            location: None,
        }
    }

    pub fn text(status: u16, text: &str) -> Self {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: text.as_bytes().to_vec(),
            endless: false,
            location: None,
        }
    }

    /// A JSON-looking answer that never ends: `{"model_path": "aaaa…` forever.
    pub fn endless() -> Self {
        Response {
            status: 200,
            content_type: "application/json",
            body: vec![b'a'; 64 * 1024],
            endless: true,
            location: None,
        }
    }

    /// `302 Found` to `location`.
    pub fn redirect(location: &str) -> Self {
        Response {
            location: Some(location.to_string()),
            ..Response::text(302, "")
        }
    }

    /// FastAPI's answer to an unknown route.
    pub fn not_found() -> Self {
        Response::json(404, serde_json::json!({"detail": "Not Found"}))
    }

    pub fn method_not_allowed() -> Self {
        Response::json(405, serde_json::json!({"detail": "Method Not Allowed"}))
    }
}

/// A running server; stops accepting when dropped.
pub struct Server {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Server {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Starts a server that answers every request with `handler`.
pub fn serve(
    handler: impl Fn(&Request) -> Response + Send + Sync + 'static,
) -> std::io::Result<Server> {
    serve_until(handler, Arc::new(AtomicBool::new(false)))
}

/// [`serve`], stopping once `stop` is set (by the handler itself, say: a server that
/// dies): the listener closes, so later connections are refused.
pub fn serve_until(
    handler: impl Fn(&Request) -> Response + Send + Sync + 'static,
    stop: Arc<AtomicBool>,
) -> std::io::Result<Server> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let handler = Arc::new(handler);
    let flag = stop.clone();
    std::thread::spawn(move || {
        while !flag.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let handler = handler.clone();
                    std::thread::spawn(move || {
                        let _ = answer(stream, &*handler);
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => break,
            }
        }
    });
    Ok(Server { addr, stop })
}

fn answer(stream: TcpStream, handler: &dyn Fn(&Request) -> Response) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let path = target.split('?').next().unwrap_or("/").to_string();
    let response = handler(&Request { method, path, body });
    let mut out = stream;
    let location = response
        .location
        .as_ref()
        .map(|l| format!("location: {l}\r\n"))
        .unwrap_or_default();
    let length = if response.endless {
        String::new()
    } else {
        format!("content-length: {}\r\n", response.body.len())
    };
    write!(
        out,
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\n{length}{location}connection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
    )?;
    if response.endless {
        // No length and `connection: close`: the body ends when the connection does,
        // which is when the client gives up (the write then fails).
        out.write_all(b"{\"model_path\": \"")?;
        loop {
            out.write_all(&response.body)?;
        }
    }
    out.write_all(&response.body)?;
    out.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
