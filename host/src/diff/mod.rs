//! `llm-triage diff BASE NEW`: two runs compared stage by stage.
//!
//! ```text
//! BASE, NEW --inputs--> Report, Report   a trace or profile directory triaged (both
//!                                        sides in parallel), or a saved --format json
//!           --align---> paired kernel rows per stage (role, site, name, ...)
//!           --waterfall, normalise--> per-step rows summing exactly to the step change
//!           --meaning--> fusions started/stopped, overlap gained/lost, SOL
//!           --gate-----> regressions beyond --fail-on-regression(-ms)
//! ```
//!
//! The comparison ([`compare`]) sees only the two `Report` values, so a trace and its
//! saved JSON report (written with `--min-share 0`) give the same diff.

mod align;
mod gate;
mod inputs;
mod meaning;
mod normalise;
mod waterfall;

use std::path::PathBuf;

use crate::error::Result;
use crate::report::{
    DiffReport, DiffSide, DiffStage, OverlapStage, PerToken, Report, StageReport, Workload,
    SCHEMA_VERSION,
};
use crate::triage::{self, TriageRequest};

pub(crate) use gate::Gate;
use inputs::{read_saved_report, side_kind, SideKind};
use normalise::{ns, us, workload, workloads_differ};
use waterfall::{pct, status, waterfall};

/// What the user asked for (the CLI maps flags onto this).
#[derive(Clone, Debug)]
pub(crate) struct DiffRequest {
    pub base: PathBuf,
    pub new: PathBuf,
    /// The triage each trace or directory side runs (its `input` is replaced per side;
    /// `min_share_pct` 0, so every kernel row is compared).
    pub triage: TriageRequest,
    pub options: DiffOptions,
}

/// How two reports are compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DiffOptions {
    /// `--noise PCT`.
    pub noise_pct: f64,
    pub gate: Gate,
    /// `--stage`: compare only this stage (`extend/prefill`, `decode` or `all`).
    pub stage: Option<String>,
}

/// Both sides read (in parallel), then compared.
pub(crate) fn run(request: &DiffRequest) -> Result<DiffReport> {
    let (base, new) = std::thread::scope(|scope| {
        let base = scope.spawn(|| load_side(&request.base, &request.triage));
        let new = load_side(&request.new, &request.triage);
        let base = base
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (base, new)
    });
    let ((base_side, base), (new_side, new)) = (base?, new?);
    Ok(compare(
        (base_side, &base),
        (new_side, &new),
        &request.options,
    ))
}

/// One side: its report, and what it was.
fn load_side(path: &std::path::Path, template: &TriageRequest) -> Result<(DiffSide, Report)> {
    let kind = side_kind(path)?;
    let report = match kind {
        SideKind::Report => read_saved_report(path)?,
        SideKind::Trace | SideKind::Directory => {
            let request = TriageRequest {
                input: path.to_path_buf(),
                ..template.clone()
            };
            triage::run(&request)?
        }
    };
    let side = DiffSide {
        path: path.display().to_string(),
        kind: kind.as_str().to_string(),
        framework: report.framework.display_name.clone(),
        model: report.model.clone(),
        inputs: report.inputs.clone(),
        device: report.device.as_ref().map(|d| d.name.clone()),
    };
    Ok((side, report))
}

/// The diff of two reports.
pub(crate) fn compare(
    (base_side, base): (DiffSide, &Report),
    (new_side, new): (DiffSide, &Report),
    options: &DiffOptions,
) -> DiffReport {
    let mut labels: Vec<&str> = base.stages.iter().map(|s| s.stage.as_str()).collect();
    for s in &new.stages {
        if !labels.contains(&s.stage.as_str()) {
            labels.push(&s.stage);
        }
    }
    let labels: Vec<&str> = labels
        .into_iter()
        .filter(|l| options.stage.as_deref().is_none_or(|want| want == *l))
        .collect();
    let stages: Vec<DiffStage> = labels
        .iter()
        .map(|label| compare_stage(label, base, new, options.noise_pct))
        .collect();
    let mut notes = Vec::new();
    if let Some(want) = &options.stage {
        if stages.is_empty() {
            notes.push(format!("Neither side has a stage {want}."));
        }
    }
    if base_side.framework != new_side.framework {
        notes.push(format!(
            "The runs are of different engines ({} and {}): kernel rows meet by role, site and family where their names differ.",
            base_side.framework, new_side.framework
        ));
    }
    if base_side.device != new_side.device {
        notes.push(format!(
            "The runs are on different GPUs ({} and {}).",
            base_side.device.as_deref().unwrap_or("unknown"),
            new_side.device.as_deref().unwrap_or("unknown")
        ));
    }
    let regressions = gate::regressions(&stages, options.gate);
    DiffReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        base: base_side,
        new: new_side,
        noise_pct: options.noise_pct,
        fail_on_regression_pct: options.gate.pct,
        fail_on_regression_ms: options.gate.ms,
        stages,
        regressions,
        notes,
    }
}

