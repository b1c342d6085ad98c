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

/// Lower-case tokens of a kernel name (see the module docs).
pub fn tokens(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let chars: Vec<char> = word.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_is_lower = chars.get(i + 1).is_some_and(|c| c.is_ascii_lowercase());
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_is_lower)
                || (prev.is_ascii_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_ascii_alphabetic());
            if boundary {
                out.push(
                    chars[start..i]
                        .iter()
                        .collect::<String>()
                        .to_ascii_lowercase(),
                );
                start = i;
            }
        }
        out.push(
            chars[start..]
                .iter()
                .collect::<String>()
                .to_ascii_lowercase(),
        );
    }
    out
}

/// One token of a pattern, with optional `*` on either side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenMatcher {
    text: String,
    /// `*text`: any token ending with `text`.
    any_prefix: bool,
    /// `text*`: any token starting with `text`.
    any_suffix: bool,
}

impl TokenMatcher {
    pub fn matches(&self, token: &str) -> bool {
        match (self.any_prefix, self.any_suffix) {
            (false, false) => token == self.text,
            (true, false) => token.ends_with(&self.text),
            (false, true) => token.starts_with(&self.text),
            (true, true) => token.contains(&self.text),
        }
    }
}

/// A pattern text as matchers: words split on spaces, each word tokenised like a name;
/// a leading `*` applies to the word's first token, a trailing one to its last.
/// `None` when the text has no tokens.
pub fn parse_pattern(text: &str) -> Option<Vec<TokenMatcher>> {
    let mut matchers = Vec::new();
    for word in text.split_whitespace() {
        let any_prefix = word.starts_with('*');
        let any_suffix = word.len() > 1 && word.ends_with('*');
        let core = word.trim_matches('*');
        let mut word_tokens: Vec<TokenMatcher> = tokens(core)
            .into_iter()
            .map(|text| TokenMatcher {
                text,
                any_prefix: false,
                any_suffix: false,
            })
            .collect();
        if let Some(first) = word_tokens.first_mut() {
            first.any_prefix = any_prefix;
        }
        if let Some(last) = word_tokens.last_mut() {
            last.any_suffix = any_suffix;
        }
        matchers.extend(word_tokens);
    }
    (!matchers.is_empty()).then_some(matchers)
}

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

/// True when `pattern` matches consecutive tokens of `name_tokens`.
pub fn appears_consecutively(pattern: &[TokenMatcher], name_tokens: &[String]) -> bool {
    pattern.len() <= name_tokens.len()
        && name_tokens
            .windows(pattern.len())
            .any(|window| pattern.iter().zip(window).all(|(m, t)| m.matches(t)))
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

    #[test]
    fn tokens_split_camel_case_digits_and_punctuation() {
        assert_eq!(
            tokens("FlashAttnFwdSm90"),
            ["flash", "attn", "fwd", "sm", "90"]
        );
        assert_eq!(
            tokens("BatchPrefillWithPagedKVCacheKernel"),
            ["batch", "prefill", "with", "paged", "kv", "cache", "kernel"]
        );
        assert_eq!(
            tokens("void ck_tile::FMHAKernel<1>"),
            ["void", "ck", "tile", "fmha", "kernel", "1"]
        );
        assert_eq!(
            tokens("gemma_fused_add_rmsnorm"),
            ["gemma", "fused", "add", "rmsnorm"]
        );
        assert_eq!(
            tokens("ampere_s16816gemm"),
            ["ampere", "s", "16816", "gemm"]
        );
        assert!(tokens("").is_empty());
    }

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
