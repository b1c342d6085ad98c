//! Splitting a trace's GPU work into stages (extend/prefill, decode).

use std::collections::{BTreeSet, HashMap};

use crate::trace::event::{Ns, Sym, Trace};
use crate::trace::link::Linked;

/// A report section.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    Extend,
    Decode,
    /// No stage signal, or a mixed step: one section for everything.
    All,
}

impl Stage {
    /// The section label of the predecessor's report contract.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Extend => "extend/prefill",
            Stage::Decode => "decode",
            Stage::All => "all",
        }
    }
}

impl Stage {
    /// Section order: extend/prefill, decode, all.
    pub fn order(self) -> u8 {
        match self {
            Stage::Extend => 0,
            Stage::Decode => 1,
            Stage::All => 2,
        }
    }
}

/// Which text an engine plugin is asked to read a stage from (the host's copy of the
/// plugin API's `MarkerKind`; `plugins` converts at the edge).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// A trace file's path (absolute).
    FilePath,
    /// The name of a `user_annotation` or `gpu_user_annotation` event.
    Annotation,
}

/// The stage an engine plugin reads from a marker (the host's copy of the plugin API's
/// `StageHint`; `plugins` converts at the edge).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StageHint {
    /// The text says nothing about the stage.
    Unknown,
    /// Prefill / extend.
    Extend,
    Decode,
    /// A step that runs prefill and decode requests together.
    Mixed,
}

/// The stage a file's path names, by the generic rules every engine's capture layout
/// follows: a `prefill/`, `extend/` or `decode/` directory, or a `-EXTEND`, `_prefill`,
/// `-DECODE` ... marker in a name. Only the last six components count, and the
/// innermost component with a marker decides (the predecessor let an outer
/// `x_prefill_study/` directory beat an inner `decode/`).
pub fn stage_from_path(path: &std::path::Path) -> Stage {
    let components: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    let start = components.len().saturating_sub(6);
    for component in components[start..].iter().rev() {
        if let Some(stage) = stage_of_component(component) {
            return stage;
        }
    }
    Stage::All
}

/// The stage one lower-cased path component names, if any. When a name carries both
/// markers, the later one wins (`run_prefill_then-decode` is decode).
fn stage_of_component(component: &str) -> Option<Stage> {
    match component {
        "extend" | "prefill" => return Some(Stage::Extend),
        "decode" => return Some(Stage::Decode),
        _ => {}
    }
    let last_of = |markers: &[&str]| markers.iter().filter_map(|m| component.rfind(m)).max();
    let extend = last_of(&["-extend", "_extend", "-prefill", "_prefill"]);
    let decode = last_of(&["-decode", "_decode"]);
    match (extend, decode) {
        (Some(e), Some(d)) => Some(if d > e { Stage::Decode } else { Stage::Extend }),
        (Some(_), None) => Some(Stage::Extend),
        (None, Some(_)) => Some(Stage::Decode),
        (None, None) => None,
    }
}

/// Where a trace's stage split came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StageSignal {
    /// The file path names the stage; every GPU op takes it.
    Path,
    /// Stage annotations inside the trace.
    Annotations,
    /// Nothing: every GPU op is in `all`.
    None,
}

/// The stage of every GPU op of one trace.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSplit {
    /// Parallel to `trace.gpu_ops`.
    pub stages: Vec<Stage>,
    pub signal: StageSignal,
    /// What the reader of the report should know about the split.
    pub notes: Vec<String>,
}

/// The note for a trace with no stage signal at all.
pub const NO_STAGE_MARKERS: &str =
    "no stage markers found: prefill and decode are mixed in one section";

