//! How many decoder layers the model has, when the run says so: an override in the
//! server args (SGLang `json_model_override_args`, vLLM `hf_overrides`), else the
//! model's `config.json` beside `server_args.json`, in the input directory or beside the
//! input file (`num_hidden_layers`, or `text_config.num_hidden_layers` for multimodal
//! configs). The layer analysis checks the count it finds against this one.
//!
//! The file is optional: one that cannot be read or parsed is skipped with a note naming
//! it, never a failed run.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::untrusted_file::{read_capped, Links};

/// The most a `config.json` may hold; real ones are a few KiB.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The model's layer count and where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerCount {
    pub count: u64,
    /// `config.json` path, or the server arg (`server_args.json json_model_override_args`).
    pub source: String,
}

/// The layer count of the run, and a note for a `config.json` that was skipped.
pub fn layer_count(
    server_args: Option<(&Path, &Map<String, Value>)>,
    dirs: &[PathBuf],
) -> (Option<LayerCount>, Option<String>) {
    if let Some((path, args)) = server_args {
        for key in ["json_model_override_args", "hf_overrides"] {
            let value = match args.get(key) {
                Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
                Some(other) => Some(other.clone()),
                None => None,
            };
            if let Some(count) = value.as_ref().and_then(num_hidden_layers) {
                let source = format!("{} {key}", path.display());
                return (Some(LayerCount { count, source }), None);
            }
        }
    }
    let mut seen: Vec<&PathBuf> = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir);
        let path = dir.join("config.json");
        if !path.is_file() {
            continue;
        }
        return match read_config(&path) {
            Ok(Some(count)) => (
                Some(LayerCount {
                    count,
                    source: path.display().to_string(),
                }),
                None,
            ),
            Ok(None) => (None, None),
            Err(why) => (
                None,
                Some(format!(
                    "{}: model config skipped ({why}); layer counts are not checked",
                    path.display()
                )),
            ),
        };
    }
    (None, None)
}

fn read_config(path: &Path) -> Result<Option<u64>, String> {
    let bytes = read_capped(path, MAX_CONFIG_BYTES, Links::Follow).map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    Ok(num_hidden_layers(&value))
}

fn num_hidden_layers(value: &Value) -> Option<u64> {
    value
        .get("num_hidden_layers")
        .or_else(|| value.get("text_config")?.get("num_hidden_layers"))
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_win_over_the_config_file_and_a_bad_file_is_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = vec![dir.path().to_path_buf()];
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"num_hidden_layers": 36}"#,
        )
        .unwrap();
        let (found, note) = layer_count(None, &dirs);
        assert_eq!(found.map(|f| f.count), Some(36));
        assert_eq!(note, None);

        let mut args = Map::new();
        args.insert(
            "json_model_override_args".into(),
            Value::String(r#"{"num_hidden_layers": 2}"#.into()),
        );
        let (found, _) = layer_count(Some((Path::new("/s/server_args.json"), &args)), &dirs);
        let found = found.unwrap();
        assert_eq!(found.count, 2);
        assert!(
            found.source.contains("json_model_override_args"),
            "{found:?}"
        );

        std::fs::write(dir.path().join("config.json"), "{not json").unwrap();
        let (found, note) = layer_count(None, &dirs);
        assert_eq!(found, None);
        let note = note.unwrap();
        assert!(
            note.contains("config.json: model config skipped (invalid JSON"),
            "{note}"
        );

        let multimodal = r#"{"text_config": {"num_hidden_layers": 48}}"#;
        std::fs::write(dir.path().join("config.json"), multimodal).unwrap();
        assert_eq!(layer_count(None, &dirs).0.map(|f| f.count), Some(48));
    }
}
