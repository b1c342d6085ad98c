//! One triage, start to finish: discover -> read -> select -> link -> stage -> analyze.
//! Each step is a function of the previous step's value; this module only wires them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::analyze::device::{
    analysed_device, chosen_device, device_report, match_trace_device, DeviceChoice,
};
use crate::analyze::fuse::{attach_fusions, run_facts, FuseInput};
use crate::analyze::graph::capture::{captured_graphs, CapturedGraph};
use crate::analyze::graph::mapping::resolve_traces;
use crate::analyze::graph::resolve::{replay_notes as graph_replay_notes, resolve_replays};
use crate::analyze::kernels::{kernel_tables_with_every_row, KernelTableOptions, StagedTrace};
use crate::analyze::layers::{attach as attach_layers, stage_layers, LayerInputs};
use crate::analyze::location::{Locator, StackSites};
use crate::analyze::overlap::{
    attach as attach_overlap, overlap_tables, OverlapInputs, OverlapOptions,
};
use crate::analyze::roofline;
use crate::analyze::timeline::{attach as attach_timeline, stage_timelines, TimelineOptions};
use crate::catalog::devices::DeviceMatch;
use crate::catalog::Catalog;
use crate::checks::diffusers_fallback;
use crate::error::{Result, TriageError};
use crate::plugins::{self, Engine, PluginSet};
use crate::report::{FrameworkInfo, GraphCaptureInfo, InputInfo, Report, SCHEMA_VERSION};
use crate::trace::discover::capture_files::capture_files_of;
use crate::trace::discover::rank_files::discover_rank_files;
use crate::trace::discover::{discover, TraceFile, TraceSet};
use crate::trace::event::{Trace, FOLDED_GPU_OP_NAME, MAX_GPU_OP_NAMES};
use crate::trace::evidence::evidence;
use crate::trace::graph_capture::graph_capture;
use crate::trace::link::{collision_note, link_in_scope, LinkScope, Linked};
use crate::trace::model::model_class;
use crate::trace::model_config::ModelShape;
use crate::trace::read::{read_trace_until_stopped, ReadScope};
use crate::trace::stage::{split, MarkerKind, Stage, StageHint, StageSplit};

/// What the user asked for, in domain terms (the CLI maps flags onto this).
#[derive(Clone, Debug)]
pub(crate) struct TriageRequest {
    /// The trace file or directory; in mapping+formal mode, the formal one (production
    /// config, CUDA graphs on), whose times every table reads.
    pub input: PathBuf,
    /// Mapping+formal mode: the mapping trace (CUDA graphs off), which supplies each
    /// kernel's Python scope for the overlap table.
    pub mapping_input: Option<PathBuf>,
    pub framework: String,
    pub rank: Option<u32>,
    pub min_share_pct: f64,
    pub kernel_table_limit: usize,
    /// Overlap rows per stage (0 = all), before the share cut.
    pub overlap_table_limit: usize,
    /// Idle gaps listed per stage in the timeline (`--top-gaps`).
    pub top_gaps: usize,
    pub catalog: Option<PathBuf>,
    pub plugin_dirs: Vec<PathBuf>,
    /// Show a progress bar on stderr while reading.
    pub progress: bool,
    /// `--run-log`: logs checked for the diffusers-backend fallback, with every `*.log`
    /// beside the traces (`checks::diffusers_fallback`).
    pub run_logs: Vec<PathBuf>,
    /// `--pid-substring`: keep only GPU ops whose pid contains this (`trace::pid_filter`).
    pub pid_substring: Option<String>,
    /// `--all-ranks` (`--rank all`): every rank of the input, each triaged on its own,
    /// then compared (`ranks`).
    pub all_ranks: bool,
    /// `--capture-input`: capture traces (files or directories) of the graphs the formal
    /// trace replays, besides those found beside it (`analyze::graph`).
    pub capture_inputs: Vec<PathBuf>,
    /// `--device NAME` / `--device-spec FILE`, else the trace's device from the table.
    pub device: DeviceChoice,
    /// `--model-config FILE`: the model's config.json for the roofline's model-config
    /// shapes, instead of one found beside the traces (`trace::model_config`).
    pub model_config: Option<PathBuf>,
    /// `--all-ranks` with several `--input` files: every one of them (`input` is the
    /// first), each one rank's trace (`ranks::inputs`). For one rank's own triage: that
    /// rank's files, read instead of discovering `input`.
    pub rank_inputs: Vec<PathBuf>,
}

/// Files smaller than this read too fast for a progress bar to help.
const PROGRESS_MIN_BYTES: u64 = 16 << 20;

/// One set of traces after reading: its engine, the launch links and stage splits.
struct Prepared<'p> {
    selection: plugins::Selection<'p>,
    locator: Locator,
    linked: Vec<Linked>,
    splits: Vec<StageSplit>,
}