/// Splits a trace's GPU ops into stages.
///
/// A path stage other than `All` wins for the whole file. Otherwise annotation windows
/// decide: `annotation_stage` (the engine plugin's `stage_of(Annotation, name)`) is asked
/// once per distinct name. A GPU annotation (`gpu_user_annotation`, GPU clock) contains
/// the op's own start; a CPU annotation (`user_annotation`, CPU clock) contains the op's
/// *launch* (the predecessor compared GPU starts with CPU windows). The innermost window
/// decides; a mixed step is `All`. Ops outside every window are `All`, and counted.
pub fn split(
    trace: &Trace,
    linked: &Linked,
    path_stage: Stage,
    annotation_stage: &mut dyn FnMut(&str) -> StageHint,
) -> StageSplit {
    if path_stage != Stage::All {
        return StageSplit {
            stages: vec![path_stage; trace.gpu_ops.len()],
            signal: StageSignal::Path,
            notes: name_content_note(trace, linked, path_stage, annotation_stage)
                .into_iter()
                .collect(),
        };
    }
    let (gpu_windows, cpu_windows) = annotation_windows(trace, annotation_stage);
    if gpu_windows.is_empty() && cpu_windows.is_empty() {
        return StageSplit {
            stages: vec![Stage::All; trace.gpu_ops.len()],
            signal: StageSignal::None,
            notes: vec![NO_STAGE_MARKERS.to_string()],
        };
    }
    let gpu = Segments::innermost_of(gpu_windows);
    let cpu = Segments::innermost_of(cpu_windows);
    let mut outside = 0u64;
    let mut outside_ns: Ns = 0;
    let mut total_ns: Ns = 0;
    let stages = trace
        .gpu_ops
        .iter()
        .zip(&linked.sites)
        .map(|(op, site)| {
            total_ns += op.dur;
            let stage = gpu
                .stage_at(op.ts)
                .or_else(|| site.launch_ts.and_then(|t| cpu.stage_at(t)));
            stage.unwrap_or_else(|| {
                outside += 1;
                outside_ns += op.dur;
                Stage::All
            })
        })
        .collect();
    let mut notes = Vec::new();
    if outside > 0 {
        notes.push(format!(
            "{outside} GPU ops ({:.1}% of GPU time) lie outside every stage annotation and are counted as all",
            percent(outside_ns, total_ns)
        ));
    }
    StageSplit {
        stages,
        signal: StageSignal::Annotations,
        notes,
    }
}

/// Below this share of a section's GPU time, eager launches beside graph replays (or
/// replays in a prefill file) are warm-up noise, not a sign of the other stage.
const LAUNCH_MODE_NOTE_MIN_PCT: f64 = 5.0;

/// When a file's name says one stage and its content another, the note that says so.
///
/// Two content signals are read: the engine's stage annotations (`step[EXTEND bs=4
/// toks=512]`, `execute_context_4(512)_generation_0(0)`, through the plugin's
/// `stage_of`), and how kernels were launched (decode replays a CUDA/HIP graph, prefill
/// launches eagerly). The split still follows the name: the user chose it, and a rename
/// (no stage in the name) lets the annotations split the file instead, which the note
/// says.
fn name_content_note(
    trace: &Trace,
    linked: &Linked,
    path_stage: Stage,
    annotation_stage: &mut dyn FnMut(&str) -> StageHint,
) -> Option<String> {
    let (gpu_windows, cpu_windows) = annotation_windows(trace, annotation_stage);
    let gpu = Segments::innermost_of(gpu_windows);
    let cpu = Segments::innermost_of(cpu_windows);
    let mut total: Ns = 0;
    let mut annotated_other: [Ns; 3] = [0; 3];
    let (mut replayed, mut eager): (Ns, Ns) = (0, 0);
    for (op, site) in trace.gpu_ops.iter().zip(&linked.sites) {
        total += op.dur;
        let annotated = gpu
            .stage_at(op.ts)
            .or_else(|| site.launch_ts.and_then(|t| cpu.stage_at(t)));
        if let Some(stage) = annotated.filter(|&s| s != path_stage) {
            annotated_other[stage.order() as usize] += op.dur;
        }
        if op.kind == crate::trace::event::GpuKind::Kernel {
            if site.graph_replay {
                replayed += op.dur;
            } else if site.runtime.is_some() {
                eager += op.dur;
            }
        }
    }
    let mut findings = Vec::new();
    for stage in [Stage::Extend, Stage::Decode, Stage::All] {
        let ns = annotated_other[stage.order() as usize];
        if ns > 0 {
            let what = match stage {
                Stage::All => "mixed prefill+decode steps".to_string(),
                other => format!("{} steps", other.label()),
            };
            findings.push(format!(
                "its stage annotations put {:.1}% of its GPU time in {what}",
                percent(ns, total)
            ));
        }
    }
    match path_stage {
        Stage::Decode if replayed > 0 && percent(eager, total) >= LAUNCH_MODE_NOTE_MIN_PCT => {
            findings.push(format!(
                "{:.1}% of its GPU time was launched eagerly beside the graph replays, as prefill is",
                percent(eager, total)
            ))
        }
        Stage::Extend if percent(replayed, total) >= LAUNCH_MODE_NOTE_MIN_PCT => {
            findings.push(format!(
                "{:.1}% of its GPU time replays a CUDA/HIP graph, as decode does",
                percent(replayed, total)
            ))
        }
        _ => {}
    }
    if findings.is_empty() {
        return None;
    }
    Some(format!(
        "the file name says {}, but {}; the section follows the file name (name the file without a stage to split it by its annotations)",
        path_stage.label(),
        findings.join("; ")
    ))
}

fn percent(part: Ns, whole: Ns) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// One annotation that names a stage: `[start, end]` on its clock.
#[derive(Copy, Clone, Debug)]
struct Window {
    start: Ns,
    end: Ns,
    stage: Stage,
}

