//! Pairing the kernel rows of one stage across the two sides. Each pass pairs the rows
//! still unpaired whose key is equal, the i-th of a key on one side with its i-th on the
//! other (both in table order, most time first), and records how (`matched_by`):
//!
//! 1. `name`: the same canonical name (the same kernel is the same row, whatever else);
//! 2. `role`: the same role and family, when the role (`catalog/roles.toml`) is known on
//!    both sides and is the only row of that role and family left on each: so `nvjet_*`
//!    and `Cijk_*` GEMMs of one projection meet across backends and vendors;
//! 3. `site`: the same launch site (`python_locations[0]`, not `unresolved`) and family;
//! 4. `untemplated`: the same name once template arguments and return type are dropped;
//! 5. `family`: the same kernel family.
//!
//! The issue lists role first; identical names go first here because a kernel present on
//! both sides is the one row to compare whatever its role, and a role pass first could
//! pair it with a namesake's neighbour. What is left unpaired is `gone` or `new`.

use std::collections::HashMap;

use crate::report::KernelRow;

/// How two rows were paired (the `matched_by` spellings).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum MatchedBy {
    Role,
    Site,
    Name,
    Untemplated,
    Family,
}

impl MatchedBy {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MatchedBy::Role => "role",
            MatchedBy::Site => "site",
            MatchedBy::Name => "name",
            MatchedBy::Untemplated => "untemplated",
            MatchedBy::Family => "family",
        }
    }
}

/// One aligned row: a kernel row of either side or of both.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pair<'r> {
    pub base: Option<&'r KernelRow>,
    pub new: Option<&'r KernelRow>,
    /// `Name` for a row of one side only (it is keyed by its own name).
    pub matched_by: MatchedBy,
}

/// The key one pass pairs rows by; `None`: the row takes no part in the pass.
type RowKey = fn(&KernelRow) -> Option<String>;

/// Every row of `base` and `new`, paired where a pass finds a partner: pairs in base
/// order, then the new side's unpaired rows in their order.
pub(crate) fn align<'r>(base: &[&'r KernelRow], new: &[&'r KernelRow]) -> Vec<Pair<'r>> {
    let mut partner: Vec<Option<(usize, MatchedBy)>> = vec![None; base.len()];
    let mut taken = vec![false; new.len()];
    let passes: [(MatchedBy, RowKey, bool); 5] = [
        (MatchedBy::Name, |r| Some(r.name.clone()), false),
        (MatchedBy::Role, role_key, true),
        (MatchedBy::Site, site_key, false),
        (
            MatchedBy::Untemplated,
            |r| Some(untemplated(&r.name)),
            false,
        ),
        (MatchedBy::Family, |r| Some(r.family.clone()), false),
    ];
    for (how, key, unique_only) in passes {
        let mut open_new: HashMap<String, Vec<usize>> = HashMap::new();
        for (j, row) in new.iter().enumerate() {
            if !taken[j] {
                if let Some(k) = key(row) {
                    open_new.entry(k).or_default().push(j);
                }
            }
        }
        let mut open_base: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, row) in base.iter().enumerate() {
            if partner[i].is_none() {
                if let Some(k) = key(row) {
                    open_base.entry(k).or_default().push(i);
                }
            }
        }
        for (k, base_rows) in &open_base {
            let Some(new_rows) = open_new.get(k) else {
                continue;
            };
            if unique_only && (base_rows.len() != 1 || new_rows.len() != 1) {
                continue;
            }
            for (&i, &j) in base_rows.iter().zip(new_rows) {
                partner[i] = Some((j, how));
                taken[j] = true;
            }
        }
    }
    let mut pairs: Vec<Pair<'r>> = base
        .iter()
        .zip(&partner)
        .map(|(&row, found)| Pair {
            base: Some(row),
            new: found.map(|(j, _)| new[j]),
            matched_by: found.map_or(MatchedBy::Name, |(_, how)| how),
        })
        .collect();
    pairs.extend(
        new.iter()
            .zip(&taken)
            .filter(|(_, &t)| !t)
            .map(|(&row, _)| Pair {
                base: None,
                new: Some(row),
                matched_by: MatchedBy::Name,
            }),
    );
    pairs
}

/// `role|family`, for a row whose role is known and not the fallback `other`.
fn role_key(row: &KernelRow) -> Option<String> {
    let role = row.role.as_deref().filter(|r| *r != "other")?;
    Some(format!("{role}|{}", row.family))
}

