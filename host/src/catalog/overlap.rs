//! Known overlap paths (`catalog/overlap.toml`): overlap families the engines already
//! ship (two-batch overlap, shared experts on an auxiliary stream, GEMM + collective
//! overlap, ...). An overlap row that matches one names it in `known_path`, so the
//! reader checks whether that path is on before designing a new one.
//!
//! Matching uses the kernel-family pattern language (token sequences, `*` wildcards;
//! `catalog/README.md`; the schema is in the header of `catalog/overlap.toml`): every
//! list a row gives must match (categories, kernel name,
//! Python scope), any pattern within a list will do. Categories are the overlap table's
//! kernel categories by name ([`CATEGORIES`]), so the catalog needs no analysis type.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::one_line;
use super::pattern::parse_pattern;
use super::{FamilyRule, FamilyRules};
use crate::error::TriageError;

/// File name of the known overlap paths inside a catalog directory.
pub const OVERLAP_FILE: &str = "overlap.toml";

/// The overlap categories a row may name, as the overlap table labels them (compute
/// hides the others best; `other` is what no family maps to).
pub const CATEGORIES: &[&str] = &["compute", "communication", "memory", "elementwise", "other"];

/// The built-in known overlap paths.
pub const BUILTIN_OVERLAP: &str = include_str!("../../../catalog/overlap.toml");

/// One known overlap path.
#[derive(Clone, Debug, PartialEq)]
pub struct KnownPath {
    pub id: String,
    pub label: String,
    /// Plugin names of the engines whose traces it applies to; empty: any engine.
    pub engines: Vec<String>,
    /// Names from [`CATEGORIES`]; empty: any category.
    pub categories: Vec<String>,
    /// Patterns over the kernel name and the Python scope, as one-rule family rules
    /// (a rule that fires names the family [`MATCHED`]); `None`: any text.
    kernel: Option<FamilyRules>,
    scope: Option<FamilyRules>,
    /// Python scopes that are never this path although category and kernel fit (vLLM's
    /// logits all-gather is an all-gather that async TP never fuses); `None`: none.
    not_scope: Option<FamilyRules>,
}

/// The family a pattern rule gives when it fires.
const MATCHED: &str = "matched";

impl KnownPath {
    /// Whether a row of `engine` with this category (a [`CATEGORIES`] name), kernel name
    /// and Python scope is this path.
    pub fn matches(&self, engine: &str, category: &str, kernel: &str, scope: Option<&str>) -> bool {
        let engine_fits = self.engines.is_empty() || self.engines.iter().any(|e| e == engine);
        let category_fits =
            self.categories.is_empty() || self.categories.iter().any(|c| c == category);
        let kernel_fits = self
            .kernel
            .as_ref()
            .is_none_or(|rules| rules.family_of(kernel) == MATCHED);
        let scope_fits = self
            .scope
            .as_ref()
            .is_none_or(|rules| scope.is_some_and(|s| rules.family_of(s) == MATCHED));
        // An unknown scope (a graph replay without a mapping trace) cannot be excluded.
        let scope_excluded = self
            .not_scope
            .as_ref()
            .is_some_and(|rules| scope.is_some_and(|s| rules.family_of(s) == MATCHED));
        engine_fits && category_fits && kernel_fits && scope_fits && !scope_excluded
    }
}

/// Every known overlap path, in file order (the first match wins).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnownPaths {
    pub paths: Vec<KnownPath>,
}

impl KnownPaths {
    pub fn find(
        &self,
        engine: &str,
        category: &str,
        kernel: &str,
        scope: Option<&str>,
    ) -> Option<&KnownPath> {
        self.paths
            .iter()
            .find(|p| p.matches(engine, category, kernel, scope))
    }
}