/// The stage windows of a trace: (GPU-clock windows, CPU-clock windows).
fn annotation_windows(
    trace: &Trace,
    annotation_stage: &mut dyn FnMut(&str) -> StageHint,
) -> (Vec<Window>, Vec<Window>) {
    let mut hint_of: HashMap<Sym, StageHint> = HashMap::new();
    let mut gpu = Vec::new();
    let mut cpu = Vec::new();
    for annotation in &trace.annotations {
        let hint = *hint_of
            .entry(annotation.name)
            .or_insert_with(|| annotation_stage(trace.name(annotation.name)));
        let stage = match hint {
            StageHint::Unknown => continue,
            StageHint::Extend => Stage::Extend,
            StageHint::Decode => Stage::Decode,
            StageHint::Mixed => Stage::All,
        };
        let window = Window {
            start: annotation.ts,
            end: annotation.ts + annotation.dur,
            stage,
        };
        if annotation.on_gpu {
            gpu.push(window);
        } else {
            cpu.push(window);
        }
    }
    (gpu, cpu)
}

/// Disjoint, sorted time segments, each with the stage of the innermost window covering
/// it, so a lookup is one binary search.
#[derive(Clone, Debug, Default)]
struct Segments {
    /// (start, end exclusive, stage), sorted and disjoint.
    parts: Vec<(Ns, Ns, Stage)>,
}

/// Timestamps come from microsecond floats; windows are widened by one nanosecond.
const WINDOW_TOLERANCE_NS: Ns = 1;

impl Segments {
    /// Flattens possibly nested or overlapping windows: at each instant the window that
    /// started last (then the shortest) wins.
    fn innermost_of(windows: Vec<Window>) -> Segments {
        // Boundary events: (time, is_start, window index). Ends sort before starts.
        let mut events: Vec<(Ns, bool, usize)> = Vec::with_capacity(windows.len() * 2);
        for (i, w) in windows.iter().enumerate() {
            events.push((w.start - WINDOW_TOLERANCE_NS, true, i));
            events.push((w.end + WINDOW_TOLERANCE_NS + 1, false, i));
        }
        events.sort_unstable();
        // Active windows ordered by innermost-ness: latest start, then earliest end.
        let key = |i: usize| (windows[i].start, std::cmp::Reverse(windows[i].end), i);
        let mut active: BTreeSet<(Ns, std::cmp::Reverse<Ns>, usize)> = BTreeSet::new();
        let mut parts: Vec<(Ns, Ns, Stage)> = Vec::new();
        let mut k = 0;
        while k < events.len() {
            let t = events[k].0;
            while k < events.len() && events[k].0 == t {
                let (_, is_start, i) = events[k];
                if is_start {
                    active.insert(key(i));
                } else {
                    active.remove(&key(i));
                }
                k += 1;
            }
            let (Some(&(_, _, inner)), Some(&(next, _, _))) = (active.last(), events.get(k)) else {
                continue;
            };
            let stage = windows[inner].stage;
            match parts.last_mut() {
                Some(last) if last.1 == t && last.2 == stage => last.1 = next,
                _ => parts.push((t, next, stage)),
            }
        }
        Segments { parts }
    }