/// Selects the engine, links every trace and splits its stages. Graph replays take the
/// sites of `graphs`' nodes right after the link (their strings join each trace's
/// interner, so `traces` is updated in place), so every table reads the resolved site;
/// the notes say what that achieved.
fn prepare<'p>(
    plugin_set: &'p PluginSet,
    framework: &str,
    set: &TraceSet,
    traces: &mut Vec<Trace>,
    graphs: &[CapturedGraph],
    link_scope: LinkScope,
    phases: &mut Phases,
) -> Result<(Prepared<'p>, Vec<String>)> {
    let server_args = set.server_args.as_ref().map(|a| &a.values);
    let evidences: Vec<_> = traces.iter().map(|t| evidence(t, server_args)).collect();
    phases.done("evidence");
    let selection = plugins::select(plugin_set, framework, &evidences)?;
    let engine = selection.engine;
    let locator = Locator::new(&engine.attribution()?);
    phases.done("select");
    let mut linked: Vec<Linked> = Vec::with_capacity(traces.len());
    let mut replay_notes = Vec::new();
    for trace in std::mem::take(traces) {
        let linked_here = link_in_scope(&trace, link_scope);
        phases.done("link");
        let (trace, resolved, summary) = resolve_replays(trace, linked_here, graphs);
        replay_notes.extend(graph_replay_notes(&summary, graphs.len()));
        traces.push(trace);
        linked.push(resolved);
        phases.done("resolve_replays");
    }
    let splits = traces
        .iter()
        .zip(&set.files)
        .zip(&linked)
        .map(|((trace, file), linked)| stage_trace(engine, trace, file.path_stage, linked))
        .collect::<Result<Vec<StageSplit>>>()?;
    phases.done("stage");
    Ok((
        Prepared {
            selection,
            locator,
            linked,
            splits,
        },
        replay_notes,
    ))
}

fn staged_traces<'a>(traces: &'a [Trace], prepared: &'a Prepared<'_>) -> Vec<StagedTrace<'a>> {
    traces
        .iter()
        .zip(&prepared.linked)
        .zip(&prepared.splits)
        .map(|((trace, linked), split)| StagedTrace {
            trace,
            linked,
            split,
        })
        .collect()
}

pub(crate) fn run(request: &TriageRequest) -> Result<Report> {
    if request.all_ranks {
        return crate::ranks::run(request);
    }
    run_observed(request, None, None, Depth::Report, &mut |_| {})
}

/// How much of the triage a run needs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Depth {
    /// The whole report: every table.
    Report,
    /// Only what `ranks::digest` reads (a rank --all-ranks compares but does not report):
    /// read, link, stage and timeline; the kernel, fuse, overlap, layer and roofline
    /// passes are skipped and the report holds the inputs and the stages' timelines.
    Digest,
}

impl Depth {
    /// What the read keeps: a digest needs no CPU op shapes (`ReadScope::Digest`). With
    /// `LLM_TRIAGE_DIGEST_READ=full` in the environment a digest reads in full: tests
    /// check that both give byte-identical `--all-ranks` reports.
    fn read_scope(self) -> ReadScope {
        match self.lean() {
            false => ReadScope::Full,
            true => ReadScope::Digest,
        }
    }

    /// What the link finds: a digest reads no Python stack or eager cpu_op
    /// (`LinkScope::Launches`); `LLM_TRIAGE_DIGEST_READ=full` links in full too, so the
    /// same tests hold both to identical `--all-ranks` reports.
    fn link_scope(self) -> LinkScope {
        match self.lean() {
            false => LinkScope::Full,
            true => LinkScope::Launches,
        }
    }

    /// A digest not told to read and link in full.
    fn lean(self) -> bool {
        match self {
            Depth::Report => false,
            Depth::Digest => {
                !matches!(std::env::var_os("LLM_TRIAGE_DIGEST_READ"), Some(v) if v == "full")
            }
        }
    }
}

/// What one triage hands an observer before its traces are dropped: the all-ranks
/// analysis digests each rank from this (`ranks::digest`).
pub(crate) struct Observed<'a> {
    pub staged: &'a [StagedTrace<'a>],
    pub locator: &'a Locator,
    pub report: &'a Report,
}

