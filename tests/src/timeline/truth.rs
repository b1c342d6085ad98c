//! The ground truth of a timeline fixture, and its `ground_truth.json` form (written
//! beside the trace, read back by the end-to-end test). Times are integer ns on the
//! trace's clock (the value of `ts` times 1000).

use std::path::PathBuf;

use serde_json::{json, Value};

pub(super) const FILE_NAME: &str = "ground_truth.json";

/// Why the GPU was idle, as the report's `cause` names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    Launch,
    Sync,
    Graph,
    Host,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Launch => "launch",
            Cause::Sync => "sync",
            Cause::Graph => "graph",
            Cause::Host => "host",
        }
    }

    fn parse(text: &str) -> Option<Cause> {
        [Cause::Launch, Cause::Sync, Cause::Graph, Cause::Host]
            .into_iter()
            .find(|c| c.as_str() == text)
    }
}

/// The Python frame a delay ran in: the name as the trace writes it, and the location a
/// report gives it (`path` from the engine's source root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameTruth {
    pub name: String,
    pub path: String,
    pub line: u32,
    pub function: String,
}

/// One injected delay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delay {
    pub cause: Cause,
    /// The step it lies in; for a host delay, the step whose first launch ends it.
    pub step: usize,
    /// From the first idle ns to the last (for a launch-bound stretch: its first gap's
    /// start to its last gap's end, with busy GPU time between).
    pub start_ns: u64,
    pub end_ns: u64,
    /// GPU idle ns the delay injected (the sum of the stretch's gaps).
    pub amount_ns: u64,
    /// GPU gaps it consists of: 1, or one per launch of a launch-bound stretch.
    pub gaps: usize,
    /// Host delays: the frame that ran; sync waits: the frame around the blocking call.
    pub frame: Option<FrameTruth>,
}

/// One step as the issue defines it: from its first launch call to its last GPU op's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepTruth {
    pub label: String,
    pub first_launch_ns: u64,
    pub end_ns: u64,
    /// The step's busy time split: a compute kernel ran; only communication ran
    /// (exposed); only a copy or memset ran.
    pub compute_ns: u64,
    pub comm_ns: u64,
    pub memcpy_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineTruth {
    pub scenario: String,
    pub framework: String,
    pub trace: PathBuf,
    /// The report's section label of the one stage the trace holds.
    pub stage: String,
    /// The smallest `ts` of the trace's timed events, in ns.
    pub trace_start_ns: u64,
    /// The first GPU op's start and the last one's end.
    pub gpu_start_ns: u64,
    pub gpu_end_ns: u64,
    /// GPU ns covered by at least one GPU op (the union over streams).
    pub busy_ns: u64,
    pub steps: Vec<StepTruth>,
    pub delays: Vec<Delay>,
    /// Frames of other threads that run during host delays: no host activity may name
    /// them.
    pub foreign_frames: Vec<FrameTruth>,
}

fn frame_json(f: &FrameTruth) -> Value {
    json!({
        "name": f.name,
        "path": f.path,
        "line": f.line,
        "function": f.function,
    })
}

impl FrameTruth {
    /// The location a report gives the frame: `path:line function`.
    pub fn location(&self) -> String {
        format!("{}:{} {}", self.path, self.line, self.function)
    }
}

