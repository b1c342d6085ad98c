//! The fuse-pattern table: which known kernel fusions a stage shows, fused or split.
//!
//! A catalog row ([`FusionRule`], loaded by [`crate::catalog`]) describes a fusion by
//! *active* evidence (the fused kernel, its CPU op or its Python location) and *split*
//! groups (the kernels the unfused path runs instead). Matching is deterministic and
//! token-aware (the kernel-family tokenizer, [`crate::catalog::pattern::tokens`]): a
//! pattern is a run of whole tokens or an anchored regex, never a substring of compacted
//! text, and hash-like path segments (torch.compile / Inductor / Triton cache paths) are
//! removed from locations and CPU ops before matching, so `wk` can never hit a cache hash
//! (the predecessor's false "DSV3.2 indexer: Confirmed", spec §14 item 11).
//!
//! For one stage ([`fuse_table`]):
//!
//! 1. Only rows of the selected engine's origin, plus `torch`, apply.
//! 2. Gates: `min_tp` against the TP size ([`RunFacts::tp`]); `models_include` /
//!    `models_exclude` against the model names ([`RunFacts::models`]). A failed gate
//!    drops the row; a gate that cannot be evaluated (no TP size, no model name) keeps
//!    it but caps it at `Candidate`.
//! 3. `active` = kernel rows any active pattern matches; group *i* = rows any pattern of
//!    split group *i* matches. The row needs an active hit, or a hit in every group.
//! 4. related = active, then each group, de-duplicated; a split-only row below its
//!    `min_share` is dropped.
//! 5. Confidence: `Confirmed` when every gate was evaluated and either the fused path was
//!    seen (active hit) or the split kernels reach `likely_share`; else `Candidate`.
//!
//! Selection (spec §9.3, greedy and row-consuming): matches are sorted by priority, then
//! span (number of split groups, at least 1 with active patterns), then number of related
//! kernel rows, then related GPU time, all descending; equal keys keep catalog order. In
//! that order a match is skipped when an accepted match subsumes its id; one that shares
//! kernel rows (or, for location and same-site hits, launch sites) with accepted matches
//! is re-evaluated on what is left and kept if it still matches. Accepted rows below the
//! report's share bar are dropped; the rest keep the greedy order.
//!
//! Time: a kernel row holds every launch of one name; a location-pattern hit or a
//! `same_site_as` group counts only the launches at its sites ([`Hit::sites`]).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::catalog::fusions::{Evidence, Field, FusionRule, Gate, Status};
use crate::catalog::pattern::{FieldText, Pattern};
use crate::report::model::{FusionEvidence, FusionRow, KernelRow, SiteShare};
use crate::trace::event::Trace;

/// Facts about the run the gates read: model names and TP size, with where they came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFacts {
    /// Lower-case model identifiers: server-arg values, model class names seen in the
    /// trace (`Qwen3ForCausalLM`), model source files (`models/qwen3.py` gives `qwen3`).
    pub models: Vec<String>,
    pub tp: Option<u32>,
    /// Where `tp` came from, e.g. `server args tp_size`.
    pub tp_source: Option<String>,
}

/// Server-arg keys that name the model, in the order they are read.
pub const MODEL_KEYS: &[&str] = &["model_path", "model", "served_model_name", "model_name"];
/// Server-arg keys that give the tensor-parallel size, in the order they are read.
pub const TP_KEYS: &[&str] = &["tp_size", "tensor_parallel_size", "tp"];

/// The gate facts of a run: server args first, then what the traces themselves show
/// (model class names in any interned string, model source files of Python frames,
/// `distributedInfo.world_size` when no server arg gives the TP size).
pub fn run_facts(
    server_args: Option<&serde_json::Map<String, serde_json::Value>>,
    traces: &[&Trace],
) -> RunFacts {
    let mut models: Vec<String> = Vec::new();
    let mut add = |name: String| {
        let name = name.trim().to_lowercase();
        if !name.is_empty() && !models.contains(&name) {
            models.push(name);
        }
    };
    if let Some(args) = server_args {
        for key in MODEL_KEYS {
            match args.get(*key) {
                Some(serde_json::Value::String(s)) => add(s.clone()),
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .for_each(|s| add(s.to_string())),
                _ => {}
            }
        }
    }
    for trace in traces {
        for name in trace_model_names(trace) {
            add(name);
        }
    }
    let from_args = server_args.and_then(|args| {
        TP_KEYS.iter().find_map(|key| {
            let n = match args.get(*key)? {
                serde_json::Value::Number(n) => n.as_u64()?,
                serde_json::Value::String(s) => s.trim().parse().ok()?,
                _ => return None,
            };
            (n >= 1).then(|| (n.min(u32::MAX as u64) as u32, format!("server args {key}")))
        })
    });
    let from_trace = || {
        traces
            .iter()
            .filter_map(|t| t.meta.world_size)
            .filter(|&n| n >= 1)
            .max()
            .map(|n| (n, "trace distributedInfo.world_size".to_string()))
    };
    let (tp, tp_source) = match from_args.or_else(from_trace) {
        Some((n, source)) => (Some(n), Some(source)),
        None => (None, None),
    };
    RunFacts {
        models,
        tp,
        tp_source,
    }
}

/// Model class names (`...ForCausalLM`, `...ForConditionalGeneration`) anywhere in the
/// trace's strings, and the model source files of its Python frames, in first-seen order.
fn trace_model_names(trace: &Trace) -> Vec<String> {
    let mut names = Vec::new();
    for i in 0..trace.strings.len() {
        let text = trace.name(crate::trace::event::Sym(i as u32));
        for class in model_classes(text) {
            if !names.contains(&class) {
                names.push(class);
            }
        }
    }
    let mut frames: Vec<crate::trace::event::Sym> =
        trace.py_frames.iter().map(|f| f.name).collect();
    frames.sort();
    frames.dedup();
    for sym in frames {
        if let Some(stem) = model_file_stem(trace.name(sym)) {
            if !names.contains(&stem) {
                names.push(stem);
            }
        }
    }
    names
}

const CLASS_SUFFIXES: &[&str] = &["ForCausalLM", "ForConditionalGeneration"];