/// One triage; `plugins` and `catalog` already loaded (else loaded here), `observe`
/// called once with the read traces and the finished report.
pub(crate) fn run_observed(
    request: &TriageRequest,
    plugins: Option<&PluginSet>,
    catalog: Option<&Catalog>,
    depth: Depth,
    observe: &mut dyn FnMut(&Observed<'_>),
) -> Result<Report> {
    let mut phases = Phases::from_env();
    let mut traces_set = match (request.rank, request.rank_inputs.as_slice()) {
        (Some(rank), files) if !files.is_empty() => discover_rank_files(files, rank)?,
        _ => discover(&request.input, request.rank)?,
    };
    let mut mapping_set = match &request.mapping_input {
        Some(path) => Some(discover(path, request.rank)?),
        None => None,
    };
    let log_notes = check_run_logs(request, &traces_set, mapping_set.as_ref())?;
    phases.done("discover");
    // The plugins and the catalog load on a thread of their own while the read starts:
    // 4 ms, which the read's idle quarter of a core absorbs (its threads keep 1.76 of
    // the two cores busy, perf at 300 MB).
    // Should they fail (or a --device, --device-spec or --model-config be bad), the read
    // stops at its next block and the run fails with their error, before the long read
    // as when they loaded first.
    let stop = AtomicBool::new(false);
    let mut sets = vec![&mut traces_set];
    sets.extend(mapping_set.as_mut());
    let (setup, read) = std::thread::scope(|scope| {
        let setup = scope.spawn(|| {
            let setup = Setup::load(request, plugins, catalog);
            if setup.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            setup
        });
        // Both sets in one parallel read, under one progress bar.
        let read = read_sets(&mut sets, request.progress, depth.read_scope(), &stop);
        let setup = setup
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (setup, read)
    });
    let Setup {
        plugins: plugin_set,
        catalog,
        chosen,
        explicit_model,
    } = setup?;
    let mut read = read?.into_iter();
    let plugin_set: &PluginSet = &plugin_set;
    let Catalog {
        families,
        fusions: fusion_catalog,
        overlap: known_paths,
        steps: step_catalog,
        devices: device_table,
        roofline: roofline_ops,
        roles,
        ..
    } = &*catalog;
    let traces = read.next().unwrap_or_default();
    let mapping_traces = read.next().unwrap_or_default();
    phases.done("read+plugins+catalog");
    diffusers_fallback::check_frames(&traces)?;
    diffusers_fallback::check_frames(&mapping_traces)?;
    phases.done("check_frames");
    let (mut traces, mut pid_notes) = keep_pids(traces, request.pid_substring.as_deref())?;
    let (mut mapping_traces, mapping_pid_notes) =
        keep_pids(mapping_traces, request.pid_substring.as_deref())?;
    pid_notes.extend(mapping_pid_notes);
    let (graphs, capture_notes) = read_captures(request, &traces_set, request.progress)?;
    phases.done("keep_pids+read_captures");

    let (formal, replay_notes) = prepare(
        plugin_set,
        &request.framework,
        &traces_set,
        &mut traces,
        &graphs,
        depth.link_scope(),
        &mut phases,
    )?;
    let selection = &formal.selection;
    let engine = selection.engine;
    let mapping = match &mapping_set {
        Some(set) => Some(
            prepare(
                plugin_set,
                &request.framework,
                set,
                &mut mapping_traces,
                &[],
                // The mapping's sites lend graph-replayed kernels stacks and cpu_ops.
                LinkScope::Full,
                &mut phases,
            )?
            .0,
        ),
        None => None,
    };
    // Mapping+formal mode: graph-replayed kernels take the sites of the mapping kernels
    // they align with (analyze::graph::mapping), before any table reads a site.
    let (traces, formal, mapping_graph_note) = match &mapping {
        Some(m) => {
            let (traces, linked, note) =
                resolve_traces(traces, formal.linked, &mapping_traces, &m.linked, families);
            (traces, Prepared { linked, ..formal }, note)
        }
        None => (traces, formal, None),
    };
    let selection = &formal.selection;
    let server_args_found = traces_set
        .server_args
        .as_ref()
        .or(mapping_set.as_ref().and_then(|m| m.server_args.as_ref()));
    let server_args = server_args_found.map(|a| &a.values);

    let staged = staged_traces(&traces, &formal);
    phases.done("mapping+staged");
    let timeline_options = TimelineOptions {
        top_gaps: request.top_gaps,
        steps: step_catalog,
    };
    if depth == Depth::Digest {
        let timelines = stage_timelines(&staged, &formal.locator, families, &timeline_options);
        let report = digest_report(selection, input_infos(&traces_set, &traces), timelines);
        observe(&Observed {
            staged: &staged,
            locator: &formal.locator,
            report: &report,
        });
        return Ok(report);
    }
    let options = KernelTableOptions {
        min_share_pct: request.min_share_pct,
        limit: request.kernel_table_limit,
    };
    let all_traces: Vec<&Trace> = traces.iter().chain(&mapping_traces).collect();
    let mapping_staged = mapping.as_ref().map(|m| staged_traces(&mapping_traces, m));
    // Group 1's overlap and kernel tables ask for the same stacks' sites: placed once.
    let formal_sites = StackSites::new(&formal.locator);
    let overlap_inputs = OverlapInputs {
        formal: &staged,
        formal_sites: &formal_sites,
        mapping: mapping
            .as_ref()
            .zip(mapping_staged.as_deref())
            .map(|(m, staged)| (staged, &m.locator)),
        families,
        known: known_paths,
        engine: engine.name(),
    };
    let overlap_options = OverlapOptions {
        min_share_pct: request.min_share_pct,
        limit: request.overlap_table_limit,
    };
    // Layers and roles: the timeline's steps, the catalog's roles, the model's layer count.
    let (expected_layers, config_note) =
        layer_count_of_run(request, &traces_set, server_args_found);
    // --model-config's layer count when the run has none of its own.
    let expected_layers = expected_layers.or_else(|| {
        let shape = explicit_model.as_ref()?;
        Some(crate::trace::model_config::LayerCount {
            count: shape.layers?,
            source: shape.source.clone(),
        })
    });
    let layer_inputs = LayerInputs {
        families,
        roles,
        steps: step_catalog,
        expected: expected_layers.as_ref(),
    };
    // The model's dimensions for the roofline's launches without Input Dims (issue 18).
    let model_shape = match explicit_model {
        Some(shape) => Some(shape),
        None => crate::trace::model_config::model_shape(
            None,
            &config_dirs(request, &traces_set, server_args_found),
        )?,
    };
    let model_inputs = roofline::ModelInputs {
        shape: model_shape.as_ref(),
        tp: crate::trace::model_config::tp_size(server_args),
        families,
    };
    // The formal traces' GPU (what their kernel times ran on) and its row of the device
    // table, or the row --device / --device-spec chose: the report names it and the
    // roofline divides by it.
    let device = analysed_device(&traces);
    let device_row = match_trace_device(device, device_table, chosen);
    // The roofline (issue 18): figures per kernel row, the stage's speed of light.
    let roof = roofline::roof_of(device, device_row.as_ref());
    phases.done("analysis inputs");
    let timed = phases.enabled();

    // The analyses only read the staged traces, so they run as two groups of about equal
    // cost, one per core; each group's tables are put on the stages afterwards in one
    // fixed order, so the report is the same whichever group finishes first. Measured
    // at 1 GB (CPU ms, LLM_TRIAGE_PHASES=1): kernel tables 25-45, overlap 55-85, model
    // class 3, rooflines 27-45 against facts 8-12, timelines 63-74, layers 32-35.
    // The run's model class and facts (each a pass over every Python frame) go one to each.
    // The two that hold the most while they run (overlap and timelines: ~13 MB each at
    // 1 GB, over the 68 MB the trace and its links keep) go at opposite ends of their
    // groups, so they seldom run at once: side by side they made the triage's peak RSS
    // (96 MB at 1 GB, issue 22's bar being a tenth of the JSON).
    let (
        ((stages, every_row), overlap, model_class_found, (rooflines, roofline_notes)),
        (facts, timelines, layers),
    ) = both_at_once(
        || {
            let mut group = Phases::of_thread(timed, "  group 1: ");
            // Rows are summed once; the fuse matcher sees every row, the table only
            // those above the cut (small split kernels are fusion evidence).
            let overlap = overlap_tables(&overlap_inputs, &overlap_options);
            group.done("overlap");
            let tables = kernel_tables_with_every_row(&staged, &formal_sites, families, &options);
            group.done("kernel tables");
            let model_class_found = all_traces.iter().find_map(|t| model_class(t));
            group.done("model class");
            let rooflines = roofline::stage_rooflines(&staged, roofline_ops, &roof, &model_inputs);
            group.done("rooflines");
            (tables, overlap, model_class_found, rooflines)
        },
        || {
            let mut group = Phases::of_thread(timed, "  group 2: ");
            let facts = run_facts(server_args, &all_traces);
            group.done("facts");
            let layers = stage_layers(&staged, &layer_inputs);
            group.done("layers");
            let timelines = stage_timelines(&staged, &formal.locator, families, &timeline_options);
            group.done("timelines");
            (facts, timelines, layers)
        },
    );
    phases.done("analyses");
    let fuse_input = FuseInput {
        engine: engine.name(),
        facts: &facts,
        min_share_pct: request.min_share_pct,
    };
    let stages = attach_fusions(stages, &every_row, &fusion_catalog.rules, &fuse_input);
    let (stages, mut overlap_stages) = attach_overlap(stages, overlap);
    let stages = attach_timeline(stages, timelines);
    let mut stages = attach_layers(stages, layers);
    stages = roofline::attach(stages, rooflines, &roof);
    phases.done("attach");
    let inputs = input_infos(&traces_set, &traces);
    if inputs.iter().all(|i| i.graph_capture.is_some()) {
        // Nothing ran: a kernel table of the stray kernels would pretend to be the
        // workload. The header says what the trace is instead.
        stages.clear();
        overlap_stages.clear();
    }

    let mut notes = traces_set.notes.clone();
    notes.extend(mapping_set.iter().flat_map(|m| m.notes.iter().cloned()));
    notes.extend(read_notes(&traces));
    notes.extend(read_notes(&mapping_traces));
    notes.extend(plugin_notes(plugin_set));
    notes.extend(pid_notes);
    notes.extend(log_notes);
    notes.extend(capture_notes);
    notes.extend(replay_notes);
    notes.extend(config_note);
    notes.extend(roofline_notes);
    let all_linked = formal
        .linked
        .iter()
        .chain(mapping.iter().flat_map(|m| &m.linked));
    notes.extend(all_linked.filter_map(collision_note));
    notes.extend(mapping_graph_note);
    let (device, device_note) = device_report(device, device_row.as_ref());
    notes.extend(device_note);
    // A named engine the evidence contradicts: honoured, and said on stderr and here.
    for chosen in std::iter::once(selection).chain(mapping.as_ref().map(|m| &m.selection)) {
        if let Some(warning) = &chosen.warning {
            eprintln!("llm-triage: warning: {warning}");
            notes.push(warning.clone());
        }
    }

    // Per-peer all-to-all counts, only where ops carried split sizes (issue 19 point 6).
    let ep_imbalance =
        crate::analyze::ep_imbalance::ep_imbalance(&[crate::analyze::ep_imbalance::rank_splits(
            &staged,
            request.rank,
        )]);
    let report = Report {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: if mapping.is_some() {
            "mapping-formal"
        } else {
            "single-trace"
        }
        .to_string(),
        framework: framework_info(selection),
        inputs,
        model: server_args.and_then(model_name),
        model_class: model_class_found,
        server_args: server_args.cloned().unwrap_or_default(),
        server_args_path: server_args_found.map(|a| a.path.display().to_string()),
        stages,
        notes,
        mapping_framework: mapping.as_ref().map(|m| framework_info(&m.selection)),
        mapping_inputs: mapping_set
            .as_ref()
            .map(|set| input_infos(set, &mapping_traces))
            .unwrap_or_default(),
        overlap_stages,
        ranks: Vec::new(),
        collectives: Vec::new(),
        stragglers: Vec::new(),
        ep_imbalance,
        device,
    };
    phases.done("notes+ep_imbalance");
    observe(&Observed {
        staged: &staged,
        locator: &formal.locator,
        report: &report,
    });
    // Freeing the traces and their links (millions of records: munmap and page work,
    // about 10 ms at 1 GB) is left to a thread of its own, so the report is rendered
    // meanwhile; a process that exits first frees them all the same.
    drop((staged, mapping_staged, all_traces));
    let linked = (formal.linked, formal.splits);
    let mapping_linked = mapping.map(|m| (m.linked, m.splits));
    let freed = (traces, mapping_traces, linked, mapping_linked);
    std::thread::spawn(move || drop(freed));
    phases.done("drop");
    Ok(report)
}

/// What a triage needs besides its traces, loaded beside the read (`run_observed`): the
/// plugins and the catalog unless the caller has them, and the device and model shape
/// that flags name.
struct Setup<'a> {
    plugins: Held<'a, PluginSet>,
    catalog: Held<'a, Catalog>,
    chosen: Option<DeviceMatch>,
    explicit_model: Option<ModelShape>,
}

