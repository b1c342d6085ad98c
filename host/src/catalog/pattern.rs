//! The pattern language of every catalog file: how a kernel name, CPU op or Python
//! location is cut into tokens, and how a pattern written in the catalog matches them.
//!
//! A text is cut into lower-case tokens at every non-alphanumeric character, at camelCase
//! humps and between letters and digits: `FlashAttnFwdSm90` -> `flash attn fwd sm 90`,
//! `BatchPrefillWithPagedKVCacheKernel` -> `batch prefill with paged kv cache kernel`. A
//! pattern is a token sequence that must appear consecutively, so `prefill` never hits a
//! `fill` rule and `gemma` never hits `mma` (the predecessor tested raw substrings and got
//! both wrong). A pattern token may start or end with `*` to match any token that ends or
//! starts with the rest (`*gemm` matches `sgemm`).
//!
//! Fusion rows add two things ([`parse_fusion_pattern`]): a `re:` pattern is a regex
//! (`regex-lite` syntax: ASCII classes) anchored to the whole field, and a single-token pattern must be specific
//! ([`GENERIC_TOKENS`], [`MIN_SINGLE_TOKEN_LEN`]). [`Pattern::matches`] matches one
//! [`FieldText`]; building those texts from a trace is the analyses' job.
//! `catalog/README.md` documents the language for catalog authors.

use serde::{Serialize, Serializer};

/// Lower-case tokens of a kernel name (see the module docs).
pub fn tokens(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Only ASCII letters and digits make tokens, so the text is cut as bytes: each byte
    // of a multi-byte character is a separator, as the character is.
    for word in name
        .as_bytes()
        .split(|b| !b.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut start = 0;
        for i in 1..word.len() {
            let (prev, cur) = (word[i - 1], word[i]);
            let next_is_lower = word.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_is_lower)
                || (prev.is_ascii_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_ascii_alphabetic());
            if boundary {
                out.push(lower_case(&word[start..i]));
                start = i;
            }
        }
        out.push(lower_case(&word[start..]));
    }
    out
}

