//! The catalog: data files under `catalog/`, embedded at build time, or loaded from a
//! user's `--catalog DIR` to use a newer copy without rebuilding.
//!
//! Two parts:
//! * kernel-family rules (`kernel-families.toml`), embedded in the host;
//! * fusion rows (`fusions/<origin>.toml`, schema in `catalog/README.md`): each engine
//!   plugin embeds its origin's file and exports it through the plugin API
//!   (`fusion_registry`); the host embeds `torch.toml`. [`load_fusions`] merges them and
//!   validates every row.
//!
//! `--catalog DIR` overrides part by part: `DIR/kernel-families.toml` replaces the
//! built-in family rules and `DIR/fusions/<origin>.toml` replaces that origin's rows,
//! each only when present. Every catalog error is one line naming the file (or plugin)
//! and the row, and exits with code 3 like any other unusable input.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod families;
pub mod pattern;

use crate::analyze::fuse::{Evidence, FusionRule, Gate, SplitGroup, Status, TORCH_ORIGIN};
use crate::error::TriageError;
use crate::plugins::PluginSet;
pub use families::{load_families, parse_families, FamilyRule, FamilyRules};
use pattern::{parse_fusion_pattern, Pattern};

/// A `--catalog DIR` must be a directory.
fn check_catalog_dir(dir: &Path) -> Result<(), TriageError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(TriageError::input(
            dir,
            "--catalog needs a directory (holding kernel-families.toml and/or fusions/*.toml)",
        ))
    }
}

/// Sub-directory of a catalog directory holding the fusion rows, one file per origin.
pub const FUSIONS_DIR: &str = "fusions";

/// The host's own fusion rows (TorchInductor / eager PyTorch); engine rows come from
/// the engine plugins.
pub const BUILTIN_TORCH_FUSIONS: &str = include_str!("../../../catalog/fusions/torch.toml");

/// Origins in catalog order (ties in the greedy selection keep this order); other
/// origins follow alphabetically, `torch` comes last.
pub const ORIGIN_ORDER: &[&str] = &["sglang", "vllm", "trtllm", "tokenspeed"];

/// One fusion-rows text and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionSource {
    pub origin: String,
    /// Shown in errors and `catalog list`: a file path, or `plugin <name>`.
    pub name: String,
    pub text: String,
}

/// The merged, validated fusion rows.
#[derive(Clone, Debug, Default)]
pub struct FusionCatalog {
    /// In catalog order: [`ORIGIN_ORDER`], then other origins, then `torch`; file
    /// order inside an origin.
    pub rules: Vec<FusionRule>,
    /// Where the rows came from, in the same order.
    pub sources: Vec<String>,
}

