//! vLLM Llama TP=4 under torch.compile, on H100 and on MI300X (issue 14 point 3): the
//! vLLM fixture with its residual add + RMSNorm replaced by the RMSNorm Inductor
//! generates (`triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2`), next to the custom
//! and NCCL all-reduces. No shared trace has these shapes; the fixture is built from the
//! ordinary generator's output, so the other fixtures stay byte for byte as they were.

use std::path::{Path, PathBuf};

use crate::engines::{FUSED_ADD_RMSNORM, FUSED_ADD_RMSNORM_RAW};
use crate::{write_fixture, Engine, FixtureSpec, StageKind};

/// The Inductor kernel that replaces the hand-written fused add + RMSNorm.
pub const INDUCTOR_RMSNORM: &str = "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2";

/// Where the fixture ran: the device name and runtime-call prefix the trace shows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Platform {
    H100,
    Mi300x,
}

/// Writes one extend step of vLLM Llama TP=4 (rank 0) under torch.compile into `dir`
/// and returns the trace path.
pub fn write_compiled_llama_tp4(dir: &Path, platform: Platform) -> std::io::Result<PathBuf> {
    let mut spec = FixtureSpec::new(Engine::Vllm, StageKind::Extend);
    spec.gzip = false;
    spec.layers = 4;
    spec.seed = 14;
    spec.server_args = Some(serde_json::json!({
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "tensor_parallel_size": 4,
    }));
    let (path, _) = write_fixture(dir, &spec)?;
    let mut text = std::fs::read_to_string(&path)?
        .replace(FUSED_ADD_RMSNORM_RAW, INDUCTOR_RMSNORM)
        .replace(FUSED_ADD_RMSNORM, INDUCTOR_RMSNORM)
        .replace(
            "\"_C::fused_add_rms_norm\"",
            &format!("\"{INDUCTOR_RMSNORM}\""),
        );
    if platform == Platform::Mi300x {
        // ROCm's profiler: HIP runtime calls and an AMD device name.
        text = text
            .replace("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X")
            .replace("\"name\": \"cuda", "\"name\": \"hip");
    }
    std::fs::write(&path, text)?;
    Ok(path)
}
