//! The fusion rows (`catalog/fusions/<origin>.toml`, schema in `catalog/README.md`): known
//! kernel fusions, each described by the evidence of its fused path and of the split
//! kernels the unfused path runs instead, read by the fuse table and its similarity notes.
//!
//! Each engine plugin embeds its origin's file and exports it through the plugin API
//! (`fusion_registry`); the host embeds `torch.toml`. [`load_fusions`] merges them and
//! validates every row; `DIR/fusions/<origin>.toml` replaces that origin's rows when
//! `--catalog DIR` is given. A row is plain data plus the [`Pattern`]s it matches a
//! kernel row's texts with ([`Evidence::first_hit`]); which texts a kernel row offers
//! is the fuse analysis' business (`analyze::fuse`).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::pattern::{parse_fusion_pattern, FieldText, Pattern};
use super::sources::{in_catalog_order, origin_files, OriginText};
use super::{check_catalog_dir, one_line};
use crate::error::TriageError;
use crate::plugins::PluginSet;

/// The origin whose rows apply to every engine (TorchInductor and eager PyTorch).
pub(crate) const TORCH_ORIGIN: &str = "torch";

/// Where a row's fused path stands relative to its origin engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Merged in the origin engine's main branch.
    Mainline,
    /// Exists upstream (a kernel library or another engine), not in the origin engine.
    Upstream,
    /// An open upstream pull request (`pr`).
    Inflight,
}

impl Status {
    pub fn parse(text: &str) -> Option<Status> {
        match text {
            "mainline" => Some(Status::Mainline),
            "upstream" => Some(Status::Upstream),
            "inflight" => Some(Status::Inflight),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Status::Mainline => "mainline",
            Status::Upstream => "upstream",
            Status::Inflight => "inflight",
        }
    }
}

/// Patterns over the three things a kernel row carries, and the look-alikes to leave out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Evidence {
    pub kernel: Vec<Pattern>,
    pub cpu_op: Vec<Pattern>,
    pub location: Vec<Pattern>,
    /// A kernel row whose name one of these matches is not evidence, even when a pattern
    /// above hit it (one kernel template can serve the pattern and a look-alike: AITER's
    /// `add_rmsnorm_quant_kernel<..., ADD_RESIDUAL=false, ...>` is a plain RMSNorm).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_kernel: Vec<Pattern>,
    /// A kernel row every CPU op of which one of these matches is not evidence; in a row
    /// that mixes them with other ops, only the other ops' launches count.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_cpu_op: Vec<Pattern>,
    /// Launch sites whose location one of these matches are not counted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_location: Vec<Pattern>,
}

impl Evidence {
    /// No positive pattern (exclusions alone never match anything).
    pub fn is_empty(&self) -> bool {
        self.kernel.is_empty() && self.cpu_op.is_empty() && self.location.is_empty()
    }

    /// Whether a kernel row, by its name or its CPU ops, is a look-alike this evidence
    /// leaves out (`not_kernel`, or `not_cpu_op` matching every CPU op it has).
    pub fn excludes_row(&self, name: &FieldText, cpu_ops: &[FieldText]) -> bool {
        self.not_kernel.iter().any(|p| p.matches(name))
            || (!cpu_ops.is_empty() && self.excluded_ops(cpu_ops).len() == cpu_ops.len())
    }