/// `Qwen3ForCausalLM` in `nn.Module: Qwen3ForCausalLM_0` or any other text.
fn model_classes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for suffix in CLASS_SUFFIXES {
        let mut from = 0;
        while let Some(at) = text[from..].find(suffix) {
            let end = from + at;
            let start = text[..end]
                .rfind(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .map_or(0, |i| i + 1);
            let stem = &text[start..end];
            if stem.starts_with(|c: char| c.is_ascii_uppercase()) {
                found.push(format!("{stem}{suffix}"));
            }
            from = end + suffix.len();
        }
    }
    found
}

/// `qwen3` for a frame in `.../models/qwen3.py(12): forward`, `qwen2` for
/// `transformers/models/qwen2/modeling_qwen2.py`: the component after a `models` directory.
fn model_file_stem(frame: &str) -> Option<String> {
    let path = frame.split('(').next().unwrap_or(frame);
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    let at = parts.iter().rposition(|p| *p == "models")?;
    let next = parts.get(at + 1)?;
    let stem = next.strip_suffix(".py").unwrap_or(next);
    (!stem.is_empty() && stem != "__init__").then(|| stem.to_string())
}

/// A gate's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateState {
    Passed,
    /// Cannot be evaluated; the text says why.
    Unknown(String),
    Failed,
}

/// `token` occurs in `model` once both are lower-cased with separators dropped, so
/// `gpt-oss` finds `GptOssForCausalLM` and `openai/gpt-oss-20b`.
fn model_mentions(model: &str, token: &str) -> bool {
    let compact = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let token = compact(token);
    !token.is_empty() && compact(model).contains(&token)
}

/// The gates of `rule` against the run facts: every failed gate fails, else any unknown
/// gate is unknown.
pub fn gate_state(rule: &FusionRule, facts: &RunFacts) -> GateState {
    let mut unknown = Vec::new();
    if rule.gate.min_tp > 1 {
        match facts.tp {
            Some(tp) if tp < rule.gate.min_tp => return GateState::Failed,
            Some(_) => {}
            None => unknown.push(format!(
                "TP size unknown (the row needs TP >= {})",
                rule.gate.min_tp
            )),
        }
    }
    let gated = !rule.gate.models_include.is_empty() || !rule.gate.models_exclude.is_empty();
    if gated {
        if facts.models.is_empty() {
            unknown.push(format!(
                "model unknown (the row applies to {})",
                describe_models(&rule.gate)
            ));
        } else {
            let mentions = |tokens: &[String]| {
                facts
                    .models
                    .iter()
                    .any(|m| tokens.iter().any(|t| model_mentions(m, t)))
            };
            if mentions(&rule.gate.models_exclude) {
                return GateState::Failed;
            }
            if !rule.gate.models_include.is_empty() && !mentions(&rule.gate.models_include) {
                return GateState::Failed;
            }
        }
    }
    if unknown.is_empty() {
        GateState::Passed
    } else {
        GateState::Unknown(unknown.join("; "))
    }
}

fn describe_models(gate: &Gate) -> String {
    let mut parts = Vec::new();
    if !gate.models_include.is_empty() {
        parts.push(gate.models_include.join("/"));
    }
    if !gate.models_exclude.is_empty() {
        parts.push(format!("not {}", gate.models_exclude.join("/")));
    }
    parts.join(", ")
}

/// What a kernel row offers the matcher: its name, CPU ops and Python locations, the
/// latter two with hash-like path segments removed.
#[derive(Clone, Debug)]
pub struct Haystack {
    name: FieldText,
    cpu_ops: Vec<FieldText>,
    locations: Vec<FieldText>,
    /// For each of `locations`, its index in the kernel row's `python_locations`.
    location_sites: Vec<usize>,
}

impl Haystack {
    pub fn of(row: &KernelRow) -> Haystack {
        let (location_sites, locations) = row
            .python_locations
            .iter()
            .enumerate()
            .filter(|(_, s)| s.location != crate::analyze::kernels::UNRESOLVED)
            .map(|(i, s)| (i, FieldText::new(location_without_hashes(&s.location))))
            .unzip();
        Haystack {
            name: FieldText::new(row.name.clone()),
            cpu_ops: row
                .cpu_ops
                .iter()
                .map(|op| FieldText::new(without_hashes(op)))
                .collect(),
            locations,
            location_sites,
        }
    }

    /// The first pattern of `evidence` that matches this row, and in which field.
    fn first_hit<'p>(&self, evidence: &'p Evidence) -> Option<(Field, &'p Pattern)> {
        evidence.first_hit(&self.name, &self.cpu_ops, &self.locations)
    }

    /// The row's launch sites (indices into `python_locations`) that `pattern` matches.
    fn sites_matching(&self, pattern: &Pattern) -> Vec<usize> {
        self.locations
            .iter()
            .zip(&self.location_sites)
            .filter(|(field, _)| pattern.matches(field))
            .map(|(_, &site)| site)
            .collect()
    }
}

/// A word (maximal alphanumeric run) that looks like a digest or a generated cache key
/// rather than a name: very long, or long and mixing many digits and letters, or a hex run.
pub fn is_hash_like(word: &str) -> bool {
    let len = word.len();
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    let letters = len - digits;
    let hex = word.bytes().all(|b| b.is_ascii_hexdigit());
    len >= 24
        || (len >= 16 && digits >= 2 && letters >= 2)
        || (len >= 8 && hex && digits >= 2 && letters >= 2)
}

/// Path components under these hold generated code named by hashes; everything below
/// them is dropped from a location.
const CACHE_DIR_PREFIXES: &[&str] = &["torchinductor", ".triton", "triton_cache", "inductor_cache"];

