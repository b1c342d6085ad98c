//! What the matcher sees of a kernel row ([`Haystack`]: its name, CPU ops and Python
//! locations with hash-like words and compile-cache paths removed), and every kernel row
//! a fusion row's evidence hits ([`rule_hits`]), before any threshold or selection.
//!
//! Hash stripping comes first so that a generated cache path (torch.compile, Inductor,
//! Triton) can never be evidence: `wk` must not hit a digest (the predecessor's
//! substring match did, and reported an unrelated fusion as confirmed).

use std::collections::HashSet;

use super::facts::{gate_state, split_ambiguity, GateState, RunFacts};
use crate::catalog::fusions::{Evidence, Field, FusionRule};
use crate::catalog::pattern::{FieldText, Pattern};
use crate::report::model::{KernelRow, LaunchShare, SiteShare};

/// What a kernel row offers the matcher: its name, CPU ops and Python locations, the
/// latter two with hash-like path segments removed.
#[derive(Clone, Debug)]
pub struct Haystack {
    name: FieldText,
    cpu_ops: Vec<FieldText>,
    locations: Vec<FieldText>,
    /// For each of `locations`, its index in the kernel row's `python_locations`.
    location_sites: Vec<usize>,
    /// Every index of the kernel row's `python_locations` (unresolved ones included).
    all_sites: Vec<usize>,
    /// The row's launches by site and CPU op (`KernelRow::launch_mix`).
    launch_mix: Vec<LaunchShare>,
}

impl Haystack {
    pub fn of(row: &KernelRow) -> Haystack {
        // A site offers its location and, when that is the model's frame, the engine
        // frame behind it: patterns name the engine's layer functions.
        let (location_sites, locations) = row
            .python_locations
            .iter()
            .enumerate()
            .filter(|(_, s)| s.location != crate::analyze::kernels::UNRESOLVED)
            .flat_map(|(i, s)| {
                std::iter::once(&s.location)
                    .chain(&s.launch_frame)
                    .map(move |l| (i, l))
            })
            .map(|(i, l)| (i, FieldText::new(location_without_hashes(l))))
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
            all_sites: (0..row.python_locations.len()).collect(),
            launch_mix: row.launch_mix.clone(),
        }
    }

    /// The first pattern of `evidence` that matches this row, and in which field.
    fn first_hit<'p>(&self, evidence: &'p Evidence) -> Option<(Field, &'p Pattern)> {
        evidence.first_hit(&self.name, &self.cpu_ops, &self.locations)
    }

    /// Row `row`'s hit by `evidence`, with the look-alikes it excludes left out: `None`
    /// when nothing matched, when the row is excluded (`not_kernel`, `not_cpu_op`), or
    /// when every counted launch site is excluded (`not_location`).
    fn hit(&self, row: usize, evidence: &Evidence) -> Option<Hit> {
        let (field, pattern) = self.first_hit(evidence)?;
        if evidence.excludes_row(&self.name, &self.cpu_ops) {
            return None;
        }
        let mut sites = (field == Field::Location).then(|| self.sites_matching(pattern));
        if !evidence.not_location.is_empty() {
            let excluded: Vec<usize> = self
                .locations
                .iter()
                .zip(&self.location_sites)
                .filter(|(text, _)| evidence.excludes_site(text))
                .map(|(_, &site)| site)
                .collect();
            if !excluded.is_empty() {
                let own = sites.unwrap_or_else(|| self.all_sites.clone());
                let left: Vec<usize> = own.into_iter().filter(|s| !excluded.contains(s)).collect();
                if left.is_empty() {
                    return None;
                }
                sites = Some(left);
            }
        }
        let left_out_ops = evidence.excluded_ops(&self.cpu_ops);
        if !left_out_ops.is_empty() && !self.launch_mix.is_empty() {
            // The sites that launched through an op left in; they are what the hit claims.
            let mut kept: Vec<usize> = self
                .launch_mix
                .iter()
                .filter(|l| sites.as_ref().is_none_or(|s| s.contains(&l.site)))
                .filter(|l| l.cpu_op.is_none_or(|op| !left_out_ops.contains(&op)))
                .map(|l| l.site)
                .collect();
            kept.dedup();
            if kept.is_empty() {
                return None;
            }
            sites = Some(kept);
        }
        Some(Hit {
            row,
            field,
            pattern: pattern.text.clone(),
            sites,
            left_out_ops,
        })
    }

    /// The row's launch sites (indices into `python_locations`) that `pattern` matches,
    /// each once.
    fn sites_matching(&self, pattern: &Pattern) -> Vec<usize> {
        let mut sites: Vec<usize> = self
            .locations
            .iter()
            .zip(&self.location_sites)
            .filter(|(field, _)| pattern.matches(field))
            .map(|(_, &site)| site)
            .collect();
        sites.dedup();
        sites
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
    /// CPU ops (indices into the row's `cpu_ops`) whose launches do not count
    /// (`not_cpu_op`); counted per launch through the row's `launch_mix`.
    pub left_out_ops: Vec<usize>,
}

