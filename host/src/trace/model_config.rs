//! How many decoder layers the model has, when the run says so: an override in the
//! server args (SGLang `json_model_override_args`, vLLM `hf_overrides`), else the
//! model's `config.json` beside `server_args.json`, in the input directory or beside the
//! input file (`num_hidden_layers`, or `text_config.num_hidden_layers` for multimodal
//! configs). The layer analysis checks the count it finds against this one.
//!
//! The file is optional: one that cannot be read or parsed is skipped with a note naming
//! it, never a failed run.
//!
//! The same file (or the one `--model-config` names, which must then read and parse:
//! exit 3 otherwise) gives the roofline the model's dimensions ([`ModelShape`]): the
//! decode GEMMs' and attention's shapes where a launch has no `Input Dims` (graph
//! replays without a capture trace).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::TriageError;
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

/// The model dimensions the roofline's model-config shapes read, each `None` when the
/// config lacks it (then the shapes that need it stay unknown, with a note). Fields are
/// read at the top level, else under `text_config` (multimodal configs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelShape {
    /// Where the config was read (the file path).
    pub source: String,
    /// `num_hidden_layers`.
    pub layers: Option<u64>,
    /// `hidden_size`.
    pub hidden: Option<u64>,
    /// `intermediate_size` (the dense MLP's).
    pub intermediate: Option<u64>,
    /// `num_attention_heads`.
    pub heads: Option<u64>,
    /// `num_key_value_heads`, else `num_attention_heads` (no GQA).
    pub kv_heads: Option<u64>,
    /// `head_dim`, else `hidden_size / num_attention_heads`.
    pub head_dim: Option<u64>,
    /// `vocab_size`.
    pub vocab: Option<u64>,
    /// `torch_dtype` (or `dtype`) when it is `bfloat16`, `float16` or `float32`.
    pub dtype: Option<&'static str>,
    /// Element size of the weights and activations under `dtype`.
    pub elem_bytes: Option<u64>,
    /// The config has a `quantization_config`: its weights are not `torch_dtype`.
    pub quantized: bool,
}

impl ModelShape {
    /// The config keys a dense decoder's GEMMs need that this config lacks (or has
    /// quantised), in a fixed order.
    pub fn missing_for_gemms(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        for (value, key) in [
            (self.layers, "num_hidden_layers"),
            (self.hidden, "hidden_size"),
            (self.intermediate, "intermediate_size"),
            (self.heads, "num_attention_heads"),
            (self.head_dim, "head_dim"),
            (self.vocab, "vocab_size"),
            (self.elem_bytes, "torch_dtype"),
        ] {
            if value.is_none() {
                missing.push(key);
            }
        }
        if self.quantized {
            missing.push("unquantised weights (it has a quantization_config)");
        }
        missing
    }
}

/// The run's model dimensions: `--model-config FILE` (an error naming it when it cannot
/// be read or is not a JSON object), else the first `config.json` in `dirs` (one that
/// cannot be read is left out silently: [`layer_count`] already notes it).
pub fn model_shape(
    explicit: Option<&Path>,
    dirs: &[PathBuf],
) -> Result<Option<ModelShape>, TriageError> {
    if let Some(path) = explicit {
        return read_shape(path)
            .map(Some)
            .map_err(|why| TriageError::input(path, format!("model config: {why}")));
    }
    Ok(dirs
        .iter()
        .map(|dir| dir.join("config.json"))
        .find(|path| path.is_file())
        .and_then(|path| read_shape(&path).ok()))
}

fn read_shape(path: &Path) -> Result<ModelShape, String> {
    let bytes = read_capped(path, MAX_CONFIG_BYTES, Links::Follow)
        .map_err(|e| format!("cannot read ({e})"))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    if !value.is_object() {
        return Err("not a JSON object".to_string());
    }
    let field = |key: &str| {
        value
            .get(key)
            .or_else(|| value.get("text_config")?.get(key))
    };
    let number = |key: &str| field(key).and_then(Value::as_u64).filter(|&n| n > 0);
    let heads = number("num_attention_heads");
    let hidden = number("hidden_size");
    let known_dtype = field("torch_dtype")
        .or_else(|| field("dtype"))
        .and_then(Value::as_str)
        .and_then(|d| match d {
            "bfloat16" => Some("bfloat16"),
            "float16" | "half" => Some("float16"),
            "float32" | "float" => Some("float32"),
            _ => None,
        });
    Ok(ModelShape {
        source: path.display().to_string(),
        layers: number("num_hidden_layers"),
        hidden,
        intermediate: number("intermediate_size"),
        heads,
        kv_heads: number("num_key_value_heads").or(heads),
        head_dim: number("head_dim").or_else(|| match (hidden, heads) {
            (Some(h), Some(n)) if h % n == 0 => Some(h / n),
            _ => None,
        }),
        vocab: number("vocab_size"),
        dtype: known_dtype,
        elem_bytes: known_dtype.map(|d| if d == "float32" { 4 } else { 2 }),
        quantized: field("quantization_config").is_some_and(|q| !q.is_null()),
    })
}

/// The run's tensor-parallel size from its server args: SGLang and TensorRT-LLM
/// `tp_size`, vLLM `tensor_parallel_size`; `None` when they say nothing.
pub fn tp_size(server_args: Option<&Map<String, Value>>) -> Option<u64> {
    let args = server_args?;
    ["tp_size", "tensor_parallel_size"]
        .iter()
        .find_map(|key| args.get(*key)?.as_u64())
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

    #[test]
    fn the_model_shape_reads_dimensions_and_names_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"num_hidden_layers": 36, "hidden_size": 4096, "intermediate_size": 12288,
                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 151936,
                "torch_dtype": "bfloat16"}"#,
        )
        .unwrap();
        let shape = model_shape(Some(&path), &[]).unwrap().unwrap();
        // No head_dim: hidden / heads.
        assert_eq!(shape.head_dim, Some(128));
        assert_eq!((shape.kv_heads, shape.elem_bytes), (Some(8), Some(2)));
        assert!(shape.missing_for_gemms().is_empty());

        std::fs::write(
            &path,
            r#"{"text_config": {"hidden_size": 64, "num_attention_heads": 4},
                "quantization_config": {"quant_method": "fp8"}}"#,
        )
        .unwrap();
        let shape = model_shape(None, &[dir.path().to_path_buf()])
            .unwrap()
            .unwrap();
        assert_eq!(
            (shape.hidden, shape.kv_heads, shape.head_dim),
            (Some(64), Some(4), Some(16))
        );
        assert_eq!(
            shape.missing_for_gemms(),
            [
                "num_hidden_layers",
                "intermediate_size",
                "vocab_size",
                "torch_dtype",
                "unquantised weights (it has a quantization_config)"
            ]
        );

        std::fs::write(&path, "[1]").unwrap();
        let err = model_shape(Some(&path), &[]).unwrap_err().to_string();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(err.ends_with("model config: not a JSON object"), "{err}");
        // Beside the traces a bad file is only skipped (the layer count notes it).
        assert_eq!(
            model_shape(None, &[dir.path().to_path_buf()]).unwrap(),
            None
        );
    }

    #[test]
    fn the_tp_size_comes_from_either_engines_spelling() {
        let args: Map<String, Value> =
            serde_json::from_str(r#"{"tensor_parallel_size": 4}"#).unwrap();
        assert_eq!(tp_size(Some(&args)), Some(4));
        let args: Map<String, Value> = serde_json::from_str(r#"{"tp_size": 2}"#).unwrap();
        assert_eq!(tp_size(Some(&args)), Some(2));
        assert_eq!(tp_size(None), None);
    }
}