/// `text` without its hash-like words.
pub fn without_hashes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !is_hash_like(word) {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A `path:line function` location without hash-like path components (a component
/// holding any hash-like word goes whole) and without anything below a compile-cache
/// directory; the function name keeps its non-hash words.
pub fn location_without_hashes(location: &str) -> String {
    let (path, rest) = match location.find(char::is_whitespace) {
        Some(at) => location.split_at(at),
        None => (location, ""),
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut in_cache = false;
    for component in path.split(['/', '\\']) {
        if in_cache {
            continue;
        }
        let lower = component.to_ascii_lowercase();
        if CACHE_DIR_PREFIXES.iter().any(|p| lower.starts_with(p)) {
            in_cache = true;
            continue;
        }
        let hashed = component
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(is_hash_like);
        if !hashed {
            kept.push(component);
        }
    }
    format!("{}{}", kept.join("/"), without_hashes(rest))
}

/// A kernel row that a pattern matched.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// Index into the stage's kernel rows.
    pub row: usize,
    pub field: Field,
    pub pattern: String,
    /// The launch sites (indices into the row's `python_locations`) that count, or `None`
    /// for all of them. A location pattern counts only the sites it matched, and a
    /// `same_site_as` group only the sites its anchor group was launched from: a kernel
    /// row aggregates every launch of a name, and only some of them belong to the fusion.
    pub sites: Option<Vec<usize>>,
}

impl Hit {
    /// The part of `row`'s GPU time that this hit counts (1 = all of it).
    pub fn weight(&self, row: &KernelRow) -> f64 {
        match &self.sites {
            None => 1.0,
            Some(sites) => sites
                .iter()
                .filter_map(|&i| row.python_locations.get(i))
                .map(|s| s.share_pct / 100.0)
                .sum::<f64>()
                .min(1.0),
        }
    }

    /// The launch sites this hit counts, as `python_locations` entries of `row`.
    fn counted_sites<'k>(&self, row: &'k KernelRow) -> Vec<&'k SiteShare> {
        match &self.sites {
            None => row.python_locations.iter().collect(),
            Some(sites) => sites
                .iter()
                .filter_map(|&i| row.python_locations.get(i))
                .collect(),
        }
    }
}

/// Every kernel row a rule's evidence matched, before any threshold.
#[derive(Clone, Debug)]
pub struct RuleHits<'r> {
    pub rule: &'r FusionRule,
    pub gate: GateState,
    pub active: Vec<Hit>,
    /// One list per split group, in catalog order.
    pub groups: Vec<Vec<Hit>>,
}

impl RuleHits<'_> {
    /// Active hits, then each group's, each kernel row once (its first hit).
    pub fn related(&self) -> Vec<(&Hit, Part<'_>)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for hit in &self.active {
            if seen.insert(hit.row) {
                out.push((hit, Part::Fused));
            }
        }
        for (group, hits) in self.rule.split.iter().zip(&self.groups) {
            for hit in hits {
                if seen.insert(hit.row) {
                    out.push((hit, Part::Split(&group.name)));
                }
            }
        }
        out
    }

    pub fn groups_seen(&self) -> usize {
        self.groups.iter().filter(|g| !g.is_empty()).count()
    }

    fn all_groups_seen(&self) -> bool {
        !self.groups.is_empty() && self.groups.iter().all(|g| !g.is_empty())
    }
}

/// Which part of a fusion a kernel row stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// The fused path itself.
    Fused,
    /// A split group, by name.
    Split(&'a str),
}

/// The hits of one rule over a stage's kernel rows (the gate is only recorded).
pub fn rule_hits<'r>(rule: &'r FusionRule, rows: &[Haystack], facts: &RunFacts) -> RuleHits<'r> {
    let hits_of = |evidence: &Evidence| -> Vec<Hit> {
        rows.iter()
            .enumerate()
            .filter_map(|(i, row)| {
                row.first_hit(evidence).map(|(field, p)| Hit {
                    row: i,
                    field,
                    pattern: p.text.clone(),
                    sites: (field == Field::Location).then(|| row.sites_matching(p)),
                })
            })
            .collect()
    };
    RuleHits {
        rule,
        gate: gate_state(rule, facts),
        active: hits_of(&rule.active),
        groups: rule.split.iter().map(|g| hits_of(&g.evidence)).collect(),
    }
}

/// The parts of `rule` one kernel row hits: `fused` (active evidence) and
/// `split:<group>` for each split group, in catalog order (gates not applied).
pub fn parts_hit(rule: &FusionRule, row: &KernelRow) -> Vec<String> {
    let haystack = Haystack::of(row);
    let mut parts = Vec::new();
    if haystack.first_hit(&rule.active).is_some() {
        parts.push("fused".to_string());
    }
    for group in &rule.split {
        if haystack.first_hit(&group.evidence).is_some() {
            parts.push(format!("split:{}", group.name));
        }
    }
    parts
}

/// A rule that matched a stage (spec §9.2), before selection.
#[derive(Clone, Debug)]
pub struct Candidate<'r> {
    pub hits: RuleHits<'r>,
    pub related_rows: Vec<usize>,
    pub related_us: f64,
    pub share_pct: f64,
}

/// What the fuse analysis of one stage needs besides its kernel rows.
#[derive(Clone, Debug)]
pub struct FuseInput<'a> {
    /// The selected engine's name (`sglang`, `vllm`, ...): rows of this origin apply.
    pub engine: &'a str,
    pub facts: &'a RunFacts,
    /// Accepted rows below this share of the stage are dropped (the report's bar).
    pub min_share_pct: f64,
}

/// The rows of `rules` that match the stage, gates applied, thresholds applied.
pub fn candidates<'r>(
    rules: &'r [FusionRule],
    kernels: &[KernelRow],
    haystacks: &[Haystack],
    stage_total_us: f64,
    input: &FuseInput<'_>,
) -> Vec<Candidate<'r>> {
    if stage_total_us <= 0.0 {
        return Vec::new();
    }
    rules
        .iter()
        .filter(|rule| rule.applies_to(input.engine))
        .map(|rule| rule_hits(rule, haystacks, input.facts))
        .filter(|hits| hits.gate != GateState::Failed)
        .filter_map(|hits| candidate(hits, kernels, stage_total_us))
        .collect()
}

/// `hits` as a match of the stage (spec §9.2 steps 5-7), or `None`: no active hit and a
/// split group unseen, no GPU time, or a split-only match below the row's `min_share`.
fn candidate<'r>(
    mut hits: RuleHits<'r>,
    kernels: &[KernelRow],
    stage_total_us: f64,
) -> Option<Candidate<'r>> {
    link_sites(&mut hits, kernels);
    if hits.active.is_empty() && !hits.all_groups_seen() {
        return None;
    }
    let related = hits.related();
    let related_rows: Vec<usize> = related.iter().map(|(h, _)| h.row).collect();
    let related_us: f64 = related
        .iter()
        .map(|(h, _)| h.weight(&kernels[h.row]) * kernels[h.row].gpu_time_us)
        .sum();
    let share_pct = 100.0 * related_us / stage_total_us;
    if related_us <= 0.0 || (hits.active.is_empty() && share_pct < hits.rule.min_share) {
        return None;
    }
    Some(Candidate {
        hits,
        related_rows,
        related_us,
        share_pct,
    })
}

