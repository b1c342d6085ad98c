//! `--pid-substring`: a Trace -> Trace step, run on each trace after it is read and
//! before the engine is selected, that keeps only the GPU ops of the matching pids.
//!
//! It is one of the predecessor's behaviours; the others are its flag spellings in
//! `cli/mod.rs` (aliases, `infer_long_args`, the leading `triage` word) and its script names
//! in `compat/*.py` (shims that run this binary).

use crate::error::{Result, TriageError};
use crate::trace::event::Trace;

/// `--pid-substring TEXT`: keeps only the GPU ops whose trace `pid` contains `needle`
/// (e.g. one rank of a merged multi-rank trace), and says how many it kept. A trace left
/// with no GPU work is an input error (exit 3) naming the pids it has.
pub(crate) fn keep_pids(mut trace: Trace, needle: &str) -> Result<(Trace, String)> {
    let before = trace.gpu_ops.len();
    let keep: Vec<bool> = trace
        .gpu_ops
        .iter()
        .map(|op| trace.name(op.pid).contains(needle))
        .collect();
    if !keep.contains(&true) {
        let mut pids: Vec<&str> = trace.gpu_ops.iter().map(|op| trace.name(op.pid)).collect();
        pids.sort_unstable();
        pids.dedup();
        let shown = if pids.is_empty() {
            "none".to_string()
        } else {
            pids.join(", ")
        };
        return Err(TriageError::input(
            &trace.path,
            format!(
                "--pid-substring {needle:?} matches no GPU op (GPU pids in this trace: {shown})"
            ),
        ));
    }
    let mut flags = keep.into_iter();
    trace.gpu_ops.retain(|_| flags.next().unwrap_or(false));
    let note = format!(
        "{}: --pid-substring {needle:?} kept {} of {before} GPU ops",
        trace
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        trace.gpu_ops.len()
    );
    Ok((trace, note))
}
