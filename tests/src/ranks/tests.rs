//! The rank runs' traces hold what their ground truth says, recounted from the written
//! events: every all-reduce's start and duration on each rank's own clock, ends that
//! agree across ranks once the offsets are taken out, and arrivals late by exactly the
//! injected amount where lateness was injected and nowhere else.

use super::*;
use crate::recount::load;

/// Microsecond text to ns, exactly (the writer prints 3 decimals).
fn ns(value: &Value) -> i64 {
    let text = value.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, "0"));
    int.parse::<i64>().unwrap() * 1000 + format!("{frac:0<3}")[..3].parse::<i64>().unwrap()
}

/// Every all-reduce of one trace: (start, dur) on its own clock, in time order.
fn all_reduces(path: &Path) -> Vec<(i64, i64)> {
    let trace = load(path);
    let mut found: Vec<(i64, i64)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .filter(|e| {
            let name = e["name"].as_str().unwrap();
            name.starts_with("ncclDevKernel_AllReduce") || name.contains("cross_device_reduce")
        })
        .map(|e| (ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    found.sort();
    found
}

#[test]
fn every_run_recounts_to_its_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let labelled = rank_runs()
        .into_iter()
        .map(|r| (r, StepLabels::Plain))
        .chain([(numbered_step_run(), StepLabels::ContextSums)]);
    for (run, labels) in labelled {
        let truth = write_labelled_run(&dir.path().join(run.name), &run, labels).unwrap();
        assert_eq!(truth.files.len(), run.ranks as usize);
        assert_eq!(truth.collectives.len(), run.steps * run.layers);
        let offset0 = run.offsets_ns[0];
        for (r, file) in truth.files.iter().enumerate() {
            let written = all_reduces(file);
            // A rank whose profiler started late holds the collectives from its first step.
            let seen: Vec<&CollectiveTruth> = truth
                .collectives
                .iter()
                .filter(|c| c.step >= truth.first_steps[r])
                .collect();
            assert_eq!(written.len(), seen.len(), "{}", file.display());
            let offset = truth.offsets_vs_rank0_ns[r] + offset0;
            assert!(offset.abs() <= 5_000_000);
            for (c, (start, dur)) in seen.iter().zip(&written) {
                let true_start = start - offset - writer::EPOCH_NS as i64;
                assert_eq!(true_start, c.arrival_ns[r] as i64, "{} rank {r}", run.name);
                assert_eq!(*dur, c.duration_ns[r] as i64);
            }
        }
        for c in &truth.collectives {
            let ends: Vec<u64> = (0..run.ranks as usize)
                .map(|r| c.arrival_ns[r] + c.duration_ns[r])
                .collect();
            let spread = ends.iter().max().unwrap() - ends.iter().min().unwrap();
            assert!(spread <= END_JITTER_NS, "{}: end spread {spread}", run.name);
            let injected = run
                .lateness
                .iter()
                .find(|l| l.step == c.step && l.ordinal == c.ordinal);
            let latest = *c.arrival_ns.iter().max().unwrap();
            match injected {
                Some(l) => {
                    let others = (0..run.ranks as usize)
                        .filter(|&r| r != l.rank as usize)
                        .map(|r| c.arrival_ns[r])
                        .max()
                        .unwrap();
                    assert_eq!(latest, c.arrival_ns[l.rank as usize]);
                    let late = latest - others;
                    assert!(
                        late.abs_diff(l.ns) <= END_JITTER_NS,
                        "{}: {late} vs {}",
                        run.name,
                        l.ns
                    );
                }
                None => {
                    let earliest = *c.arrival_ns.iter().min().unwrap();
                    assert!(
                        latest - earliest <= END_JITTER_NS,
                        "{} step {} #{}: skew {}",
                        run.name,
                        c.step,
                        c.ordinal,
                        latest - earliest
                    );
                }
            }
        }
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(run.name).join(TRUTH_FILE)).unwrap(),
        )
        .unwrap();
        assert_eq!(
            json["stragglers"].as_array().unwrap().len(),
            run.lateness.len()
        );
    }
}

/// The step markers of one trace, in time order.
fn step_markers(path: &Path) -> Vec<String> {
    let trace = load(path);
    let mut found: Vec<(i64, String)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "user_annotation")
        .map(|e| (ns(&e["ts"]), e["name"].as_str().unwrap().to_string()))
        .collect();
    found.sort();
    found.into_iter().map(|(_, name)| name).collect()
}

#[test]
fn numbered_step_markers_carry_the_summed_context_of_each_true_step_on_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let run = numbered_step_run();
    let truth = write_labelled_run(dir.path(), &run, StepLabels::ContextSums).unwrap();
    for (r, file) in truth.files.iter().enumerate() {
        // Rank r's trace begins with true step first_steps[r]; the context of step s is
        // 8 requests x (517 + s) tokens.
        let want: Vec<String> = (truth.first_steps[r]..run.steps)
            .map(|s| {
                let ctx = 8 * (517 + s);
                format!(
                    "execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk{ctx}sqsq8sqsk{ctx})"
                )
            })
            .collect();
        assert_eq!(step_markers(file), want, "rank {r}");
    }
    // The plain runs' markers carry the batch size only, the same every step.
    let plain = &rank_runs()[3];
    let truth = write_run(&dir.path().join("plain"), plain).unwrap();
    let markers = step_markers(&truth.files[1]);
    assert_eq!(markers.len(), plain.steps - plain.start_steps[1]);
    assert!(
        markers.iter().all(|m| m == "step[DECODE bs=8]"),
        "{markers:?}"
    );
}
