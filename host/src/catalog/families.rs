//! The kernel-family rules (`catalog/kernel-families.toml`): ordered rules that give every
//! kernel name a family (gemm, attention, communication, ...), read by the kernel table
//! and, through the categories derived from families, by the overlap table.
//!
//! A rule fires when one of its patterns appears in the name's tokens and every `all`
//! token is present somewhere (the pattern language is [`super::pattern`]). The first
//! rule that fires wins; no rule gives [`OTHER`]. `--catalog DIR` replaces the built-in
//! rules when `DIR/kernel-families.toml` exists.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;
use serde::Deserialize;

use super::pattern::{appears_consecutively, parse_pattern, tokens, TokenMatcher};
use super::{check_catalog_dir, one_line};
use crate::error::TriageError;
use crate::trace::names::demangle;

/// The family of a kernel no rule claims.
pub(crate) const OTHER: &str = "other";

/// One rule: the family a kernel gets when any pattern appears and every `all` token
/// is present somewhere in the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyRule {
    pub family: String,
    pub patterns: Vec<Vec<TokenMatcher>>,
    pub all: Vec<TokenMatcher>,
}

impl FamilyRule {
    /// Whether the rule fires on a name's tokens; `present` holds the same tokens, so
    /// that a pattern with a token the name lacks is passed over without a scan (a long
    /// C++ name has thousands of tokens, the rules hundreds of patterns).
    fn fires(&self, name_tokens: &[String], present: &FxHashSet<&str>) -> bool {
        let has = |m: &TokenMatcher| match m.exact() {
            Some(token) => present.contains(token),
            None => name_tokens.iter().any(|t| m.matches(t)),
        };
        self.patterns.iter().any(|pattern| {
            pattern
                .iter()
                .filter_map(TokenMatcher::exact)
                .all(|token| present.contains(token))
                && appears_consecutively(pattern, name_tokens)
        }) && self.all.iter().all(has)
    }
}

/// The ordered rules of a kernel-families catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyRules {
    pub rules: Vec<FamilyRule>,
    /// The answer for each name already asked about: the kernel table, the timeline,
    /// layers, roles and overlap all ask for every distinct name, and a trace may hold
    /// tens of thousands, each a demangle, a tokenising and a pass over every rule.
    pub memo: FamilyMemo,
}

impl FamilyRules {
    /// Rules with an empty memo.
    pub fn new(rules: Vec<FamilyRule>) -> Self {
        FamilyRules {
            rules,
            memo: FamilyMemo::default(),
        }
    }

    /// The family of a raw kernel name. Mangled names are tokenised demangled, so
    /// `_ZN7ck_tile...FmhaBatchPrefill...` reads as the C++ name it is.
    pub fn family_of(&self, raw_name: &str) -> &str {
        let rule = self.memo.get(raw_name).unwrap_or_else(|| {
            let text = demangle(raw_name);
            let name_tokens = tokens(text.as_deref().unwrap_or(raw_name));
            let present: FxHashSet<&str> = name_tokens.iter().map(String::as_str).collect();
            let rule = self
                .rules
                .iter()
                .position(|rule| rule.fires(&name_tokens, &present));
            self.memo.put(raw_name, rule);
            rule
        });
        rule.map_or(OTHER, |i| self.rules[i].family.as_str())
    }
}

/// Which rule (if any) each name asked about fired, shared by every caller of one
/// [`FamilyRules`] (threads included). A clone starts empty; it never takes part in
/// comparisons: it is a cache of what the rules say, not part of them.
#[derive(Default)]
pub struct FamilyMemo(std::sync::Mutex<rustc_hash::FxHashMap<Box<str>, Option<usize>>>);

impl FamilyMemo {
    fn get(&self, name: &str) -> Option<Option<usize>> {
        self.0.lock().ok()?.get(name).copied()
    }

    fn put(&self, name: &str, rule: Option<usize>) {
        if let Ok(mut memo) = self.0.lock() {
            memo.insert(name.into(), rule);
        }
    }
}

impl Clone for FamilyMemo {
    fn clone(&self) -> Self {
        FamilyMemo::default()
    }
}

impl PartialEq for FamilyMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for FamilyMemo {}

impl std::fmt::Debug for FamilyMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FamilyMemo")
    }
}

/// File name of the kernel-family rules inside a catalog directory.
pub(crate) const KERNEL_FAMILIES_FILE: &str = "kernel-families.toml";

/// The built-in kernel-family rules.
pub(crate) const BUILTIN_KERNEL_FAMILIES: &str =
    include_str!("../../../catalog/kernel-families.toml");