/// One token's text: ASCII letters and digits, lower-cased (in one allocation: char by
/// char, this was half of tokenising).
fn lower_case(token: &[u8]) -> String {
    std::str::from_utf8(token)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
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
    /// The one token this matches, when it has no `*`.
    pub fn exact(&self) -> Option<&str> {
        (!self.any_prefix && !self.any_suffix).then_some(self.text.as_str())
    }

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

/// True when `pattern` matches consecutive tokens of `name_tokens`.
pub fn appears_consecutively(pattern: &[TokenMatcher], name_tokens: &[String]) -> bool {
    pattern.len() <= name_tokens.len()
        && name_tokens
            .windows(pattern.len())
            .any(|window| pattern.iter().zip(window).all(|(m, t)| m.matches(t)))
}

/// Single tokens too generic to be a pattern on their own: they hit almost every trace
/// (the predecessor's `add`, `mul`, `gate` or `cache` keywords matched nearly any kernel,
/// location or CPU op). Single-token patterns must also be at least
/// [`MIN_SINGLE_TOKEN_LEN`] characters long.
pub const GENERIC_TOKENS: &[&str] = &[
    "add",
    "mul",
    "gate",
    "cache",
    "cat",
    "pack",
    "linear",
    "scale",
    "mla",
    "decode",
    "prefill",
    "quant",
    "rope",
    "norm",
    "kernel",
    "fused",
    "void",
    "topk",
    "gemm",
    "matmul",
    "moe",
    "router",
    "concat",
    "copy",
    "store",
    "attention",
    "silu",
    "gelu",
    "forward",
    "float",
    "half",
    "bfloat",
    "native",
    "elementwise",
    "vectorized",
    "reduce",
    "triton",
    "expert",
    "experts",
    "sampling",
    "softmax",
    "verify",
    "weights",
    "proj",
];
pub const MIN_SINGLE_TOKEN_LEN: usize = 4;

/// One catalog pattern: `re:` + a regex anchored to the whole field, or a token run.
pub fn parse_fusion_pattern(text: &str) -> Result<Pattern, String> {
    if let Some(body) = text.strip_prefix("re:") {
        let anchored = format!("^(?:{body})$");
        let regex = regex_lite::Regex::new(&anchored).map_err(|e| {
            format!(
                "pattern {text:?} is not a valid regex: {}",
                super::one_line(&e.to_string())
            )
        })?;
        return Ok(Pattern::regex(text, regex, RegexLiterals::of(&anchored)));
    }
    let matchers = parse_pattern(text).ok_or_else(|| format!("pattern {text:?} has no tokens"))?;
    if matchers.len() == 1 {
        let word = text.trim().trim_matches('*').to_ascii_lowercase();
        let wildcard = text.contains('*');
        if !wildcard
            && (word.len() < MIN_SINGLE_TOKEN_LEN || GENERIC_TOKENS.contains(&word.as_str()))
        {
            return Err(format!(
                "pattern {text:?} is a single generic or short token; use a run of tokens that \
                 names the kernel"
            ));
        }
    }
    Ok(Pattern::tokens(text, matchers))
}

/// One pattern of a catalog row: a token run or an anchored regex (`re:`).
#[derive(Clone, Debug)]
pub struct Pattern {
    /// As written in the catalog.
    pub text: String,
    kind: PatternKind,
    /// The [`TokenSet`] of the run's exact tokens (those without `*`): a field lacking
    /// one of them cannot match, which the fuse matcher learns from two words instead of
    /// a scan of the field's tokens (it asks every row of a stage about every row of the
    /// catalog). Empty for a regex.
    required: TokenSet,
}

/// A set of tokens as a 128-bit Bloom filter, one bit per token: a set that lacks a bit
/// of another lacks one of its tokens; one that has them all may still lack a token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TokenSet(u128);

impl TokenSet {
    fn of<'t>(tokens: impl IntoIterator<Item = &'t str>) -> TokenSet {
        TokenSet(tokens.into_iter().fold(0, |set, t| set | TokenSet::bit(t)))
    }

    /// FNV-1a of the token, folded to a bit number.
    fn bit(token: &str) -> u128 {
        let hash = token.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        1 << ((hash ^ (hash >> 32)) % 128)
    }

    fn may_hold(self, other: TokenSet) -> bool {
        self.0 & other.0 == other.0
    }
}

#[derive(Clone, Debug)]
enum PatternKind {
    Tokens(Vec<TokenMatcher>),
    Regex(regex_lite::Regex, RegexLiterals),
}

/// What every whole-field match of an anchored regex starts and ends with: one of
/// `prefixes` (when any) and one of `suffixes` (when any). regex-lite runs its one engine
/// over the whole field; these are checked first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegexLiterals {
    prefixes: Vec<Vec<u8>>,
    suffixes: Vec<Vec<u8>>,
}

impl RegexLiterals {
    /// The literals of `anchored` (`^(?:...)$`) as regex-syntax reads it: ASCII classes,
    /// as regex-lite has. None where it cannot tell (an unbounded set, a class too big,
    /// an empty literal, a pattern it does not parse): a field is then not passed over.
    pub fn of(anchored: &str) -> RegexLiterals {
        use regex_syntax::hir::literal::{ExtractKind, Extractor};
        let Ok(hir) = regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(anchored)
        else {
            return RegexLiterals::default();
        };
        let literals = |kind| {
            let seq = Extractor::new().kind(kind).extract(&hir);
            match seq.literals() {
                Some(lits) if lits.iter().all(|l| !l.as_bytes().is_empty()) => {
                    lits.iter().map(|l| l.as_bytes().to_vec()).collect()
                }
                _ => Vec::new(),
            }
        };
        RegexLiterals {
            prefixes: literals(ExtractKind::Prefix),
            suffixes: literals(ExtractKind::Suffix),
        }
    }

    fn may_match(&self, text: &str) -> bool {
        let text = text.as_bytes();
        (self.prefixes.is_empty() || self.prefixes.iter().any(|p| text.starts_with(p)))
            && (self.suffixes.is_empty() || self.suffixes.iter().any(|s| text.ends_with(s)))
    }
}

impl Pattern {
    pub fn tokens(text: &str, matchers: Vec<TokenMatcher>) -> Pattern {
        Pattern {
            text: text.to_string(),
            required: TokenSet::of(matchers.iter().filter_map(TokenMatcher::exact)),
            kind: PatternKind::Tokens(matchers),
        }
    }