    /// The indices of `cpu_ops` that `not_cpu_op` leaves out: a row that mixes them with
    /// other ops counts only the launches of the others.
    pub fn excluded_ops(&self, cpu_ops: &[FieldText]) -> Vec<usize> {
        cpu_ops
            .iter()
            .enumerate()
            .filter(|(_, op)| self.not_cpu_op.iter().any(|p| p.matches(op)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Whether a launch site is left out (`not_location`).
    pub fn excludes_site(&self, location: &FieldText) -> bool {
        self.not_location.iter().any(|p| p.matches(location))
    }

    /// The first pattern (kernel, then CPU op, then location) that matches a kernel row
    /// given as its name, CPU ops and Python locations.
    pub fn first_hit(
        &self,
        name: &FieldText,
        cpu_ops: &[FieldText],
        locations: &[FieldText],
    ) -> Option<(Field, &Pattern)> {
        fn in_field<'p>(
            patterns: &'p [Pattern],
            fields: &[FieldText],
            field: Field,
        ) -> Option<(Field, &'p Pattern)> {
            patterns
                .iter()
                .find(|p| fields.iter().any(|f| p.matches(f)))
                .map(|p| (field, p))
        }
        in_field(&self.kernel, std::slice::from_ref(name), Field::Kernel)
            .or_else(|| in_field(&self.cpu_op, cpu_ops, Field::CpuOp))
            .or_else(|| in_field(&self.location, locations, Field::Location))
    }
}

/// Which field of a kernel row a pattern matched.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Kernel,
    CpuOp,
    Location,
}

impl Field {
    pub fn label(self) -> &'static str {
        match self {
            Field::Kernel => "kernel",
            Field::CpuOp => "cpu_op",
            Field::Location => "location",
        }
    }
}

/// A part of the unfused path; every group must be seen for a split match.
#[derive(Clone, Debug, Serialize)]
pub struct SplitGroup {
    pub name: String,
    #[serde(flatten)]
    pub evidence: Evidence,
    /// The name of an earlier group: this group counts only the launches made from a
    /// Python location where that group's kernels were launched too (a generic kernel such
    /// as an elementwise multiply is part of the fusion only at the fused op's call site).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_site_as: Option<String>,
    /// `same_site_as` as an index into the row's groups (the loader checks it).
    #[serde(skip)]
    pub anchor: Option<usize>,
}

/// Which models and TP sizes a row applies to.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Gate {
    /// Lower-case model-name fragments; empty = any model.
    pub models_include: Vec<String>,
    pub models_exclude: Vec<String>,
    /// Minimum tensor-parallel size (1 = no requirement).
    pub min_tp: u32,
    /// The GPU platforms (`cuda`, `rocm`) the fused path exists on; empty = any.
    pub devices: Vec<String>,
    /// Platforms where the fused path still launches the split kernels (vLLM's ROCm
    /// AITER all-reduce + RMSNorm is one graph op over both kernels), so seeing them
    /// cannot say whether it fired: a split match there is `undecided`, a Candidate.
    pub split_ambiguous_on: Vec<String>,
}

/// One validated row of the fusion catalog.
#[derive(Clone, Debug, Serialize)]
pub struct FusionRule {
    pub id: String,
    pub label: String,
    pub origin: String,
    pub status: Status,
    pub pr: Option<u64>,
    pub priority: i64,
    pub min_share: f64,
    pub likely_share: f64,
    pub subsumes: Vec<String>,
    pub candidate_paths: Vec<String>,
    pub rationale: String,
    pub checked_against: Vec<String>,
    pub active: Evidence,
    pub split: Vec<SplitGroup>,
    pub gate: Gate,
    /// Where the row was loaded from (a file, or `plugin <name>`).
    pub source: String,
}

impl FusionRule {
    /// The span that ranks a match in selection: the number of split groups, at least 1 with
    /// active patterns.
    pub(crate) fn span(&self) -> usize {
        self.split.len().max(usize::from(!self.active.is_empty()))
    }

    /// Whether the row applies to a trace of `engine`.
    pub fn applies_to(&self, engine: &str) -> bool {
        self.origin == engine || self.origin == TORCH_ORIGIN
    }
}

/// The GPU platforms a `devices` gate may name (the fuse analysis reads which one a
/// trace ran on from the trace itself).
pub(crate) const DEVICE_PLATFORMS: &[&str] = &["cuda", "rocm"];

/// Sub-directory of a catalog directory holding the fusion rows, one file per origin.
pub(crate) const FUSIONS_DIR: &str = "fusions";

/// The host's own fusion rows (TorchInductor / eager PyTorch); engine rows come from
/// the engine plugins.
pub(crate) const BUILTIN_TORCH_FUSIONS: &str = include_str!("../../../catalog/fusions/torch.toml");

