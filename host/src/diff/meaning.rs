//! What changed beyond the numbers in one stage: fuse-table rows that started or stopped
//! firing, overlap across streams gained or lost, the speed of light and the decoder
//! layers (count and median layer) on each side.

use super::normalise::{ns, per_step, us};
use super::waterfall::status;
use crate::report::{DiffMeaning, FusionChange, OverlapStage, StageReport};

/// The fuse table's conclusion for a fused path that ran.
const FIRED: &str = "present";

/// One stage's meaning. `*_overlap` are the sides' overlap sweeps of the stage, `*_steps`
/// the step counts the waterfall divides by.
pub(crate) fn meaning(
    base: Option<&StageReport>,
    new: Option<&StageReport>,
    (base_overlap, base_steps): (Option<&OverlapStage>, usize),
    (new_overlap, new_steps): (Option<&OverlapStage>, usize),
    noise_pct: f64,
) -> DiffMeaning {
    let per_step_overlap =
        |o: Option<&OverlapStage>, steps: usize| o.map(|o| per_step(ns(o.overlapped_us), steps));
    let (b, n) = (
        per_step_overlap(base_overlap, base_steps),
        per_step_overlap(new_overlap, new_steps),
    );
    let overlap = match (b, n) {
        (Some(b), Some(n)) => Some(match status(b, n, noise_pct) {
            "same" => "same",
            "slower" | "new" => "gained",
            _ => "lost",
        }),
        _ => None,
    };
    DiffMeaning {
        fusions: fusion_changes(base, new),
        base_overlapped_us: b.map(us),
        new_overlapped_us: n.map(us),
        overlap: overlap.map(str::to_string),
        base_sol_pct: base.and_then(|s| s.sol.as_ref()).map(|s| s.sol_pct),
        new_sol_pct: new.and_then(|s| s.sol.as_ref()).map(|s| s.sol_pct),
        base_layers: base.and_then(|s| s.layers.as_ref()).map(|l| l.count),
        new_layers: new.and_then(|s| s.layers.as_ref()).map(|l| l.count),
        base_median_layer_us: median_layer_per_step(base),
        new_median_layer_us: median_layer_per_step(new),
    }
}

/// The median layer's time in one counted step: the layer table sums each layer over
/// its counted steps.
fn median_layer_per_step(stage: Option<&StageReport>) -> Option<f64> {
    let layers = stage?.layers.as_ref()?;
    Some(layers.median_layer_us / layers.steps.max(1) as f64)
}

/// Fuse rows whose conclusion differs, base table order first, then rows only the new
/// table has.
fn fusion_changes(base: Option<&StageReport>, new: Option<&StageReport>) -> Vec<FusionChange> {
    fn rows(s: Option<&StageReport>) -> &[crate::report::FusionRow] {
        s.map_or(&[], |s| s.fusions.as_slice())
    }
    let (base_rows, new_rows) = (rows(base), rows(new));
    let mut ids: Vec<(&str, &str)> = base_rows
        .iter()
        .map(|r| (r.id.as_str(), r.label.as_str()))
        .collect();
    for r in new_rows {
        if !ids.iter().any(|(id, _)| *id == r.id) {
            ids.push((&r.id, &r.label));
        }
    }
    ids.into_iter()
        .filter_map(|(id, label)| {
            let conclusion = |rows: &[crate::report::FusionRow]| {
                rows.iter()
                    .find(|r| r.id == id)
                    .map(|r| r.conclusion.clone())
            };
            let (b, n) = (conclusion(base_rows), conclusion(new_rows));
            if b == n {
                return None;
            }
            let change = if n.as_deref() == Some(FIRED) {
                "started firing"
            } else if b.as_deref() == Some(FIRED) {
                "stopped firing"
            } else {
                "changed"
            };
            Some(FusionChange {
                id: id.to_string(),
                label: label.to_string(),
                base: b,
                new: n,
                change: change.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FusionRow;

    fn fusion(id: &str, conclusion: &str) -> FusionRow {
        FusionRow {
            id: id.to_string(),
            label: format!("{id} label"),
            origin: "sglang".to_string(),
            status: "mainline".to_string(),
            pr: None,
            conclusion: conclusion.to_string(),
            confidence: "Confirmed".to_string(),
            related_gpu_time_us: 1.0,
            share_pct: 1.0,
            evidence: vec![],
            python_locations: vec![],
            candidate_paths: vec![],
            checked_against: vec![],
            rationale: String::new(),
        }
    }

    fn stage(fusions: Vec<FusionRow>) -> StageReport {
        StageReport {
            stage: "decode".to_string(),
            total_gpu_time_us: 0.0,
            summary: String::new(),
            kernels: vec![],
            overlap: vec![],
            fusions,
            similarity: vec![],
            notes: vec![],
            timeline: None,
            sol: None,
            layers: None,
            roles: vec![],
        }
    }

    fn overlap(us: f64) -> OverlapStage {
        OverlapStage {
            stage: "decode".to_string(),
            busy_us: 0.0,
            overlapped_us: us,
            idle_us: 0.0,
            same_stream_overlap_us: 0.0,
            streams: 2,
            effectively_one_stream: false,
            notes: vec![],
        }
    }

    #[test]
    fn fusions_that_start_or_stop_firing_and_overlap_gained_or_lost() {
        let base = stage(vec![
            fusion("a.fused-norm", "present"),
            fusion("a.same", "not-fired"),
            fusion("a.other", "undecided"),
        ]);
        let new = stage(vec![
            fusion("a.fused-norm", "not-fired"),
            fusion("a.same", "not-fired"),
            fusion("a.fresh", "present"),
        ]);
        let (ob, on) = (overlap(10.0), overlap(30.0));
        let m = meaning(Some(&base), Some(&new), (Some(&ob), 2), (Some(&on), 2), 1.0);
        let changes: Vec<(&str, &str)> = m
            .fusions
            .iter()
            .map(|c| (c.id.as_str(), c.change.as_str()))
            .collect();
        assert_eq!(
            changes,
            vec![
                ("a.fused-norm", "stopped firing"),
                ("a.other", "changed"),
                ("a.fresh", "started firing")
            ]
        );
        assert_eq!(m.fusions[1].new, None);
        assert_eq!(m.base_overlapped_us, Some(5.0));
        assert_eq!(m.new_overlapped_us, Some(15.0));
        assert_eq!(m.overlap.as_deref(), Some("gained"));
        let m = meaning(Some(&new), Some(&base), (Some(&on), 2), (Some(&ob), 2), 1.0);
        assert_eq!(m.overlap.as_deref(), Some("lost"));
        assert_eq!(m.fusions[0].change, "started firing");
    }

    #[test]
    fn layers_per_step_and_the_median_layer_on_each_side() {
        let layers = |count: usize, median: f64| crate::report::StageLayers {
            count,
            steps: 2,
            median_layer_us: 2.0 * median,
            ..crate::report::StageLayers::default()
        };
        let mut base = stage(vec![]);
        base.layers = Some(layers(36, 120.5));
        let mut new = stage(vec![]);
        new.layers = Some(layers(36, 131.0));
        let m = meaning(Some(&base), Some(&new), (None, 1), (None, 1), 1.0);
        assert_eq!((m.base_layers, m.new_layers), (Some(36), Some(36)));
        assert_eq!(m.base_median_layer_us, Some(120.5));
        assert_eq!(m.new_median_layer_us, Some(131.0));
        let m = meaning(Some(&base), None, (None, 1), (None, 1), 1.0);
        assert_eq!(m.new_layers, None);
    }
}
