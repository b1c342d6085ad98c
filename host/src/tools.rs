//! `llm-triage tool`: the text tools plugins offer (plugin API 1.3).
//!
//! `tool` lists every plugin's tools, `tool <plugin>` one plugin's, and
//! `tool <plugin> <tool> --<input> FILE --<output> FILE` runs one. The plugin is pure:
//! this module reads the inputs, hands their text over, checks each output as the tool
//! asks (`python3 -m py_compile` for Python), and only then writes the outputs, each
//! atomically. A refusal (input not recognised, output does not compile) writes nothing
//! and exits 3, naming the input.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use llm_triage_plugin_api::tools::check;
use llm_triage_plugin_api::{ToolFile, ToolSpec};

use crate::error::{Result, TriageError};
use crate::output;
use crate::plugins::{Engine, PluginSet};

/// One `tool` command: which plugin and tool, and the tool's own arguments.
#[derive(Clone, Debug)]
pub(crate) struct Invocation {
    /// The plugin's name or alias; `None`: list every plugin's tools.
    pub plugin: Option<String>,
    /// The tool; `None`: list the plugin's tools.
    pub tool: Option<String>,
    /// The tool's own arguments, e.g. `--source FILE --output FILE`.
    pub args: Vec<String>,
}

/// Runs the `tool` subcommand; returns the text to print.
pub(crate) fn run(invocation: &Invocation, plugins: &PluginSet) -> Result<String> {
    let Some(plugin) = &invocation.plugin else {
        return list(plugins.engines.iter());
    };
    let engine = plugins.find(plugin).ok_or_else(|| {
        let known: Vec<&str> = plugins.engines.iter().map(|e| e.name()).collect();
        TriageError::Usage(format!(
            "no plugin named {plugin:?}; loaded: {}",
            known.join(", ")
        ))
    })?;
    let Some(tool) = &invocation.tool else {
        return list(std::iter::once(engine));
    };
    let tools = engine.tools()?;
    let spec = tools
        .iter()
        .find(|t| t.name.as_str() == tool)
        .ok_or_else(|| {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            TriageError::Usage(format!(
                "plugin {} has no tool {tool:?} (its tools: {})",
                engine.name(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        })?;
    if invocation.args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(format!("{}\n\n{}\n", spec.summary, usage(engine, spec)));
    }
    let files = parse_files(engine, spec, &invocation.args)?;
    run_tool(engine, spec, &files)
}

/// The files a tool run reads and writes, from its flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolFiles {
    /// `(flag name, path)` in the spec's order.
    pub inputs: Vec<(String, PathBuf)>,
    pub outputs: Vec<(String, PathBuf)>,
}

/// `--name FILE` or `--name=FILE` for every input and output the spec declares.
pub(crate) fn parse_files(engine: &Engine, spec: &ToolSpec, args: &[String]) -> Result<ToolFiles> {
    let usage_error =
        |problem: String| TriageError::Usage(format!("{problem}; usage: {}", usage(engine, spec)));
    let mut given: Vec<(String, PathBuf)> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(usage_error(format!("unexpected argument {arg:?}")));
        };
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name.to_string(), value.to_string()),
            None => {
                let value = rest
                    .next()
                    .ok_or_else(|| usage_error(format!("--{flag} needs a FILE")))?;
                (flag.to_string(), value.clone())
            }
        };
        let known = spec
            .inputs
            .iter()
            .chain(spec.outputs.iter())
            .any(|f| f.as_str() == name);
        if !known {
            return Err(usage_error(format!("unknown flag --{name}")));
        }
        if given.iter().any(|(n, _)| *n == name) {
            return Err(usage_error(format!("--{name} given twice")));
        }
        given.push((name, PathBuf::from(value)));
    }
    let take = |names: &[abi_stable::std_types::RString]| {
        names
            .iter()
            .map(|n| {
                given
                    .iter()
                    .find(|(g, _)| g == n.as_str())
                    .cloned()
                    .ok_or_else(|| usage_error(format!("--{n} FILE is required")))
            })
            .collect::<Result<Vec<_>>>()
    };
    Ok(ToolFiles {
        inputs: take(&spec.inputs)?,
        outputs: take(&spec.outputs)?,
    })
}

