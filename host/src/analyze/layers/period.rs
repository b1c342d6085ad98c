//! The decoder-layer period of one step's kernel sequence: the longest stretch that is
//! one block of kernels repeated, found from the sequence alone (no stack needed, so it
//! works inside graph replays).
//!
//! Two kernels are *alike* when they have the same name, or the same family (not
//! `other`): the first layer's input norm has no residual add (`add_rmsnorm<…, false>`
//! where the others run `<…, true>`), and gpt-oss alternates sliding-window and full
//! attention kernels, yet both are one layer each.
//!
//! Candidate periods are the distances between repeats of the most frequent kernel names
//! (a layer runs each of its kernels once or a few times), so a step costs O(n) per
//! candidate rather than O(n²). For a period p, the longest run of positions i where
//! kernel i is alike kernel i + p covers `run + p` kernels: `count = covered / p` whole
//! layers. The period covering the most kernels wins (the shorter on a tie, so twice the
//! layer never beats the layer). The `covered % p` kernels to spare leave a choice of
//! where the first layer starts; it starts on the first kernel that may open a layer
//! (its input norm, `catalog/roles.toml` `layer_opens_with`), else where the run starts.

use rustc_hash::FxHashMap;

/// Names counted for candidate periods: the most frequent ones.
const CANDIDATE_NAMES: usize = 3;
/// Distances looked at from one occurrence: to the next 1..=4 occurrences (a layer may
/// run one kernel name up to four times: norms, copies).
const CANDIDATE_SPAN: usize = 4;
/// Candidate periods evaluated, most frequent distance first.
const CANDIDATES: usize = 16;

/// One kernel of a step as the period search sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Kernel {
    /// Distinct-name id (same id = same canonical name).
    pub name: u32,
    /// Family id; `None` for `other`, which makes nothing alike.
    pub family: Option<u32>,
    /// Whether a layer may start here (`layer_opens_with`).
    pub opens_layer: bool,
}

impl Kernel {
    fn alike(&self, other: &Kernel) -> bool {
        self.name == other.name || (self.family.is_some() && self.family == other.family)
    }
}

/// `count` layers of `period` kernels, the first starting at `start`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Period {
    pub start: usize,
    pub period: usize,
    pub count: usize,
}

/// The layer period of `kernels` (in GPU start order); `None` when nothing repeats at
/// least twice.
pub(super) fn find_period(kernels: &[Kernel]) -> Option<Period> {
    let mut best: Option<(usize, usize, usize)> = None; // (covered, period, run start)
    for p in candidate_periods(kernels) {
        let Some((run_start, run_len)) = longest_alike_run(kernels, p) else {
            continue;
        };
        let covered = run_len + p;
        let count = covered / p;
        if count < 2 {
            continue;
        }
        let whole = count * p;
        let better = match best {
            None => true,
            Some((b_whole, b_p, _)) => whole > b_whole || (whole == b_whole && p < b_p),
        };
        if better {
            best = Some((whole, p, run_start));
        }
    }
    let (whole, period, run_start) = best?;
    let covered = longest_alike_run(kernels, period).map_or(whole, |(_, len)| len + period);
    let spare = covered - whole;
    let offset = (0..=spare)
        .find(|&o| kernels[run_start + o].opens_layer)
        .unwrap_or(0);
    Some(Period {
        start: run_start + offset,
        period,
        count: whole / period,
    })
}

/// Distances between repeats of the most frequent names, most frequent first.
fn candidate_periods(kernels: &[Kernel]) -> Vec<usize> {
    let n = kernels.len();
    let mut positions: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    for (i, k) in kernels.iter().enumerate() {
        positions.entry(k.name).or_default().push(i);
    }
    let mut names: Vec<(&u32, &Vec<usize>)> = positions.iter().collect();
    // Most occurrences first; on a tie the name seen first (determinism).
    names.sort_by_key(|(_, at)| (std::cmp::Reverse(at.len()), at[0]));
    let mut distances: FxHashMap<usize, usize> = FxHashMap::default();
    for (_, at) in names.iter().take(CANDIDATE_NAMES) {
        for (k, &from) in at.iter().enumerate() {
            for &to in at.iter().skip(k + 1).take(CANDIDATE_SPAN) {
                let d = to - from;
                if d >= 2 && d * 2 <= n {
                    *distances.entry(d).or_default() += 1;
                }
            }
        }
    }
    let mut ranked: Vec<(usize, usize)> = distances.into_iter().collect();
    ranked.sort_by_key(|&(d, seen)| (std::cmp::Reverse(seen), d));
    ranked
        .into_iter()
        .take(CANDIDATES)
        .map(|(d, _)| d)
        .collect()
}

/// The longest run of positions i with kernel i alike kernel i + p: (start, length).
fn longest_alike_run(kernels: &[Kernel], p: usize) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    let mut run_start = 0;
    let mut run_len = 0;
    for i in 0..kernels.len().saturating_sub(p) {
        if kernels[i].alike(&kernels[i + p]) {
            if run_len == 0 {
                run_start = i;
            }
            run_len += 1;
            if best.is_none_or(|(_, len)| run_len > len) {
                best = Some((run_start, run_len));
            }
        } else {
            run_len = 0;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernels from letters: the letter is the name, upper and lower case of one letter
    /// share a family, `n` and `N` (norms) open a layer, `x`..`z` have no family.
    fn kernels(text: &str) -> Vec<Kernel> {
        text.bytes()
            .map(|b| Kernel {
                name: u32::from(b),
                family: (!b"xyz".contains(&b)).then_some(u32::from(b.to_ascii_lowercase())),
                opens_layer: b.eq_ignore_ascii_case(&b'n'),
            })
            .collect()
    }

    #[test]
    fn a_prologue_layers_and_an_epilogue_are_told_apart() {
        // Prologue "xy", three layers "nqak", epilogue: final norm then "zz".
        let found = find_period(&kernels("xynqaknqaknqaknzz")).unwrap();
        assert_eq!(
            found,
            Period {
                start: 2,
                period: 4,
                count: 3
            }
        );
    }

    #[test]
    fn a_first_layer_with_its_own_norm_kernel_is_still_a_layer() {
        // Layer 0 opens with `N` (no residual add), the others with `n`: alike by family.
        let found = find_period(&kernels("xyNqaknqaknqakz")).unwrap();
        assert_eq!((found.start, found.period, found.count), (2, 4, 3));
    }

    #[test]
    fn the_layer_starts_on_its_norm_when_the_prologue_ends_like_a_layer() {
        // gpt-oss: the embedding's all-reduce `r` ends the prologue and every layer.
        let found = find_period(&kernels("xyrnqarnqarnqarnz")).unwrap();
        assert_eq!((found.start, found.period, found.count), (3, 4, 3));
    }

    #[test]
    fn alternating_attention_kernels_do_not_double_the_period() {
        // `a` and `A` (sliding and full attention) share the attention family.
        let found = find_period(&kernels("xnqaknqAknqaknqAkz")).unwrap();
        assert_eq!((found.start, found.period, found.count), (1, 4, 4));
    }

    #[test]
    fn nothing_repeated_is_no_period() {
        assert_eq!(find_period(&kernels("xyz")), None);
        assert_eq!(find_period(&kernels("")), None);
        assert_eq!(find_period(&kernels("nqakz")), None);
    }
}
