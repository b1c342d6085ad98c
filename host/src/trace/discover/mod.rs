//! Finding the trace files (and `server_args.json`) behind an `--input` path.
//!
//! A file is taken as is; its content is checked when it is read. A directory is walked
//! for the layouts the engines' captures and the
//! predecessor's runner scripts leave behind:
//!
//! * SGLang workload: `OUT/{prefill,decode}/<ts>/server_args.json` plus
//!   `[<prefix>-<stage>-]<id>-TP-<r>….trace.json.gz`; legacy `OUT/<ts>/…-TP-0-EXTEND…`.
//! * TokenSpeed: `<id>-[DP<d>-][CP<c>-]TP<t>[-STAGE].trace.json.gz`.
//! * vLLM: `{prefill,decode}/rank0.*` or `<host>_<pid>.<ts>.pt.trace.json.gz` (no rank).
//! * TensorRT-LLM: `trace-{prefill,decode}[-rank-<r>].json` (a generic name, sniffed).
//!
//! `server_args.json` is read only from inside the input's own capture layout, never from
//! an arbitrary parent (another user can write to a shared `/tmp`): for a file, its own
//! directory; for a directory, the directory tree itself (the input, each trace's
//! directory and its parent inside the input, one or two levels below the input). In both
//! cases, when the directory is a stage directory (`prefill`, `decode`, `extend`), the
//! directory above it is the capture root the capture command writes
//! (`capture-<ms>/{prefill,decode}/` beside `capture-<ms>/server_args.json`), and is
//! looked at too.
//!
//! One file per stage is analysed, of one rank; every file left out is named in
//! `notes`, never dropped silently (the predecessor analysed one file per stage and said
//! nothing of the others). In a directory every `*.json[.gz]` is judged by its first
//! bytes, whatever its name says: one that is not a trace is listed with why, so a stray
//! `bench.trace.json` neither stops the run nor vanishes.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::SystemTime;

use regex_lite::Regex;

pub mod capture_files;
pub mod rank_files;

use crate::error::TriageError;
use crate::trace::stage::{stage_from_path, Stage};
use crate::untrusted_file::{read_capped, special_kind, Links};

/// One trace file to analyse.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceFile {
    pub path: PathBuf,
    /// The TP rank its name carries, if any.
    pub rank: Option<u32>,
    /// The stage its path names (`prefill/`, `-DECODE`, ...), else [`Stage::All`].
    pub path_stage: Stage,
}

/// The engine's `server_args.json`, found beside the traces.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerArgs {
    pub path: PathBuf,
    pub values: serde_json::Map<String, serde_json::Value>,
}

/// What to read for one `--input`.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSet {
    pub input: PathBuf,
    /// Ordered by stage (extend/prefill, decode, all), then file name.
    pub files: Vec<TraceFile>,
    pub server_args: Option<ServerArgs>,
    /// Files found but not analysed, and why (other ranks, older duplicates, ...).
    pub notes: Vec<String>,
    /// Whether `input` is a directory: there a file that fails the full read is skipped
    /// and noted (the run fails only when none can be read); a single file fails the run.
    pub directory: bool,
    /// Capture traces of the CUDA/HIP graphs the run replays, found beside its traces
    /// (`capture_files`), of the analysed rank; never analysed as traces of the run.
    pub capture_files: Vec<PathBuf>,
}

/// Resolves `input` to the trace files to analyse. `rank` picks a TP rank other than
/// the default (rank 0, else the lowest found).
pub fn discover(input: &Path, rank: Option<u32>) -> Result<TraceSet, TriageError> {
    let meta = fs::metadata(input).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TriageError::input(input, "no such file or directory"),
        _ => TriageError::input(input, format!("cannot access: {e}")),
    })?;
    if meta.is_dir() {
        discover_dir(input, rank)
    } else {
        discover_file(input, rank)
    }
}

/// The end of the note that names ranks left out (`rank 1 not analysed (pass --rank N)`);
/// the all-ranks report drops it, having read them.
pub const OTHER_RANKS_HINT: &str = "not analysed (pass --rank N)";