/// `site|family`, for a row whose main launch site is resolved.
fn site_key(row: &KernelRow) -> Option<String> {
    let site = row
        .python_locations
        .first()
        .map(|s| s.location.as_str())
        .filter(|l| *l != "unresolved" && !l.is_empty())?;
    Some(format!("{site}|{}", row.family))
}

/// A canonical name without its template argument lists and return type:
/// `void at::native::elementwise_kernel<128, 4, F>` -> `at::native::elementwise_kernel`.
pub(crate) fn untemplated(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    let trimmed = out.trim();
    // The return type is what precedes the kernel's own (last) word.
    trimmed
        .rsplit_once(' ')
        .map_or(trimmed, |(_, own)| own)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SiteShare;

    fn row(name: &str, family: &str, role: Option<&str>, site: &str) -> KernelRow {
        KernelRow {
            name: name.to_string(),
            raw_names: vec![name.to_string()],
            family: family.to_string(),
            gpu_time_us: 1.0,
            share_pct: 1.0,
            launches: 1,
            python_locations: vec![SiteShare {
                location: site.to_string(),
                share_pct: 100.0,
                launch_site_source: "eager".to_string(),
            }],
            cpu_ops: vec![],
            launch_site_source: "eager".to_string(),
            input_dims: None,
            launch_mix: vec![],
            roofline: None,
            role: role.map(str::to_string),
        }
    }

    fn how(pairs: &[Pair<'_>]) -> Vec<(Option<String>, Option<String>, &'static str)> {
        pairs
            .iter()
            .map(|p| {
                (
                    p.base.map(|r| r.name.clone()),
                    p.new.map(|r| r.name.clone()),
                    p.matched_by.as_str(),
                )
            })
            .collect()
    }

    #[test]
    fn each_pass_in_order() {
        let base = [
            row("nvjet_qkv", "gemm", Some("qkv"), "unresolved"),
            row("flash_fwd", "attention", Some("attention"), "unresolved"),
            row("act<1>", "activation", None, "unresolved"),
            row("rms<float>", "norm", None, "a.py:1 f"),
            row("old_ew", "memory", None, "unresolved"),
            row("gone_kernel", "sampling", None, "unresolved"),
        ];
        let new = [
            row("flash_fwd", "attention", Some("attention"), "unresolved"),
            row("Cijk_qkv", "gemm", Some("qkv"), "unresolved"),
            row("rms_v2", "norm", None, "a.py:1 f"),
            row("act<2>", "activation", None, "unresolved"),
            row("new_ew", "memory", None, "unresolved"),
            row("fresh", "moe", None, "unresolved"),
        ];
        let base: Vec<&KernelRow> = base.iter().collect();
        let new: Vec<&KernelRow> = new.iter().collect();
        let s = |t: &str| Some(t.to_string());
        assert_eq!(
            how(&align(&base, &new)),
            vec![
                (s("nvjet_qkv"), s("Cijk_qkv"), "role"),
                (s("flash_fwd"), s("flash_fwd"), "name"),
                (s("act<1>"), s("act<2>"), "untemplated"),
                (s("rms<float>"), s("rms_v2"), "site"),
                (s("old_ew"), s("new_ew"), "family"),
                (s("gone_kernel"), None, "name"),
                (None, s("fresh"), "name"),
            ]
        );
    }

    #[test]
    fn a_role_shared_by_two_rows_is_left_to_later_passes() {
        let base = [
            row("gemm_a", "gemm", Some("qkv"), "unresolved"),
            row("gemm_b", "gemm", Some("qkv"), "unresolved"),
        ];
        let new = [row("gemm_c", "gemm", Some("qkv"), "unresolved")];
        let base: Vec<&KernelRow> = base.iter().collect();
        let new: Vec<&KernelRow> = new.iter().collect();
        let pairs = align(&base, &new);
        // Not by role (two candidates): the family pass pairs the first (most time).
        assert_eq!(pairs[0].matched_by, MatchedBy::Family);
        assert_eq!(pairs[0].new.map(|r| r.name.as_str()), Some("gemm_c"));
        assert!(pairs[1].new.is_none());
    }

    #[test]
    fn untemplated_drops_arguments_and_return_type() {
        assert_eq!(
            untemplated("void at::native::elementwise_kernel<128, 4, F<int>>"),
            "at::native::elementwise_kernel"
        );
        assert_eq!(untemplated("nvjet_tst_64x8"), "nvjet_tst_64x8");
        assert_eq!(
            untemplated("std::enable_if<true, void>::type vllm::rms_norm_kernel<c10::BFloat16>"),
            "vllm::rms_norm_kernel"
        );
    }
}
