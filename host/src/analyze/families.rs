//! Kernel families (gemm, attention, communication, ...) from ordered, token-aware rules.
//!
//! The rules live in `catalog/kernel-families.toml` (loaded by [`crate::catalog`]).
//! A kernel name is cut into lower-case tokens at every non-alphanumeric character,
//! at camelCase humps and between letters and digits:
//! `FlashAttnFwdSm90` -> `flash attn fwd sm 90`, `BatchPrefillWithPagedKVCacheKernel` ->
//! `batch prefill with paged kv cache kernel`. A pattern is a token sequence that must
//! appear consecutively, so `prefill` never hits a `fill` rule and `gemma` never hits
//! `mma` (the predecessor tested raw substrings and got both wrong). A pattern token may
//! start or end with `*` to match any token that ends or starts with the rest (`*gemm`
//! matches `sgemm`). The first rule that fires wins; no rule gives `other`.

use crate::catalog::pattern::{appears_consecutively, tokens, TokenMatcher};

/// The family of a kernel no rule claims.
pub const OTHER: &str = "other";

/// The families of the report contract, in the order the predecessor listed them.
pub const KNOWN_FAMILIES: &[&str] = &[
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

/// One rule: the family a kernel gets when any pattern appears and every `all` token
/// is present somewhere in the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyRule {
    pub family: String,
    pub patterns: Vec<Vec<TokenMatcher>>,
    pub all: Vec<TokenMatcher>,
}

impl FamilyRule {
    fn fires(&self, name_tokens: &[String]) -> bool {
        let has = |m: &TokenMatcher| name_tokens.iter().any(|t| m.matches(t));
        self.patterns
            .iter()
            .any(|pattern| appears_consecutively(pattern, name_tokens))
            && self.all.iter().all(has)
    }
}

/// The ordered rules of a kernel-families catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyRules {
    pub rules: Vec<FamilyRule>,
}

impl FamilyRules {
    /// The family of a raw kernel name. Mangled names are tokenised demangled, so
    /// `_ZN7ck_tile...FmhaBatchPrefill...` reads as the C++ name it is.
    pub fn family_of(&self, raw_name: &str) -> &str {
        let text = super::names::demangle(raw_name);
        let name_tokens = tokens(text.as_deref().unwrap_or(raw_name));
        self.rules
            .iter()
            .find(|rule| rule.fires(&name_tokens))
            .map_or(OTHER, |rule| rule.family.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::pattern::parse_pattern;

    #[test]
    fn patterns_match_consecutive_tokens_with_wildcards() {
        let rule = |patterns: &[&str], all: &[&str]| FamilyRule {
            family: "x".into(),
            patterns: patterns.iter().map(|p| parse_pattern(p).unwrap()).collect(),
            all: all.iter().flat_map(|p| parse_pattern(p).unwrap()).collect(),
        };
        let fires = |r: &FamilyRule, name: &str| r.fires(&tokens(name));
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