fn compare_stage(label: &str, base: &Report, new: &Report, noise_pct: f64) -> DiffStage {
    let (b, n) = (stage_of(base, label), stage_of(new, label));
    let w = waterfall(b, n, noise_pct);
    let (base_workload, new_workload) = (workload(steps_of(b)), workload(steps_of(n)));
    let mut notes = Vec::new();
    match (b, n) {
        (None, Some(_)) => notes.push("Only the new run has this stage.".to_string()),
        (Some(_), None) => notes.push("Only the base run has this stage.".to_string()),
        _ => {}
    }
    for (side, present, has_steps) in [
        ("base", b.is_some(), w.base_has_steps),
        ("new", n.is_some(), w.new_has_steps),
    ] {
        if present && !has_steps {
            notes.push(format!(
                "The {side} run has no steps in this stage: its GPU time is compared as one step."
            ));
        }
    }
    if w.rows.iter().any(|r| r.key == waterfall::BELOW_CUT) {
        notes.push(
            "A saved report left kernel rows out (--min-share): their time is the below share cut row; save reports with --min-share 0 to compare every row.".to_string(),
        );
    }
    if b.is_some() && n.is_some() && workloads_differ(&base_workload, &new_workload) {
        notes.push(format!(
            "The workloads differ (base: {}; new: {}): per-step times compare different work{}.",
            workload_text(&base_workload),
            workload_text(&new_workload),
            if both_have_tokens(&base_workload, w.base_steps, &new_workload, w.new_steps) {
                "; see the per-token figures"
            } else {
                ""
            }
        ));
    }
    let per_token = both_have_tokens(&base_workload, w.base_steps, &new_workload, w.new_steps)
        .then(|| {
            let wall =
                |s: Option<&StageReport>| steps_of(s).iter().map(|s| ns(s.wall_us)).sum::<i64>();
            let per = |wall_ns: i64, tokens: u64| wall_ns as f64 / 1000.0 / tokens as f64;
            let (bt, nt) = (
                per(wall(b), base_workload.tokens_total),
                per(wall(n), new_workload.tokens_total),
            );
            PerToken {
                base_us_per_token: bt,
                new_us_per_token: nt,
                delta_pct: 100.0 * (nt - bt) / bt,
            }
        });
    let meaning = meaning::meaning(
        b,
        n,
        (overlap_of(base, label), w.base_steps),
        (overlap_of(new, label), w.new_steps),
        noise_pct,
    );
    let delta_ns = w.new_step_ns - w.base_step_ns;
    DiffStage {
        stage: label.to_string(),
        base_step_us: us(w.base_step_ns),
        new_step_us: us(w.new_step_ns),
        delta_us: us(delta_ns),
        delta_pct: pct(delta_ns, w.base_step_ns),
        base_step_ns: w.base_step_ns,
        new_step_ns: w.new_step_ns,
        delta_ns,
        status: status(w.base_step_ns, w.new_step_ns, noise_pct).to_string(),
        base_steps: w.base_steps,
        new_steps: w.new_steps,
        base_workload,
        new_workload,
        per_token,
        rows: w.rows,
        meaning,
        notes,
    }
}

fn stage_of<'r>(report: &'r Report, label: &str) -> Option<&'r StageReport> {
    report.stages.iter().find(|s| s.stage == label)
}

fn overlap_of<'r>(report: &'r Report, label: &str) -> Option<&'r OverlapStage> {
    report.overlap_stages.iter().find(|s| s.stage == label)
}

fn steps_of(stage: Option<&StageReport>) -> &[crate::report::Step] {
    stage.map_or(&[], normalise::steps)
}

/// Both sides give a token count for every step (and some tokens).
fn both_have_tokens(base: &Workload, base_steps: usize, new: &Workload, new_steps: usize) -> bool {
    base.steps_with_tokens == base_steps
        && new.steps_with_tokens == new_steps
        && base.tokens_total > 0
        && new.tokens_total > 0
}