/// Limits the hits of every `same_site_as` group to the launch sites its anchor group's
/// hits count, dropping rows with none. Run on every (re-)evaluation, so the anchor is
/// always the set of hits the candidate still holds.
fn link_sites(hits: &mut RuleHits<'_>, kernels: &[KernelRow]) {
    for (i, group) in hits.rule.split.iter().enumerate() {
        let Some(anchor) = group.anchor else {
            continue;
        };
        let anchor_sites: HashSet<&str> = hits.groups[anchor]
            .iter()
            .flat_map(|h| h.counted_sites(&kernels[h.row]))
            .map(|s| s.location.as_str())
            .filter(|l| *l != crate::analyze::kernels::UNRESOLVED)
            .collect();
        let mut linked = std::mem::take(&mut hits.groups[i]);
        for hit in &mut linked {
            let row = &kernels[hit.row];
            let shared: Vec<usize> = (0..row.python_locations.len())
                .filter(|j| hit.sites.as_ref().is_none_or(|own| own.contains(j)))
                .filter(|&j| anchor_sites.contains(row.python_locations[j].location.as_str()))
                .collect();
            hit.sites = Some(shared);
        }
        linked.retain(|h| h.sites.as_ref().is_some_and(|s| !s.is_empty()));
        hits.groups[i] = linked;
    }
}

/// Spec §9.3: greedy, row-consuming selection with `subsumes` (ordering in the module
/// docs). Unlike the predecessor, a match that shares kernel rows with an accepted one is
/// not dropped outright: it is re-evaluated on its unclaimed rows and kept when it still
/// matches, so one broad match cannot hide another (spec §14 item 11).
pub fn select<'r>(
    mut found: Vec<Candidate<'r>>,
    kernels: &[KernelRow],
    stage_total_us: f64,
) -> Vec<Candidate<'r>> {
    // A stable sort keeps catalog order among equal keys.
    found.sort_by(|a, b| {
        let key = |c: &Candidate| {
            (
                c.hits.rule.priority,
                c.hits.rule.span(),
                c.related_rows.len(),
            )
        };
        key(b)
            .cmp(&key(a))
            .then(b.related_us.total_cmp(&a.related_us))
    });
    let mut blocked: HashSet<&str> = HashSet::new();
    let mut claims = Claims::default();
    let mut accepted = Vec::new();
    for found in found {
        let rule = found.hits.rule;
        if blocked.contains(rule.id.as_str()) {
            continue;
        }
        let candidate = if found.related_rows.iter().any(|r| claims.touches(*r)) {
            let mut hits = found.hits;
            let left = |list: &mut Vec<Hit>| {
                *list = list
                    .drain(..)
                    .filter_map(|h| claims.unclaimed(h, kernels))
                    .collect();
            };
            left(&mut hits.active);
            hits.groups.iter_mut().for_each(left);
            match candidate(hits, kernels, stage_total_us) {
                Some(c) => c,
                None => continue,
            }
        } else {
            found
        };
        for (hit, _) in candidate.hits.related() {
            claims.claim(hit);
        }
        blocked.extend(rule.subsumes.iter().map(String::as_str));
        accepted.push(candidate);
    }
    accepted
}

/// The kernel rows, or launch sites of rows, that accepted fuse rows already counted.
/// Sites matter: a location pattern claims only some launches of a kernel row, and the
/// rest (an RMSNorm launched from the layer norm, not from `apply_qk_norm`) stays free.
#[derive(Default)]
struct Claims {
    /// Row -> `None` when the whole row is claimed, else the claimed site indices.
    rows: HashMap<usize, Option<HashSet<usize>>>,
}

impl Claims {
    fn touches(&self, row: usize) -> bool {
        self.rows.contains_key(&row)
    }

    fn claim(&mut self, hit: &Hit) {
        match (&hit.sites, self.rows.entry(hit.row)) {
            (None, entry) => {
                entry.insert_entry(None);
            }
            (Some(sites), Entry::Vacant(v)) => {
                v.insert(Some(sites.iter().copied().collect()));
            }
            (Some(sites), Entry::Occupied(mut o)) => {
                if let Some(claimed) = o.get_mut() {
                    claimed.extend(sites.iter().copied());
                }
            }
        }
    }

    /// `hit` limited to the sites nobody claimed, or `None` when nothing is left.
    fn unclaimed(&self, mut hit: Hit, kernels: &[KernelRow]) -> Option<Hit> {
        match self.rows.get(&hit.row) {
            None => Some(hit),
            Some(None) => None,
            Some(Some(claimed)) => {
                let own: Vec<usize> = match hit.sites.take() {
                    Some(sites) => sites,
                    None => (0..kernels[hit.row].python_locations.len()).collect(),
                };
                let left: Vec<usize> = own.into_iter().filter(|i| !claimed.contains(i)).collect();
                (!left.is_empty()).then(|| {
                    hit.sites = Some(left);
                    hit
                })
            }
        }
    }
}

/// What a user can do with a fuse row.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Conclusion {
    /// The fused kernel (or its op/location) ran in this trace.
    Present,
    /// The engine has the fused path, but the split kernels ran instead.
    NotFired,
    /// The fused path exists only upstream or in another engine.
    UpstreamOnly,
    /// An open upstream pull request adds the fused path.
    OpenPr,
}

impl Conclusion {
    pub fn of(hits: &RuleHits<'_>) -> Conclusion {
        if !hits.active.is_empty() {
            return Conclusion::Present;
        }
        match hits.rule.status {
            Status::Mainline => Conclusion::NotFired,
            Status::Upstream => Conclusion::UpstreamOnly,
            Status::Inflight => Conclusion::OpenPr,
        }
    }
}

