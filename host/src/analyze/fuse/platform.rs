//! The GPU platform a trace ran on (`cuda` or `rocm`), for the fusion rows' `devices`
//! gate: many fused paths exist on one platform only (SGLang's fused RoPE + KV-cache
//! store is CUDA-only, vLLM's AITER passes are ROCm-only), and a row must never say
//! "did not fire" where its path cannot exist.
//!
//! The trace says it plainly, in three independent ways, read in this order: a
//! `roctracer_version` top-level key (ROCm's Kineto build writes it), the runtime calls
//! (`hipLaunchKernel` / `cudaLaunchKernel`, ...), and `deviceProperties[].name`
//! (`AMD Instinct MI300X`, `NVIDIA H100 80GB HBM3`; ROCm may leave them empty). When
//! the signs disagree the platform is unknown rather than guessed.

use crate::trace::event::Trace;

/// What one trace shows of its platform: each sign found, as (platform, where).
fn signs(trace: &Trace) -> Vec<(&'static str, &'static str)> {
    let mut found = Vec::new();
    if trace.meta.keys.iter().any(|k| k == "roctracer_version") {
        found.push(("rocm", "roctracer_version"));
    }
    let (mut hip, mut cuda) = (false, false);
    for call in &trace.runtime {
        let name = trace.name(call.name);
        hip |= name.starts_with("hip");
        // `cudaLaunchKernel` (runtime) or `cuLaunchKernel` (driver).
        cuda |= name.starts_with("cuda")
            || name
                .strip_prefix("cu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
    }
    if hip {
        found.push(("rocm", "hip* runtime calls"));
    }
    if cuda {
        found.push(("cuda", "cuda* runtime calls"));
    }
    for device in &trace.meta.device_names {
        let upper = device.to_ascii_uppercase();
        if upper.starts_with("AMD") || upper.contains("INSTINCT") || upper.contains("RADEON") {
            found.push(("rocm", "deviceProperties name"));
        } else if upper.starts_with("NVIDIA") {
            found.push(("cuda", "deviceProperties name"));
        }
    }
    found
}

/// The platform every trace agrees on, with the signs that say so; `None` when no trace
/// shows one or two disagree.
pub(crate) fn platform(traces: &[&Trace]) -> Option<(String, String)> {
    let mut platform: Option<&str> = None;
    let mut sources: Vec<&str> = Vec::new();
    for trace in traces {
        for (name, source) in signs(trace) {
            match platform {
                Some(p) if p != name => return None,
                _ => platform = Some(name),
            }
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
    }
    platform.map(|p| (p.to_string(), sources.join(", ")))
}