/// `dir/overlap.toml` when `dir` is given and has one, else the built-in copy.
pub fn load_known_paths(dir: Option<&Path>) -> Result<KnownPaths, TriageError> {
    if let Some(dir) = dir {
        let path = dir.join(OVERLAP_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            return parse_known_paths(&text, &path);
        }
    }
    parse_known_paths(BUILTIN_OVERLAP, Path::new("built-in catalog/overlap.toml"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlapFile {
    schema: u32,
    #[serde(default)]
    path: Vec<PathEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathEntry {
    id: String,
    label: String,
    engines: Vec<String>,
    status: String,
    #[serde(default)]
    toggles: Vec<String>,
    code_paths: Vec<String>,
    rationale: String,
    checked_against: Vec<String>,
    #[serde(rename = "match")]
    matcher: MatchEntry,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchEntry {
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    kernel: Vec<String>,
    #[serde(default)]
    scope: Vec<String>,
    #[serde(default)]
    not_scope: Vec<String>,
}

/// Parses and validates known overlap paths; `path` only names the source in errors.
pub fn parse_known_paths(text: &str, path: &Path) -> Result<KnownPaths, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: OverlapFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid overlap catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported overlap catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    // GitHub owner and repository names are ASCII (regex-lite's `\w` is ASCII).
    let checked = regex_lite::Regex::new(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+$")
        .expect("static regex is valid");
    let mut paths: Vec<KnownPath> = Vec::with_capacity(file.path.len());
    for entry in file.path {
        let fail = |what: String| error(format!("path {:?}: {what}", entry.id));
        if entry.id.is_empty() || paths.iter().any(|p| p.id == entry.id) {
            return Err(fail("empty or duplicate id".to_string()));
        }
        if entry.label.trim().is_empty() || entry.rationale.trim().is_empty() {
            return Err(fail("label and rationale must not be empty".to_string()));
        }
        if !["mainline", "upstream", "inflight"].contains(&entry.status.as_str()) {
            return Err(fail(format!(
                "status {:?} is not mainline, upstream or inflight",
                entry.status
            )));
        }
        if entry.code_paths.is_empty() || entry.toggles.iter().any(|t| t.trim().is_empty()) {
            return Err(fail("code_paths must not be empty".to_string()));
        }
        if entry.checked_against.is_empty()
            || entry.checked_against.iter().any(|c| !checked.is_match(c))
        {
            return Err(fail(
                "checked_against needs owner/repo@<40-hex commit>:path entries".to_string(),
            ));
        }
        let categories = entry
            .matcher
            .categories
            .iter()
            .map(|c| {
                CATEGORIES
                    .contains(&c.as_str())
                    .then(|| c.clone())
                    .ok_or_else(|| fail(format!("unknown category {c:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let patterns = |list: &[String]| -> Result<Option<FamilyRules>, TriageError> {
            let parsed = list
                .iter()
                .map(|p| parse_pattern(p).ok_or_else(|| fail(format!("empty pattern {p:?}"))))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((!parsed.is_empty()).then(|| {
                FamilyRules::new(vec![FamilyRule {
                    family: MATCHED.to_string(),
                    patterns: parsed,
                    all: Vec::new(),
                }])
            }))
        };
        let kernel = patterns(&entry.matcher.kernel)?;
        let scope = patterns(&entry.matcher.scope)?;
        let not_scope = patterns(&entry.matcher.not_scope)?;
        if kernel.is_none() && scope.is_none() {
            return Err(fail("match needs kernel or scope patterns".to_string()));
        }
        paths.push(KnownPath {
            id: entry.id,
            label: entry.label,
            engines: entry.engines,
            categories,
            kernel,
            scope,
            not_scope,
        });
    }
    Ok(KnownPaths { paths })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalog_loads_and_rows_match_by_engine_category_kernel_and_scope() {
        let known = load_known_paths(None).unwrap();
        assert!(known.paths.len() >= 6, "{}", known.paths.len());
        let text = r#"
schema = 1
[[path]]
id = "x.comm"
label = "GEMM + collective"
engines = ["vllm"]
status = "mainline"
code_paths = ["a.py"]
rationale = "r"
checked_against = ["o/r@0123456789012345678901234567890123456789:a.py"]
[path.match]
categories = ["communication"]
kernel = ["all reduce", "nccl*"]
"#;
        let known = parse_known_paths(text, Path::new("t.toml")).unwrap();
        let find = |engine, category, kernel| {
            known
                .find(engine, category, kernel, None)
                .map(|p| p.id.as_str())
        };
        assert_eq!(
            find(
                "vllm",
                "communication",
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
            ),
            Some("x.comm")
        );
        assert_eq!(
            find("sglang", "communication", "ncclDevKernel_AllReduce"),
            None
        );
        assert_eq!(find("vllm", "compute", "ncclDevKernel_AllReduce"), None);
        assert_eq!(find("vllm", "communication", "allreducefoo"), None);
    }

    #[test]
    fn vllm_async_tp_tags_only_the_collectives_it_fuses_never_an_all_reduce() {
        // Async TP fuses reduce-scatter / all-gather (after sequence parallelism) with
        // a GEMM; a decode graph's 1-stage custom all-reduce is not that path.
        let known = load_known_paths(None).unwrap();
        let id = |kernel: &str| {
            known
                .find("vllm", "communication", kernel, None)
                .map(|p| p.id.as_str())
        };
        for all_reduce in [
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>",
        ] {
            assert_eq!(id(all_reduce), None, "{all_reduce}");
        }
        assert_eq!(
            id("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
            Some("vllm.async-tp")
        );
        assert_eq!(id("ncclDevKernel_AllGather_RING_LL"), Some("vllm.async-tp"));
    }

    #[test]
    fn vllm_async_tp_leaves_out_the_logits_all_gather_by_its_scope() {
        let known = load_known_paths(None).unwrap();
        let id = |scope: Option<&str>| {
            known
                .find(
                    "vllm",
                    "communication",
                    "ncclDevKernel_AllGather_RING_LL",
                    scope,
                )
                .map(|p| p.id.as_str())
        };
        assert_eq!(
            id(Some(
                "vllm/model_executor/layers/logits_processor.py:92 _gather_logits"
            )),
            None
        );
        // A sequence-parallel all-gather, and one whose scope is unknown, still ask.
        assert_eq!(
            id(Some("vllm/distributed/parallel_state.py:470 all_gather")),
            Some("vllm.async-tp")
        );
        assert_eq!(id(None), Some("vllm.async-tp"));
    }

    #[test]
    fn malformed_rows_are_refused_with_the_row_named() {
        let bad = r#"
schema = 1
[[path]]
id = "x"
label = "l"
engines = []
status = "mainline"
code_paths = ["a.py"]
rationale = "r"
checked_against = ["o/r@abc:a.py"]
[path.match]
kernel = ["k"]
"#;
        let e = parse_known_paths(bad, Path::new("o.toml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "o.toml: path \"x\": checked_against needs owner/repo@<40-hex commit>:path entries"
        );
        let e = parse_known_paths("schema = 2", Path::new("o.toml")).unwrap_err();
        assert!(e.to_string().contains("schema 2"), "{e}");
    }
}
