//! Step re-alignment: ranks whose profilers started on different steps (rank 1's trace
//! begins one or two steps after rank 0's) number their steps differently, so a rank's
//! own step index is moved onto the reference rank's before collectives are matched.
//!
//! Where both ranks' step markers carry step numbers, the numbers decide. A marker's
//! label carries one when, over a stage's steps, every label has one shape (the label
//! with its digit runs masked) and one of its digit runs rises from every step to the
//! next: torch's `ProfilerStep#N`, or the summed context length of vLLM-style
//! `execute_<tokens>_context_…_generation_<n>(sq…sk<ctx>…)` decode markers, which grows
//! by the batch every step and is the same on every rank in one step. Numbers that
//! stay put (`step[DECODE bs=32]`, SGLang's marker: only the batch size and tokens,
//! `python/sglang/srt/utils/profile_utils.py` `build_step_span_name`) number nothing.
//! The numbers decide only when they agree on one shift wherever the two ranks'
//! ranges overlap. Else the collectives do: of the shifts under which the overlapping
//! steps run the same collectives (family and stream, counted), the one whose matched
//! collectives' end times differ most evenly wins. A synchronising collective ends at
//! one instant on every rank, so under the right shift the end differences are the
//! clock offset plus jitter; under a wrong one they also carry the differences between
//! steps' lengths.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::digest::{Collective, StageDigest};
use crate::trace::event::Ns;

/// Largest shift tried, in steps.
const MAX_SHIFT: i64 = 8;

/// How a shift was found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Basis {
    /// Both ranks' markers carry step numbers.
    Numbers,
    /// The collectives' sequence and end times.
    Collectives,
}

/// The reference step of `own`'s step `i` is `i + shift`; and how that was found
/// (`None`: nothing to go by, shift 0).
pub(super) fn step_shift(reference: &StageDigest, own: &StageDigest) -> (i64, Option<Basis>) {
    if let Some(shift) = by_numbers(reference, own) {
        return (shift, Some(Basis::Numbers));
    }
    match by_collectives(reference, own) {
        Some(shift) => (shift, Some(Basis::Collectives)),
        None => (0, None),
    }
}

/// A marker label's shape (its digit runs masked as `#`) and its digit runs' values
/// (`ProfilerStep#12` -> (`ProfilerStep##`, [12])); a run too long for a u64 is `None`.
fn shape_and_numbers(label: &str) -> (String, Vec<Option<u64>>) {
    let mut shape = String::with_capacity(label.len());
    let mut numbers = Vec::new();
    let mut rest = label;
    while let Some(first) = rest.chars().next() {
        let digits = first.is_ascii_digit();
        let len = rest
            .find(|c: char| c.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (run, after) = rest.split_at(len);
        if digits {
            shape.push('#');
            numbers.push(run.parse().ok());
        } else {
            shape.push_str(run);
        }
        rest = after;
    }
    (shape, numbers)
}

/// The numbers a stage's markers give its steps: where every step's label has one shape
/// and a digit run of it (the first such) rises from every step to the next; with the
/// shape and the run's place, so two ranks' numbers are compared only when they number
/// the same thing. `None` below two steps: one label cannot show a number rising.
fn step_numbers(d: &StageDigest) -> Option<(String, usize, Vec<u64>)> {
    let labels: Vec<(String, Vec<Option<u64>>)> = d
        .timeline
        .steps
        .iter()
        .map(|s| shape_and_numbers(&s.label))
        .collect();
    let (shape, first) = labels.first()?;
    if labels.len() < 2 || labels.iter().any(|(s, _)| s != shape) {
        return None;
    }
    (0..first.len()).find_map(|field| {
        let numbers: Option<Vec<u64>> = labels.iter().map(|(_, n)| n[field]).collect();
        let numbers = numbers?;
        numbers
            .windows(2)
            .all(|w| w[0] < w[1])
            .then(|| (shape.clone(), field, numbers))
    })
}

/// The shift that puts each of `own`'s numbered steps on the reference step of that
/// number, when every own number inside the reference's range is a reference step's
/// and all of them agree on one shift.
fn by_numbers(reference: &StageDigest, own: &StageDigest) -> Option<i64> {
    let (their_shape, their_field, theirs) = step_numbers(reference)?;
    let (shape, field, mine) = step_numbers(own)?;
    if (their_shape, their_field) != (shape, field) {
        return None;
    }
    let (low, high) = (*theirs.first()?, *theirs.last()?);
    let mut shift = None;
    for (i, n) in mine.iter().enumerate() {
        if *n < low || *n > high {
            continue;
        }
        // The numbers rise, so a binary search finds the step of that number.
        let j = theirs.binary_search(n).ok()?;
        let this = j as i64 - i as i64;
        if shift.is_some_and(|s| s != this) {
            return None;
        }
        shift = Some(this);
    }
    shift
}

/// Per step, its collectives counted by (family, stream ordinal), the family by its
/// index in a [`Families`] shared by both ranks.
type Signature = BTreeMap<(u32, usize), usize>;

/// The family names of the two ranks compared, each once, by index: the shifts tried
/// compare and look up every collective's key some 17 times, and with the names as
/// strings that string comparing was most of the main thread's 20 ms at the end of a
/// 4-rank run (the other core idle). Only equality of families is asked, so the
/// indexes decide as the names did.
#[derive(Default)]
struct Families<'a>(FxHashMap<&'a str, u32>);