/// `batch 32, 15360 tokens per step`, or `no batch or token count`.
fn workload_text(w: &Workload) -> String {
    let mut parts = Vec::new();
    if let Some(b) = w.batch_mean {
        parts.push(format!("batch {}", round2(b)));
    }
    if let Some(t) = w.tokens_mean {
        parts.push(format!("{} tokens per step", round2(t)));
    }
    if parts.is_empty() {
        "no batch or token count".to_string()
    } else {
        parts.join(", ")
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(kernel, family, gpu time in µs)`.
    type Kernel<'a> = (&'a str, &'a str, f64);
    /// `(label, kernels, step wall times in µs)`.
    type Stage<'a> = (&'a str, &'a [Kernel<'a>], &'a [f64]);

    /// A report with the given stages.
    fn report(engine: &str, stages: &[Stage<'_>]) -> Report {
        let stages: Vec<serde_json::Value> = stages
            .iter()
            .map(|(label, kernels, walls)| {
                let total: f64 = kernels.iter().map(|k| k.2).sum();
                serde_json::json!({
                    "stage": label, "total_gpu_time_us": total, "summary": "",
                    "kernels": kernels.iter().map(|(name, family, us)| serde_json::json!({
                        "name": name, "raw_names": [name], "family": family,
                        "gpu_time_us": us, "share_pct": 0.0, "launches": 1,
                        "python_locations": [], "cpu_ops": []
                    })).collect::<Vec<_>>(),
                    "overlap": [], "fusions": [], "similarity": [], "notes": [],
                    "timeline": {
                        "span_us": 0.0, "busy_us": 0.0, "idle_us": 0.0, "idle_pct": 0.0,
                        "idle_inside_steps_us": 0.0, "idle_outside_steps_us": 0.0,
                        "idle_by_cause": {"launch_us": 0.0, "sync_us": 0.0, "graph_us": 0.0, "host_us": 0.0},
                        "histogram": [], "top_gaps": [], "step_source": "step[...] annotations",
                        "steps": walls.iter().enumerate().map(|(i, w)| serde_json::json!({
                            "index": i, "label": "step[DECODE bs=8]", "start_us": 0.0, "wall_us": w,
                            "compute_us": w, "exposed_comm_us": 0.0, "memcpy_us": 0.0,
                            "launch_idle_us": 0.0, "sync_idle_us": 0.0, "graph_gap_us": 0.0,
                            "host_gap_us": 0.0
                        })).collect::<Vec<_>>(),
                        "step_stats": {"count": walls.len(), "median_wall_us": 0.0, "p90_wall_us": 0.0,
                            "max_wall_us": 0.0, "steady_first": null, "steady_last": null, "outliers": []},
                        "notes": []
                    }
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "tool_version": "0", "mode": "single-trace",
            "framework": {"name": engine, "display_name": engine, "plugin_version": "1", "decided_by": []},
            "inputs": [], "model": null, "server_args": {}, "stages": stages, "notes": [],
            "mapping_framework": null, "mapping_inputs": [], "overlap_stages": []
        }))
        .unwrap()
    }

    fn side(engine: &str) -> DiffSide {
        DiffSide {
            framework: engine.to_string(),
            ..DiffSide::default()
        }
    }

    #[test]
    fn stages_of_either_side_the_stage_filter_and_the_notes() {
        let base = report(
            "SGLang",
            &[
                ("extend/prefill", &[("gemm", "gemm", 30.0)], &[30.0]),
                ("decode", &[("gemm", "gemm", 10.0)], &[5.0, 5.0]),
            ],
        );
        let new = report(
            "vLLM",
            &[("decode", &[("gemm", "gemm", 12.0)], &[6.0, 6.0])],
        );
        let options = DiffOptions {
            noise_pct: 1.0,
            ..DiffOptions::default()
        };
        let diff = compare((side("SGLang"), &base), (side("vLLM"), &new), &options);
        let labels: Vec<&str> = diff.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(labels, ["extend/prefill", "decode"]);
        assert_eq!(diff.stages[0].new_step_ns, 0);
        assert_eq!(diff.stages[0].notes, ["Only the base run has this stage."]);
        let decode = &diff.stages[1];
        assert_eq!((decode.base_step_ns, decode.new_step_ns), (5000, 6000));
        assert_eq!(decode.rows[0].delta_ns, 1000);
        assert_eq!(decode.status, "slower");
        assert_eq!(decode.base_workload.batch_mean, Some(8.0));
        assert!(
            diff.notes[0].contains("different engines"),
            "{:?}",
            diff.notes
        );

        let decode_only = DiffOptions {
            stage: Some("decode".to_string()),
            ..options.clone()
        };
        let diff = compare((side("SGLang"), &base), (side("vLLM"), &new), &decode_only);
        assert_eq!(diff.stages.len(), 1);
        let missing = DiffOptions {
            stage: Some("prefill".to_string()),
            ..options
        };
        let diff = compare((side("SGLang"), &base), (side("vLLM"), &new), &missing);
        assert!(diff.stages.is_empty());
        assert_eq!(diff.notes[0], "Neither side has a stage prefill.");
    }
}
