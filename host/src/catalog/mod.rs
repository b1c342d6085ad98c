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

pub mod pattern;

use crate::analyze::families::{FamilyRule, FamilyRules};
use crate::analyze::fuse::{Evidence, FusionRule, Gate, SplitGroup, Status, TORCH_ORIGIN};
use crate::error::TriageError;
use crate::plugins::PluginSet;
use pattern::{parse_fusion_pattern, parse_pattern, Pattern};

/// File name of the kernel-family rules inside a catalog directory.
pub const KERNEL_FAMILIES_FILE: &str = "kernel-families.toml";

/// The built-in kernel-family rules.
pub const BUILTIN_KERNEL_FAMILIES: &str = include_str!("../../../catalog/kernel-families.toml");

/// The kernel-family rules: `dir/kernel-families.toml` when `dir` is given, else the
/// built-in copy. Errors name the file and the rule.
pub fn load_families(dir: Option<&Path>) -> Result<FamilyRules, TriageError> {
    let builtin = || {
        parse_families(
            BUILTIN_KERNEL_FAMILIES,
            Path::new("built-in catalog/kernel-families.toml"),
        )
    };
    match dir {
        None => builtin(),
        Some(dir) => {
            check_catalog_dir(dir)?;
            let path = dir.join(KERNEL_FAMILIES_FILE);
            if !path.exists() {
                return builtin();
            }
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            parse_families(&text, &path)
        }
    }
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FamiliesFile {
    schema: u32,
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    family: String,
    patterns: Vec<String>,
    #[serde(default)]
    all: Vec<String>,
}

/// Parses and validates kernel-family rules; `path` only names the source in errors.
pub fn parse_families(text: &str, path: &Path) -> Result<FamilyRules, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: FamiliesFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid kernel-family catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported kernel-family catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    if file.rule.is_empty() {
        return Err(error("kernel-family catalog has no [[rule]]".to_string()));
    }
    let mut rules = Vec::with_capacity(file.rule.len());
    for (i, entry) in file.rule.into_iter().enumerate() {
        let rule_error = |what: String| {
            error(format!(
                "rule {} (family {:?}): {what}",
                i + 1,
                entry.family
            ))
        };
        let valid_name = !entry.family.is_empty()
            && entry
                .family
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid_name {
            return Err(rule_error(
                "family must be a non-empty lower-case name (a-z, 0-9, _)".to_string(),
            ));
        }
        if entry.patterns.is_empty() {
            return Err(rule_error("no patterns".to_string()));
        }
        let mut patterns = Vec::with_capacity(entry.patterns.len());
        for pattern in &entry.patterns {
            patterns.push(
                parse_pattern(pattern)
                    .ok_or_else(|| rule_error(format!("empty pattern {pattern:?}")))?,
            );
        }
        let mut all = Vec::new();
        for token in &entry.all {
            let matchers = parse_pattern(token)
                .ok_or_else(|| rule_error(format!("empty `all` token {token:?}")))?;
            all.extend(matchers);
        }
        rules.push(FamilyRule {
            family: entry.family.clone(),
            patterns,
            all,
        });
    }
    Ok(FamilyRules { rules })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::families::KNOWN_FAMILIES;

    fn builtin() -> FamilyRules {
        load_families(None).expect("built-in catalog loads")
    }

    #[test]
    fn builtin_rules_use_only_known_families() {
        let rules = builtin();
        assert!(rules.rules.len() >= 15);
        for rule in &rules.rules {
            assert!(
                KNOWN_FAMILIES.contains(&rule.family.as_str()),
                "{}",
                rule.family
            );
        }
    }

    #[test]
    fn required_examples() {
        let rules = builtin();
        let cases = [
            // Attention, not gemm or memory.
            ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<>, cutlass::bfloat16_t>>>>(int)", "attention"),
            ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false>(Flash_fwd_params)", "attention"),
            ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >", "attention"),
            ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", "attention"),
            ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<true, 64>, flashinfer::DefaultAttention<false>>(flashinfer::Params)", "attention"),
            ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1>", "attention"),
            ("_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelIiEEEEvv", "attention"),
            ("kernel_unified_attention_2d", "attention"),
            // gemma is not mma.
            ("void gemma_fused_add_rmsnorm_kernel<__nv_bfloat16>", "norm"),
            // Inductor RMSNorm.
            ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "norm"),
            ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", "norm"),
            // Communication.
            ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
            ("void cross_device_reduce_1stage<__nv_bfloat16, 8>", "communication"),
            ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>", "communication"),
            ("void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<bf16>", "communication"),
            // prefill does not hit fill; fills do.
            ("void flashinfer::SinglePrefillWithKVCacheKernel<true>", "attention"),
            ("void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >", "memory"),
            // Runtime copies and sets.
            ("Memcpy DtoD (Device -> Device)", "memory"),
            ("Memset (Device)", "memory"),
            // Others seen in the shared traces.
            ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"),
            ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT320x224x64_MI16x16x1_SN_LDSB0", "gemm"),
            ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>", "gemm"),
            ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f", "moe"),
            ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "moe"),
            ("void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, 128> >", "moe"),
            ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)", "norm"),
            ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "norm"),
            ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "rope"),
            ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>", "memory"),
            ("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>", "quantize"),
            ("void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>", "quantize"),
            ("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i", "activation"),
            ("triton_poi_fused_mul_silu_0", "activation"),
            ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>", "softmax"),
            ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >", "reduce_topk"),
            ("create_flashinfer_kv_indices_triton", "sampling_io"),
            ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>", "memory"),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >", "elementwise"),
            ("triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0", "elementwise"),
            ("some_unknown_kernel", "other"),
        ];
        for (name, family) in cases {
            assert_eq!(rules.family_of(name), family, "{name}");
        }
    }

    fn write_catalog(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KERNEL_FAMILIES_FILE);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn user_catalog_replaces_the_builtin_one() {
        let (dir, _) =
            write_catalog("schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = [\"my gemm\"]\n");
        let rules = load_families(Some(dir.path())).unwrap();
        assert_eq!(rules.family_of("my_gemm_v2"), "gemm");
        assert_eq!(rules.family_of("Memset (Device)"), "other");
    }

    #[test]
    fn invalid_catalogs_name_the_file_and_rule() {
        let cases = [
            (
                "schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = [\"gemm\"]\n[[rule]]\nfamily = \"x\"\npatterns = [\"ok\", \" *\"]\n",
                "rule 2 (family \"x\"): empty pattern \" *\"",
            ),
            (
                "schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = [\"gemm\"]\nany = [\"x\"]\n",
                "unknown field `any`",
            ),
            (
                "schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = []\n",
                "rule 1 (family \"gemm\"): no patterns",
            ),
            (
                "schema = 1\n[[rule]]\nfamily = \"Gemm\"\npatterns = [\"gemm\"]\n",
                "rule 1 (family \"Gemm\"): family must be",
            ),
            ("schema = 2\n", "unsupported kernel-family catalog schema 2"),
        ];
        for (text, needle) in cases {
            let (dir, path) = write_catalog(text);
            let err = load_families(Some(dir.path())).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        let missing = load_families(Some(Path::new("/nonexistent/catalog"))).unwrap_err();
        assert!(missing
            .to_string()
            .starts_with("/nonexistent/catalog: --catalog needs a directory"));
        assert_eq!(missing.exit_code(), crate::exit::INPUT);
    }
}