impl Hit {
    /// The part of `row`'s GPU time that this hit counts (1 = all of it).
    pub fn weight(&self, row: &KernelRow) -> f64 {
        if let Some(launches) = self.counted_launches(row) {
            return launches.map(|l| l.share_pct / 100.0).sum::<f64>().min(1.0);
        }
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
    pub(super) fn counted_sites<'k>(&self, row: &'k KernelRow) -> Vec<&'k SiteShare> {
        if let Some(launches) = self.counted_launches(row) {
            let mut sites: Vec<usize> = launches.map(|l| l.site).collect();
            sites.dedup();
            return sites
                .into_iter()
                .filter_map(|i| row.python_locations.get(i))
                .collect();
        }
        match &self.sites {
            None => row.python_locations.iter().collect(),
            Some(sites) => sites
                .iter()
                .filter_map(|&i| row.python_locations.get(i))
                .collect(),
        }
    }

    /// When some of the row's CPU ops are left out and the row knows its launches by site
    /// and op: the launches that count (at a counted site, through an op not left out).
    /// `None` otherwise, and the site shares decide.
    fn counted_launches<'k>(
        &'k self,
        row: &'k KernelRow,
    ) -> Option<impl Iterator<Item = &'k LaunchShare> + 'k> {
        if self.left_out_ops.is_empty() || row.launch_mix.is_empty() {
            return None;
        }
        Some(row.launch_mix.iter().filter(move |l| {
            self.sites.as_ref().is_none_or(|s| s.contains(&l.site))
                && l.cpu_op.is_none_or(|op| !self.left_out_ops.contains(&op))
        }))
    }
}

/// Every kernel row a rule's evidence matched, before any threshold.
#[derive(Clone, Debug)]
pub struct RuleHits<'r> {
    pub rule: &'r FusionRule,
    pub gate: GateState,
    /// Why split kernels cannot decide on this run (`split_ambiguous_on`), if so.
    pub split_ambiguity: Option<String>,
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

    pub(super) fn all_groups_seen(&self) -> bool {
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
            .filter_map(|(i, row)| row.hit(i, evidence))
            .collect()
    };
    RuleHits {
        rule,
        gate: gate_state(rule, facts),
        split_ambiguity: split_ambiguity(rule, facts),
        active: hits_of(&rule.active),
        groups: rule.split.iter().map(|g| hits_of(&g.evidence)).collect(),
    }
}

/// The parts of `rule` one kernel row hits: `fused` (active evidence) and
/// `split:<group>` for each split group, in catalog order (gates not applied).
pub fn parts_hit(rule: &FusionRule, row: &KernelRow) -> Vec<String> {
    let haystack = Haystack::of(row);
    let mut parts = Vec::new();
    if haystack.hit(0, &rule.active).is_some() {
        parts.push("fused".to_string());
    }
    for group in &rule.split {
        if haystack.hit(0, &group.evidence).is_some() {
            parts.push(format!("split:{}", group.name));
        }
    }
    parts
}