/// Every rank the trace names of a profile directory carry, in order (the files that
/// would compete in [`discover`]); empty for a single file or names without ranks.
pub fn discover_ranks(input: &Path) -> Result<Vec<u32>, TriageError> {
    let meta = fs::metadata(input).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TriageError::input(input, "no such file or directory"),
        _ => TriageError::input(input, format!("cannot access: {e}")),
    })?;
    if !meta.is_dir() {
        return Ok(Vec::new());
    }
    let mut notes = Vec::new();
    let (found, not_traces) = walk(input, &mut notes)?;
    if found.is_empty() {
        return Err(no_traces(input, &not_traces));
    }
    let candidates = choose_layout(input, found, &mut notes);
    let candidates = prefer_real_traces(candidates, &mut notes);
    let ranks: BTreeSet<u32> = candidates.iter().filter_map(|f| f.rank).collect();
    Ok(ranks.into_iter().collect())
}

fn discover_file(input: &Path, rank: Option<u32>) -> Result<TraceSet, TriageError> {
    let file = TraceFile {
        path: input.to_path_buf(),
        rank: rank_from_name(&file_name(input)),
        path_stage: stage_from_path(input),
    };
    let mut notes = Vec::new();
    if let Some(wanted) = rank.filter(|r| file.rank != Some(*r)) {
        notes.push(format!(
            "--rank {wanted} ignored: the input is a single file, read as given"
        ));
    }
    let dir = parent_dir(&absolute(input));
    let mut near = vec![dir.clone()];
    near.extend(capture_root_of_stage_dir(&dir));
    let server_args = find_server_args(&near, &[])?;
    let capture_files = if capture_files::is_capture_file(input) {
        Vec::new()
    } else {
        of_rank(
            capture_files::capture_files_beside(&dir),
            file.rank,
            &mut notes,
        )
    };
    Ok(TraceSet {
        input: input.to_path_buf(),
        files: vec![file],
        server_args,
        notes,
        directory: false,
        capture_files,
    })
}

// ---------------------------------------------------------------------------------------
// Directory walk

/// A `*.json[.gz]` file of the walk that is not a trace, and why.
#[derive(Clone, Debug)]
struct NotTrace {
    path: PathBuf,
    reason: String,
}

impl NotTrace {
    fn described(&self) -> String {
        format!("{} ({})", self.path.display(), self.reason)
    }
}

/// How many non-traces a "no trace files found" error names before counting the rest.
const NOT_TRACES_SHOWN: usize = 5;

/// A trace file seen during the walk.
#[derive(Clone, Debug)]
struct Found {
    path: PathBuf,
    /// Directory depth below the input (0 = directly inside it).
    depth: usize,
    modified: SystemTime,
    rank: Option<u32>,
    path_stage: Stage,
    /// Stage named by the directories between the input and the file (decides the
    /// layout: `root/prefill/…` is a workload layout, `root/<ts>/…-EXTEND…` is not).
    dir_stage: Stage,
}

/// Symlinked directory trees can loop; nothing real nests deeper than this.
const MAX_DEPTH: usize = 8;

const LOOKED_FOR: &str = "looked for *.trace.json[.gz], *.pt.trace.json[.gz], *.json[.gz]";

fn discover_dir(input: &Path, rank: Option<u32>) -> Result<TraceSet, TriageError> {
    let mut notes = Vec::new();
    let (found, not_traces) = walk(input, &mut notes)?;
    if found.is_empty() {
        return Err(no_traces(input, &not_traces));
    }
    // Capture traces are the graphs' records, not ranks or stages of the run; only a
    // directory of nothing else is analysed as given (and reported as captures).
    let (captures, found): (Vec<Found>, Vec<Found>) = if found
        .iter()
        .all(|f| capture_files::is_capture_file(&f.path))
    {
        (Vec::new(), found)
    } else {
        found
            .into_iter()
            .partition(|f| capture_files::is_capture_file(&f.path))
    };
    notes.extend(
        not_traces
            .iter()
            .map(|n| format!("not a trace, skipped: {}", n.described())),
    );

    let candidates = choose_layout(input, found, &mut notes);
    let candidates = prefer_real_traces(candidates, &mut notes);
    let candidates = choose_rank(input, candidates, rank, &mut notes)?;
    let candidates = prefer_staged(candidates, &mut notes);
    let mut files = newest_per_stage(candidates, &mut notes);
    files.sort_by(|a, b| {
        (a.path_stage.order(), file_name(&a.path)).cmp(&(b.path_stage.order(), file_name(&b.path)))
    });

    // Beside each trace, one level up while inside the input, then the input directory
    // (and the capture root above it when the input is a stage directory).
    let input_dir = absolute(input);
    let mut near: Vec<PathBuf> = Vec::new();
    for f in &files {
        let dir = parent_dir(&absolute(&f.path));
        let up = parent_dir(&dir);
        near.push(dir);
        if up.starts_with(&input_dir) {
            near.push(up);
        }
    }
    near.push(input_dir.clone());
    near.extend(capture_root_of_stage_dir(&input_dir));
    let server_args = find_server_args(&near, &[input.to_path_buf()])?;
    let rank = files.iter().find_map(|f| f.rank);
    let mut capture_paths: Vec<PathBuf> = captures.into_iter().map(|f| f.path).collect();
    capture_paths.sort();
    let capture_files = of_rank(capture_paths, rank, &mut notes);
    Ok(TraceSet {
        input: input.to_path_buf(),
        files,
        server_args,
        notes,
        directory: true,
        capture_files,
    })
}