/// One fusion-rows text and where it came from.
pub type FusionSource = OriginText;

/// The merged, validated fusion rows.
#[derive(Clone, Debug, Default)]
pub struct FusionCatalog {
    /// In catalog order: [`super::sources::ORIGIN_ORDER`], then other origins, then `torch`; file
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
pub(crate) fn fusion_sources(
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
        for source in origin_files(&dir.join(FUSIONS_DIR))? {
            by_origin.insert(source.origin.clone(), source);
        }
    }
    Ok(in_catalog_order(by_origin, TORCH_ORIGIN))
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
    #[serde(default)]
    not_kernel: Vec<String>,
    #[serde(default)]
    not_cpu_op: Vec<String>,
    #[serde(default)]
    not_location: Vec<String>,
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
    #[serde(default)]
    not_kernel: Vec<String>,
    #[serde(default)]
    not_cpu_op: Vec<String>,
    #[serde(default)]
    not_location: Vec<String>,
}

impl SplitEntry {
    /// The group's patterns in the shape of an active table (serde's `flatten` cannot
    /// be combined with `deny_unknown_fields`).
    fn evidence(&self) -> EvidenceEntry {
        EvidenceEntry {
            kernel: self.kernel.clone(),
            cpu_op: self.cpu_op.clone(),
            location: self.location.clone(),
            not_kernel: self.not_kernel.clone(),
            not_cpu_op: self.not_cpu_op.clone(),
            not_location: self.not_location.clone(),
        }
    }
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
    #[serde(default)]
    devices: Vec<String>,
    #[serde(default)]
    split_ambiguous_on: Vec<String>,
}

/// `owner/repo@<40 hex>:<path>`.
pub(crate) fn valid_checked_against(text: &str) -> bool {
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

/// The longest fusion id or split-group name `catalog validate` accepts, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 128;

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

fn parse_evidence(entry: &EvidenceEntry) -> Result<Evidence, String> {
    let all = |texts: &[String]| -> Result<Vec<Pattern>, String> {
        texts.iter().map(|t| parse_fusion_pattern(t)).collect()
    };
    Ok(Evidence {
        kernel: all(&entry.kernel)?,
        cpu_op: all(&entry.cpu_op)?,
        location: all(&entry.location)?,
        not_kernel: all(&entry.not_kernel)?,
        not_cpu_op: all(&entry.not_cpu_op)?,
        not_location: all(&entry.not_location)?,
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
        let row_name = if entry.id.is_empty() || entry.id.chars().count() > MAX_NAME_CHARS {
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
    // A name is a table cell and part of every error line: bounded, like any identifier.
    if entry.id.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "id is {} characters; at most {MAX_NAME_CHARS}",
            entry.id.chars().count()
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
    let active = parse_evidence(&entry.active)?;
    let mut split = Vec::with_capacity(entry.split.len());
    for group in &entry.split {
        if group.name.trim().is_empty() {
            return Err("a split group needs a name".to_string());
        }
        if group.name.chars().count() > MAX_NAME_CHARS {
            return Err(format!(
                "a split group name is {} characters; at most {MAX_NAME_CHARS}",
                group.name.chars().count()
            ));
        }
        let evidence = parse_evidence(&group.evidence())
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
            for (key, list) in [
                ("devices", &g.devices),
                ("split_ambiguous_on", &g.split_ambiguous_on),
            ] {
                if let Some(bad) = list
                    .iter()
                    .find(|d| !DEVICE_PLATFORMS.contains(&d.as_str()))
                {
                    return Err(format!(
                        "{key} entry {bad:?} is not one of {}",
                        DEVICE_PLATFORMS.join(", ")
                    ));
                }
            }
            Gate {
                models_include: lower(&g.models_include)?,
                models_exclude: lower(&g.models_exclude)?,
                min_tp,
                devices: g.devices,
                split_ambiguous_on: g.split_ambiguous_on,
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
