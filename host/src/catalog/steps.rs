//! What bounds the timeline's steps, as catalog rows: step markers (a CPU annotation
//! around each step, such as torch's `ProfilerStep#N`, SGLang's `step[DECODE bs=32]` or
//! vLLM's `execute_<N>_context_…`) and engines' forward calls (one Python frame per step,
//! used when a trace has no markers).
//!
//! Where the rows come from, one source of truth per fact:
//! * each engine plugin names its engine's markers and forward calls (plugin API 1.4,
//!   `step_catalog`): the built-in plugins embed `catalog/steps/<origin>.toml`;
//! * the host's `catalog/steps.toml` keeps what no engine plugin owns: `ProfilerStep#N`
//!   (torch.profiler's own) and the forward calls of engines without a plugin
//!   (nano-vllm); it is the fallback, tried after every plugin's rows, and all there is
//!   when a plugin predates API 1.4;
//! * `--catalog DIR`: `DIR/steps.toml` replaces the host's file and
//!   `DIR/steps/<origin>.toml` that origin's rows.
//!
//! Marker rows are tried in catalog order (the built-in engines sglang, vllm, trtllm,
//! tokenspeed, then other plugins by name, then the host's file): the first marker kind
//! that holds an op bounds the steps (`host/src/analyze/timeline/steps.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::sources::{in_catalog_order, origin_files, read_origin_file, OriginText};
use super::{check_catalog_dir, one_line};
use crate::error::TriageError;
use crate::plugins::PluginSet;

pub const STEPS_FILE: &str = "steps.toml";

/// The directory of per-origin step files under a `--catalog DIR`.
pub const STEPS_DIR: &str = "steps";

/// The host's own rows: engine-independent markers and engines without a plugin.
pub const BUILTIN_STEPS: &str = include_str!("../../../catalog/steps.toml");

/// The origin of the host's own rows.
pub const HOST_ORIGIN: &str = "host";

/// One kind of step marker: a CPU annotation whose name starts with `prefix` and
/// contains every text of `contains`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepMarker {
    pub id: String,
    /// The plugin (or `host`) whose rows it is.
    pub origin: String,
    pub prefix: String,
    pub contains: Vec<String>,
    /// How the report names the kind (`step[...]`): the step source reads
    /// `<shown_as> annotations`.
    pub shown_as: String,
}

impl StepMarker {
    /// Whether the annotation named `name` is this kind of marker.
    pub fn matches(&self, name: &str) -> bool {
        name.starts_with(self.prefix.as_str())
            && self.contains.iter().all(|c| name.contains(c.as_str()))
    }
}

/// One engine's forward call: a `python_function` frame `<path>(<line>): <function>`
/// whose path ends in `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardCall {
    pub id: String,
    pub origin: String,
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

/// Every step marker and forward call of a run, in catalog order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepCatalog {
    pub markers: Vec<StepMarker>,
    pub forward_calls: Vec<ForwardCall>,
}

impl StepCatalog {
    /// The first marker kind (index into `markers`) the annotation `name` is.
    pub fn marker_of(&self, name: &str) -> Option<usize> {
        self.markers.iter().position(|m| m.matches(name))
    }

    /// The forward call `frame` is, if any.
    pub fn forward_call(&self, frame: &str) -> Option<&ForwardCall> {
        self.forward_calls.iter().find(|c| c.matches(frame))
    }
}

/// One steps text and where it came from.
pub type StepSource = OriginText;

/// The host's file (or `dir`'s `steps.toml`), every loaded plugin's step catalog (or
/// `dir`'s `steps/<origin>.toml`), merged and validated.
pub fn load_steps(dir: Option<&Path>, plugins: &PluginSet) -> Result<StepCatalog, TriageError> {
    merge_steps(step_sources(dir, plugins)?)
}