/// The capture traces of `rank` (rank 0 when the run's names carry none; a capture
/// without a rank in its name serves any), the others noted.
fn of_rank(paths: Vec<PathBuf>, rank: Option<u32>, notes: &mut Vec<String>) -> Vec<PathBuf> {
    let wanted = rank.unwrap_or(0);
    let (kept, others): (Vec<PathBuf>, Vec<PathBuf>) = paths
        .into_iter()
        .partition(|p| capture_files::capture_rank(p).is_none_or(|r| r == wanted));
    for path in others {
        notes.push(format!(
            "not used: capture trace {} (another rank than the analysed rank {wanted})",
            path.display()
        ));
    }
    kept
}

/// The error for a directory without traces, naming the JSON files that were not.
fn no_traces(dir: &Path, not_traces: &[NotTrace]) -> TriageError {
    let mut message = format!(
        "no trace files found under {} ({LOOKED_FOR})",
        dir.display()
    );
    if !not_traces.is_empty() {
        let mut named: Vec<String> = not_traces
            .iter()
            .take(NOT_TRACES_SHOWN)
            .map(NotTrace::described)
            .collect();
        if not_traces.len() > NOT_TRACES_SHOWN {
            named.push(format!("and {} more", not_traces.len() - NOT_TRACES_SHOWN));
        }
        message = format!("{message}; not traces: {}", named.join(", "));
    }
    TriageError::input(dir, message)
}

/// Every trace file below `root`, depth-first in name order, and the JSON files that are
/// not traces. Unreadable subdirectories are noted and skipped; an unreadable root is an
/// error.
fn walk(root: &Path, notes: &mut Vec<String>) -> Result<(Vec<Found>, Vec<NotTrace>), TriageError> {
    let mut found = Vec::new();
    let mut not_traces = Vec::new();
    let mut visited = HashSet::new();
    let mut pending = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        // A directory reached twice (through a symlink) is walked once.
        let canonical = fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !visited.insert(canonical) {
            continue;
        }
        let entries = match read_dir_sorted(&dir) {
            Ok(entries) => entries,
            Err(e) if depth == 0 => {
                return Err(TriageError::input(
                    &dir,
                    format!("cannot read directory: {e}"),
                ))
            }
            Err(e) => {
                notes.push(format!(
                    "skipped unreadable directory {}: {e}",
                    dir.display()
                ));
                continue;
            }
        };
        let mut subdirs = Vec::new();
        for path in entries {
            let meta = match fs::metadata(&path) {
                Ok(meta) => meta,
                Err(e) => {
                    if is_json_named(&path) {
                        let reason = match e.kind() {
                            std::io::ErrorKind::NotFound => "a broken symbolic link".to_string(),
                            _ => format!("cannot access: {e}"),
                        };
                        not_traces.push(NotTrace { path, reason });
                    }
                    continue;
                }
            };
            if meta.is_dir() {
                if depth < MAX_DEPTH {
                    subdirs.push((path, depth + 1));
                }
            } else if let Some(what) = special_kind(&meta.file_type()) {
                // A FIFO or a device is never opened: reading one could block forever.
                // Named like a trace, it is listed like any other JSON file that is not one.
                if is_json_named(&path) {
                    let reason = format!("not a regular file: {what}");
                    not_traces.push(NotTrace { path, reason });
                }
            } else if let Err(reason) = judge_file(&path) {
                if let Some(reason) = reason {
                    not_traces.push(NotTrace { path, reason });
                }
            } else {
                let relative = path.strip_prefix(root).unwrap_or(&path);
                found.push(Found {
                    rank: rank_from_name(&file_name(&path)),
                    path_stage: stage_from_path(&path),
                    dir_stage: relative.parent().map_or(Stage::All, stage_from_path),
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    path,
                    depth,
                });
            }
        }
        // Reversed so the stack pops them in name order.
        pending.extend(subdirs.into_iter().rev());
    }
    Ok((found, not_traces))
}

fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

/// Chooses which found files compete, by the predecessor's directory rule (direct files,
/// else a workload layout, else the newest trace directory), noting every file left out.
///
/// * Files directly in the input directory: those.
/// * Else, when some file sits in a stage directory below the input (the workload layout
///   `root/prefill/…`, `root/decode/…`): all of them.
/// * Else the directory holding the newest trace (a capture root with one directory per
///   run): its files; the other directories are noted.
fn choose_layout(input: &Path, found: Vec<Found>, notes: &mut Vec<String>) -> Vec<Found> {
    if found.iter().any(|f| f.depth == 0) {
        let (direct, nested): (Vec<_>, Vec<_>) = found.into_iter().partition(|f| f.depth == 0);
        if !nested.is_empty() {
            notes.push(format!(
                "{} trace file(s) in subdirectories of {} not analysed (traces directly in it were found)",
                nested.len(),
                input.display()
            ));
        }
        return direct;
    }
    if found.iter().any(|f| f.dir_stage != Stage::All) {
        return found;
    }
    let newest = found
        .iter()
        .max_by_key(|f| f.modified)
        .map(|f| parent_dir(&f.path))
        .unwrap_or_default();
    let (chosen, others): (Vec<_>, Vec<_>) = found
        .into_iter()
        .partition(|f| parent_dir(&f.path) == newest);
    let other_dirs: BTreeSet<PathBuf> = others.iter().map(|f| parent_dir(&f.path)).collect();
    if !other_dirs.is_empty() {
        notes.push(format!(
            "{} older trace director{} under {} not analysed (the newest is {}; pass it as --input to choose another)",
            other_dirs.len(),
            if other_dirs.len() == 1 { "y" } else { "ies" },
            input.display(),
            newest.display()
        ));
    }
    chosen
}

/// Merged traces and the reserved names (`server_args.json`, ...) only when nothing
/// else is there.
fn prefer_real_traces(candidates: Vec<Found>, notes: &mut Vec<String>) -> Vec<Found> {
    let (secondary, primary): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|f| is_secondary_name(&file_name(&f.path)));
    if primary.is_empty() {
        return secondary;
    }
    for f in &secondary {
        notes.push(format!(
            "not analysed: merged or auxiliary file {}",
            f.path.display()
        ));
    }
    primary
}

fn is_secondary_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("merged-") || RESERVED_NAMES.contains(&lower.as_str())
}

const RESERVED_NAMES: [&str; 3] = ["server_args.json", "metadata.json", "config.json"];

/// Keeps one rank: `wanted`, else 0, else the lowest. Files without a rank stay only for
/// stages where the chosen rank has no file (the predecessor dropped them outright).
fn choose_rank(
    input: &Path,
    candidates: Vec<Found>,
    wanted: Option<u32>,
    notes: &mut Vec<String>,
) -> Result<Vec<Found>, TriageError> {
    let ranks: BTreeSet<u32> = candidates.iter().filter_map(|f| f.rank).collect();
    let chosen = match wanted {
        Some(r) if ranks.contains(&r) => Some(r),
        Some(r) => {
            let available = if ranks.is_empty() {
                "no file name carries a rank".to_string()
            } else {
                format!("available ranks: {}", rank_list(&ranks))
            };
            return Err(TriageError::input(
                input,
                format!("no trace of rank {r} found ({available})"),
            ));
        }
        None => ranks.iter().next().copied(),
    };
    let Some(chosen) = chosen else {
        return Ok(candidates);
    };
    let others: BTreeSet<u32> = ranks.iter().copied().filter(|r| *r != chosen).collect();
    if !others.is_empty() {
        let word = if others.len() == 1 { "rank" } else { "ranks" };
        notes.push(format!("{word} {} {OTHER_RANKS_HINT}", rank_list(&others)));
    }
    let stages_with_rank: HashSet<Stage> = candidates
        .iter()
        .filter(|f| f.rank == Some(chosen))
        .map(|f| f.path_stage)
        .collect();
    let mut kept = Vec::new();
    for f in candidates {
        match f.rank {
            Some(r) if r == chosen => kept.push(f),
            Some(_) => {}
            None if stages_with_rank.contains(&f.path_stage) => notes.push(format!(
                "not analysed: {} (no rank in its name; a rank-{chosen} trace covers its stage)",
                f.path.display()
            )),
            None => kept.push(f),
        }
    }
    Ok(kept)
}

