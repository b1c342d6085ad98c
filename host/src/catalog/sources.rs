//! Catalog texts that come per origin (an engine plugin, a `--catalog DIR` file, the
//! host's built-in copy): fusion rows and step rows are both gathered this way, one text
//! per origin, a directory's `<origin>.toml` replacing that origin's text, and then put
//! in one catalog order so ties and first matches never depend on a hash map.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::TriageError;

/// Origins in catalog order (ties in the greedy fusion selection keep this order); other
/// origins follow alphabetically, the host's own origin comes last.
pub(crate) const ORIGIN_ORDER: &[&str] = &["sglang", "vllm", "trtllm", "tokenspeed"];

/// One catalog text and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginText {
    pub origin: String,
    /// Shown in errors and `catalog list`: a file path, or the plugin it came from.
    pub name: String,
    pub text: String,
}

/// `path` read as `origin`'s text; an unreadable file is an input error naming it.
pub(crate) fn read_origin_file(origin: &str, path: &Path) -> Result<OriginText, TriageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| TriageError::input(path, format!("cannot read: {e}")))?;
    Ok(OriginText {
        origin: origin.to_string(),
        name: path.display().to_string(),
        text,
    })
}

/// Every `<origin>.toml` of `dir` (when it is a directory), in file-name order.
pub(crate) fn origin_files(dir: &Path) -> Result<Vec<OriginText>, TriageError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| TriageError::input(dir, format!("cannot read: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let origin = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            read_origin_file(&origin, path)
        })
        .collect()
}

/// One text per origin in catalog order: [`ORIGIN_ORDER`], then other origins by name,
/// `host_origin` last.
pub(crate) fn in_catalog_order(
    by_origin: HashMap<String, OriginText>,
    host_origin: &str,
) -> Vec<OriginText> {
    let rank = |origin: &str| match ORIGIN_ORDER.iter().position(|o| *o == origin) {
        Some(i) => (0, i, String::new()),
        None if origin == host_origin => (2, 0, String::new()),
        None => (1, 0, origin.to_string()),
    };
    let mut sources: Vec<OriginText> = by_origin.into_values().collect();
    sources.sort_by_key(|s| rank(&s.origin));
    sources
}
