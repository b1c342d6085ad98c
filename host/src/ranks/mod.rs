//! `--all-ranks`: every rank of a profile directory, each triaged on its own (the same
//! read -> link -> stage -> timeline path as one rank), digested, then compared.
//!
//! ```text
//! ranks of the input --workers--> per rank: triage (its own Report) + digest, traces dropped
//!   digests --align::match_collectives--> collectives every rank ran (same key)
//!           --align::clock_offsets------> each rank's clock against the reference rank
//!           --split--------------------> transfer vs wait, start skew; rank and family rows
//!           --stragglers---------------> per step the last rank to arrive, and why
//! ```
//!
//! The report is the reference rank's (the lowest rank that could be read), with every
//! rank's inputs and the `ranks`, `collectives` and `stragglers` sections added. Ranks
//! are read by as many workers as the machine's cores allow, fewer when the memory
//! available would not hold that many ranks' traces at once (said in a note).

mod align;
mod digest;
mod split;
mod stragglers;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::catalog::load_collectives;
use crate::error::{Result, TriageError};
use crate::report::Report;
use crate::trace::discover::{discover_ranks, OTHER_RANKS_HINT};
use crate::triage::{load_plugins, run_observed, TriageRequest};

use digest::RankDigest;

/// One rank's outcome: its own report and its digest; `None` until its worker is done.
type RankSlot = Option<Result<(Report, RankDigest)>>;

pub(crate) fn run(request: &TriageRequest) -> Result<Report> {
    if request.mapping_input.is_some() {
        return Err(TriageError::Usage(
            "--all-ranks compares the ranks of one run; it cannot be combined with --mapping-input/--formal-input"
                .to_string(),
        ));
    }
    let ranks = discover_ranks(&request.input)?;
    if ranks.is_empty() {
        return Err(TriageError::input(
            &request.input,
            "--all-ranks needs a profile directory whose trace names carry ranks (-TP-<r>, rank<r>, ...)",
        ));
    }
    let plugins = load_plugins(&request.plugin_dirs)?;
    let rules = load_collectives(request.catalog.as_deref())?;
    let (workers, worker_note) = workers_for(request, ranks.len());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<RankSlot>> = Mutex::new((0..ranks.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&rank) = ranks.get(i) else { break };
                let one = TriageRequest {
                    rank: Some(rank),
                    all_ranks: false,
                    progress: false,
                    ..request.clone()
                };
                let mut digest = None;
                let result = run_observed(&one, Some(&plugins), &mut |observed| {
                    digest = Some(digest::digest(observed, &rules, rank));
                })
                .and_then(|report| {
                    digest
                        .map(|d| (report, d))
                        .ok_or_else(|| TriageError::input(&request.input, "rank not digested"))
                });
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let mut notes = vec![worker_note];
    let mut reports = Vec::new();
    let mut digests = Vec::new();
    let mut first_error = None;
    for (rank, result) in ranks.iter().zip(results) {
        match result {
            Some(Ok((report, digest))) => {
                reports.push(report);
                digests.push(digest);
            }
            Some(Err(e)) => {
                notes.push(format!(
                    "rank {rank} could not be triaged, left out: {}",
                    e.one_line()
                ));
                first_error.get_or_insert(e);
            }
            None => notes.push(format!("rank {rank} was not triaged (its worker stopped)")),
        }
    }
    let mut reports = reports.into_iter();
    let Some(mut report) = reports.next() else {
        return Err(first_error
            .unwrap_or_else(|| TriageError::input(&request.input, "no rank could be triaged")));
    };
    compare(&mut report, &digests, &mut notes);
    report.mode = "all-ranks".to_string();
    report.notes.retain(|n| !n.ends_with(OTHER_RANKS_HINT));
    for other in reports {
        report.inputs.extend(other.inputs);
    }
    report.notes.extend(notes);
    Ok(report)
}

/// Fills the report's `ranks`, `collectives` and `stragglers` from the digests.
fn compare(report: &mut Report, digests: &[RankDigest], notes: &mut Vec<String>) {
    let (matched, unmatched) = align::match_collectives(digests);
    let offsets = align::clock_offsets(digests.len(), &matched);
    let splits: Vec<split::Split> = matched.iter().map(|m| split::split(m, &offsets)).collect();
    let rank_ids: Vec<u32> = digests.iter().map(|d| d.rank).collect();
    report.collectives = split::collective_rows(&matched, &splits);
    report.ranks = split::rank_rows(digests, &offsets, &matched, &splits);
    report.stragglers = stragglers::stragglers(&matched, &splits, &rank_ids);
    for row in &report.stragglers {
        if let Some(stage) = report
            .ranks
            .iter_mut()
            .find(|r| r.rank == row.rank)
            .and_then(|r| r.stages.iter_mut().find(|s| s.stage == row.stage))
        {
            stage.late_steps += 1;
        }
    }
    let reference = digests.first().map_or(0, |d| d.rank);
    notes.push(format!(
        "all ranks: {} ranks compared; {} collectives matched on every rank; clock offsets are against rank {reference}; the kernel, overlap, fuse and timeline tables are rank {reference}'s",
        digests.len(),
        matched.len()
    ));
    if unmatched > 0 {
        notes.push(format!(
            "all ranks: {unmatched} collective kernels ran on some ranks only (another step count, a trace cut at another point) and are not in the wait split"
        ));
    }
    let outside: usize = digests
        .iter()
        .flat_map(|d| &d.stages)
        .map(|s| s.outside_steps)
        .sum();
    if outside > 0 {
        notes.push(format!(
            "all ranks: {outside} collective kernels outside every step are not matched"
        ));
    }
    if matched.is_empty() {
        notes.push(
            "all ranks: no collective ran on every rank, so no clock offset could be estimated (offsets shown as 0)"
                .to_string(),
        );
    }
}

/// How many ranks are triaged at once: the cores, fewer when the memory available
/// would not hold that many ranks' records (estimated at half the decompressed JSON,
/// ten times a gzip file's size), never fewer than one; and the note that says so.
fn workers_for(request: &TriageRequest, ranks: usize) -> (usize, String) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_rank = rank_bytes(&request.input) / ranks.max(1) as u64 / 2;
    let available = available_memory();
    let by_memory = match (available, per_rank) {
        (Some(avail), per) if per > 0 => (avail / per).max(1) as usize,
        _ => usize::MAX,
    };
    let workers = cores.min(by_memory).min(ranks).max(1);
    // Cores and the worker count only: the memory figure itself changes from run to run,
    // and the same input must give the same report.
    let limit = if by_memory < cores.min(ranks) {
        ", fewer than the cores: memory available holds no more ranks at once"
    } else {
        ""
    };
    (
        workers,
        format!("all ranks: {ranks} ranks triaged by {workers} workers ({cores} cores{limit})"),
    )
}

/// Bytes of JSON the input's trace files hold, roughly (gzip counted as 10x).
fn rank_bytes(input: &std::path::Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![input.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() && pending.len() < 64 {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".json.gz") {
                total += meta.len() * 10;
            } else if path.to_string_lossy().ends_with(".json") {
                total += meta.len();
            }
        }
    }
    total
}

/// `MemAvailable` of /proc/meminfo, in bytes, where there is one.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