/// `0, 2, 4-7`: runs of consecutive ranks collapsed.
fn rank_list(ranks: &BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = ranks.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(", ")
}

/// When some files name their stage, an unstaged file next to them would mix both
/// stages into one section (the predecessor then showed one kernel twice, with two
/// denominators); it is left out, with a note.
fn prefer_staged(candidates: Vec<Found>, notes: &mut Vec<String>) -> Vec<Found> {
    if candidates.iter().all(|f| f.path_stage == Stage::All)
        || candidates.iter().all(|f| f.path_stage != Stage::All)
    {
        return candidates;
    }
    let (staged, unstaged): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|f| f.path_stage != Stage::All);
    for f in &unstaged {
        notes.push(format!(
            "not analysed: {} (its path names no stage; stage-named traces were found)",
            f.path.display()
        ));
    }
    staged
}

/// The newest file (by mtime) of each stage; older ones are noted.
fn newest_per_stage(candidates: Vec<Found>, notes: &mut Vec<String>) -> Vec<TraceFile> {
    let mut by_stage: BTreeMap<Stage, Vec<Found>> = BTreeMap::new();
    for f in candidates {
        by_stage.entry(f.path_stage).or_default().push(f);
    }
    let mut files = Vec::new();
    for (stage, mut group) in by_stage {
        // Newest last; equal times fall back to the path so the choice is stable.
        group.sort_by(|a, b| (a.modified, &a.path).cmp(&(b.modified, &b.path)));
        let Some(newest) = group.pop() else { continue };
        for older in group.iter().rev() {
            notes.push(format!(
                "not analysed: {} (an older {} trace; only the newest per stage is read)",
                older.path.display(),
                stage.label()
            ));
        }
        files.push(TraceFile {
            path: newest.path,
            rank: newest.rank,
            path_stage: newest.path_stage,
        });
    }
    files
}

// ---------------------------------------------------------------------------------------
// What counts as a trace file

/// `Ok` for a trace; `Err(Some(why))` for a JSON-named file that is not one; `Err(None)`
/// for any other file (not listed: a directory holds logs and READMEs too). The name
/// alone never decides: a trace-named non-trace (the predecessor stopped the whole run on
/// it) is judged like a generic `.json`. `server_args.json` is read as the engine's
/// arguments, so it is not listed. Only the first few KB are ever read.
fn judge_file(path: &Path) -> Result<(), Option<String>> {
    if !is_json_named(path) {
        return Err(None);
    }
    let lower = file_name(path).to_ascii_lowercase();
    sniff(path).map_err(|why| (lower != "server_args.json").then_some(why))
}

/// `*.json`, `*.json.gz`, `*.pt.trace.json*`: the names a directory walk judges and lists.
fn is_json_named(path: &Path) -> bool {
    let lower = file_name(path).to_ascii_lowercase();
    lower.ends_with(".json") || lower.ends_with(".json.gz") || lower.contains(".pt.trace.json")
}

/// How much of a generic JSON file is read to decide.
const SNIFF_BYTES: u64 = 64 * 1024;

/// Top-level keys only torch.profiler writes first.
const KINETO_FIRST_KEYS: [&str; 6] = [
    "\"traceEvents\"",
    "\"schemaVersion\"",
    "\"deviceProperties\"",
    "\"distributedInfo\"",
    "\"displayTimeUnit\"",
    "\"baseTimeNanoseconds\"",
];

/// Whether the file's first [`SNIFF_BYTES`] (decompressed) look like a trace; if not, why.
fn sniff(path: &Path) -> Result<(), String> {
    let open = || fs::File::open(path).map_err(|e| format!("cannot open: {e}"));
    let mut magic = [0u8; 2];
    let gzip = open()?.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    let mut head = Vec::new();
    let read = if gzip {
        flate2::read::MultiGzDecoder::new(open()?)
            .take(SNIFF_BYTES)
            .read_to_end(&mut head)
    } else {
        open()?.take(SNIFF_BYTES).read_to_end(&mut head)
    };
    // A truncated gzip still yields its first bytes; judge what arrived.
    match read {
        Err(e) if head.is_empty() && gzip => {
            Err(format!("a gzip file that does not decompress: {e}"))
        }
        Err(e) if head.is_empty() => Err(format!("cannot read: {e}")),
        _ => trace_shape(&head),
    }
}

