//! `--all-ranks`: every rank of a profile directory, each triaged on its own (the same
//! read -> link -> stage -> timeline path as one rank), digested, then compared.
//!
//! ```text
//! ranks of the input --workers--> per rank: triage (its own Report) + digest, traces dropped
//!   digests --align::match_collectives--> collectives every rank ran (same key)
//!           --align::clock_offsets------> each rank's clock against the reference rank
//!           --split--------------------> transfer vs wait, start skew; rank and family rows,
//!                                        the reference's communication shares split
//!           --stragglers---------------> per step the last rank to arrive, and why
//! ```
//!
//! The report is the reference rank's (the lowest rank that could be read), with every
//! rank's inputs and the `ranks`, `collectives` and `stragglers` sections added; it is
//! the only rank triaged in full, the others only as far as their digest needs (read,
//! link, stage, timeline: `triage::Depth::Digest`). As many ranks are read at once as
//! keep the cores busy (a gzip rank's inflate thread counts), fewer when the memory
//! available would not hold that many ranks' traces at once (said in a note); a rank's
//! work after its read runs beside the next rank's read.

mod align;
mod digest;
mod inputs;
mod split;
mod steps;
mod stragglers;

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::catalog::Catalog;
use crate::error::{Result, TriageError};
use crate::plugins::PluginSet;
use crate::report::Report;
use crate::trace::discover::OTHER_RANKS_HINT;
use crate::triage::{load_plugins, run_observed, Depth, Phases, TriageRequest};

use digest::RankDigest;
use inputs::RankInput;

/// One rank's outcome: its own report and its digest; `None` until its worker is done.
type RankSlot = Option<Result<(Report, RankDigest)>>;

pub(crate) fn run(request: &TriageRequest) -> Result<Report> {
    if request.mapping_input.is_some() {
        return Err(TriageError::Usage(
            "--all-ranks compares the ranks of one run; it cannot be combined with --mapping-input/--formal-input"
                .to_string(),
        ));
    }
    let mut phases = Phases::from_env();
    let inputs = inputs::rank_inputs(request)?;
    let ranks: Vec<u32> = inputs.iter().map(|r| r.rank).collect();
    let plugins = load_plugins(&request.plugin_dirs)?;
    // Once for every rank (it is the same for all: the built-in files, --catalog's and
    // the plugins'), not once per rank's triage: its rules and patterns took each rank's
    // worker 5-8 ms before its read could start.
    let catalog = Catalog::load(request.catalog.as_deref(), &plugins)?;
    share_one_heap();
    let (workers, worker_note) = workers_for(request, &inputs);
    phases.done("all ranks: inputs+plugins+catalog");
    let mut results = triage_ranks(request, &inputs, workers, &plugins, &catalog);
    phases.done("all ranks: every rank triaged");
    let mut notes = vec![worker_note];
    // The reference rank (the first that could be read) gives the report, so it needs
    // the whole triage; only when the first rank failed is one run again in full.
    if let Some(i) = results.iter().position(|r| matches!(r, Some(Ok(_)))) {
        if i > 0 {
            let full = triage_rank(request, &inputs[i], Depth::Report, &plugins, &catalog);
            notes.push(format!(
                "all ranks: rank {} read a second time for the full report (rank {} could not be triaged)",
                ranks[i], ranks[0]
            ));
            results[i] = Some(full);
        }
    }
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
    // Freeing the digests (every collective's stretch and its kernel names) took the
    // main thread 5-10 ms at the end, with the other core idle (4 ranks of 250 MB); a
    // thread of its own frees them while the report is rendered, and a process that
    // exits first frees them all the same.
    std::thread::spawn(move || drop(digests));
    report.mode = "all-ranks".to_string();
    report.notes.retain(|n| !n.ends_with(OTHER_RANKS_HINT));
    for other in reports {
        report.inputs.extend(other.inputs);
    }
    report.notes.extend(notes);
    phases.done("all ranks: compared");
    Ok(report)
}