/// The kernel-family rules: `dir/kernel-families.toml` when `dir` is given, else the
/// built-in copy. Errors name the file and the rule.
pub fn load_families(dir: Option<&Path>) -> Result<FamilyRules, TriageError> {
    let builtin = || {
        parse_families(
            BUILTIN_KERNEL_FAMILIES,
            Path::new("built-in catalog/kernel-families.toml"),
        )
    };
    match dir {
        None => builtin(),
        Some(dir) => {
            check_catalog_dir(dir)?;
            let path = dir.join(KERNEL_FAMILIES_FILE);
            if !path.exists() {
                return builtin();
            }
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            parse_families(&text, &path)
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FamiliesFile {
    schema: u32,
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    family: String,
    patterns: Vec<String>,
    #[serde(default)]
    all: Vec<String>,
}

/// Parses and validates kernel-family rules; `path` only names the source in errors.
pub fn parse_families(text: &str, path: &Path) -> Result<FamilyRules, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: FamiliesFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid kernel-family catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported kernel-family catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    if file.rule.is_empty() {
        return Err(error("kernel-family catalog has no [[rule]]".to_string()));
    }
    let mut rules = Vec::with_capacity(file.rule.len());
    for (i, entry) in file.rule.into_iter().enumerate() {
        let rule_error = |what: String| {
            error(format!(
                "rule {} (family {:?}): {what}",
                i + 1,
                entry.family
            ))
        };
        let valid_name = !entry.family.is_empty()
            && entry
                .family
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid_name {
            return Err(rule_error(
                "family must be a non-empty lower-case name (a-z, 0-9, _)".to_string(),
            ));
        }
        if entry.patterns.is_empty() {
            return Err(rule_error("no patterns".to_string()));
        }
        let mut patterns = Vec::with_capacity(entry.patterns.len());
        for pattern in &entry.patterns {
            patterns.push(
                parse_pattern(pattern)
                    .ok_or_else(|| rule_error(format!("empty pattern {pattern:?}")))?,
            );
        }
        let mut all = Vec::new();
        for token in &entry.all {
            let matchers = parse_pattern(token)
                .ok_or_else(|| rule_error(format!("empty `all` token {token:?}")))?;
            all.extend(matchers);
        }
        rules.push(FamilyRule {
            family: entry.family.clone(),
            patterns,
            all,
        });
    }
    Ok(FamilyRules::new(rules))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The families of the report contract, in the order the predecessor listed them.
    const KNOWN_FAMILIES: &[&str] = &[
        "communication",
        "memory",
        "hybrid_linear",
        "attention",
        "moe",
        "gemm",
        "norm",
        "rope",
        "softmax",
        "activation",
        "quantize",
        "reduce_topk",
        "sampling_io",
        "elementwise",
        OTHER,
    ];

    fn builtin() -> FamilyRules {
        load_families(None).expect("built-in catalog loads")
    }

    #[test]
    fn builtin_rules_use_only_known_families() {
        let rules = builtin();
        assert!(rules.rules.len() >= 15);
        for rule in &rules.rules {
            assert!(
                KNOWN_FAMILIES.contains(&rule.family.as_str()),
                "{}",
                rule.family
            );
        }
    }

    #[test]
    fn required_examples() {
        let rules = builtin();
        let cases = [
            // Attention, not gemm or memory.
            ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<>, cutlass::bfloat16_t>>>>(int)", "attention"),
            ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false>(Flash_fwd_params)", "attention"),
            ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >", "attention"),
            ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", "attention"),
            ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<true, 64>, flashinfer::DefaultAttention<false>>(flashinfer::Params)", "attention"),
            ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1>", "attention"),
            ("_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelIiEEEEvv", "attention"),
            ("kernel_unified_attention_2d", "attention"),
            // gemma is not mma.
            ("void gemma_fused_add_rmsnorm_kernel<__nv_bfloat16>", "norm"),
            // Inductor RMSNorm.
            ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "norm"),
            ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", "norm"),
            // Communication.
            ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
            ("void cross_device_reduce_1stage<__nv_bfloat16, 8>", "communication"),
            ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>", "communication"),
            ("void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<bf16>", "communication"),
            // prefill does not hit fill; fills do.
            ("void flashinfer::SinglePrefillWithKVCacheKernel<true>", "attention"),
            ("void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >", "memory"),
            // Runtime copies and sets.
            ("Memcpy DtoD (Device -> Device)", "memory"),
            ("Memset (Device)", "memory"),
            // Others seen in the shared traces.
            ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"),
            ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT320x224x64_MI16x16x1_SN_LDSB0", "gemm"),
            ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>", "gemm"),
            ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f", "moe"),
            ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "moe"),
            ("void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, 128> >", "moe"),
            ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)", "norm"),
            ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "norm"),
            ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "rope"),
            ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>", "memory"),
            ("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>", "quantize"),
            ("void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>", "quantize"),
            ("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i", "activation"),
            ("triton_poi_fused_mul_silu_0", "activation"),
            ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>", "softmax"),
            ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >", "reduce_topk"),
            ("create_flashinfer_kv_indices_triton", "sampling_io"),
            ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>", "memory"),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >", "elementwise"),
            ("triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0", "elementwise"),
            ("some_unknown_kernel", "other"),
        ];
        for (name, family) in cases {
            assert_eq!(rules.family_of(name), family, "{name}");
        }
    }

    /// Issue 14 point 7: names whose words mislead the earlier rules.
    #[test]
    fn misleading_words_do_not_decide_the_family() {
        let rules = builtin();
        let cases = [
            // vLLM's prefix_prefill.py context attention is a bare `_fwd_kernel`.
            ("_fwd_kernel", "attention"),
            // An Inductor kernel named after the ops it fused: the collective itself is
            // an NCCL kernel, this one only gathers embedding rows.
            ("triton_poi_fused_all_reduce_embedding_0", "memory"),
            (
                "triton_poi_fused_all_reduce_embedding_ge_lt_masked_fill_mul_sub_0",
                "memory",
            ),
            // triton_kernels MoE routing helpers (vLLM gpt-oss).
            ("_sum_bitmatrix_rows", "moe"),
            ("_sum_bitmatrix_memset", "moe"),
            ("_combined_routing_memset", "moe"),
            ("_combined_routing_compute", "moe"),
            // Names that must keep their family.
            ("_layer_norm_fwd_kernel", "norm"),
            ("_fwd_kernel_stage1", "attention"),
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "communication",
            ),
            (
                "void vllm::cross_device_reduce_1stage<c10::BFloat16, 8>",
                "communication",
            ),
        ];
        for (name, family) in cases {
            assert_eq!(rules.family_of(name), family, "{name}");
        }
    }

    fn write_catalog(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KERNEL_FAMILIES_FILE);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn user_catalog_replaces_the_builtin_one() {
        let (dir, _) =
            write_catalog("schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = [\"my gemm\"]\n");
        let rules = load_families(Some(dir.path())).unwrap();
        assert_eq!(rules.family_of("my_gemm_v2"), "gemm");
        assert_eq!(rules.family_of("Memset (Device)"), "other");
    }

    #[test]
    fn invalid_catalogs_name_the_file_and_rule() {
        let cases = [
            (
                "schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = [\"gemm\"]\n[[rule]]\nfamily = \"x\"\npatterns = [\"ok\", \" *\"]\n",
                "rule 2 (family \"x\"): empty pattern \" *\"",
            ),
            (
                "schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = [\"gemm\"]\nany = [\"x\"]\n",
                "unknown field `any`",
            ),
            (
                "schema = 1\n[[rule]]\nfamily = \"gemm\"\npatterns = []\n",
                "rule 1 (family \"gemm\"): no patterns",
            ),
            (
                "schema = 1\n[[rule]]\nfamily = \"Gemm\"\npatterns = [\"gemm\"]\n",
                "rule 1 (family \"Gemm\"): family must be",
            ),
            ("schema = 2\n", "unsupported kernel-family catalog schema 2"),
        ];
        for (text, needle) in cases {
            let (dir, path) = write_catalog(text);
            let err = load_families(Some(dir.path())).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        let missing = load_families(Some(Path::new("/nonexistent/catalog"))).unwrap_err();
        assert!(missing
            .to_string()
            .starts_with("/nonexistent/catalog: --catalog needs a directory"));
        assert_eq!(missing.exit_code(), crate::exit::INPUT);
    }

    #[test]
    fn patterns_match_consecutive_tokens_with_wildcards() {
        let rule = |patterns: &[&str], all: &[&str]| FamilyRule {
            family: "x".into(),
            patterns: patterns.iter().map(|p| parse_pattern(p).unwrap()).collect(),
            all: all.iter().flat_map(|p| parse_pattern(p).unwrap()).collect(),
        };
        let fires = |r: &FamilyRule, name: &str| {
            let name_tokens = tokens(name);
            r.fires(
                &name_tokens,
                &name_tokens.iter().map(String::as_str).collect(),
            )
        };
        let fill = rule(&["fill"], &[]);
        assert!(fires(&fill, "FillFunctor"));
        assert!(!fires(&fill, "BatchPrefillWithPagedKVCacheKernel"));
        let mma = rule(&["mma"], &[]);
        assert!(!fires(&mma, "gemma_rmsnorm"));
        assert!(fires(&mma, "sm90_mma_kernel"));
        let flash = rule(&["flash attn"], &[]);
        assert!(fires(&flash, "FlashAttnFwdSm90"));
        assert!(!fires(&flash, "flash_x_attn"));
        let sgemm = rule(&["*gemm"], &[]);
        assert!(fires(&sgemm, "volta_sgemm_128x64_nt"));
        assert!(!fires(&sgemm, "gemma"));
        // Letters and digits split alike in names and patterns.
        assert!(fires(&rule(&["fp8"], &[]), "scaled_fp8_quant"));
        let norm = rule(&["rsqrt"], &["mean", "pow"]);
        assert!(fires(
            &norm,
            "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"
        ));
        assert!(!fires(&norm, "rsqrt_kernel_cuda"));
        assert_eq!(parse_pattern(" * "), None);
    }
}