    pub fn regex(text: &str, regex: regex_lite::Regex, literals: RegexLiterals) -> Pattern {
        Pattern {
            text: text.to_string(),
            kind: PatternKind::Regex(regex, literals),
            required: TokenSet::default(),
        }
    }

    /// The token matchers of a token pattern; `None` for a regex.
    pub fn token_matchers(&self) -> Option<&[TokenMatcher]> {
        match &self.kind {
            PatternKind::Tokens(m) => Some(m),
            PatternKind::Regex(..) => None,
        }
    }

    /// Whether the pattern matches `field`: its tokens for a token run, its whole text
    /// for a regex.
    pub fn matches(&self, field: &FieldText) -> bool {
        match &self.kind {
            PatternKind::Tokens(matchers) => {
                field.token_set.may_hold(self.required)
                    && appears_consecutively(matchers, &field.tokens)
            }
            PatternKind::Regex(regex, literals) => {
                literals.may_match(&field.text) && regex.is_match(&field.text)
            }
        }
    }
}

#[cfg(test)]
impl Pattern {
    /// [`Pattern::matches`] without the token set and literal checks: what they must
    /// never change.
    fn matches_unfiltered(&self, field: &FieldText) -> bool {
        match &self.kind {
            PatternKind::Tokens(matchers) => appears_consecutively(matchers, &field.tokens),
            PatternKind::Regex(regex, _) => regex.is_match(&field.text),
        }
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// One field of a kernel row, ready to match: the text regexes see, the tokens token
/// patterns see.
#[derive(Clone, Debug)]
pub struct FieldText {
    text: String,
    tokens: Vec<String>,
    token_set: TokenSet,
}

impl FieldText {
    pub fn new(text: String) -> FieldText {
        let tokens = tokens(&text);
        let token_set = TokenSet::of(tokens.iter().map(String::as_str));
        FieldText {
            text,
            tokens,
            token_set,
        }
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
        // A character outside ASCII is a separator, whatever its bytes.
        assert_eq!(
            tokens("añbC\u{3a9}gemm\u{1f600}x9"),
            ["a", "b", "c", "gemm", "x", "9"]
        );
    }

    #[test]
    fn regex_patterns_match_whole_fields_with_ascii_classes() {
        let matches = |pattern: &str, text: &str| {
            parse_fusion_pattern(pattern)
                .unwrap()
                .matches(&FieldText::new(text.to_string()))
        };
        let location = r"re:.*v1/sample/ops/topk_topp_sampler\.py:\d+ forward_native";
        assert!(matches(
            location,
            "vllm/v1/sample/ops/topk_topp_sampler.py:104 forward_native"
        ));
        // Anchored at both ends.
        assert!(!matches(
            location,
            "vllm/v1/sample/ops/topk_topp_sampler.py:104 forward_native_x"
        ));
        // `\d` is ASCII: an Arabic-Indic digit is not a line number.
        assert!(!matches(
            location,
            "vllm/v1/sample/ops/topk_topp_sampler.py:\u{661} forward_native"
        ));
        // `.` is any character, so a name with non-ASCII text still matches `.*`.
        assert!(matches(
            "re:triton_poi_fused_.*silu.*",
            "triton_poi_fused_\u{e9}_silu_0"
        ));
        // Unicode classes are refused at load, naming the pattern.
        let refused = parse_fusion_pattern(r"re:\p{Greek}+").unwrap_err();
        assert!(
            refused.starts_with(r#"pattern "re:\\p{Greek}+" is not a valid regex: "#),
            "{refused}"
        );
    }

    #[test]
    fn a_regex_s_literals_are_what_every_whole_field_match_starts_and_ends_with() {
        let of = |body: &str| RegexLiterals::of(&format!("^(?:{body})$"));
        let triton = of("^triton_(red|per)_fused_.*mean.*pow.*rsqrt.*$");
        assert_eq!(
            triton.prefixes,
            [b"triton_red_fused_".to_vec(), b"triton_per_fused_".to_vec()]
        );
        assert!(triton.suffixes.is_empty(), "{triton:?}");
        assert!(triton.may_match("triton_per_fused_add_mean_pow_rsqrt_3"));
        assert!(!triton.may_match("triton_poi_fused_mean_pow_rsqrt_3"));

        let site = of(r"^.*sglang/srt/models/qwen2_moe\.py:\d+ _forward_shared_experts$");
        assert!(site.prefixes.is_empty(), "{site:?}");
        assert!(!site.suffixes.is_empty(), "{site:?}");
        assert!(site
            .suffixes
            .iter()
            .all(|s| s.ends_with(b" _forward_shared_experts")));
        assert!(site.may_match("python/sglang/srt/models/qwen2_moe.py:212 _forward_shared_experts"));
        assert!(!site.may_match("python/sglang/srt/models/qwen2_moe.py:212 forward"));

        // Either branch's end: `a` or `b`.
        let branches = of("a|.*b");
        assert!(branches.may_match("a") && branches.may_match("xyb"));
        assert!(!branches.may_match("xyc"), "{branches:?}");
        // Nothing to go by: every field may match.
        for body in [".*", r"\w+", "a*", "(x|.*)"] {
            let none = of(body);
            assert!(none.may_match("anything at all"), "{body}: {none:?}");
        }
    }

    #[test]
    fn the_token_set_and_literal_checks_never_change_what_a_catalog_pattern_matches() {
        // Every pattern of every built-in fusion file, against fields made from every
        // pattern's own words (so that many match) and some real kernel names and sites.
        let files = [
            (
                "sglang",
                include_str!("../../../catalog/fusions/sglang.toml"),
            ),
            ("vllm", include_str!("../../../catalog/fusions/vllm.toml")),
            (
                "trtllm",
                include_str!("../../../catalog/fusions/trtllm.toml"),
            ),
            (
                "tokenspeed",
                include_str!("../../../catalog/fusions/tokenspeed.toml"),
            ),
            ("torch", include_str!("../../../catalog/fusions/torch.toml")),
        ];
        let mut patterns = Vec::new();
        for (origin, text) in files {
            let rules = super::super::parse_fusions(text, "built-in", origin).unwrap();
            for rule in rules {
                let groups =
                    std::iter::once(&rule.active).chain(rule.split.iter().map(|g| &g.evidence));
                for e in groups {
                    patterns.extend(e.kernel.iter().chain(&e.cpu_op).chain(&e.location).cloned());
                    patterns.extend(e.not_kernel.iter().chain(&e.not_cpu_op).cloned());
                    patterns.extend(e.not_location.iter().cloned());
                }
            }
        }
        let mut fields: Vec<String> = vec![
            "triton_red_fused_add_mean_pow_rsqrt_2".into(),
            "triton_poi_fused_mul_silu_1".into(),
            "python/sglang/srt/models/qwen2_moe.py:188 _forward_shared_experts".into(),
            "void flashinfer::BatchPrefillWithPagedKVCacheKernel<true>(Params)".into(),
            "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn".into(),
        ];
        for p in &patterns {
            let words = p
                .text
                .trim_start_matches("re:")
                .replace(['*', '\\', '^', '$'], "");
            fields.push(words.replace(' ', "_"));
            fields.push(format!("fused_{}_kernel", words.replace(' ', "")));
        }
        let fields: Vec<FieldText> = fields.into_iter().map(FieldText::new).collect();
        let (mut matched, mut passed_over) = (0, 0);
        for p in &patterns {
            for f in &fields {
                let plain = p.matches_unfiltered(f);
                assert_eq!(p.matches(f), plain, "{} on {:?}", p.text, f.text);
                matched += usize::from(plain);
                let checked = match &p.kind {
                    PatternKind::Tokens(_) => f.token_set.may_hold(p.required),
                    PatternKind::Regex(_, literals) => literals.may_match(&f.text),
                };
                passed_over += usize::from(!checked);
            }
        }
        assert!(patterns.len() > 300, "{}", patterns.len());
        assert!(matched > patterns.len(), "{matched} matches");
        // Most pairs are settled by the checks alone.
        let pairs = patterns.len() * fields.len();
        assert!(
            passed_over * 10 > pairs * 9,
            "{passed_over} of {pairs} passed over"
        );
    }
}