/// Every rank triaged, ranks taken in order by `in_flight` workers of which `reads` at
/// most read at once: the first rank (the reference, the longest job) in full, the
/// others only as far as their digest needs (`Depth::Digest`), each rank's traces
/// dropped once digested. A rank's work after its read (link, stage, timeline, digest;
/// the reference's tables) runs beside the next rank's read, which starts as soon as a
/// read ends: with one worker per read, the next read waited for the post-read, and the
/// reads came in waves with the cores half idle between them (4 ranks of 250 MB: 2.94x
/// one rank's wall before, 2.72x after). At most `in_flight` ranks' traces are held at
/// once. Reads start in rank order, so the reference rank (the longest post-read, the
/// full tables) is always among the first reads: when a later rank's worker reached
/// the gate first, the reference was read last and its tables ran at the end with a
/// core idle (4 ranks of 250 MB: 0.1 s of the wall in such runs).
fn triage_ranks(
    request: &TriageRequest,
    ranks: &[RankInput],
    Workers {
        reads,
        in_flight,
        cores_filled,
    }: Workers,
    plugins: &PluginSet,
    catalog: &Catalog,
) -> Vec<RankSlot> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<RankSlot>> = Mutex::new((0..ranks.len()).map(|_| None).collect());
    let gate = Arc::new(ReadGate::new(reads, cores_filled, ranks.len()));
    std::thread::scope(|scope| {
        for _ in 0..in_flight {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(rank) = ranks.get(i) else { break };
                    // The read sits deep in `triage::run_observed`; the gate and the
                    // rank's turn reach it here.
                    let turn = Turn::take(&gate, i);
                    let depth = if i == 0 { Depth::Report } else { Depth::Digest };
                    let result = triage_rank(request, rank, depth, plugins, catalog);
                    drop(turn);
                    if let Ok(mut slots) = results.lock() {
                        slots[i] = Some(result);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_default()
}

/// The reads of an all-ranks run that may go on at once, shared by its workers, and
/// whose turn it is: reads start in rank order.
struct ReadGate {
    state: Mutex<GateState>,
    changed: Condvar,
    /// Whether the reads at once fill the cores ([`Workers::cores_filled`]).
    cores_filled: bool,
}

struct GateState {
    /// Reads free to start.
    free: usize,
    /// By rank index: whether its turn has passed (its read started, or its triage
    /// ended without one: an input that failed before its read).
    passed: Vec<bool>,
    /// The first rank whose turn has not passed: the next read to start.
    next: usize,
}

impl GateState {
    fn pass(&mut self, rank: usize) {
        if let Some(p) = self.passed.get_mut(rank) {
            *p = true;
        }
        while self.passed.get(self.next).copied().unwrap_or(false) {
            self.next += 1;
        }
    }
}

thread_local! {
    /// The gate of the all-ranks run this thread works for and the index of the rank it
    /// triages (none outside one).
    static READ_GATE: RefCell<Option<(Arc<ReadGate>, usize)>> = const { RefCell::new(None) };
}

impl ReadGate {
    fn new(reads: usize, cores_filled: bool, ranks: usize) -> ReadGate {
        ReadGate {
            state: Mutex::new(GateState {
                free: reads.max(1),
                passed: vec![false; ranks],
                next: 0,
            }),
            changed: Condvar::new(),
            cores_filled,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        // No section under this lock can panic; should one have, the state is still right.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A worker's rank while it is triaged: the thread's reads go through the gate in that
/// rank's turn. Dropped (also by a panic), the turn passes, so that a rank that ended
/// before its read never holds up the next.
struct Turn {
    gate: Arc<ReadGate>,
    rank: usize,
}

impl Turn {
    fn take(gate: &Arc<ReadGate>, rank: usize) -> Turn {
        READ_GATE.with(|g| *g.borrow_mut() = Some((Arc::clone(gate), rank)));
        Turn {
            gate: Arc::clone(gate),
            rank,
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        READ_GATE.with(|g| *g.borrow_mut() = None);
        self.gate.state().pass(self.rank);
        self.gate.changed.notify_all();
    }
}

/// Held while a read of an all-ranks worker goes on: the next rank's read waits for one.
pub(crate) struct Reading {
    gate: Arc<ReadGate>,
}

impl Reading {
    /// Whether the other reads going on with this one keep every core busy already: a
    /// scan-ahead thread (`trace::read::read_trace_beside_others`) would then add only
    /// its hand-off (4 ranks of 250 MB on 2 cores: 4% more CPU with one for the
    /// reference rank's read, and no sooner done).
    pub(crate) fn beside_others(&self) -> bool {
        self.gate.cores_filled
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.gate.state().free += 1;
        self.gate.changed.notify_all();
    }
}

/// On an all-ranks worker, waits until its read may start (`triage::read_all` calls this
/// before reading): a read free, and every lower rank's read started (or its triage
/// over); holds that place until dropped. Elsewhere `None` at once.
pub(crate) fn start_reading() -> Option<Reading> {
    let (gate, rank) = READ_GATE.with(|g| g.borrow().clone())?;
    let mut state = gate.state();
    // A rank whose turn has passed (a second read of its own) waits for a free read only.
    while state.free == 0 || !(state.next == rank || state.passed.get(rank) == Some(&true)) {
        state = gate.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    state.free -= 1;
    state.pass(rank);
    drop(state);
    gate.changed.notify_all();
    Some(Reading { gate })
}

/// One rank's triage at `depth` and its digest.
fn triage_rank(
    request: &TriageRequest,
    input: &RankInput,
    depth: Depth,
    plugins: &PluginSet,
    catalog: &Catalog,
) -> Result<(Report, RankDigest)> {
    let rank = input.rank;
    let one = TriageRequest {
        rank: Some(rank),
        input: input.files.first().unwrap_or(&request.input).clone(),
        rank_inputs: input.files.clone(),
        all_ranks: false,
        progress: false,
        // The digest reads the steps, not the longest gaps.
        top_gaps: if depth == Depth::Digest {
            0
        } else {
            request.top_gaps
        },
        ..request.clone()
    };
    let mut digest = None;
    let report = run_observed(&one, Some(plugins), Some(catalog), depth, &mut |observed| {
        digest = Some(digest::digest(observed, &catalog.collectives, rank));
    });
    // The rank's traces are dropped by now; their pages stay in the heap for the next
    // rank (`share_one_heap`).
    let digest = digest.ok_or_else(|| TriageError::input(&request.input, "rank not digested"))?;
    Ok((report?, digest))
}

/// Every thread of the run allocates from one heap that keeps what is freed: a rank's
/// pages, once freed, hold the next rank's records instead of going back to the system.
/// Before, blocks past 128 KiB were mapped on their own and each rank's heap handed
/// back (`malloc_trim`) as soon as it was dropped, to keep the peak down; but each new
/// rank, read on fresh threads (arenas of their own), then faulted in and zeroed all of
/// its pages again (4 ranks of 250 MB: 70,000 page faults, 0.28 s of system time). With
/// one arena, blocks up to 4 MiB in the heap and its top kept: 34,000 faults and 0.14 s,
/// for about the same peak (91-96 MB). A 32 MiB threshold saved 8,000 faults more but
/// peaked at 113 MB and gained no CPU: a vector that grows inside the heap is copied
/// at each doubling, one mapped on its own is moved by remapping. Blocks past 4 MiB
/// (the larger record tables) are still mapped on their own and handed back when freed.
///
/// One arena: glibc fixes its arena limit only once eight arenas exist, and the run has
/// made none yet (the main thread has the main one), so every worker and reader thread
/// shares the main arena; its lock costs little here (the threads allocate in large
/// blocks or from their thread caches).
fn share_one_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; the new values apply to later
    // allocations and affect no live block.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// Fills the report's `ranks`, `collectives` and `stragglers` from the digests.
fn compare(report: &mut Report, digests: &[RankDigest], notes: &mut Vec<String>) {
    let (matched, unmatched, shifted) = align::match_collectives(digests);
    let reference = digests.first().map_or(0, |d| d.rank);
    let offsets = align::clock_offsets(digests.len(), &matched);
    let splits: Vec<split::Split> = matched.iter().map(|m| split::split(m, &offsets)).collect();
    let rank_ids: Vec<u32> = digests.iter().map(|d| d.rank).collect();
    report.collectives = split::collective_rows(&matched, &splits);
    split::split_communication_shares(&mut report.stages, &matched, &splits);
    split::split_exposed_wait(
        &mut report.stages,
        &mut report.overlap_stages,
        &matched,
        &splits,
    );
    report.ranks = split::rank_rows(digests, &offsets, &matched, &splits);
    report.stragglers = stragglers::stragglers(&matched, &splits, &rank_ids);
    // Every rank's all-to-all split sizes, in place of the reference rank's own.
    let rank_splits: Vec<_> = digests.iter().map(|d| d.splits.clone()).collect();
    report.ep_imbalance = crate::analyze::ep_imbalance::ep_imbalance(&rank_splits);
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
    notes.push(format!(
        "all ranks: {} ranks compared; {} collectives matched on every rank; clock offsets are against rank {reference}; the kernel, overlap, fuse and timeline tables are rank {reference}'s",
        digests.len(),
        matched.len()
    ));
    for s in &shifted {
        let by = match s.basis {
            steps::Basis::Numbers => "their markers' step numbers",
            steps::Basis::Collectives => "the sequence and end times of their collectives",
        };
        let steps = if s.shift.abs() == 1 { "step" } else { "steps" };
        notes.push(format!(
            "all ranks: rank {}'s {} steps shifted by {:+} {steps} onto rank {reference}'s (its profiler started on another step; matched by {by})",
            digests[s.rank].rank, s.stage, s.shift
        ));
    }
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
    // The reference rank's read notes are its report's own; the others' would be lost
    // with their reports.
    for digest in digests.iter().skip(1) {
        let rank = digest.rank;
        notes.extend(
            digest
                .read_notes
                .iter()
                .map(|n| format!("rank {rank}: {n}")),
        );
    }
}

/// How many ranks are read at once and how many are in flight ([`workers_for`]).
struct Workers {
    reads: usize,
    in_flight: usize,
    /// Whether that many reads at once keep every core busy (not held back by the
    /// memory or the number of ranks).
    cores_filled: bool,
}

/// How many ranks are read at once (the workers the note counts) and how many are in
/// flight, chosen for throughput: enough reads that their threads keep every core busy,
/// and one more. A read's last stretch keeps only its parser busy (its inflate thread is
/// done), and where no other read was left beside it a core idled until it ended; with
/// one read more, the last reads start sooner and end together (4 ranks of 250 MB on 2
/// cores, 10 alternating runs: 1.29 -> 1.26 s wall, peak RSS 96 -> 115 MB; a further
/// read costs memory and gains nothing). Up to twice as many
/// ranks in flight, so that no read waits for a worker still busy with its last rank's
/// post-read. A rank read from gzip keeps about 1.3 ([`GZIP_RANK_CORES_TENTHS`]) cores
/// busy (its parser and its inflate thread, which the profile of a 250 MB rank puts at a
/// quarter of its CPU time); a plain JSON rank one core. Fewer reads, and no more ranks
/// in flight, than the memory available would hold ranks' records (estimated at half the
/// decompressed JSON, ten times a gzip file's size); never fewer than one. And the note
/// that says so (its workers are the reads at once).
fn workers_for(request: &TriageRequest, inputs: &[RankInput]) -> (Workers, String) {
    let ranks = inputs.len();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let paths: Vec<std::path::PathBuf> = match request.rank_inputs.is_empty() {
        true => vec![request.input.clone()],
        false => request.rank_inputs.clone(),
    };
    let (json_bytes, gzip) = rank_bytes(&paths);
    let per_rank = json_bytes / ranks.max(1) as u64 / 2;
    let available = available_memory();
    let by_memory = match (available, per_rank) {
        (Some(avail), per) if per > 0 => (avail / per).max(1) as usize,
        _ => usize::MAX,
    };
    let (rank_tenths, kind) = if gzip {
        (GZIP_RANK_CORES_TENTHS, "a gzip rank keeps 1.3 cores busy")
    } else {
        (10, "a rank keeps one core busy")
    };
    let by_cores = ranks_filling(cores, rank_tenths);
    let wanted = (by_cores + 1).min(ranks);
    let workers = wanted.min(by_memory).max(1);
    let in_flight = (2 * workers).min(by_memory).min(ranks).max(workers);
    // Cores and the worker count only: the memory figure itself changes from run to run,
    // and the same input must give the same report.
    let limit = if by_memory < wanted {
        "; fewer: memory available holds no more ranks at once"
    } else if workers > by_cores {
        ", and one more keeps them busy to the end"
    } else {
        ""
    };
    (
        Workers {
            reads: workers,
            in_flight,
            cores_filled: workers >= by_cores,
        },
        format!(
            "all ranks: {ranks} ranks triaged by {workers} workers ({cores} cores; {kind}, so {by_cores} ranks at once fill them{limit})"
        ),
    )
}

/// How many ranks in flight keep `cores` busy when each keeps `rank_tenths` tenths of
/// a core busy: ceil(cores / rank cores), in integers.
fn ranks_filling(cores: usize, rank_tenths: usize) -> usize {
    (cores * 10).div_ceil(rank_tenths.max(1)).max(1)
}

/// Cores a rank read from gzip keeps busy, in tenths ([`workers_for`]).
const GZIP_RANK_CORES_TENTHS: usize = 13;

/// Bytes of JSON the input's trace files (the files given, the files in the
/// directories given) hold, roughly (gzip counted as 10x), and whether most of them come
/// from gzip files.
fn rank_bytes(inputs: &[std::path::PathBuf]) -> (u64, bool) {
    let (mut total, mut from_gzip) = (0, 0);
    let mut pending: Vec<(std::path::PathBuf, usize)> =
        inputs.iter().map(|p| (p.clone(), 0)).collect();
    while let Some((path, depth)) = pending.pop() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            if depth < 8 {
                pending.extend(entries.flatten().map(|e| (e.path(), depth + 1)));
            }
        } else if path.to_string_lossy().ends_with(".json.gz") {
            total += meta.len() * 10;
            from_gzip += meta.len() * 10;
        } else if path.to_string_lossy().ends_with(".json") {
            total += meta.len();
        }
    }
    (total, 2 * from_gzip > total)
}

/// `MemAvailable` of /proc/meminfo, in bytes, where there is one.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_gate_lets_as_many_reads_go_on_at_once_as_it_was_given_in_rank_order() {
        const RANKS: usize = 120;
        let gate = Arc::new(ReadGate::new(2, true, RANKS));
        let (reading, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let started = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| loop {
                    let rank = next.fetch_add(1, Ordering::SeqCst);
                    if rank >= RANKS {
                        break;
                    }
                    let turn = Turn::take(&gate, rank);
                    // Every seventh rank ends before its read (an input that failed).
                    if rank % 7 != 3 {
                        let held = start_reading().expect("a worker thread has a gate");
                        // Every lower rank's turn had passed when this read started.
                        let earlier_passed = gate.state().passed[..rank].iter().all(|&p| p);
                        started.lock().unwrap().push((rank, earlier_passed));
                        let now = reading.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_micros(
                            200 + 50 * (rank % 5) as u64,
                        ));
                        reading.fetch_sub(1, Ordering::SeqCst);
                        drop(held);
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    drop(turn);
                });
            }
        });
        // Six workers wanted to read at once; two did, every read got its turn, and the
        // reads started in rank order, past the ranks that never read.
        assert_eq!(most.load(Ordering::SeqCst), 2);
        let expected: Vec<usize> = (0..RANKS).filter(|r| r % 7 != 3).collect();
        assert_eq!(done.load(Ordering::SeqCst), expected.len());
        let mut started = started.into_inner().unwrap();
        assert!(started.iter().all(|&(_, in_order)| in_order), "{started:?}");
        started.sort_unstable();
        let ranks: Vec<usize> = started.iter().map(|&(rank, _)| rank).collect();
        assert_eq!(ranks, expected);
        let state = gate.state();
        assert_eq!((state.free, state.next), (2, RANKS));
        drop(state);
        // Outside an all-ranks worker (and after a turn) a read never waits.
        assert!(start_reading().is_none());
    }

    #[test]
    fn a_rank_whose_turn_passed_reads_again_when_a_read_is_free() {
        let gate = Arc::new(ReadGate::new(1, true, 3));
        let turn = Turn::take(&gate, 1);
        let mut state = gate.state();
        state.pass(0);
        drop(state);
        let first = start_reading().unwrap();
        drop(first);
        // Its second read (rank 2 has not started) does not wait for rank 2's turn.
        let again = start_reading().unwrap();
        assert_eq!(gate.state().free, 0);
        drop(again);
        drop(turn);
        let state = gate.state();
        assert_eq!((state.free, state.next), (1, 2));
    }

    #[test]
    fn a_read_beside_others_reads_what_a_read_with_scan_ahead_reads() {
        use crate::trace::read::{read_trace_beside_others, read_trace_scoped, ReadScope};
        // A real trace (gzip, so the inflate thread runs too), in both scopes.
        let path = crate::testutil::shared_trace_path("AMD-AGI__TraceLens__eager_trace.json.gz");
        for scope in [ReadScope::Full, ReadScope::Digest] {
            let ahead = read_trace_scoped(&path, &mut |_| {}, scope).unwrap();
            let beside = read_trace_beside_others(&path, &mut |_| {}, scope).unwrap();
            assert!(ahead.event_count > 10_000, "{}", ahead.event_count);
            assert_eq!(beside, ahead, "{scope:?}");
        }
    }

    #[test]
    fn a_gate_says_whether_its_reads_fill_the_cores() {
        let reading = |cores_filled| Reading {
            gate: Arc::new(ReadGate::new(2, cores_filled, 4)),
        };
        assert!(reading(true).beside_others());
        assert!(!reading(false).beside_others());
    }

    #[test]
    fn gzip_ranks_in_flight_fill_the_cores_counting_their_inflate_threads() {
        // Two cores: two gzip ranks (2.6 cores of work) fill them, one would not.
        assert_eq!(ranks_filling(2, GZIP_RANK_CORES_TENTHS), 2);
        // Sixteen cores: 13 gzip ranks keep 16.9 cores busy; 16 would only add memory.
        assert_eq!(ranks_filling(16, GZIP_RANK_CORES_TENTHS), 13);
        assert_eq!(ranks_filling(8, GZIP_RANK_CORES_TENTHS), 7);
        // Plain JSON has no inflate thread: one rank per core.
        assert_eq!(ranks_filling(16, 10), 16);
        assert_eq!(ranks_filling(1, GZIP_RANK_CORES_TENTHS), 1);
    }
}