/// The steps texts of a run, in catalog order (see the module doc).
pub fn step_sources(
    dir: Option<&Path>,
    plugins: &PluginSet,
) -> Result<Vec<StepSource>, TriageError> {
    let mut by_origin: HashMap<String, StepSource> = HashMap::new();
    by_origin.insert(
        HOST_ORIGIN.to_string(),
        StepSource {
            origin: HOST_ORIGIN.to_string(),
            name: "built-in catalog/steps.toml".to_string(),
            text: BUILTIN_STEPS.to_string(),
        },
    );
    for engine in &plugins.engines {
        if let Some(text) = engine.step_catalog()? {
            let origin = engine.name().to_string();
            by_origin.insert(
                origin.clone(),
                StepSource {
                    origin,
                    name: format!("plugin {} step catalog", engine.name()),
                    text,
                },
            );
        }
    }
    if let Some(dir) = dir {
        check_catalog_dir(dir)?;
        let host = dir.join(STEPS_FILE);
        if host.exists() {
            let source = read_origin_file(HOST_ORIGIN, &host)?;
            by_origin.insert(HOST_ORIGIN.to_string(), source);
        }
        for source in origin_files(&dir.join(STEPS_DIR))? {
            by_origin.insert(source.origin.clone(), source);
        }
    }
    // The built-in engines in their fixed order, other plugins by name, the host last.
    Ok(in_catalog_order(by_origin, HOST_ORIGIN))
}

/// Parses every source (in the given order) and checks ids are unique across them.
pub fn merge_steps(sources: Vec<StepSource>) -> Result<StepCatalog, TriageError> {
    let mut catalog = StepCatalog::default();
    for source in &sources {
        let part = parse_steps(&source.text, &source.name, &source.origin)?;
        let error = |message: String| TriageError::input(PathBuf::from(&source.name), message);
        for marker in part.markers {
            if let Some(first) = catalog.markers.iter().find(|m| m.id == marker.id) {
                return Err(error(format!(
                    "marker {}: id already used by {}'s rows",
                    marker.id, first.origin
                )));
            }
            catalog.markers.push(marker);
        }
        for call in part.forward_calls {
            if let Some(first) = catalog.forward_calls.iter().find(|c| c.id == call.id) {
                return Err(error(format!(
                    "forward_call {}: id already used by {}'s rows",
                    call.id, first.origin
                )));
            }
            catalog.forward_calls.push(call);
        }
    }
    Ok(catalog)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepsFile {
    schema: u32,
    #[serde(default)]
    marker: Vec<MarkerEntry>,
    #[serde(default)]
    forward_call: Vec<CallEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkerEntry {
    id: String,
    prefix: String,
    #[serde(default)]
    contains: Vec<String>,
    shown_as: String,
    checked_against: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallEntry {
    id: String,
    file: String,
    function: String,
    checked_against: Vec<String>,
}

/// Whether `text` may name a marker kind in a report: printable ASCII without markup
/// characters, so a plugin's text needs no escaping to stay one plain phrase.
fn plain_phrase(text: &str) -> bool {
    !text.is_empty()
        && text.chars().count() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " []()._#:-=<>".contains(c))
}

/// Parses and validates one steps text of `origin`; `name` names the source in errors.
pub fn parse_steps(text: &str, name: &str, origin: &str) -> Result<StepCatalog, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(name), message);
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
    let id_ok = |id: &str| !id.is_empty() && id.chars().count() <= 128;
    let mut catalog = StepCatalog::default();
    for (i, entry) in file.marker.into_iter().enumerate() {
        let row = i + 1;
        if !id_ok(&entry.id) {
            return Err(error(format!("marker {row}: id must be 1-128 characters")));
        }
        let what = format!("marker {row} ({})", entry.id);
        if entry.prefix.is_empty() || entry.prefix.chars().count() > 128 {
            return Err(error(format!("{what}: prefix must be 1-128 characters")));
        }
        if entry.contains.iter().any(String::is_empty) {
            return Err(error(format!("{what}: contains holds an empty text")));
        }
        if !plain_phrase(&entry.shown_as) {
            return Err(error(format!(
                "{what}: shown_as must be 1-64 characters of letters, digits, spaces and []()._#:-=<>"
            )));
        }
        if entry.checked_against.is_empty() {
            return Err(error(format!(
                "{what}: checked_against must name the upstream file"
            )));
        }
        if catalog.markers.iter().any(|m| m.id == entry.id) {
            return Err(error(format!("marker {row}: duplicate id {}", entry.id)));
        }
        catalog.markers.push(StepMarker {
            id: entry.id,
            origin: origin.to_string(),
            prefix: entry.prefix,
            contains: entry.contains,
            shown_as: entry.shown_as,
        });
    }
    for (i, entry) in file.forward_call.into_iter().enumerate() {
        let row = i + 1;
        let function_ok = !entry.function.is_empty()
            && entry
                .function
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '<' || c == '>');
        if !id_ok(&entry.id) {
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
        if catalog.forward_calls.iter().any(|c| c.id == entry.id) {
            return Err(error(format!(
                "forward_call {row}: duplicate id {}",
                entry.id
            )));
        }
        catalog.forward_calls.push(ForwardCall {
            id: entry.id,
            origin: origin.to_string(),
            file: entry.file,
            function: entry.function,
        });
    }
    Ok(catalog)
}

