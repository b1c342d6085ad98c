//! The start and end points of a list of intervals in time order, for the sweeps of
//! `overlap` and `timeline`: the order that sorting `(time, kind, index)` tuples gives,
//! read off two index lists (sorted by start and by end) merged as they are walked.
//!
//! Why not the tuples: a `(Ns, u8, u32)` is 16 bytes and there are two per interval, so
//! on a 1 GB trace each sweep's point list was ~4 MB, held while the other analysis
//! group held its own (issue 22's peak RSS is reached with both groups at once). The
//! two `u32` lists take a quarter of that.

use crate::trace::event::Ns;

/// Which point comes first where a start and an end fall at one instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum AtOneInstant {
    /// Back-to-back intervals never overlap. (An interval of no length would then end
    /// before it starts: the caller leaves such intervals out.)
    EndsFirst,
    /// An interval that starts where another ends leaves no zero-length gap.
    StartsFirst,
}

/// One point: its time, whether it is an interval's end, and the interval's index.
pub(crate) type Point = (Ns, bool, u32);

/// The points of some intervals in time order; ties as [`AtOneInstant`] says, then by
/// index.
pub(crate) struct SweepPoints<S, E> {
    starts: Vec<u32>,
    ends: Vec<u32>,
    next_start: usize,
    next_end: usize,
    start: S,
    end: E,
    tie: AtOneInstant,
}

impl<S: Fn(u32) -> Ns, E: Fn(u32) -> Ns> SweepPoints<S, E> {
    /// The points of the intervals `indices`, whose times `start` and `end` give.
    pub(crate) fn new(indices: Vec<u32>, start: S, end: E, tie: AtOneInstant) -> Self {
        let mut starts = indices;
        let mut ends = starts.clone();
        starts.sort_unstable_by_key(|&i| (start(i), i));
        ends.sort_unstable_by_key(|&i| (end(i), i));
        SweepPoints {
            starts,
            ends,
            next_start: 0,
            next_end: 0,
            start,
            end,
            tie,
        }
    }

    /// The earliest start and the latest end, `None` without intervals.
    pub(crate) fn span(&self) -> Option<(Ns, Ns)> {
        let first = (self.start)(*self.starts.first()?);
        let last = (self.end)(*self.ends.last()?);
        Some((first, last))
    }
}

impl<S: Fn(u32) -> Ns, E: Fn(u32) -> Ns> Iterator for SweepPoints<S, E> {
    type Item = Point;

    fn next(&mut self) -> Option<Point> {
        let start = self
            .starts
            .get(self.next_start)
            .map(|&i| ((self.start)(i), i));
        let end = self.ends.get(self.next_end).map(|&i| ((self.end)(i), i));
        let take_end = match (start, end) {
            (Some((ts, _)), Some((te, _))) => {
                te < ts || (te == ts && self.tie == AtOneInstant::EndsFirst)
            }
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_end {
            self.next_end += 1;
            end.map(|(t, i)| (t, true, i))
        } else {
            self.next_start += 1;
            start.map(|(t, i)| (t, false, i))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The points as sorting the tuples gives them (`kind` 0 sorts first at a tie).
    fn sorted_tuples(intervals: &[(Ns, Ns)], tie: AtOneInstant) -> Vec<Point> {
        let (start_kind, end_kind) = match tie {
            AtOneInstant::EndsFirst => (1u8, 0u8),
            AtOneInstant::StartsFirst => (0, 1),
        };
        let mut tuples: Vec<(Ns, u8, u32)> = Vec::new();
        for (i, &(s, e)) in intervals.iter().enumerate() {
            tuples.push((s, start_kind, i as u32));
            tuples.push((e, end_kind, i as u32));
        }
        tuples.sort_unstable();
        tuples
            .into_iter()
            .map(|(t, kind, i)| (t, kind == end_kind, i))
            .collect()
    }

    #[test]
    fn points_come_in_the_order_sorted_tuples_give() {
        // Ties everywhere: shared starts, shared ends, ends on starts, nested, equal.
        let intervals: Vec<(Ns, Ns)> = vec![
            (10, 20),
            (20, 30),
            (10, 30),
            (5, 10),
            (20, 20),
            (30, 40),
            (10, 20),
            (0, 50),
            (25, 26),
            (26, 30),
        ];
        for tie in [AtOneInstant::EndsFirst, AtOneInstant::StartsFirst] {
            // Ends first: intervals of no length left out, as the caller does.
            let keep = |&(s, e): &(Ns, Ns)| tie == AtOneInstant::StartsFirst || e > s;
            let kept: Vec<u32> = (0..intervals.len() as u32)
                .filter(|&i| keep(&intervals[i as usize]))
                .collect();
            let points = SweepPoints::new(
                kept.clone(),
                |i| intervals[i as usize].0,
                |i| intervals[i as usize].1,
                tie,
            );
            assert_eq!(points.span(), Some((0, 50)));
            let want: Vec<Point> = sorted_tuples(&intervals, tie)
                .into_iter()
                .filter(|&(_, _, i)| kept.contains(&i))
                .collect();
            assert_eq!(points.collect::<Vec<_>>(), want, "{tie:?}");
        }
        let none = SweepPoints::new(Vec::new(), |_| 0, |_| 0, AtOneInstant::EndsFirst);
        assert_eq!(none.span(), None);
        assert_eq!(none.count(), 0);
    }
}
