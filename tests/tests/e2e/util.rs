//! Shared helpers for the end-to-end tests: the real binary, built once, and the real
//! plugins beside it; the shared traces; independent recounts of trace events.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// `target/<profile>/`, after building the binary and the four engine plugins once.
/// `cargo test` does not build cdylibs or other packages' binaries, so we ask cargo
/// (nested cargo is fine: the test run no longer holds the build lock).
pub fn target_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "llm-triage",
                "-p",
                "llm-triage-plugin-sglang",
                "-p",
                "llm-triage-plugin-vllm",
                "-p",
                "llm-triage-plugin-trtllm",
                "-p",
                "llm-triage-plugin-tokenspeed",
            ])
            .current_dir(workspace_root())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the binary and plugins failed");
        // The test executable lives in target/<profile>/deps/.
        let exe = std::env::current_exe().expect("test executable path");
        exe.parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf()
    })
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The shared traces directory, `../shared/traces` beside the checkout (real traces kept
/// out of the repository; `SOURCES.md` there says where each comes from).
/// The names in `dir`, sorted (what a test expects to be left there).
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub(crate) fn shared_traces_dir() -> PathBuf {
    workspace_root().join("../shared/traces")
}

/// One trace of [`shared_traces_dir`], which must be there.
pub fn shared_trace(name: &str) -> PathBuf {
    let p = shared_traces_dir().join(name);
    assert!(p.exists(), "shared trace missing: {}", p.display());
    p
}

/// The traces of [`shared_traces_dir`] and the `--framework auto` verdict SOURCES.md's
/// "Expected framework verdicts" table gives each (`vllm`, `sglang (stage: decode)`,
/// `refuse: …`), sorted by file name. Asserts the directory holds exactly the traces the
/// table lists, so a trace added to shared/ without a verdict fails here, by name.
pub(crate) fn shared_trace_verdicts() -> Vec<(PathBuf, String)> {
    let dir = shared_traces_dir();
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    let table = sources
        .split("Expected framework verdicts")
        .nth(1)
        .expect("SOURCES.md has an expected-verdicts table");
    let mut listed: Vec<(PathBuf, String)> = table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (file, verdict) = (cells.get(1)?, cells.get(2)?);
            file.contains(".json")
                .then(|| (dir.join(file), verdict.to_string()))
        })
        .collect();
    listed.sort();
    let mut present: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    present.sort();
    let listed_paths: Vec<&PathBuf> = listed.iter().map(|(p, _)| p).collect();
    assert_eq!(
        present.iter().collect::<Vec<_>>(),
        listed_paths,
        "the traces in shared/traces and SOURCES.md's verdict table"
    );
    listed
}

/// The `XDG_DATA_HOME` of every run that should see no user plugin dir. Nothing creates
/// it: the tests that install plugins give their run a temporary `XDG_DATA_HOME` of its own.
pub(crate) fn empty_xdg_data_home() -> PathBuf {
    std::env::temp_dir().join("llm-triage-tests-empty-xdg")
}

/// A command running the real `llm-triage` binary with only the built plugins visible
/// (no user plugin dir, no environment leaking in).
pub fn llm_triage() -> assert_cmd::Command {
    let bin = target_dir().join("llm-triage");
    let mut cmd = assert_cmd::Command::new(bin);
    cmd.env_remove("LLM_TRIAGE_PLUGIN_PATH")
        .env("XDG_DATA_HOME", empty_xdg_data_home())
        .env("NO_COLOR", "1");
    cmd
}

/// A copy of the real binary as `dir/llm-triage`, alone there (so it finds no plugins
/// beside it). `cp` writes the copy in a process of its own: a copy written by this
/// process would be open for writing while another test thread spawns a child, the child
/// would inherit that descriptor until its own exec, and running the copy would then fail
/// with ETXTBSY ("Text file busy").
pub(crate) fn binary_copy_in(dir: &Path) -> PathBuf {
    let copy = dir.join("llm-triage");
    let status = Command::new("cp")
        .arg(target_dir().join("llm-triage"))
        .arg(&copy)
        .status()
        .expect("cp runs");
    assert!(status.success(), "copying the binary to {}", copy.display());
    copy
}

/// Runs a triage with `--format json` and returns the parsed report.
pub fn triage_json(args: &[&str]) -> Value {
    let out = llm_triage()
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "llm-triage {:?} failed ({:?}): {}",
        args,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// The raw events of a trace, parsed here independently of the tool.
pub fn raw_events(path: &Path) -> Vec<Value> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
        bytes = out;
    }
    match serde_json::from_slice::<Value>(&bytes).unwrap() {
        Value::Object(mut o) => match o.remove("traceEvents") {
            Some(Value::Array(a)) => a,
            _ => panic!("no traceEvents"),
        },
        Value::Array(a) => a,
        _ => panic!("not a trace"),
    }
}

/// Integer nanoseconds from a Kineto microsecond value, via its decimal text.
pub fn us_to_ns(v: &Value) -> i64 {
    let text = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => panic!("not a number: {v}"),
    };
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut frac = frac.to_string();
    frac.truncate(3);
    while frac.len() < 3 {
        frac.push('0');
    }
    int.parse::<i64>().unwrap() * 1000 + frac.parse::<i64>().unwrap()
}

/// GPU events (kernel, memcpy, memset) with a positive duration.
pub fn gpu_events(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter(|e| {
            let cat = e["cat"].as_str().unwrap_or("").to_lowercase();
            matches!(
                cat.as_str(),
                "kernel" | "gpu_memcpy" | "gpu_memset" | "memcpy" | "memset"
            )
        })
        .filter(|e| us_to_ns(&e["dur"]) > 0)
        .collect()
}

/// The effective user id, from `id -u` (the tests hold no libc binding): root-only cases
/// check it and say so when they cannot run.
pub(crate) fn euid() -> u32 {
    let out = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a uid")
}