impl<'a> Setup<'a> {
    fn load(
        request: &TriageRequest,
        plugins: Option<&'a PluginSet>,
        catalog: Option<&'a Catalog>,
    ) -> Result<Self> {
        let plugins = match plugins {
            Some(set) => Held::Given(set),
            None => Held::Loaded(load_plugins(&request.plugin_dirs)?),
        };
        let catalog = match catalog {
            Some(catalog) => Held::Given(catalog),
            None => Held::Loaded(Catalog::load(request.catalog.as_deref(), &plugins)?),
        };
        let chosen = chosen_device(&request.device, &catalog.devices)?;
        let explicit_model =
            crate::trace::model_config::model_shape(request.model_config.as_deref(), &[])?;
        Ok(Setup {
            plugins,
            catalog,
            chosen,
            explicit_model,
        })
    }
}

/// A value the caller passed in, or one loaded here.
enum Held<'a, T> {
    Given(&'a T),
    Loaded(T),
}

impl<T> std::ops::Deref for Held<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Held::Given(value) => value,
            Held::Loaded(value) => value,
        }
    }
}

/// `LLM_TRIAGE_PHASES=1`: each phase's wall and CPU time on stderr, in ms, to see where a
/// triage's time goes (CPU time is the steadier figure on a busy machine: the process's
/// for the pipeline, the thread's for one analysis group). Off, a phase costs one branch.
pub(crate) struct Phases {
    /// Wall and CPU clock when the last phase ended; `None` when off.
    last: Option<(Instant, f64)>,
    /// Which CPU clock: the process's or this thread's.
    clock: libc::clockid_t,
    prefix: &'static str,
}