/// The built-in engines' step files as their plugins export them, and the host's: the
/// catalog a triage with the four built-in plugins loads (for tests without plugins).
#[cfg(test)]
pub(crate) fn builtin_with_engines() -> StepCatalog {
    let engine = |origin: &str, text: &str| StepSource {
        origin: origin.to_string(),
        name: format!("catalog/steps/{origin}.toml"),
        text: text.to_string(),
    };
    merge_steps(vec![
        engine("sglang", include_str!("../../../catalog/steps/sglang.toml")),
        engine("vllm", include_str!("../../../catalog/steps/vllm.toml")),
        engine("trtllm", include_str!("../../../catalog/steps/trtllm.toml")),
        engine(
            "tokenspeed",
            include_str!("../../../catalog/steps/tokenspeed.toml"),
        ),
        engine(HOST_ORIGIN, BUILTIN_STEPS),
    ])
    .expect("the built-in step files are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(origin: &str, text: &str) -> StepSource {
        StepSource {
            origin: origin.to_string(),
            name: format!("/c/steps/{origin}.toml"),
            text: text.to_string(),
        }
    }

    #[test]
    fn the_builtin_calls_match_the_frames_real_traces_carry() {
        let catalog = builtin_with_engines();
        let id = |frame: &str| catalog.forward_call(frame).map(|c| c.id.as_str());
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
        assert_eq!(
            id("/usr/lib/python3/dist-packages/tensorrt_llm/_torch/pyexecutor/model_engine.py(2301): forward"),
            Some("trtllm.model-engine-forward")
        );
        assert_eq!(
            id("/opt/tokenspeed/python/tokenspeed/runtime/execution/forward_step.py(512): __call__"),
            Some("tokenspeed.forward-step")
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
    fn plugin_rows_come_in_engine_order_before_the_host_fallback() {
        let catalog = builtin_with_engines();
        let markers: Vec<(&str, &str)> = catalog
            .markers
            .iter()
            .map(|m| (m.origin.as_str(), m.prefix.as_str()))
            .collect();
        assert_eq!(
            markers,
            [
                ("sglang", "step["),
                ("vllm", "execute_"),
                ("vllm", "execute_new_"),
                ("host", "ProfilerStep#")
            ]
        );
        // Both vLLM forms, and neither takes the other's names.
        assert_eq!(
            catalog.marker_of("execute_32_context_0(sq0sk0)_generation_32(sq32)"),
            Some(1)
        );
        assert_eq!(catalog.marker_of("execute_new_0_cached_32"), Some(2));
        assert_eq!(catalog.marker_of("execute_new_2"), None);
        // The host's file alone: only what no engine plugin owns.
        let host = merge_steps(vec![source(HOST_ORIGIN, BUILTIN_STEPS)]).unwrap();
        assert_eq!(host.markers.len(), 1);
        assert_eq!(host.forward_calls.len(), 1);
        assert_eq!(host.marker_of("step[DECODE bs=32]"), None);
        assert_eq!(host.marker_of("ProfilerStep#7"), Some(0));
        // A third-party plugin's marker is tried after the built-in engines' and before
        // the host's.
        let mut sources = vec![
            source(HOST_ORIGIN, BUILTIN_STEPS),
            source(
                "acme",
                "schema = 1\n[[marker]]\nid = \"acme.step\"\nprefix = \"acme_step\"\ncontains = [\"bs=\"]\nshown_as = \"acme_step\"\nchecked_against = [\"acme/engine.py\"]",
            ),
            source("sglang", include_str!("../../../catalog/steps/sglang.toml")),
        ];
        sources.sort_by_key(|s| match s.origin.as_str() {
            "sglang" => 0,
            HOST_ORIGIN => 2,
            _ => 1,
        });
        let merged = merge_steps(sources).unwrap();
        let order: Vec<&str> = merged.markers.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(order, ["sglang.step", "acme.step", "torch.profiler-step"]);
        assert_eq!(merged.marker_of("acme_step 3 bs=4"), Some(1));
        assert_eq!(merged.marker_of("acme_step 3"), None);
    }

    #[test]
    fn rows_are_validated_with_one_line_naming_the_file() {
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
            (
                "schema = 1\n[[marker]]\nid = \"m\"\nprefix = \"\"\nshown_as = \"m\"\nchecked_against = [\"x\"]",
                "marker 1 (m): prefix must be 1-128 characters",
            ),
            (
                "schema = 1\n[[marker]]\nid = \"m\"\nprefix = \"m\"\nshown_as = \"<b>`x`</b>\"\nchecked_against = [\"x\"]",
                "marker 1 (m): shown_as must be 1-64 characters",
            ),
            (
                "schema = 1\n[[marker]]\nid = \"m\"\nprefix = \"m\"\ncontains = [\"\"]\nshown_as = \"m\"\nchecked_against = [\"x\"]",
                "contains holds an empty text",
            ),
        ] {
            let text = merge_steps(vec![source("acme", text)])
                .unwrap_err()
                .to_string();
            assert!(text.starts_with("/c/steps/acme.toml"), "{text}");
            assert!(text.contains(expected), "{expected}: {text}");
            assert_eq!(text.lines().count(), 1, "{text}");
        }
        // An id another origin already uses is refused, naming both.
        let twice = "schema = 1\n[[marker]]\nid = \"torch.profiler-step\"\nprefix = \"x\"\nshown_as = \"x\"\nchecked_against = [\"x\"]";
        let text = merge_steps(vec![
            source(HOST_ORIGIN, BUILTIN_STEPS),
            source("acme", twice),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            text.contains("marker torch.profiler-step: id already used by host's rows"),
            "{text}"
        );
    }

    #[test]
    fn a_catalog_dir_replaces_the_host_file_and_one_origin_s_rows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(STEPS_FILE),
            "schema = 1\n[[marker]]\nid = \"mine\"\nprefix = \"MyStep\"\nshown_as = \"MyStep\"\nchecked_against = [\"x\"]",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join(STEPS_DIR)).unwrap();
        std::fs::write(dir.path().join(STEPS_DIR).join("vllm.toml"), "schema = 1").unwrap();
        let catalog = load_steps(Some(dir.path()), &PluginSet::default()).unwrap();
        let ids: Vec<&str> = catalog.markers.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["mine"]);
        assert!(catalog.forward_calls.is_empty());
    }
}