/// `{"traceEvents"…`, an object whose first key is a torch.profiler key, one that
/// mentions `"traceEvents"` early, or a list of event objects (`[{… "ph" …`); else why not.
fn trace_shape(head: &[u8]) -> Result<(), String> {
    let head = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let body = text.trim_start();
    let within = format!("in its first {} KiB", SNIFF_BYTES / 1024);
    if let Some(rest) = body.strip_prefix('{') {
        let rest = rest.trim_start();
        let traced = KINETO_FIRST_KEYS.iter().any(|k| rest.starts_with(k))
            || memchr::memmem::find(head, b"\"traceEvents\"").is_some();
        return traced.then_some(()).ok_or_else(|| {
            format!("a JSON object with neither traceEvents nor a torch.profiler key {within}")
        });
    }
    if let Some(rest) = body.strip_prefix('[') {
        let events = rest.trim_start().starts_with('{') && rest.contains("\"ph\"");
        return events
            .then_some(())
            .ok_or_else(|| format!("a JSON list without event objects {within}"));
    }
    if body.is_empty() {
        return Err("the file is empty".to_string());
    }
    let start: String = body.chars().take(10).collect();
    Err(format!("not JSON: it starts with {start:?}"))
}

// ---------------------------------------------------------------------------------------
// Ranks from file names

/// Rank patterns, first match wins (case-insensitive; the file name only). DP, CP, PP
/// and EP indices are not ranks here.
static RANK_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // trace_tp1.json, TokenSpeed …-DP0-CP0-TP1-EXTEND…, …-TP-0-DECODE…
        r"(?i)(?:^|[_.-])tp-?([0-9]+)(?:[_.-]|$)",
        // SGLang/TokenSpeed TP-<r> anywhere.
        r"(?i)tp-([0-9]+)",
        // vLLM rank0.*, TensorRT-LLM <base>-rank-<r>.json
        r"(?i)(?:^|[_.-])rank-?([0-9]+)(?:[_.-]|$)",
        // Kineto's tensorboard handler: worker0.pt.trace.json
        r"(?i)(?:^|[_.-])worker-?([0-9]+)(?:[_.-]|$)",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("static rank pattern is valid"))
    .collect()
});

/// The TP rank a trace file's name carries, if any.
pub fn rank_from_name(name: &str) -> Option<u32> {
    RANK_PATTERNS
        .iter()
        .find_map(|re| re.captures(name)?.get(1)?.as_str().parse().ok())
}

// ---------------------------------------------------------------------------------------
// server_args.json

/// The first `server_args.json` in `dirs`, else one or two levels inside any of `roots`
/// (the live-capture layout `root/<stage>/<ts>/server_args.json` the predecessor missed).
fn find_server_args(
    dirs: &[PathBuf],
    roots: &[PathBuf],
) -> Result<Option<ServerArgs>, TriageError> {
    let mut seen = HashSet::new();
    for dir in dirs {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let path = dir.join("server_args.json");
        if path.is_file() {
            return parse_server_args(&path).map(Some);
        }
    }
    for root in roots {
        for child in subdirs(root) {
            let path = child.join("server_args.json");
            if path.is_file() {
                return parse_server_args(&path).map(Some);
            }
            for grandchild in subdirs(&child) {
                let path = grandchild.join("server_args.json");
                if path.is_file() {
                    return parse_server_args(&path).map(Some);
                }
            }
        }
    }
    Ok(None)
}

/// The capture root above `dir` when `dir` is one of its stage directories
/// (`capture-<ms>/decode/`): part of the same capture layout.
fn capture_root_of_stage_dir(dir: &Path) -> Option<PathBuf> {
    let name = file_name(dir).to_ascii_lowercase();
    matches!(name.as_str(), "prefill" | "decode" | "extend").then(|| parent_dir(dir))
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    read_dir_sorted(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

/// The most a `server_args.json` may hold; real ones are a few KiB.
const MAX_SERVER_ARGS_BYTES: u64 = 1 << 20;

fn parse_server_args(path: &Path) -> Result<ServerArgs, TriageError> {
    let bytes = read_capped(path, MAX_SERVER_ARGS_BYTES, Links::Follow)
        .map_err(|why| TriageError::input(path, why.to_string()))?;
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(values)) => Ok(ServerArgs {
            path: path.to_path_buf(),
            values,
        }),
        Ok(_) => Err(TriageError::input(
            path,
            "invalid server_args.json: not a JSON object",
        )),
        Err(e) => Err(TriageError::input(
            path,
            format!("invalid server_args.json: {e}"),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Path helpers

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `path` made absolute (so `..` of a relative input exists); as given if that fails.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The parent directory; `.` for a bare file name.
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests;