impl<'a> Families<'a> {
    fn id(&mut self, family: &'a str) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(family).or_insert(next)
    }
}

fn signatures<'a>(d: &'a StageDigest, families: &mut Families<'a>) -> Vec<Signature> {
    let mut out: Vec<Signature> = vec![Signature::new(); d.timeline.steps.len()];
    for c in &d.collectives {
        let family = families.id(&c.key.family);
        if let Some(sig) = out.get_mut(c.key.step) {
            *sig.entry((family, c.key.stream_ordinal)).or_default() += 1;
        }
    }
    out
}

/// A collective's key with its family's index: (step, family, stream ordinal, ordinal).
type IdKey = (usize, u32, usize, usize);

fn id_key<'a>(c: &'a Collective, families: &mut Families<'a>) -> IdKey {
    let k = &c.key;
    (k.step, families.id(&k.family), k.stream_ordinal, k.ordinal)
}

fn by_collectives(reference: &StageDigest, own: &StageDigest) -> Option<i64> {
    let mut families = Families::default();
    let (theirs, mine) = (
        signatures(reference, &mut families),
        signatures(own, &mut families),
    );
    let their_ends: FxHashMap<IdKey, Ns> = reference
        .collectives
        .iter()
        .map(|c| (id_key(c, &mut families), c.end))
        .collect();
    let my_ends: Vec<(IdKey, Ns)> = own
        .collectives
        .iter()
        .map(|c| (id_key(c, &mut families), c.end))
        .collect();
    // (spread of the end differences, |shift|, shift) of every shift whose overlapping
    // steps all run the same collectives; the least spread wins, then the smaller shift.
    let mut best: Option<(Ns, i64, i64)> = None;
    let mut unshifted: Option<Ns> = None;
    for shift in -MAX_SHIFT..=MAX_SHIFT {
        let pairs: Vec<(usize, usize)> = (0..mine.len())
            .filter_map(|i| {
                let j = usize::try_from(i as i64 + shift).ok()?;
                (j < theirs.len()).then_some((i, j))
            })
            .collect();
        if pairs.is_empty() || pairs.iter().any(|&(i, j)| mine[i] != theirs[j]) {
            continue;
        }
        let mut diffs: Vec<Ns> = my_ends
            .iter()
            .filter_map(|&((step, family, stream, ordinal), end)| {
                let j = usize::try_from(step as i64 + shift).ok()?;
                let theirs = their_ends.get(&(j, family, stream, ordinal))?;
                Some(end - theirs)
            })
            .collect();
        if diffs.is_empty() {
            continue;
        }
        diffs.sort_unstable();
        // The interquartile range: a clipped edge or one late teardown does not decide.
        let spread = diffs[diffs.len() * 3 / 4] - diffs[diffs.len() / 4];
        if shift == 0 {
            unshifted = Some(spread);
            continue;
        }
        let candidate = (spread, shift.abs(), shift);
        if best.is_none_or(|b| candidate < b) {
            best = Some(candidate);
        }
    }
    // Profilers usually start together: a shift must fit clearly better than none (less
    // than half its spread), so end-time jitter on evenly long steps moves no rank.
    match (unshifted, best) {
        (Some(zero), Some((spread, _, shift))) if 2 * spread < zero => Some(shift),
        (Some(_), _) => Some(0),
        (None, best) => best.map(|(_, _, shift)| shift),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::digest::{CollectiveKey, Stretch};
    use crate::report::model::{StageTimeline, Step};

    /// A stage of `lengths.len()` steps (ns each, back to back from `start`), each with
    /// three all-reduces ending at a third, two thirds and the end of the step.
    fn stage(start: Ns, lengths: &[Ns], labels: Option<u64>) -> StageDigest {
        let mut collectives = Vec::new();
        let mut at = start;
        let mut steps = Vec::new();
        for (i, &len) in lengths.iter().enumerate() {
            steps.push(Step {
                index: i,
                label: labels.map_or("step[DECODE bs=8]".to_string(), |first| {
                    format!("ProfilerStep#{}", first + i as u64)
                }),
                ..Step::default()
            });
            for ordinal in 0..3 {
                let end = at + len * (ordinal as Ns + 1) / 3;
                collectives.push(Collective {
                    key: CollectiveKey {
                        step: i,
                        family: "all_reduce".into(),
                        stream_ordinal: 0,
                        ordinal,
                    },
                    start: end - 5_000,
                    end,
                    before: Stretch::default(),
                    covered: Vec::new(),
                });
            }
            at += len;
        }
        StageDigest {
            stage: "decode".into(),
            timeline: StageTimeline {
                steps,
                ..StageTimeline::default()
            },
            collectives,
            outside_steps: 0,
        }
    }

    #[test]
    fn a_rank_that_started_later_is_shifted_by_its_collectives_end_times() {
        // True steps of uneven length; rank 1 saw them from step 2 on, its clock 3 ms off.
        let lengths = [310_000, 290_000, 350_000, 305_000, 330_000, 295_000];
        let reference = stage(1_000_000, &lengths, None);
        let start_2: Ns = 1_000_000 + lengths[..2].iter().sum::<Ns>();
        let own = stage(start_2 + 3_000_000, &lengths[2..], None);
        assert_eq!(step_shift(&reference, &own), (2, Some(Basis::Collectives)));
        // And the other way round: the reference started later.
        assert_eq!(step_shift(&own, &reference), (-2, Some(Basis::Collectives)));
        // Same start: no shift.
        assert_eq!(
            step_shift(&reference, &stage(1_000_000 - 4_000_000, &lengths, None)),
            (0, Some(Basis::Collectives))
        );
        // Steps of one length: every shift fits as well as none, so none is taken.
        let even = [300_000; 6];
        assert_eq!(
            step_shift(&stage(0, &even, None), &stage(2_000_000, &even, None)),
            (0, Some(Basis::Collectives))
        );
    }

    #[test]
    fn step_numbers_decide_where_both_ranks_have_them() {
        let lengths = [300_000; 5];
        let reference = stage(0, &lengths, Some(10));
        let own = stage(0, &lengths[1..], Some(11));
        assert_eq!(step_shift(&reference, &own), (1, Some(Basis::Numbers)));
        assert_eq!(
            shape_and_numbers("ProfilerStep#7"),
            ("ProfilerStep##".to_string(), vec![Some(7)])
        );
        assert_eq!(
            shape_and_numbers("step[DECODE bs=8]"),
            ("step[DECODE bs=#]".to_string(), vec![Some(8)])
        );
    }

    /// `d` with its steps' labels from `label(i)`.
    fn relabelled(mut d: StageDigest, label: impl Fn(usize) -> String) -> StageDigest {
        for (i, step) in d.timeline.steps.iter_mut().enumerate() {
            step.label = label(i);
        }
        d
    }

    /// vLLM's decode marker of a batch of 8 whose summed context is `ctx`.
    fn execute(ctx: usize) -> String {
        format!("execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk{ctx}sqsq8sqsk{ctx})")
    }

    #[test]
    fn an_engine_markers_number_that_rises_every_step_numbers_the_steps() {
        // Evenly long steps: the collectives could not tell the shift, the markers can.
        let lengths = [300_000; 7];
        let reference = relabelled(stage(0, &lengths, None), |i| execute(8 * (517 + i)));
        // Rank 1 started two steps later (its step 0 is true step 2).
        let own = relabelled(stage(9_000_000, &lengths[2..], None), |i| {
            execute(8 * (517 + i + 2))
        });
        assert_eq!(step_shift(&reference, &own), (2, Some(Basis::Numbers)));
        assert_eq!(step_shift(&own, &reference), (-2, Some(Basis::Numbers)));
        // The batch size (field 0) stays put; the summed context (field 8) rises.
        let numbered = step_numbers(&reference).unwrap();
        assert_eq!(numbered.1, 8);
        assert_eq!(numbered.2[..2], [4136, 4144]);
    }

    #[test]
    fn markers_whose_numbers_stay_put_or_disagree_leave_it_to_the_collectives() {
        let lengths = [310_000, 290_000, 350_000, 305_000, 330_000, 295_000];
        let reference = stage(1_000_000, &lengths, None);
        let start_2: Ns = 1_000_000 + lengths[..2].iter().sum::<Ns>();
        // SGLang's marker: the batch size only, the same every step.
        let own = stage(start_2 + 3_000_000, &lengths[2..], None);
        assert_eq!(step_numbers(&reference), None);
        assert_eq!(step_shift(&reference, &own), (2, Some(Basis::Collectives)));
        // Rising numbers that do not agree on one shift (ranks of other batches: their
        // contexts differ) are no step numbers across the ranks.
        let theirs = relabelled(reference.clone(), |i| execute(4000 + 10 * i));
        let mine = relabelled(own.clone(), |i| execute([4020, 4035, 4041, 4050][i]));
        assert_eq!(step_shift(&theirs, &mine), (2, Some(Basis::Collectives)));
        // Nor do numbers of another marker shape.
        let mine = relabelled(own, |i| format!("ProfilerStep#{}", 4020 + 10 * i));
        assert_eq!(step_shift(&theirs, &mine), (2, Some(Basis::Collectives)));
        // One step shows no number rising.
        let one = relabelled(stage(0, &lengths[..1], None), |_| execute(4000));
        assert_eq!(step_numbers(&one), None);
    }
}