impl Phases {
    pub(crate) fn from_env() -> Phases {
        let on = std::env::var_os("LLM_TRIAGE_PHASES").is_some_and(|v| v == "1");
        Phases::started(on, libc::CLOCK_PROCESS_CPUTIME_ID, "")
    }

    /// One analysis group's phases, on its thread's CPU clock.
    fn of_thread(on: bool, prefix: &'static str) -> Phases {
        Phases::started(on, libc::CLOCK_THREAD_CPUTIME_ID, prefix)
    }

    fn started(on: bool, clock: libc::clockid_t, prefix: &'static str) -> Phases {
        Phases {
            last: on.then(|| (Instant::now(), cpu_ms(clock))),
            clock,
            prefix,
        }
    }

    fn enabled(&self) -> bool {
        self.last.is_some()
    }

    /// Says how long `phase` took, since the last phase ended.
    pub(crate) fn done(&mut self, phase: &str) {
        if let Some((wall, cpu)) = self.last {
            let (now, cpu_now) = (Instant::now(), cpu_ms(self.clock));
            eprintln!(
                "llm-triage: phase {}{phase}: {:.1} ms wall, {:.1} ms CPU{}",
                self.prefix,
                (now - wall).as_secs_f64() * 1e3,
                cpu_now - cpu,
                memory_now()
            );
            self.last = Some((now, cpu_now));
        }
    }
}

/// `, RSS <now> MB (peak <in the phase>)` from /proc/self/status, to find where peak
/// memory is reached (issue 22 holds it to a tenth of the JSON); the peak is then reset
/// (`clear_refs`), so the next phase's is its own (with the analysis groups on two
/// threads, theirs overlap: `LLM_TRIAGE_ANALYSES=serial` tells them apart). Empty where
/// /proc is not readable.
fn memory_now() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    match (kib("VmRSS:"), kib("VmHWM:")) {
        (Some(now), Some(peak)) => format!(", RSS {} MB (peak {} MB)", now / 1024, peak / 1024),
        _ => String::new(),
    }
}