impl TimelineTruth {
    pub fn to_json(&self) -> Value {
        json!({
            "scenario": self.scenario,
            "framework": self.framework,
            "trace": self.trace.file_name().map(|n| n.to_string_lossy().into_owned()),
            "stage": self.stage,
            "trace_start_ns": self.trace_start_ns,
            "gpu_start_ns": self.gpu_start_ns,
            "gpu_end_ns": self.gpu_end_ns,
            "busy_ns": self.busy_ns,
            "steps": self.steps.iter().map(|s| json!({
                "label": s.label,
                "first_launch_ns": s.first_launch_ns,
                "end_ns": s.end_ns,
                "compute_ns": s.compute_ns,
                "comm_ns": s.comm_ns,
                "memcpy_ns": s.memcpy_ns,
            })).collect::<Vec<_>>(),
            "delays": self.delays.iter().map(|d| json!({
                "cause": d.cause.as_str(),
                "step": d.step,
                "start_ns": d.start_ns,
                "end_ns": d.end_ns,
                "amount_ns": d.amount_ns,
                "gaps": d.gaps,
                "frame": d.frame.as_ref().map(frame_json),
            })).collect::<Vec<_>>(),
            "foreign_frames": self.foreign_frames.iter().map(frame_json).collect::<Vec<_>>(),
        })
    }

    /// Reads `dir/ground_truth.json`; `trace` is resolved against `dir`.
    pub fn read(dir: &std::path::Path) -> Result<TimelineTruth, String> {
        let path = dir.join(FILE_NAME);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let bad = |what: &str| format!("{}: bad or missing {what}", path.display());
        let text_of =
            |v: &Value, key: &str| v[key].as_str().map(str::to_string).ok_or_else(|| bad(key));
        let ns = |v: &Value, key: &str| v[key].as_u64().ok_or_else(|| bad(key));
        let read_frame = |f: &Value| {
            Ok::<_, String>(FrameTruth {
                name: text_of(f, "name")?,
                path: text_of(f, "path")?,
                line: ns(f, "line")? as u32,
                function: text_of(f, "function")?,
            })
        };
        let steps = v["steps"]
            .as_array()
            .ok_or_else(|| bad("steps"))?
            .iter()
            .map(|s| {
                Ok(StepTruth {
                    label: text_of(s, "label")?,
                    first_launch_ns: ns(s, "first_launch_ns")?,
                    end_ns: ns(s, "end_ns")?,
                    compute_ns: ns(s, "compute_ns")?,
                    comm_ns: ns(s, "comm_ns")?,
                    memcpy_ns: ns(s, "memcpy_ns")?,
                })
            })
            .collect::<Result<_, String>>()?;
        let delays = v["delays"]
            .as_array()
            .ok_or_else(|| bad("delays"))?
            .iter()
            .map(|d| {
                let frame = match &d["frame"] {
                    Value::Null => None,
                    f => Some(read_frame(f)?),
                };
                Ok(Delay {
                    cause: d["cause"]
                        .as_str()
                        .and_then(Cause::parse)
                        .ok_or_else(|| bad("cause"))?,
                    step: ns(d, "step")? as usize,
                    start_ns: ns(d, "start_ns")?,
                    end_ns: ns(d, "end_ns")?,
                    amount_ns: ns(d, "amount_ns")?,
                    gaps: ns(d, "gaps")? as usize,
                    frame,
                })
            })
            .collect::<Result<_, String>>()?;
        let foreign_frames = v["foreign_frames"]
            .as_array()
            .ok_or_else(|| bad("foreign_frames"))?
            .iter()
            .map(read_frame)
            .collect::<Result<_, String>>()?;
        Ok(TimelineTruth {
            scenario: text_of(&v, "scenario")?,
            framework: text_of(&v, "framework")?,
            trace: dir.join(text_of(&v, "trace")?),
            stage: text_of(&v, "stage")?,
            trace_start_ns: ns(&v, "trace_start_ns")?,
            gpu_start_ns: ns(&v, "gpu_start_ns")?,
            gpu_end_ns: ns(&v, "gpu_end_ns")?,
            busy_ns: ns(&v, "busy_ns")?,
            steps,
            delays,
            foreign_frames,
        })
    }

    /// The injected delays of `cause` in step `step`, summed.
    pub fn injected_ns(&self, step: usize, cause: Cause) -> u64 {
        self.delays
            .iter()
            .filter(|d| d.step == step && d.cause == cause)
            .map(|d| d.amount_ns)
            .sum()
    }
}
