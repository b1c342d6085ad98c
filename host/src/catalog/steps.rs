//! `catalog/steps.toml`: the engines' forward calls, which bound the timeline's steps
//! when a trace has no step markers (one Python frame per step).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::one_line;
use crate::error::TriageError;

pub const STEPS_FILE: &str = "steps.toml";

pub const BUILTIN_STEPS: &str = include_str!("../../../catalog/steps.toml");

/// One engine's forward call: a `python_function` frame `<path>(<line>): <function>`
/// whose path ends in `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardCall {
    pub id: String,
    pub file: String,
    pub function: String,
}

impl ForwardCall {
    /// Whether the Python frame named `frame` (`path(line): function`) is this call.
    pub fn matches(&self, frame: &str) -> bool {
        let Some((place, function)) = frame.rsplit_once("): ") else {
            return false;
        };
        let Some((path, line)) = place.rsplit_once('(') else {
            return false;
        };
        function == self.function
            && !line.is_empty()
            && line.bytes().all(|b| b.is_ascii_digit())
            && path
                .strip_suffix(self.file.as_str())
                .is_some_and(|above| above.is_empty() || above.ends_with('/'))
    }
}

/// Every forward call of the catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardCalls {
    pub calls: Vec<ForwardCall>,
}

impl ForwardCalls {
    /// The call `frame` is, if any.
    pub fn find(&self, frame: &str) -> Option<&ForwardCall> {
        self.calls.iter().find(|c| c.matches(frame))
    }
}

/// `dir`'s `steps.toml` when it has one, else the built-in file.
pub fn load_forward_calls(dir: Option<&Path>) -> Result<ForwardCalls, TriageError> {
    if let Some(dir) = dir {
        let path = dir.join(STEPS_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            return parse_forward_calls(&text, &path);
        }
    }
    parse_forward_calls(BUILTIN_STEPS, Path::new("built-in catalog/steps.toml"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepsFile {
    schema: u32,
    #[serde(default)]
    forward_call: Vec<CallEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallEntry {
    id: String,
    file: String,
    function: String,
    checked_against: Vec<String>,
}

/// Parses and validates the forward calls; `path` only names the source in errors.
pub fn parse_forward_calls(text: &str, path: &Path) -> Result<ForwardCalls, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: StepsFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid steps catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported steps catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    let mut calls: Vec<ForwardCall> = Vec::new();
    for (i, entry) in file.forward_call.into_iter().enumerate() {
        let row = i + 1;
        let function_ok = !entry.function.is_empty()
            && entry
                .function
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '<' || c == '>');
        if entry.id.is_empty() || entry.id.chars().count() > 128 {
            return Err(error(format!(
                "forward_call {row}: id must be 1-128 characters"
            )));
        }
        if entry.file.is_empty() || entry.file.starts_with('/') || !entry.file.ends_with(".py") {
            return Err(error(format!(
                "forward_call {row} ({}): file must be a relative path to a .py file",
                entry.id
            )));
        }
        if !function_ok {
            return Err(error(format!(
                "forward_call {row} ({}): function must be one Python identifier",
                entry.id
            )));
        }
        if entry.checked_against.is_empty() {
            return Err(error(format!(
                "forward_call {row} ({}): checked_against must name the upstream file",
                entry.id
            )));
        }
        if calls.iter().any(|c| c.id == entry.id) {
            return Err(error(format!(
                "forward_call {row}: duplicate id {}",
                entry.id
            )));
        }
        calls.push(ForwardCall {
            id: entry.id,
            file: entry.file,
            function: entry.function,
        });
    }
    Ok(ForwardCalls { calls })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> ForwardCalls {
        parse_forward_calls(BUILTIN_STEPS, Path::new("steps.toml")).unwrap()
    }

    #[test]
    fn the_builtin_calls_match_the_frames_real_traces_carry() {
        let calls = builtin();
        let id = |frame: &str| calls.find(frame).map(|c| c.id.as_str());
        assert_eq!(
            id("vllm/v1/worker/gpu_model_runner.py(2907): execute_model"),
            Some("vllm.execute-model")
        );
        assert_eq!(
            id("/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py(3123): forward"),
            Some("sglang.model-runner-forward")
        );
        assert_eq!(
            id("nanovllm/engine/model_runner.py(410): run"),
            Some("nano-vllm.model-runner-run")
        );
        // Neighbours that are not the forward call.
        assert_eq!(id("nanovllm/engine/model_runner.py(381): run_model"), None);
        assert_eq!(
            id("/x/sglang/srt/model_executor/model_runner.py(3194): _forward_raw"),
            None
        );
        assert_eq!(
            id("my_vllm/v1/worker/gpu_model_runner.py(1): execute_model"),
            None
        );
        assert_eq!(
            id("vllm/v1/worker/gpu_model_runner.py: execute_model"),
            None
        );
    }

    #[test]
    fn rows_are_validated_with_one_line_naming_the_file() {
        let path = Path::new("/c/steps.toml");
        for (text, expected) in [
            ("schema = 2", "unsupported steps catalog schema 2"),
            ("schema = 1\nweight = 1", "unknown field `weight`"),
            (
                "schema = 1\n[[forward_call]]\nid = \"a\"\nfile = \"/abs/x.py\"\nfunction = \"f\"\nchecked_against = [\"x\"]",
                "forward_call 1 (a): file must be a relative path",
            ),
            (
                "schema = 1\n[[forward_call]]\nid = \"a\"\nfile = \"x.py\"\nfunction = \"f g\"\nchecked_against = [\"x\"]",
                "function must be one Python identifier",
            ),
            (
                "schema = 1\n[[forward_call]]\nid = \"a\"\nfile = \"x.py\"\nfunction = \"f\"\nchecked_against = []",
                "checked_against must name the upstream file",
            ),
        ] {
            let text = parse_forward_calls(text, path).unwrap_err().to_string();
            assert!(text.starts_with("/c/steps.toml"), "{text}");
            assert!(text.contains(expected), "{expected}: {text}");
            assert_eq!(text.lines().count(), 1, "{text}");
        }
    }
}
