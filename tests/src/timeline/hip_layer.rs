//! The decoder layer of the ROCm scenarios: SGLang's sites and CPU ops with the kernel
//! names an MI300X run shows (as in the shared SGLang MI300X traces).

use crate::engines::{profile, Op};
use crate::{Engine, StageKind};

/// The Qwen3 layer as SGLang runs it on an MI300X: aiter norms, hipBLASLt (Tensile
/// `Cijk_…`) GEMMs, ck_tile/paged attention, sgl_hip activation, RCCL all-reduce.
pub(crate) fn hip_ops(stage: StageKind) -> Vec<Op> {
    let attention = match stage {
        StageKind::Decode => "void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, 0, 256, 16, 4, 4, true, 1>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, int, float, int const*, int const*, int const*, int, float const*, int, int, int, float*, float*, __hip_bfloat16*, __hip_bfloat16*, int, float const*, float const*)",
        _ => "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipelineQRKSVSAsyncEEEEvNT_5KargsE",
    };
    let names = [
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_ISA942_WG16_4_4",
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
        "void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
        "Memcpy DtoD (Device -> Device)",
        attention,
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x256x32_MI16x16x1_SN_LDSB1_AFC1_ISA942_WG16_4_4",
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT320x224x64_MI16x16x1_SN_LDSB0_AFC1_ISA942_WG16_4_4",
        "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x256x32_MI16x16x1_SN_LDSB1_AFC1_ISA942_WG16_4_4",
        "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)",
    ];
    // SGLang's sites and CPU ops for each layer position, with the MI300X kernel names.
    (profile(Engine::Sglang).ops)(stage)
        .into_iter()
        .zip(names)
        .map(|(op, raw)| Op {
            raw,
            canonical: raw,
            ..op
        })
        .collect()
}