/// A CPU clock's reading in ms.
fn cpu_ms(clock: libc::clockid_t) -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only the timespec it is given.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

/// `first()` and `second()`, the second on a thread of its own while the first runs here
/// (serially, one after the other, with `LLM_TRIAGE_ANALYSES=serial`: tests check both
/// ways give the same report). A panic in either is the caller's panic.
fn both_at_once<A, B>(first: impl FnOnce() -> A, second: impl FnOnce() -> B + Send) -> (A, B)
where
    B: Send,
{
    if std::env::var_os("LLM_TRIAGE_ANALYSES").is_some_and(|v| v == "serial") {
        let a = first();
        return (a, second());
    }
    std::thread::scope(|scope| {
        let second = scope.spawn(second);
        let a = first();
        let b = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (a, b)
    })
}

/// The report of a [`Depth::Digest`] run: its engine, inputs and one stage per timeline,
/// nothing else (never rendered: `ranks` keeps only its inputs).
fn digest_report(
    selection: &plugins::Selection<'_>,
    inputs: Vec<InputInfo>,
    timelines: Vec<(Stage, crate::report::model::StageTimeline)>,
) -> Report {
    let stages = timelines
        .into_iter()
        .map(|(stage, timeline)| crate::report::model::StageReport {
            stage: stage.label().to_string(),
            total_gpu_time_us: 0.0,
            summary: String::new(),
            kernels: Vec::new(),
            overlap: Vec::new(),
            fusions: Vec::new(),
            similarity: Vec::new(),
            notes: Vec::new(),
            timeline: Some(timeline),
            sol: None,
            layers: None,
            roles: Vec::new(),
        })
        .collect();
    Report {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: "rank-digest".to_string(),
        framework: framework_info(selection),
        inputs,
        model: None,
        model_class: None,
        server_args: serde_json::Map::new(),
        server_args_path: None,
        stages,
        notes: Vec::new(),
        mapping_framework: None,
        mapping_inputs: Vec::new(),
        overlap_stages: Vec::new(),
        ranks: Vec::new(),
        collectives: Vec::new(),
        stragglers: Vec::new(),
        ep_imbalance: None,
        device: None,
    }
}

/// The graphs of every capture trace: `--capture-input`'s (a file that cannot be read
/// fails the run, naming it) and those found beside the formal traces (one that cannot
/// be read is noted and skipped). The notes name each capture trace and what it gave.
fn read_captures(
    request: &TriageRequest,
    set: &TraceSet,
    progress: bool,
) -> Result<(Vec<CapturedGraph>, Vec<String>)> {
    let mut given: Vec<PathBuf> = Vec::new();
    for input in &request.capture_inputs {
        given.extend(capture_files_of(input)?);
    }
    let mut paths: Vec<(PathBuf, bool)> = given.into_iter().map(|p| (p, true)).collect();
    for found in &set.capture_files {
        if !paths.iter().any(|(p, _)| p == found) {
            paths.push((found.clone(), false));
        }
    }
    let files: Vec<TraceFile> = paths
        .iter()
        .map(|(path, _)| TraceFile {
            path: path.clone(),
            rank: None,
            path_stage: Stage::All,
        })
        .collect();
    let file_refs: Vec<&TraceFile> = files.iter().collect();
    let mut graphs = Vec::new();
    let mut notes = Vec::new();
    for ((path, was_given), read) in paths.iter().zip(read_all(
        &file_refs,
        progress,
        ReadScope::Full,
        &AtomicBool::new(false),
    )) {
        let trace = match read {
            Ok(trace) => trace,
            Err(e) if *was_given => return Err(e),
            Err(e) => {
                notes.push(format!("capture trace not used: {}", e.one_line()));
                continue;
            }
        };
        let found = captured_graphs(&trace);
        if found.is_empty() {
            notes.push(format!(
                "capture trace not used: {} records no capture_<size>_<MODE> annotation",
                path.display()
            ));
            continue;
        }
        let described: Vec<String> = found
            .iter()
            .map(|g| format!("{} {} nodes", g.annotation, g.nodes.len()))
            .collect();
        notes.push(format!(
            "capture trace {}: {}",
            path.display(),
            described.join(", ")
        ));
        graphs.extend(found);
    }
    Ok((graphs, notes))
}

/// The model's layer count (server-arg overrides, else `config.json` beside
/// `server_args.json`, in the input directory or beside the input file).
fn layer_count_of_run(
    request: &TriageRequest,
    set: &TraceSet,
    server_args: Option<&crate::trace::discover::ServerArgs>,
) -> (
    Option<crate::trace::model_config::LayerCount>,
    Option<String>,
) {
    crate::trace::model_config::layer_count(
        server_args.map(|a| (a.path.as_path(), &a.values)),
        &config_dirs(request, set, server_args),
    )
}

/// Where a model's `config.json` may lie: beside `server_args.json`, in the input
/// directory, beside the input file.
fn config_dirs(
    request: &TriageRequest,
    set: &TraceSet,
    server_args: Option<&crate::trace::discover::ServerArgs>,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(parent) = server_args.and_then(|a| a.path.parent()) {
        dirs.push(parent.to_path_buf());
    }
    if set.directory {
        dirs.push(request.input.clone());
    } else if let Some(parent) = request.input.parent() {
        dirs.push(parent.to_path_buf());
    }
    dirs
}