    fn stage_at(&self, t: Ns) -> Option<Stage> {
        let i = self.parts.partition_point(|&(_, end, _)| end <= t);
        let &(start, _, stage) = self.parts.get(i)?;
        (start <= t).then_some(stage)
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;
    use crate::testutil::TraceFixture;
    use crate::trace::link::link;

    fn hint(name: &str) -> StageHint {
        if name.contains("DECODE") {
            StageHint::Decode
        } else if name.contains("EXTEND") {
            StageHint::Extend
        } else if name.contains("MIXED") {
            StageHint::Mixed
        } else {
            StageHint::Unknown
        }
    }

    fn split_of(b: &TraceFixture, path_stage: Stage) -> StageSplit {
        let trace = b.build();
        let linked = link(&trace);
        split(&trace, &linked, path_stage, &mut hint)
    }

    #[test]
    fn path_stage_wins_for_the_whole_file() {
        let mut b = TraceFixture::new();
        b.annotation("step[DECODE bs=1]", 0, 1000, true);
        b.kernel("k", 10, 5, None, None);
        let s = split_of(&b, Stage::Extend);
        assert_eq!(s.stages, [Stage::Extend]);
        assert_eq!(s.signal, StageSignal::Path);
    }

    #[test]
    fn no_markers_means_all_with_a_note() {
        let mut b = TraceFixture::new();
        b.annotation("ProfilerStep#6", 0, 1000, false);
        b.kernel("k", 10, 5, None, None);
        let s = split_of(&b, Stage::All);
        assert_eq!(s.stages, [Stage::All]);
        assert_eq!(s.signal, StageSignal::None);
        assert_eq!(s.notes, [NO_STAGE_MARKERS]);
    }

    #[test]
    fn cpu_annotation_is_matched_by_launch_time_not_gpu_time() {
        let mut b = TraceFixture::new();
        // CPU windows: extend [0, 1000], decode [1000, 2000].
        b.annotation("step[EXTEND bs=4]", 0, 999, false);
        b.annotation("step[DECODE bs=4]", 1000, 1000, false);
        // Launched at 900 during extend, runs on the GPU at 1500 (inside the decode window
        // on the CPU clock: the predecessor put it in decode).
        b.runtime("cudaLaunchKernel", 900, 10, 1, 1, None);
        b.kernel("late", 1500, 100, Some(1), None);
        b.runtime("cudaLaunchKernel", 1200, 10, 1, 2, None);
        b.kernel("decode_k", 1700, 100, Some(2), None);
        // No launch: no CPU time, outside.
        b.kernel("orphan", 1800, 300, None, None);
        let s = split_of(&b, Stage::All);
        assert_eq!(s.signal, StageSignal::Annotations);
        assert_eq!(s.stages, [Stage::Extend, Stage::Decode, Stage::All]);
        assert_eq!(
            s.notes,
            ["1 GPU ops (60.0% of GPU time) lie outside every stage annotation and are counted as all"]
        );
    }

    #[test]
    fn gpu_annotation_contains_the_kernel_and_innermost_wins() {
        let mut b = TraceFixture::new();
        // An outer mixed step holding a decode sub-range.
        b.annotation("MIXED step", 0, 10_000, true);
        b.annotation("DECODE part", 2_000, 1_000, true);
        b.kernel("a", 500, 10, None, None);
        b.kernel("b", 2_500, 10, None, None);
        b.kernel("c", 3_500, 10, None, None);
        b.kernel("d", 20_000, 10, None, None);
        let s = split_of(&b, Stage::All);
        assert_eq!(
            s.stages,
            [Stage::All, Stage::Decode, Stage::All, Stage::All]
        );
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(s.notes[0].starts_with("1 GPU ops"), "{:?}", s.notes);
    }

    #[test]
    fn each_distinct_annotation_name_is_asked_once() {
        let mut b = TraceFixture::new();
        for i in 0..5 {
            b.annotation("step[DECODE bs=1]", i * 100, 50, true);
        }
        b.kernel("k", 110, 5, None, None);
        let trace = b.build();
        let linked = link(&trace);
        let mut asked = 0;
        let s = split(&trace, &linked, Stage::All, &mut |name| {
            asked += 1;
            hint(name)
        });
        assert_eq!(asked, 1);
        assert_eq!(s.stages, [Stage::Decode]);
    }

    #[test]
    fn segments_flatten_overlapping_windows() {
        let w = |start, end, stage| Window { start, end, stage };
        let seg = Segments::innermost_of(vec![
            w(0, 100, Stage::Extend),
            w(50, 200, Stage::Decode),
            w(300, 400, Stage::Extend),
        ]);
        assert_eq!(seg.stage_at(10), Some(Stage::Extend));
        assert_eq!(seg.stage_at(60), Some(Stage::Decode)); // started later
        assert_eq!(seg.stage_at(150), Some(Stage::Decode));
        assert_eq!(seg.stage_at(250), None);
        assert_eq!(seg.stage_at(400), Some(Stage::Extend));
        assert_eq!(seg.stage_at(402), None);
        assert_eq!(seg.stage_at(-5), None);
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn workload_directories_and_suffixes() {
        assert_eq!(
            stage_from_path(Path::new("/r/prefill/rank0.trace.json")),
            Stage::Extend
        );
        assert_eq!(
            stage_from_path(Path::new("/r/decode/rank0.trace.json")),
            Stage::Decode
        );
        assert_eq!(
            stage_from_path(Path::new("/x/1761000000.5-TP-0-EXTEND.trace.json.gz")),
            Stage::Extend
        );
        assert_eq!(
            stage_from_path(Path::new("/x/1761000000.5-TP-0-DECODE.trace.json.gz")),
            Stage::Decode
        );
        assert_eq!(
            stage_from_path(Path::new("/x/host_12.34.pt.trace.json.gz")),
            Stage::All
        );
    }

    #[test]
    fn innermost_marker_wins() {
        // The predecessor said extend here because `_prefill` was checked first anywhere.
        assert_eq!(
            stage_from_path(Path::new("/runs/qwen_prefill_study/decode/x.json")),
            Stage::Decode
        );
    }

    #[test]
    fn only_last_six_components_count() {
        let p = Path::new("/prefill/a/b/c/d/e/f/trace.json");
        assert_eq!(stage_from_path(p), Stage::All);
    }
}