/// Reads, transforms, checks, writes.
fn run_tool(engine: &Engine, spec: &ToolSpec, files: &ToolFiles) -> Result<String> {
    let mut inputs = Vec::new();
    for (name, path) in &files.inputs {
        let bytes = std::fs::read(path)
            .map_err(|e| TriageError::input(path, format!("cannot read: {e}")))?;
        let text =
            String::from_utf8(bytes).map_err(|_| TriageError::input(path, "not UTF-8 text"))?;
        inputs.push(ToolFile {
            name: name.as_str().into(),
            text: text.into(),
        });
    }
    // Refusals name the first input: that is what the tool could not recognise.
    let subject = files
        .inputs
        .first()
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| PathBuf::from(spec.name.as_str()));
    let output = engine
        .run_tool(spec.name.as_str(), &inputs)?
        .map_err(|reason| TriageError::input(&subject, format!("{reason}; nothing written")))?;

    let mut outputs = Vec::new();
    let mut check_lines = Vec::new();
    for (name, path) in &files.outputs {
        let text = output.file(name).ok_or_else(|| {
            TriageError::plugin(
                engine.name(),
                format!("tool {} returned no {name} text", spec.name),
            )
        })?;
        match check_output(spec.check.as_str(), path, text) {
            Ok(line) => check_lines.extend(line),
            Err(CheckFailure::Unknown(kind)) => {
                return Err(TriageError::plugin(
                    engine.name(),
                    format!(
                        "tool {} asks for the output check {kind:?}, which this llm-triage does \
                         not know; upgrade llm-triage",
                        spec.name
                    ),
                ))
            }
            Err(CheckFailure::Failed(why)) => {
                return Err(TriageError::input(
                    &subject,
                    format!("the result for {} {why}; nothing written", path.display()),
                ))
            }
        }
        outputs.push((path.clone(), text.to_string()));
    }
    let mut report = String::new();
    for (path, text) in &outputs {
        write_output(path, text)?;
        let shown = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        let _ = writeln!(report, "wrote {}", shown.display());
    }
    for note in output.notes.iter() {
        let _ = writeln!(report, "  {note}");
    }
    for line in check_lines {
        let _ = writeln!(report, "  {line}");
    }
    Ok(report)
}

/// Why an output was not accepted.
#[derive(Debug, PartialEq, Eq)]
enum CheckFailure {
    /// A check kind this host does not implement.
    Unknown(String),
    /// The check ran and rejected the text: the reason, as a sentence tail.
    Failed(String),
}

/// Runs the check `kind` on `text` (to be written to `path`); the line to print, if any.
fn check_output(
    kind: &str,
    path: &Path,
    text: &str,
) -> std::result::Result<Option<String>, CheckFailure> {
    match kind {
        check::NONE => Ok(None),
        check::PYTHON => match find_python() {
            None => Ok(Some(
                "not checked: no python3 (or python) on PATH to run py_compile".to_string(),
            )),
            Some(python) => py_compile(&python, path, text)
                .map(|()| {
                    Some(format!(
                        "checked: {} -m py_compile passed",
                        python.display()
                    ))
                })
                .map_err(CheckFailure::Failed),
        },
        other => Err(CheckFailure::Unknown(other.to_string())),
    }
}

/// `python3`, else `python`, from PATH.
fn find_python() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["python3", "python"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    })
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Compiles `text` with `python -m py_compile` in a scratch directory (bytecode goes there
/// too, never beside the user's files).
fn py_compile(python: &Path, path: &Path, text: &str) -> std::result::Result<(), String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let scratch =
        std::env::temp_dir().join(format!("llm-triage-tool-{}-{nanos}", std::process::id()));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output.py".to_string());
    let candidate = scratch.join(name);
    let result = std::fs::create_dir_all(&scratch)
        .and_then(|()| std::fs::write(&candidate, text))
        .map_err(|e| format!("could not be checked ({e})"))
        .and_then(|()| {
            Command::new(python)
                .args(["-m", "py_compile"])
                .arg(&candidate)
                .env("PYTHONPYCACHEPREFIX", scratch.join("pycache"))
                .output()
                .map_err(|e| format!("could not be checked ({e})"))
        })
        .and_then(|out| {
            if out.status.success() {
                Ok(())
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let error = stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("no message")
                    .trim()
                    .to_string();
                let line = stderr
                    .lines()
                    .find_map(|l| l.split_once(", line ").map(|(_, n)| n.trim().to_string()))
                    .map(|n| format!(" at line {n}"))
                    .unwrap_or_default();
                Err(format!("does not compile{line}: {error}"))
            }
        });
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// Writes one tool output atomically ([`output::write_atomically`]); its parent
/// directories are created first.
fn write_output(path: &Path, text: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| TriageError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    output::write_atomically(path, text.as_bytes())
}

/// `llm-triage tool <plugin> <tool> --source FILE --output FILE`.
fn usage(engine: &Engine, spec: &ToolSpec) -> String {
    let flags: Vec<String> = spec
        .inputs
        .iter()
        .chain(spec.outputs.iter())
        .map(|f| format!("--{f} FILE"))
        .collect();
    format!(
        "llm-triage tool {} {} {}",
        engine.name(),
        spec.name,
        flags.join(" ")
    )
}

/// One block per tool: the usage line, then the summary.
fn list<'a>(engines: impl Iterator<Item = &'a Engine>) -> Result<String> {
    let mut text = String::new();
    for engine in engines {
        for spec in engine.tools()? {
            let _ = writeln!(text, "{}\n    {}", usage(engine, &spec), spec.summary);
        }
    }
    if text.is_empty() {
        text.push_str("No plugin tools.\n");
    }
    Ok(text)
}
