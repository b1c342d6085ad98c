//! The regression gate: which stage step times and waterfall rows grew beyond
//! `--fail-on-regression PCT` or `--fail-on-regression-ms MS` (per step). A row counts
//! only when it is `slower` or `new` (so never within `--noise`); its percentage is of
//! its own base, or of the stage's base step time for a row with no base. The rounding
//! row is never a regression.

use super::waterfall::{pct, ROUNDING};
use crate::report::{DiffStage, Regression};

/// The thresholds; `None` where not given.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct Gate {
    pub pct: Option<f64>,
    pub ms: Option<f64>,
}

impl Gate {
    /// Which threshold a growth of `delta_ns` (`delta_pct` of its base) crosses.
    fn crossed(self, delta_ns: i64, delta_pct: Option<f64>) -> Option<&'static str> {
        if delta_ns <= 0 {
            return None;
        }
        if let (Some(limit), Some(p)) = (self.pct, delta_pct) {
            if p > limit {
                return Some("pct");
            }
        }
        match self.ms {
            Some(limit) if delta_ns as f64 > limit * 1e6 => Some("ms"),
            _ => None,
        }
    }
}

/// Every regression of `stages`, stage by stage: the step time first, then its rows in
/// waterfall order.
pub(crate) fn regressions(stages: &[DiffStage], gate: Gate) -> Vec<Regression> {
    let mut found = Vec::new();
    if gate.pct.is_none() && gate.ms.is_none() {
        return found;
    }
    for stage in stages {
        if stage.status == "slower" {
            if let Some(threshold) = gate.crossed(stage.delta_ns, stage.delta_pct) {
                found.push(Regression {
                    stage: stage.stage.clone(),
                    key: "step".to_string(),
                    base_us: stage.base_step_us,
                    new_us: stage.new_step_us,
                    delta_us: stage.delta_us,
                    delta_pct: stage.delta_pct,
                    threshold: threshold.to_string(),
                });
            }
        }
        for row in &stage.rows {
            if row.key == ROUNDING || !(row.status == "slower" || row.status == "new") {
                continue;
            }
            let of = if row.base_ns == 0 {
                pct(row.delta_ns, stage.base_step_ns)
            } else {
                row.delta_pct
            };
            if let Some(threshold) = gate.crossed(row.delta_ns, of) {
                found.push(Regression {
                    stage: stage.stage.clone(),
                    key: row.key.clone(),
                    base_us: row.base_us,
                    new_us: row.new_us,
                    delta_us: row.delta_us,
                    delta_pct: of,
                    threshold: threshold.to_string(),
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::waterfall::diff_row;

    fn stage(base: i64, new: i64, rows: Vec<(&str, i64, i64)>) -> DiffStage {
        let mut rows: Vec<_> = rows
            .into_iter()
            .map(|(k, b, n)| diff_row(k, b, n, 1.0))
            .collect();
        if let Some(r) = rows.iter_mut().find(|r| r.key == ROUNDING) {
            r.status = "same".to_string();
        }
        DiffStage {
            stage: "decode".to_string(),
            base_step_ns: base,
            new_step_ns: new,
            delta_ns: new - base,
            delta_pct: pct(new - base, base),
            status: crate::diff::waterfall::status(base, new, 1.0).to_string(),
            rows,
            ..DiffStage::default()
        }
    }

    fn keys(found: &[Regression]) -> Vec<(&str, &str)> {
        found
            .iter()
            .map(|r| (r.key.as_str(), r.threshold.as_str()))
            .collect()
    }

    #[test]
    fn a_five_percent_regression_trips_at_three_not_at_ten() {
        let s = [stage(
            100_000,
            102_500,
            vec![("gemm", 50_000, 52_500), ("norm", 50_000, 50_000)],
        )];
        let at = |pct| {
            regressions(
                &s,
                Gate {
                    pct: Some(pct),
                    ms: None,
                },
            )
        };
        assert_eq!(keys(&at(3.0)), vec![("gemm", "pct")]);
        assert!(at(10.0).is_empty());
        assert_eq!(keys(&at(2.0)), vec![("step", "pct"), ("gemm", "pct")]);
        assert!(regressions(&s, Gate::default()).is_empty());
    }

    #[test]
    fn milliseconds_new_rows_and_what_never_counts() {
        let s = [stage(
            10_000_000,
            10_000_000,
            vec![
                ("host gap", 0, 2_000_000),
                ("attn", 5_000_000, 3_000_000),
                ("noise", 1_000_000, 1_009_000),
                (ROUNDING, 0, 5),
            ],
        )];
        let ms = regressions(
            &s,
            Gate {
                pct: None,
                ms: Some(1.0),
            },
        );
        assert_eq!(keys(&ms), vec![("host gap", "ms")]);
        // A new row's percentage is of the stage's base step: 20%.
        let pct = regressions(
            &s,
            Gate {
                pct: Some(15.0),
                ms: None,
            },
        );
        assert_eq!(keys(&pct), vec![("host gap", "pct")]);
        assert_eq!(pct[0].delta_pct, Some(20.0));
        assert!(regressions(
            &s,
            Gate {
                pct: Some(25.0),
                ms: None
            }
        )
        .is_empty());
    }
}