/// The diffusion-backend gate over `--run-log` and the logs beside the traces; the notes
/// name logs skipped or scanned in part.
fn check_run_logs(
    request: &TriageRequest,
    traces: &TraceSet,
    mapping: Option<&TraceSet>,
) -> Result<Vec<String>> {
    let mut dirs = Vec::new();
    for set in std::iter::once(traces).chain(mapping) {
        let files: Vec<&Path> = set.files.iter().map(|f| f.path.as_path()).collect();
        dirs.extend(diffusers_fallback::log_dirs(&set.input, &files));
    }
    diffusers_fallback::check_logs(&request.run_logs, &dirs)
}

/// `--pid-substring` over every trace, with one note per trace.
fn keep_pids(traces: Vec<Trace>, needle: Option<&str>) -> Result<(Vec<Trace>, Vec<String>)> {
    let Some(needle) = needle else {
        return Ok((traces, Vec::new()));
    };
    let mut kept = Vec::with_capacity(traces.len());
    let mut notes = Vec::new();
    for trace in traces {
        let (trace, note) = crate::trace::pid_filter::keep_pids(trace, needle)?;
        kept.push(trace);
        notes.push(note);
    }
    Ok((kept, notes))
}

fn framework_info(selection: &plugins::Selection<'_>) -> FrameworkInfo {
    let manifest = &selection.engine.manifest;
    FrameworkInfo {
        name: manifest.name.clone(),
        display_name: manifest.display_name.clone(),
        plugin_version: manifest.plugin_version.clone(),
        decided_by: selection.decided_by.clone(),
    }
}

fn input_infos(set: &TraceSet, traces: &[Trace]) -> Vec<InputInfo> {
    set.files
        .iter()
        .zip(traces)
        .map(|(file, trace)| InputInfo {
            // Absolute, as the predecessor printed them: reports get pasted elsewhere.
            path: std::path::absolute(&file.path)
                .unwrap_or_else(|_| file.path.clone())
                .display()
                .to_string(),
            rank: file.rank,
            path_stage: file.path_stage.label().to_string(),
            events: trace.event_count,
            gpu_events: trace.gpu_ops.len() as u64,
            graph_capture: graph_capture(trace).map(|c| GraphCaptureInfo {
                annotations: c.annotations,
                launches: c.launches,
                kernels_executed: c.kernels_executed,
            }),
        })
        .collect()
}

/// Loads every plugin on the search path; with none usable there is nothing to do.
pub(crate) fn load_plugins(cli_dirs: &[PathBuf]) -> Result<PluginSet> {
    let search = plugins::search_dirs(cli_dirs);
    let set = plugins::load_search_path(&search);
    // Said once here, and again in the report's notes (`plugin_notes`).
    for warning in &set.warnings {
        eprintln!("llm-triage: warning: {warning}");
    }
    if set.engines.is_empty() {
        let searched: Vec<String> = search
            .dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        return Err(TriageError::plugin(
            "(none)",
            format!(
                "no engine plugins could be loaded from {}; run `llm-triage plugins doctor`",
                searched.join(", ")
            ),
        ));
    }
    Ok(set)
}

/// Reads every file of every set at once (mapping and formal sets concurrently), and
/// returns the traces set by set, each set left holding the files that were read.
fn read_sets(
    sets: &mut [&mut TraceSet],
    progress: bool,
    scope: ReadScope,
    stop: &AtomicBool,
) -> Result<Vec<Vec<Trace>>> {
    let files: Vec<&TraceFile> = sets.iter().flat_map(|s| &s.files).collect();
    let mut results = read_all(&files, progress, scope, stop).into_iter();
    let per_set: Vec<Vec<Result<Trace>>> = sets
        .iter()
        .map(|set| results.by_ref().take(set.files.len()).collect())
        .collect();
    sets.iter_mut()
        .zip(per_set)
        .map(|(set, read)| keep_readable(set, read))
        .collect()
}