/// `Confirmed` or `Candidate` (module docs, step 5).
pub fn confidence(candidate: &Candidate<'_>) -> &'static str {
    let hits = &candidate.hits;
    let specific = !hits.active.is_empty() || candidate.share_pct >= hits.rule.likely_share;
    if specific && hits.gate == GateState::Passed {
        "Confirmed"
    } else {
        "Candidate"
    }
}

/// The sentence that says what the row means for this trace.
fn conclusion_sentence(candidate: &Candidate<'_>, conclusion: Conclusion) -> String {
    let rule = candidate.hits.rule;
    let share = format!("{:.1}%", candidate.share_pct);
    match conclusion {
        Conclusion::Present => format!(
            "The fused path is present in this trace ({share} related GPU time)."
        ),
        Conclusion::NotFired => format!(
            "The engine has this fused path but it did not fire: split kernels take {share} of GPU time."
        ),
        Conclusion::UpstreamOnly => format!(
            "The fused path exists only upstream or in another engine; split kernels take {share} of GPU time here."
        ),
        Conclusion::OpenPr => format!(
            "An open upstream PR{} adds this fusion; split kernels take {share} of GPU time here.",
            rule.pr.map(|n| format!(" (#{n})")).unwrap_or_default()
        ),
    }
}

/// Locations shown per fuse row in the tables (all of them are in the JSON row).
pub const LOCATIONS_SHOWN: usize = 4;

/// `func @ path:line` from `path:line func`; other shapes unchanged.
pub fn location_cell(location: &str) -> String {
    match location.split_once(' ') {
        Some((path, func)) if path.contains(':') && !func.trim().is_empty() => {
            format!("{} @ {path}", func.trim())
        }
        _ => location.to_string(),
    }
}

/// The report row of an accepted candidate.
pub fn fusion_row(candidate: &Candidate<'_>, kernels: &[KernelRow]) -> FusionRow {
    let hits = &candidate.hits;
    let rule = hits.rule;
    let conclusion = Conclusion::of(hits);
    let evidence: Vec<FusionEvidence> = hits
        .related()
        .into_iter()
        .map(|(hit, part)| {
            let k = &kernels[hit.row];
            FusionEvidence {
                kernel: k.name.clone(),
                gpu_time_us: hit.weight(k) * k.gpu_time_us,
                share_pct: hit.weight(k) * k.share_pct,
                part: match part {
                    Part::Fused => "fused".to_string(),
                    Part::Split(name) => format!("split:{name}"),
                },
                field: hit.field.label().to_string(),
                pattern: hit.pattern.clone(),
            }
        })
        .collect();
    // Only the sites that were counted (location patterns, same-site groups).
    let mut python_locations: Vec<String> = Vec::new();
    for (hit, _) in hits.related() {
        for site in hit.counted_sites(&kernels[hit.row]) {
            if !python_locations.contains(&site.location) {
                python_locations.push(site.location.clone());
            }
        }
    }
    let mut gate_notes = Vec::new();
    if let GateState::Unknown(why) = &hits.gate {
        gate_notes.push(format!("Gate not evaluated: {why}."));
    }
    let rationale = std::iter::once(conclusion_sentence(candidate, conclusion))
        .chain(gate_notes.iter().cloned())
        .chain(std::iter::once(rule.rationale.clone()))
        .collect::<Vec<_>>()
        .join(" ");
    FusionRow {
        id: rule.id.clone(),
        label: rule.label.clone(),
        origin: rule.origin.clone(),
        status: rule.status.label().to_string(),
        pr: rule.pr,
        conclusion: serde_json::to_value(conclusion)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        confidence: confidence(candidate).to_string(),
        related_gpu_time_us: candidate.related_us,
        share_pct: candidate.share_pct,
        evidence,
        python_locations,
        candidate_paths: rule.candidate_paths.clone(),
        checked_against: rule.checked_against.clone(),
        rationale,
    }
}

/// The fuse table of one stage: matched, selected, cut at the share bar.
pub fn fuse_table(
    rules: &[FusionRule],
    kernels: &[KernelRow],
    stage_total_us: f64,
    input: &FuseInput<'_>,
) -> Vec<FusionRow> {
    let haystacks: Vec<Haystack> = kernels.iter().map(Haystack::of).collect();
    let found = candidates(rules, kernels, &haystacks, stage_total_us, input);
    select(found, kernels, stage_total_us)
        .iter()
        .filter(|c| c.share_pct >= input.min_share_pct)
        .map(|c| fusion_row(c, kernels))
        .collect()
}

/// Fills `fusions` and `similarity` of every stage. `every_row` holds each stage's
/// kernel rows before any share cut or limit (the matcher sees small kernels too);
/// stages pair up by label.
pub fn attach_fusions(
    mut stages: Vec<crate::report::model::StageReport>,
    every_row: &[crate::report::model::StageReport],
    rules: &[FusionRule],
    input: &FuseInput<'_>,
) -> Vec<crate::report::model::StageReport> {
    for stage in &mut stages {
        let Some(all) = every_row.iter().find(|s| s.stage == stage.stage) else {
            continue;
        };
        stage.fusions = fuse_table(rules, &all.kernels, all.total_gpu_time_us, input);
        stage.similarity = crate::analyze::similarity::similarity_note(
            rules,
            &all.kernels,
            all.total_gpu_time_us,
            input,
            &stage.fusions,
        )
        .into_iter()
        .collect();
    }
    stages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_fusions;
    use crate::report::model::SiteShare;
    use crate::trace::event::PyFrame;

    fn rules(body: &str) -> Vec<FusionRule> {
        let text = format!("schema = 1\n{body}");
        parse_fusions(&text, "test.toml", "sglang").expect("test rows parse")
    }

    /// A row with the required fields around `extra` (patterns, gate, shares).
    fn row_text(id: &str, priority: i64, subsumes: &str, extra: &str) -> String {
        format!(
            "[[fusion]]\nid = \"sglang.{id}\"\nlabel = \"{id}\"\norigin = \"sglang\"\nstatus = \"mainline\"\n\
             priority = {priority}\nmin_share = 0.5\nlikely_share = 3.0\nsubsumes = [{subsumes}]\n\
             candidate_paths = [\"python/sglang/x.py\"]\nrationale = \"r\"\n\
             checked_against = [\"sgl-project/sglang@0000000000000000000000000000000000000000:x.py\"]\n{extra}\n"
        )
    }

    fn kernel(name: &str, us: f64, location: &str, op: &str) -> KernelRow {
        KernelRow {
            name: name.to_string(),
            raw_names: vec![name.to_string()],
            family: "other".to_string(),
            gpu_time_us: us,
            share_pct: us,
            launches: 1,
            python_locations: vec![SiteShare {
                location: location.to_string(),
                share_pct: 100.0,
            }],
            cpu_ops: vec![op.to_string()],
        }
    }

    fn input<'a>(facts: &'a RunFacts) -> FuseInput<'a> {
        FuseInput {
            engine: "sglang",
            facts,
            min_share_pct: 1.0,
        }
    }

    #[test]
    fn hash_like_words_and_cache_paths_leave_the_haystack() {
        assert!(is_hash_like(
            "c2ihvjzq5hgkdrx4zqebqayhyl4hnd2cmgsvdyfvjzhcwdeoy6of"
        ));
        assert!(is_hash_like("deadbeef01"));
        assert!(is_hash_like("a1b2c3d4e5f6a7b8c9"));
        for word in [
            "fused",
            "rmsnorm",
            "torchinductor",
            "qwen3",
            "sm100a",
            "communication",
        ] {
            assert!(!is_hash_like(word), "{word}");
        }
        assert_eq!(
            location_without_hashes(
                "/tmp/torchinductor_root/wk/cwkq7a2b9c4d8e1f0a3b5c6d7e8f9a0b1c2.py:12 call"
            ),
            "/tmp call"
        );
        assert_eq!(
            location_without_hashes("/w/a3f9c2e81b7d4a6f90e1c2d3/vllm/layers/act.py:5 forward"),
            "/w/vllm/layers/act.py:5 forward"
        );
        assert_eq!(
            without_hashes("## Call CompiledFxGraph a1b2c3d4e5f6a7b8c9d0 ##"),
            "## Call CompiledFxGraph  ##"
        );
        // A location pattern never matches through a compile-cache path.
        let rule = &rules(&row_text(
            "wk",
            0,
            "",
            "[fusion.active]\nlocation = [\"wk weights proj\"]",
        ))[0];
        let cached = kernel(
            "triton_poi_fused_0",
            5.0,
            "/tmp/torchinductor_u/wk/wk_weights_proj_c7a2b9.py:3 call",
            "aten::mm",
        );
        assert!(parts_hit(rule, &cached).is_empty());
        let real = kernel(
            "k",
            5.0,
            "vllm/models/deepseek_v2.py:9 wk_weights_proj",
            "aten::mm",
        );
        assert_eq!(parts_hit(rule, &real), ["fused"]);
    }

    fn trace_with(strings: &[&str], frames: &[&str], world_size: Option<u32>) -> Trace {
        let mut trace = Trace::default();
        for s in strings {
            trace.strings.intern(s);
        }
        let pid = trace.strings.intern("pid");
        for f in frames {
            let name = trace.strings.intern(f);
            trace.py_frames.push(PyFrame {
                name,
                ts: 0,
                dur: 1,
                pid,
                tid: pid,
            });
        }
        trace.meta.world_size = world_size;
        trace
    }

    #[test]
    fn facts_come_from_every_server_arg_spelling_then_the_trace() {
        let args = |v: serde_json::Value| v.as_object().unwrap().clone();
        let none: Vec<&Trace> = Vec::new();
        let facts = run_facts(
            Some(&args(
                serde_json::json!({"served_model_name": ["Llama-3"], "tensor_parallel_size": "4"}),
            )),
            &none,
        );
        assert_eq!(facts.models, ["llama-3"]);
        assert_eq!(facts.tp, Some(4));
        assert_eq!(
            facts.tp_source.as_deref(),
            Some("server args tensor_parallel_size")
        );
        // A non-numeric tp_size is not a crash, just not a fact; `tp` is read next.
        let facts = run_facts(
            Some(&args(serde_json::json!({"tp_size": "two", "tp": 2}))),
            &none,
        );
        assert_eq!(facts.tp, Some(2));

        let trace = trace_with(
            &["nn.Module: GptOssForCausalLM_0", "Qwen3ForCausalLM.forward"],
            &[
                "/x/vllm/model_executor/models/gpt_oss.py(120): forward",
                "/x/vllm/models/__init__.py(1): f",
            ],
            Some(8),
        );
        let facts = run_facts(None, &[&trace]);
        assert_eq!(
            facts.models,
            ["gptossforcausallm", "qwen3forcausallm", "gpt_oss"]
        );
        assert_eq!(facts.tp, Some(8));
        assert_eq!(
            facts.tp_source.as_deref(),
            Some("trace distributedInfo.world_size")
        );
        assert_eq!(
            run_facts(None, &[&trace_with(&[], &[], None)]),
            RunFacts::default()
        );
    }

    #[test]
    fn gates_pass_fail_or_stay_unknown() {
        let gated = &rules(&row_text(
            "g",
            0,
            "",
            "[fusion.active]\nkernel = [\"fused thing kernel\"]\n[fusion.gate]\nmodels_include = [\"qwen3\", \"gpt-oss\"]\nmodels_exclude = [\"qwen3.5\"]\nmin_tp = 2",
        ))[0];
        let facts = |models: &[&str], tp: Option<u32>| RunFacts {
            models: models.iter().map(|m| m.to_string()).collect(),
            tp,
            tp_source: None,
        };
        assert_eq!(
            gate_state(gated, &facts(&["qwen/qwen3-8b"], Some(2))),
            GateState::Passed
        );
        assert_eq!(
            gate_state(gated, &facts(&["gptossforcausallm"], Some(8))),
            GateState::Passed
        );
        assert_eq!(
            gate_state(gated, &facts(&["qwen/qwen3.5-9b"], Some(2))),
            GateState::Failed
        );
        assert_eq!(
            gate_state(gated, &facts(&["meta-llama/llama-3"], Some(2))),
            GateState::Failed
        );
        assert_eq!(
            gate_state(gated, &facts(&["qwen3"], Some(1))),
            GateState::Failed
        );
        assert_eq!(
            gate_state(gated, &facts(&[], None)),
            GateState::Unknown(
                "TP size unknown (the row needs TP >= 2); model unknown (the row applies to qwen3/gpt-oss, not qwen3.5)"
                    .to_string()
            )
        );
        // An unevaluated gate caps a fused-kernel hit at Candidate, and says why.
        let kernels = [kernel("fused_thing_kernel", 50.0, "a.py:1 f", "op")];
        let unknown = RunFacts::default();
        let rows = fuse_table(
            std::slice::from_ref(gated),
            &kernels,
            100.0,
            &input(&unknown),
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].confidence, "Candidate");
        assert_eq!(rows[0].conclusion, "present");
        assert!(
            rows[0]
                .rationale
                .contains("Gate not evaluated: TP size unknown"),
            "{}",
            rows[0].rationale
        );
        let known = facts(&["qwen3"], Some(4));
        let rows = fuse_table(std::slice::from_ref(gated), &kernels, 100.0, &input(&known));
        assert_eq!(rows[0].confidence, "Confirmed");
        // Rows of another engine's origin never apply.
        let other = FuseInput {
            engine: "vllm",
            ..input(&known)
        };
        assert!(fuse_table(std::slice::from_ref(gated), &kernels, 100.0, &other).is_empty());
    }

    #[test]
    fn greedy_selection_orders_by_priority_and_span_reevaluates_and_subsumes() {
        let text = [
            // Low priority, one split group over both norm kernels.
            row_text("norm-only", 0, "", "[fusion.active]\n[[fusion.split]]\nname = \"norm\"\nkernel = [\"rms norm kernel\"]"),
            // Two groups: all-reduce and norm.
            row_text(
                "ar-norm",
                0,
                "",
                "[fusion.active]\n[[fusion.split]]\nname = \"ar\"\nkernel = [\"cross device reduce\"]\n[[fusion.split]]\nname = \"norm\"\nkernel = [\"rms norm kernel\"]",
            ),
            // High priority, claims the QK-norm kernel by location, subsumes norm-only.
            row_text(
                "qk",
                30,
                "\"sglang.norm-only\"",
                "[fusion.active]\n[[fusion.split]]\nname = \"qk\"\nlocation = [\"apply qk norm\"]\n[[fusion.split]]\nname = \"rope\"\nkernel = [\"rotary embedding kernel\"]",
            ),
        ]
        .concat();
        let rules = rules(&text);
        let kernels = [
            kernel(
                "void cross_device_reduce_2stage<bf16>",
                10.0,
                "c.py:1 all_reduce",
                "sgl::ar",
            ),
            kernel(
                "void rms_norm_kernel<bf16>",
                4.0,
                "models/utils.py:9 apply_qk_norm",
                "sgl::rmsnorm",
            ),
            kernel(
                "void rotary_embedding_kernel<bf16>",
                2.0,
                "rope.py:3 forward",
                "sgl::rope",
            ),
            kernel(
                "void fused_add_rms_norm_kernel<bf16>",
                6.0,
                "layernorm.py:7 forward",
                "sgl::fused",
            ),
        ];
        let facts = RunFacts::default();
        let rows = fuse_table(&rules, &kernels, 100.0, &input(&facts));
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        // qk first (priority), then ar-norm (span 2) on the norm kernel qk left unclaimed;
        // norm-only is subsumed by qk.
        assert_eq!(ids, ["sglang.qk", "sglang.ar-norm"]);
        assert_eq!(rows[0].related_gpu_time_us, 6.0);
        assert_eq!(rows[1].related_gpu_time_us, 16.0);
        let evidence: Vec<(&str, &str)> = rows[1]
            .evidence
            .iter()
            .map(|e| (e.kernel.as_str(), e.part.as_str()))
            .collect();
        assert_eq!(
            evidence,
            [
                ("void cross_device_reduce_2stage<bf16>", "split:ar"),
                ("void fused_add_rms_norm_kernel<bf16>", "split:norm")
            ]
        );
        assert_eq!(rows[1].conclusion, "not-fired");
        // 16% >= likely_share 3%: the split path is confirmed.
        assert_eq!(rows[1].confidence, "Confirmed");
        assert_eq!(
            location_cell("models/utils.py:9 apply_qk_norm"),
            "apply_qk_norm @ models/utils.py:9"
        );
    }

    #[test]
    fn each_status_gives_its_conclusion_and_an_active_hit_is_present() {
        // Four rows with disjoint split kernels: the same split evidence means "did not
        // fire", "only upstream" or "open PR" depending on the row's status alone.
        let split = |name: &str| {
            format!("[fusion.active]\nkernel = []\n[[fusion.split]]\nname = \"{name}\"\nkernel = [\"{name} split kernel\"]\n")
        };
        let with_status = |row: String, status: &str| {
            row.replace("status = \"mainline\"", &format!("status = \"{status}\""))
        };
        let body = [
            row_text("main", 10, "", &split("alpha")),
            with_status(row_text("up", 10, "", &split("bravo")), "upstream"),
            with_status(row_text("pr", 10, "", &split("charlie")), "inflight")
                .replace("priority = 10", "priority = 10\npr = 4242"),
            with_status(
                row_text(
                    "ran",
                    10,
                    "",
                    "[fusion.active]\nkernel = [\"delta fused kernel\"]\n",
                ),
                "upstream",
            ),
        ]
        .concat();
        let rules = rules(&body);
        let kernels = vec![
            kernel("void alpha_split_kernel<bf16>", 5.0, "a.py:1 f", "op::a"),
            kernel("void bravo_split_kernel<bf16>", 4.0, "b.py:1 f", "op::b"),
            kernel("void charlie_split_kernel<bf16>", 3.0, "c.py:1 f", "op::c"),
            kernel("void delta_fused_kernel<bf16>", 2.0, "d.py:1 f", "op::d"),
        ];
        let facts = RunFacts::default();
        let rows = fuse_table(&rules, &kernels, 100.0, &input(&facts));
        let got: Vec<(&str, &str, f64)> = rows
            .iter()
            .map(|r| (r.id.as_str(), r.conclusion.as_str(), r.share_pct))
            .collect();
        assert_eq!(
            got,
            [
                ("sglang.main", "not-fired", 5.0),
                ("sglang.up", "upstream-only", 4.0),
                ("sglang.pr", "open-pr", 3.0),
                ("sglang.ran", "present", 2.0),
            ]
        );
        assert!(
            rows[1].rationale.starts_with(
                "The fused path exists only upstream or in another engine; split kernels take 4.0%"
            ),
            "{}",
            rows[1].rationale
        );
        assert!(
            rows[2]
                .rationale
                .starts_with("An open upstream PR (#4242) adds this fusion"),
            "{}",
            rows[2].rationale
        );
        assert_eq!(rows[2].pr, Some(4242));
    }

    #[test]
    fn a_same_site_group_counts_only_launches_at_its_anchor_sites() {
        let body = row_text(
            "silu-mul",
            0,
            "",
            "[fusion.active]\nkernel = []\n\
             [[fusion.split]]\nname = \"silu\"\nkernel = [\"silu kernel\"]\n\
             [[fusion.split]]\nname = \"mul\"\nsame_site_as = \"silu\"\nkernel = [\"mul functor\"]\n",
        );
        let rules = rules(&body);
        let shared_mul = kernel_at(
            "void mul_functor_a<bf16>",
            10.0,
            "aten::mul",
            &[
                ("mlp.py:5 forward", 40.0),
                ("rope.py:3 apply", 35.0),
                ("unresolved", 25.0),
            ],
        );
        let rope_mul = kernel(
            "void mul_functor_b<bf16>",
            20.0,
            "rope.py:3 apply",
            "aten::mul",
        );
        let silu = kernel_at(
            "void silu_kernel<bf16>",
            4.0,
            "aten::silu",
            &[("mlp.py:5 forward", 75.0), ("unresolved", 25.0)],
        );
        let kernels = vec![rope_mul, shared_mul, silu];
        let facts = RunFacts::default();
        let rows = fuse_table(&rules, &kernels, 100.0, &input(&facts));
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        // silu whole (4) + 40% of the shared multiply (4); the RoPE-only multiply and the
        // shared one's RoPE and unresolved launches are not the gated-MLP multiply.
        assert!((row.related_gpu_time_us - 8.0).abs() < 1e-9, "{row:?}");
        let evidence: Vec<(&str, &str, f64)> = row
            .evidence
            .iter()
            .map(|e| (e.kernel.as_str(), e.part.as_str(), e.gpu_time_us))
            .collect();
        assert_eq!(
            evidence,
            [
                ("void silu_kernel<bf16>", "split:silu", 4.0),
                ("void mul_functor_a<bf16>", "split:mul", 4.0)
            ]
        );
        assert_eq!(row.python_locations, ["mlp.py:5 forward", "unresolved"]);

        // With no multiply launched at the SiLU's site, the split path is incomplete.
        let apart = vec![kernels[0].clone(), kernels[2].clone()];
        assert!(fuse_table(&rules, &apart, 100.0, &input(&facts)).is_empty());
    }

    /// A split group that recognises the QK norm only by its call site.
    const QK_NORM_BY_LOCATION: &str = "[fusion.active]\nkernel = []\n\
         [[fusion.split]]\nname = \"norm\"\nlocation = [\"apply qk norm\"]\n";

    /// `kernel` with its launches spread over `(location, share %)` sites.
    fn kernel_at(name: &str, us: f64, op: &str, sites: &[(&str, f64)]) -> KernelRow {
        let mut row = kernel(name, us, "", op);
        row.python_locations = sites
            .iter()
            .map(|(location, share_pct)| SiteShare {
                location: location.to_string(),
                share_pct: *share_pct,
            })
            .collect();
        row
    }

    /// One 10 us RMSNorm kernel row: 70% from the layer norm, 30% from apply_qk_norm.
    fn two_site_norm() -> KernelRow {
        kernel_at(
            "void rms_norm_kernel<bf16>",
            10.0,
            "sgl::rmsnorm",
            &[
                ("layers/layernorm.py:20 forward", 70.0),
                ("models/qwen3.py:88 apply_qk_norm", 30.0),
            ],
        )
    }

    #[test]
    fn a_location_pattern_counts_only_the_launches_at_the_sites_it_matched() {
        // One RMSNorm kernel row launched from the layer norm (70%) and from apply_qk_norm
        // (30%): a split group keyed on the apply_qk_norm location claims only its 30%.
        let body = row_text("qk-norm", 0, "", QK_NORM_BY_LOCATION);
        let rules = rules(&body);
        let norm = two_site_norm();
        let facts = RunFacts::default();
        let rows = fuse_table(&rules, &[norm], 100.0, &input(&facts));
        assert_eq!(rows.len(), 1);
        assert!(
            (rows[0].related_gpu_time_us - 3.0).abs() < 1e-9,
            "{:?}",
            rows[0]
        );
        assert!((rows[0].evidence[0].share_pct - 3.0).abs() < 1e-9);
        assert_eq!(rows[0].evidence[0].field, "location");
        assert_eq!(
            rows[0].python_locations,
            ["models/qwen3.py:88 apply_qk_norm"]
        );
    }

    #[test]
    fn greedy_selection_claims_launch_sites_not_whole_rows() {
        // The QK-norm row claims the RMSNorm launches at apply_qk_norm (30%); the
        // residual-norm row still gets the layer-norm launches (70%) of the same kernel row.
        let body = [
            row_text("qk-norm", 10, "", QK_NORM_BY_LOCATION),
            row_text(
                "layer-norm",
                0,
                "",
                "[fusion.active]\nkernel = []\n\
                 [[fusion.split]]\nname = \"norm\"\nkernel = [\"rms norm kernel\"]\n",
            ),
        ]
        .concat();
        let rules = rules(&body);
        let norm = two_site_norm();
        let facts = RunFacts::default();
        let rows = fuse_table(&rules, &[norm], 100.0, &input(&facts));
        let got: Vec<(&str, f64, Vec<&str>)> = rows
            .iter()
            .map(|r| {
                (
                    r.id.as_str(),
                    (r.related_gpu_time_us * 1e6).round() / 1e6,
                    r.python_locations.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "sglang.qk-norm",
                    3.0,
                    vec!["models/qwen3.py:88 apply_qk_norm"]
                ),
                (
                    "sglang.layer-norm",
                    7.0,
                    vec!["layers/layernorm.py:20 forward"]
                ),
            ]
        );
    }
}