impl FusionCatalog {
    pub fn find(&self, id: &str) -> Option<&FusionRule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

/// The fusion rows of a run: every loaded plugin's registry, the built-in torch rows,
/// and `DIR/fusions/<origin>.toml` files replacing an origin's rows when `dir` is given.
pub fn load_fusions(dir: Option<&Path>, plugins: &PluginSet) -> Result<FusionCatalog, TriageError> {
    merge_fusions(fusion_sources(dir, plugins)?)
}

/// The fusion-rows texts of a run, in catalog order (see [`load_fusions`]).
pub fn fusion_sources(
    dir: Option<&Path>,
    plugins: &PluginSet,
) -> Result<Vec<FusionSource>, TriageError> {
    let mut by_origin: HashMap<String, FusionSource> = HashMap::new();
    by_origin.insert(
        TORCH_ORIGIN.to_string(),
        FusionSource {
            origin: TORCH_ORIGIN.to_string(),
            name: "built-in catalog/fusions/torch.toml".to_string(),
            text: BUILTIN_TORCH_FUSIONS.to_string(),
        },
    );
    for engine in &plugins.engines {
        if let Some(text) = engine.fusion_registry()? {
            let origin = engine.name().to_string();
            by_origin.insert(
                origin.clone(),
                FusionSource {
                    origin,
                    name: format!("plugin {} fusion registry", engine.name()),
                    text,
                },
            );
        }
    }
    if let Some(dir) = dir {
        check_catalog_dir(dir)?;
        let fusions = dir.join(FUSIONS_DIR);
        if fusions.is_dir() {
            let entries = std::fs::read_dir(&fusions)
                .map_err(|e| TriageError::input(&fusions, format!("cannot read: {e}")))?;
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            for path in files {
                let origin = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
                by_origin.insert(
                    origin.clone(),
                    FusionSource {
                        origin,
                        name: path.display().to_string(),
                        text,
                    },
                );
            }
        }
    }
    let rank = |origin: &str| match ORIGIN_ORDER.iter().position(|o| *o == origin) {
        Some(i) => (0, i, String::new()),
        None if origin == TORCH_ORIGIN => (2, 0, String::new()),
        None => (1, 0, origin.to_string()),
    };
    let mut sources: Vec<FusionSource> = by_origin.into_values().collect();
    sources.sort_by_key(|s| rank(&s.origin));
    Ok(sources)
}

/// Parses every source and checks the rows against each other: ids unique across all
/// sources, `subsumes` naming loaded rows.
pub fn merge_fusions(sources: Vec<FusionSource>) -> Result<FusionCatalog, TriageError> {
    let mut catalog = FusionCatalog::default();
    let mut first_source: HashMap<String, String> = HashMap::new();
    for source in &sources {
        for rule in parse_fusions(&source.text, &source.name, &source.origin)? {
            if let Some(other) = first_source.get(&rule.id) {
                return Err(TriageError::input(
                    &source.name,
                    format!("row {}: duplicate id (also in {other})", rule.id),
                ));
            }
            first_source.insert(rule.id.clone(), source.name.clone());
            catalog.rules.push(rule);
        }
        catalog.sources.push(source.name.clone());
    }
    let ids: HashSet<&str> = catalog.rules.iter().map(|r| r.id.as_str()).collect();
    for rule in &catalog.rules {
        if let Some(missing) = rule.subsumes.iter().find(|s| !ids.contains(s.as_str())) {
            return Err(TriageError::input(
                &rule.source,
                format!(
                    "row {}: subsumes {missing:?}, which no loaded row has as id",
                    rule.id
                ),
            ));
        }
    }
    Ok(catalog)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FusionsFile {
    schema: u32,
    #[serde(default)]
    fusion: Vec<FusionEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FusionEntry {
    id: String,
    label: String,
    origin: String,
    status: String,
    #[serde(default)]
    pr: Option<u64>,
    priority: i64,
    min_share: f64,
    likely_share: f64,
    subsumes: Vec<String>,
    candidate_paths: Vec<String>,
    rationale: String,
    checked_against: Vec<String>,
    active: EvidenceEntry,
    #[serde(default)]
    split: Vec<SplitEntry>,
    #[serde(default)]
    gate: Option<GateEntry>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EvidenceEntry {
    #[serde(default)]
    kernel: Vec<String>,
    #[serde(default)]
    cpu_op: Vec<String>,
    #[serde(default)]
    location: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SplitEntry {
    name: String,
    #[serde(default)]
    same_site_as: Option<String>,
    #[serde(default)]
    kernel: Vec<String>,
    #[serde(default)]
    cpu_op: Vec<String>,
    #[serde(default)]
    location: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GateEntry {
    #[serde(default)]
    models_include: Vec<String>,
    #[serde(default)]
    models_exclude: Vec<String>,
    #[serde(default)]
    min_tp: Option<u32>,
}

/// `owner/repo@<40 hex>:<path>`.
pub fn valid_checked_against(text: &str) -> bool {
    let Some((repo, rest)) = text.split_once('@') else {
        return false;
    };
    let Some((commit, path)) = rest.split_once(':') else {
        return false;
    };
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    };
    let repo_ok = matches!(repo.split_once('/'), Some((o, n)) if name_ok(o) && name_ok(n));
    let commit_ok = commit.len() == 40
        && commit
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let path_ok = !path.is_empty() && !path.contains(char::is_whitespace) && !path.starts_with('/');
    repo_ok && commit_ok && path_ok
}

/// `<origin>.<kebab-name>`.
fn valid_id(id: &str, origin: &str) -> bool {
    let Some(name) = id.strip_prefix(origin).and_then(|r| r.strip_prefix('.')) else {
        return false;
    };
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn parse_evidence(
    kernel: &[String],
    cpu_op: &[String],
    location: &[String],
) -> Result<Evidence, String> {
    let all = |texts: &[String]| -> Result<Vec<Pattern>, String> {
        texts.iter().map(|t| parse_fusion_pattern(t)).collect()
    };
    Ok(Evidence {
        kernel: all(kernel)?,
        cpu_op: all(cpu_op)?,
        location: all(location)?,
    })
}

/// Parses and validates one fusion-rows text of `origin`; `source` names it in errors.
pub fn parse_fusions(
    text: &str,
    source: &str,
    origin: &str,
) -> Result<Vec<FusionRule>, TriageError> {
    let error = |message: String| TriageError::input(source, message);
    let file: FusionsFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid fusion catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported fusion catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    let mut seen = HashSet::new();
    let mut rules = Vec::with_capacity(file.fusion.len());
    for (i, entry) in file.fusion.into_iter().enumerate() {
        let row_name = if entry.id.is_empty() {
            format!("row {}", i + 1)
        } else {
            format!("row {}", entry.id)
        };
        let rule =
            fusion_rule(entry, source, origin).map_err(|m| error(format!("{row_name}: {m}")))?;
        if !seen.insert(rule.id.clone()) {
            return Err(error(format!("row {}: duplicate id", rule.id)));
        }
        rules.push(rule);
    }
    Ok(rules)
}

fn fusion_rule(entry: FusionEntry, source: &str, origin: &str) -> Result<FusionRule, String> {
    if entry.origin != origin {
        return Err(format!(
            "origin {:?} does not match its file/plugin origin {origin:?}",
            entry.origin
        ));
    }
    if !valid_id(&entry.id, origin) {
        return Err(format!("id must be {origin}.<kebab-name> (a-z, 0-9, -)"));
    }
    let status = Status::parse(&entry.status).ok_or_else(|| {
        format!(
            "status {:?} is not mainline, upstream or inflight",
            entry.status
        )
    })?;
    if status == Status::Inflight && entry.pr.is_none() {
        return Err("an inflight row needs pr = <number>".to_string());
    }
    for (what, text) in [("label", &entry.label), ("rationale", &entry.rationale)] {
        if text.trim().is_empty() || text.contains('\n') {
            return Err(format!("{what} must be one non-empty line"));
        }
    }
    let shares_ok = entry.min_share.is_finite()
        && entry.likely_share.is_finite()
        && entry.min_share >= 0.0
        && entry.likely_share >= entry.min_share;
    if !shares_ok {
        return Err("need 0 <= min_share <= likely_share".to_string());
    }
    if entry.candidate_paths.is_empty() || entry.candidate_paths.iter().any(|p| p.trim().is_empty())
    {
        return Err("candidate_paths must list at least one path".to_string());
    }
    if entry.checked_against.is_empty() {
        return Err("checked_against must name at least one upstream file".to_string());
    }
    if let Some(bad) = entry
        .checked_against
        .iter()
        .find(|c| !valid_checked_against(c))
    {
        return Err(format!(
            "checked_against {bad:?} is not owner/repo@<40-hex commit>:<path>"
        ));
    }
    if entry.subsumes.contains(&entry.id) {
        return Err("a row cannot subsume itself".to_string());
    }
    let active = parse_evidence(
        &entry.active.kernel,
        &entry.active.cpu_op,
        &entry.active.location,
    )?;
    let mut split = Vec::with_capacity(entry.split.len());
    for group in &entry.split {
        if group.name.trim().is_empty() {
            return Err("a split group needs a name".to_string());
        }
        let evidence = parse_evidence(&group.kernel, &group.cpu_op, &group.location)
            .map_err(|m| format!("split group {:?}: {m}", group.name))?;
        if evidence.is_empty() {
            return Err(format!("split group {:?} has no patterns", group.name));
        }
        // Only an earlier group can anchor this one, so links never form a cycle.
        let anchor = group
            .same_site_as
            .as_ref()
            .map(|anchor| {
                split
                    .iter()
                    .position(|g: &SplitGroup| &g.name == anchor)
                    .ok_or_else(|| {
                        format!(
                            "split group {:?}: same_site_as {anchor:?} names no earlier split group",
                            group.name
                        )
                    })
            })
            .transpose()?;
        split.push(SplitGroup {
            name: group.name.clone(),
            evidence,
            same_site_as: group.same_site_as.clone(),
            anchor,
        });
    }
    if active.is_empty() && split.is_empty() {
        return Err("no active patterns and no split groups: the row can never match".to_string());
    }
    let gate = match entry.gate {
        None => Gate {
            min_tp: 1,
            ..Gate::default()
        },
        Some(g) => {
            let lower = |items: &[String]| -> Result<Vec<String>, String> {
                items
                    .iter()
                    .map(|m| {
                        let ok = !m.trim().is_empty() && *m == m.to_lowercase();
                        ok.then(|| m.clone()).ok_or_else(|| {
                            format!("model fragment {m:?} must be non-empty lower case")
                        })
                    })
                    .collect()
            };
            let min_tp = g.min_tp.unwrap_or(1);
            if min_tp == 0 {
                return Err("min_tp must be at least 1".to_string());
            }
            Gate {
                models_include: lower(&g.models_include)?,
                models_exclude: lower(&g.models_exclude)?,
                min_tp,
            }
        }
    };
    Ok(FusionRule {
        id: entry.id,
        label: entry.label,
        origin: entry.origin,
        status,
        pr: entry.pr,
        priority: entry.priority,
        min_share: entry.min_share,
        likely_share: entry.likely_share,
        subsumes: entry.subsumes,
        candidate_paths: entry.candidate_paths,
        rationale: entry.rationale,
        checked_against: entry.checked_against,
        active,
        split,
        gate,
        source: source.to_string(),
    })
}

/// `catalog list`: one line per row (`id  origin  status  label`), or with `json` an
/// array of rows (every field, patterns as written).
pub fn list_rows(catalog: &FusionCatalog, json: bool) -> String {
    if json {
        let mut text =
            serde_json::to_string_pretty(&catalog.rules).unwrap_or_else(|_| "[]".to_string());
        text.push('\n');
        return text;
    }
    let width = catalog.rules.iter().map(|r| r.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for rule in &catalog.rules {
        out.push_str(&format!(
            "{:width$}  {:10}  {:9}  {}\n",
            rule.id,
            rule.origin,
            rule.status.label(),
            rule.label
        ));
    }
    out.push_str(&format!("{}\n", count_line(catalog)));
    out
}

/// `catalog show ID`: every field of one row, or the row as JSON.
pub fn show_row(catalog: &FusionCatalog, id: &str, json: bool) -> Result<String, TriageError> {
    let rule = catalog.find(id).ok_or_else(|| {
        TriageError::Usage(format!(
            "no fusion row {id:?}; `llm-triage catalog list` shows the ids"
        ))
    })?;
    if json {
        let mut text = serde_json::to_string_pretty(rule).unwrap_or_default();
        text.push('\n');
        return Ok(text);
    }
    let list = |items: &[String]| {
        if items.is_empty() {
            "-".to_string()
        } else {
            items.join(", ")
        }
    };
    let patterns = |e: &Evidence| {
        let mut parts = Vec::new();
        for (field, ps) in [
            ("kernel", &e.kernel),
            ("cpu_op", &e.cpu_op),
            ("location", &e.location),
        ] {
            if !ps.is_empty() {
                let texts: Vec<&str> = ps.iter().map(|p| p.text.as_str()).collect();
                parts.push(format!("{field}: {}", texts.join(" | ")));
            }
        }
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join("; ")
        }
    };
    let mut lines = vec![
        format!("id: {}", rule.id),
        format!("label: {}", rule.label),
        format!("origin: {}", rule.origin),
        format!(
            "status: {}{}",
            rule.status.label(),
            rule.pr.map(|n| format!(" (PR #{n})")).unwrap_or_default()
        ),
        format!("priority: {}", rule.priority),
        format!(
            "min_share: {}%, likely_share: {}%",
            rule.min_share, rule.likely_share
        ),
        format!("subsumes: {}", list(&rule.subsumes)),
        format!("active: {}", patterns(&rule.active)),
    ];
    for group in &rule.split {
        let same_site = group
            .same_site_as
            .as_ref()
            .map(|a| format!(" (same site as {a})"))
            .unwrap_or_default();
        lines.push(format!(
            "split {}{same_site}: {}",
            group.name,
            patterns(&group.evidence)
        ));
    }
    lines.push(format!(
        "gate: models {}{}, min_tp {}",
        list(&rule.gate.models_include),
        if rule.gate.models_exclude.is_empty() {
            String::new()
        } else {
            format!(" (not {})", rule.gate.models_exclude.join(", "))
        },
        rule.gate.min_tp
    ));
    lines.push(format!("candidate_paths: {}", list(&rule.candidate_paths)));
    lines.push(format!("rationale: {}", rule.rationale));
    lines.push(format!("checked_against: {}", list(&rule.checked_against)));
    lines.push(format!("source: {}", rule.source));
    Ok(lines.join("\n") + "\n")
}

/// `catalog validate`: the one-line verdict once every part loaded.
pub fn validation_summary(families: &FamilyRules, catalog: &FusionCatalog) -> String {
    format!(
        "catalog OK: {} kernel-family rules; {}; sources: {}\n",
        families.rules.len(),
        count_line(catalog),
        catalog.sources.join(", ")
    )
}

/// `60 fusion rows (sglang 14, vllm 18, ...)`.
fn count_line(catalog: &FusionCatalog) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for rule in &catalog.rules {
        match counts.iter_mut().find(|(o, _)| *o == rule.origin) {
            Some((_, n)) => *n += 1,
            None => counts.push((rule.origin.clone(), 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(o, n)| format!("{o} {n}")).collect();
    format!("{} fusion rows ({})", catalog.rules.len(), parts.join(", "))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