/// One rule for a directory: a file that fails the full read (it passed discovery's
/// 64 KiB sniff, then turned out truncated or malformed) is skipped, dropped from `set`
/// and named in its notes with the reason; the run fails, naming the first such file,
/// only when none could be read. A single-file input fails on its error as given.
fn keep_readable(set: &mut TraceSet, read: Vec<Result<Trace>>) -> Result<Vec<Trace>> {
    if !set.directory {
        return read.into_iter().collect();
    }
    let mut traces = Vec::new();
    let mut files = Vec::new();
    let mut first_error = None;
    for (file, result) in std::mem::take(&mut set.files).into_iter().zip(read) {
        match result {
            Ok(trace) => {
                traces.push(trace);
                files.push(file);
            }
            Err(e) => {
                set.notes
                    .push(format!("could not be read, skipped: {}", e.one_line()));
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if files.is_empty() => Err(e),
        _ => {
            set.files = files;
            Ok(traces)
        }
    }
}

/// Reads every file, in parallel, with one progress bar over all bytes; each read gives
/// up once `stop` is set.
fn read_all(
    files: &[&TraceFile],
    progress: bool,
    read_scope: ReadScope,
    stop: &AtomicBool,
) -> Vec<Result<Trace>> {
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(&f.path).ok())
        .map(|m| m.len())
        .sum();
    let bar = if progress && total >= PROGRESS_MIN_BYTES {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "reading {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec}, eta {eta}",
            )
            .expect("static progress template is valid"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let done = AtomicU64::new(0);
    // On an all-ranks worker, this rank's read waits for its place among the reads the
    // run keeps going at once (`ranks`), and gives it back when its files are read.
    let reading = match files.is_empty() {
        true => None,
        false => crate::ranks::start_reading(),
    };
    let beside_others = reading.as_ref().is_some_and(|r| r.beside_others());
    let results: Vec<Result<Trace>> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .map(|&file| {
                let (bar, done) = (&bar, &done);
                scope.spawn(move || {
                    let mut seen = 0u64;
                    let mut progress = |consumed: u64| {
                        let delta = consumed.saturating_sub(seen);
                        seen = consumed;
                        done.fetch_add(delta, Ordering::Relaxed);
                        bar.inc(delta);
                    };
                    read_trace_until_stopped(
                        &file.path,
                        &mut progress,
                        read_scope,
                        beside_others,
                        stop,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(files)
            .map(|(h, file)| {
                h.join().unwrap_or_else(|_| {
                    Err(TriageError::input(&file.path, "reader thread panicked"))
                })
            })
            .collect()
    });
    bar.finish_and_clear();
    results
}

/// The stage split of one trace: its path names the stage, or the plugin's markers do.
fn stage_trace(
    engine: &Engine,
    trace: &Trace,
    path_stage: Stage,
    linked: &Linked,
) -> Result<StageSplit> {
    let path_stage = match path_stage {
        Stage::All => match engine.stage_of(MarkerKind::FilePath, &trace.path.to_string_lossy())? {
            StageHint::Extend => Stage::Extend,
            StageHint::Decode => Stage::Decode,
            StageHint::Unknown | StageHint::Mixed => Stage::All,
        },
        known => known,
    };
    let mut failure = None;
    let mut annotation_stage = |name: &str| match engine.stage_of(MarkerKind::Annotation, name) {
        Ok(hint) => hint,
        Err(e) => {
            failure.get_or_insert(e);
            StageHint::Unknown
        }
    };
    let result = split(trace, linked, path_stage, &mut annotation_stage);
    match failure {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Events the reader skipped, said out loud (also each rank's, `ranks::digest`).
pub(crate) fn read_notes<'a>(traces: impl IntoIterator<Item = &'a Trace>) -> Vec<String> {
    let mut notes = Vec::new();
    for trace in traces {
        if trace.lone_surrogate_strings > 0 {
            notes.push(format!(
                "{}: {} strings held lone UTF-16 surrogates, replaced with U+FFFD",
                file_name(&trace.path),
                trace.lone_surrogate_strings
            ));
        }
        if trace.folded_gpu_ops > 0 {
            notes.push(format!(
                "{}: more than {} distinct GPU op names: {} GPU ops of {} further names \
                 are counted in one row, {}",
                file_name(&trace.path),
                MAX_GPU_OP_NAMES,
                trace.folded_gpu_ops,
                trace.folded_gpu_op_names,
                FOLDED_GPU_OP_NAME
            ));
        }
        let s = &trace.skipped;
        if !s.oversized_top_level.is_empty() {
            notes.push(format!(
                "{}: top-level values over the reader's size limit skipped: {}",
                file_name(&trace.path),
                by_field(&s.oversized_top_level)
            ));
        }
        if !s.oversized_fields.is_empty() {
            notes.push(format!(
                "{}: optional values over the reader's 64 KiB limit left out of events that \
                 were kept: {}",
                file_name(&trace.path),
                by_field(&s.oversized_fields)
            ));
        }
        if s.total() == 0 {
            continue;
        }
        // The oversized clause only when there are any, so other reports read as before.
        let oversized = match s.oversized_events() {
            0 => String::new(),
            n => format!(
                ", {n} with a value over the reader's 64 KiB limit ({})",
                by_field(&s.oversized)
            ),
        };
        notes.push(format!(
            "{}: skipped {} events ({} malformed, {} with a missing, negative or NaN time, {} GPU events of zero duration{oversized})",
            file_name(&trace.path),
            s.total(),
            s.malformed,
            s.bad_time,
            s.zero_duration
        ));
    }
    notes
}

/// `name 2, ts 1`: counts by field, in name order.
fn by_field(counts: &std::collections::BTreeMap<&'static str, u64>) -> String {
    counts
        .iter()
        .map(|(field, n)| format!("{field} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plugin_notes(set: &PluginSet) -> Vec<String> {
    set.rejected
        .iter()
        .map(|r| format!("plugin {} not loaded: {}", r.path.display(), r.reason))
        .chain(set.warnings.iter().cloned())
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `model_path`, else `model`, from server args.
fn model_name(args: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    ["model_path", "model"]
        .iter()
        .filter_map(|k| args.get(*k))
        .find_map(|v| v.as_str().map(str::to_string))
}
