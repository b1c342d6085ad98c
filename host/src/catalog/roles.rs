//! `catalog/roles.toml`: what a kernel does inside a decoder layer (qkv, attention,
//! o_proj, ...), from its family, its name, the `nn.Module` frames of its launch stack
//! and their paths. The rules are data; this module parses, validates and matches them
//! against one [`RoleSubject`] (building subjects from a trace is `analyze::layers`' job).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::one_line;
use super::pattern::{appears_consecutively, parse_pattern, TokenMatcher};
use crate::error::TriageError;

pub const ROLES_FILE: &str = "roles.toml";

pub const BUILTIN_ROLES: &str = include_str!("../../../catalog/roles.toml");

/// Index into [`RoleRules::roles`].
pub type RoleId = u16;

/// What one kernel launch is matched by: plain text taken from the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleSubject<'a> {
    /// The kernel's family (`catalog/kernel-families.toml`).
    pub family: &'a str,
    /// Tokens of the kernel name (`catalog::pattern::tokens`).
    pub kernel_tokens: &'a [String],
    /// Tokens of the innermost `nn.Module:` class of the launch stack, if any.
    pub module_tokens: Option<&'a [String]>,
    /// Tokens of every enclosing `nn.Module:` class (the innermost not among them), in
    /// any order: a rule asks whether any of them matches.
    pub inside_tokens: &'a [&'a [String]],
    /// Paths of the launch stack's Python frames.
    pub frame_paths: &'a [&'a str],
}

/// One rule: `role` when every condition it has holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleRule {
    pub role: RoleId,
    pub family: Vec<String>,
    pub kernel: Vec<Vec<TokenMatcher>>,
    pub module: Vec<Vec<TokenMatcher>>,
    pub inside: Vec<Vec<TokenMatcher>>,
    pub site: Vec<String>,
}

impl RoleRule {
    fn matches(&self, subject: &RoleSubject<'_>) -> bool {
        let any = |patterns: &[Vec<TokenMatcher>], tokens: &[String]| {
            patterns.iter().any(|p| appears_consecutively(p, tokens))
        };
        (self.family.is_empty() || self.family.iter().any(|f| f == subject.family))
            && (self.kernel.is_empty() || any(&self.kernel, subject.kernel_tokens))
            && (self.module.is_empty()
                || subject.module_tokens.is_some_and(|t| any(&self.module, t)))
            && (self.inside.is_empty()
                || subject.inside_tokens.iter().any(|t| any(&self.inside, t)))
            && (self.site.is_empty()
                || subject
                    .frame_paths
                    .iter()
                    .any(|path| self.site.iter().any(|part| path.contains(part.as_str()))))
    }
}

/// The role vocabulary, the rules, and the layer facts of `roles.toml`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleRules {
    /// Every role in table order; the last one is the fallback (`other`).
    pub roles: Vec<String>,
    pub rules: Vec<RoleRule>,
    /// Roles a decoder layer opens with (its input norm).
    pub layer_opens_with: Vec<RoleId>,
    /// Roles that make a layer an MoE layer.
    pub moe_roles: Vec<RoleId>,
}

impl RoleRules {
    /// The role of one launch: the first rule that matches, else the fallback.
    pub fn role_of(&self, subject: &RoleSubject<'_>) -> RoleId {
        self.rules
            .iter()
            .find(|rule| rule.matches(subject))
            .map_or(self.fallback(), |rule| rule.role)
    }

    /// The role nothing matched (`other`).
    pub fn fallback(&self) -> RoleId {
        self.roles.len().saturating_sub(1) as RoleId
    }

    pub fn name(&self, role: RoleId) -> &str {
        self.roles
            .get(role as usize)
            .map_or("other", String::as_str)
    }
}

/// `dir`'s `roles.toml` when it has one, else the built-in file.
pub fn load_roles(dir: Option<&Path>) -> Result<RoleRules, TriageError> {
    if let Some(dir) = dir {
        let path = dir.join(ROLES_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            return parse_roles(&text, &path);
        }
    }
    parse_roles(BUILTIN_ROLES, Path::new("built-in catalog/roles.toml"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RolesFile {
    schema: u32,
    roles: Vec<String>,
    layer_opens_with: Vec<String>,
    #[serde(default)]
    moe_roles: Vec<String>,
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    role: String,
    #[serde(default)]
    family: Vec<String>,
    #[serde(default)]
    kernel: Vec<String>,
    #[serde(default)]
    module: Vec<String>,
    #[serde(default)]
    inside: Vec<String>,
    #[serde(default)]
    site: Vec<String>,
    checked_against: Vec<String>,
}

/// Parses and validates the role rules; `path` only names the source in errors.
pub fn parse_roles(text: &str, path: &Path) -> Result<RoleRules, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: RolesFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid roles catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported roles catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    let mut roles: Vec<String> = Vec::with_capacity(file.roles.len());
    for role in file.roles {
        let valid = !role.is_empty()
            && role.len() <= 32
            && role
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_- ".contains(&b));
        if !valid {
            return Err(error(format!(
                "role {role:?}: a role is 1-32 characters of a-z, 0-9, '_', '-' or ' '"
            )));
        }
        if roles.contains(&role) {
            return Err(error(format!("duplicate role {role:?}")));
        }
        roles.push(role);
    }
    if roles.len() < 2 || roles.len() > RoleId::MAX as usize {
        return Err(error(
            "roles must list at least one role and the fallback, last".to_string(),
        ));
    }
    let id_of = |name: &str, what: &str| {
        roles
            .iter()
            .position(|r| r == name)
            .map(|i| i as RoleId)
            .ok_or_else(|| error(format!("{what}: unknown role {name:?} (not in `roles`)")))
    };
    let layer_opens_with = file
        .layer_opens_with
        .iter()
        .map(|r| id_of(r, "layer_opens_with"))
        .collect::<Result<Vec<_>, _>>()?;
    if layer_opens_with.is_empty() {
        return Err(error(
            "layer_opens_with must name the role a decoder layer begins with".to_string(),
        ));
    }
    let moe_roles = file
        .moe_roles
        .iter()
        .map(|r| id_of(r, "moe_roles"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rules = Vec::with_capacity(file.rule.len());
    for (i, entry) in file.rule.into_iter().enumerate() {
        let row = i + 1;
        let role = id_of(&entry.role, &format!("rule {row}"))?;
        let rule_error = |what: &str| error(format!("rule {row} ({}): {what}", entry.role));
        if entry.family.is_empty()
            && entry.kernel.is_empty()
            && entry.module.is_empty()
            && entry.site.is_empty()
        {
            return Err(rule_error("needs one of family, kernel, module or site"));
        }
        if entry.checked_against.is_empty() {
            return Err(rule_error("checked_against must name the upstream file"));
        }
        if entry.site.iter().any(|s| s.trim().is_empty()) {
            return Err(rule_error("empty site"));
        }
        let patterns = |texts: &[String], field: &str| {
            texts
                .iter()
                .map(|t| {
                    parse_pattern(t).ok_or_else(|| rule_error(&format!("empty {field} pattern")))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        rules.push(RoleRule {
            role,
            kernel: patterns(&entry.kernel, "kernel")?,
            module: patterns(&entry.module, "module")?,
            inside: patterns(&entry.inside, "inside")?,
            family: entry.family,
            site: entry.site,
        });
    }
    Ok(RoleRules {
        roles,
        rules,
        layer_opens_with,
        moe_roles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::pattern::tokens;

    fn builtin() -> RoleRules {
        parse_roles(BUILTIN_ROLES, Path::new("roles.toml")).unwrap()
    }

    /// The role the built-in rules give a kernel launched under `modules` (outer..inner).
    fn role(family: &str, kernel: &str, modules: &[&str], paths: &[&str]) -> String {
        let rules = builtin();
        let kernel_tokens = tokens(kernel);
        let module_tokens: Vec<Vec<String>> = modules.iter().map(|m| tokens(m)).collect();
        let (inner, outer) = match module_tokens.split_last() {
            Some((inner, outer)) => (Some(inner.as_slice()), outer),
            None => (None, &module_tokens[..]),
        };
        let outer: Vec<&[String]> = outer.iter().map(Vec::as_slice).collect();
        let subject = RoleSubject {
            family,
            kernel_tokens: &kernel_tokens,
            module_tokens: inner,
            inside_tokens: &outer,
            frame_paths: paths,
        };
        rules.name(rules.role_of(&subject)).to_string()
    }

    #[test]
    fn the_builtin_rules_tell_the_layer_parts_of_real_stacks_apart() {
        let attn = ["Qwen3DecoderLayer", "Qwen3Attention"];
        let with = |inner: &'static str| {
            let mut m = attn.to_vec();
            m.push(inner);
            m
        };
        assert_eq!(
            role("gemm", "Cijk_Alik", &with("QKVParallelLinear"), &[]),
            "qkv"
        );
        assert_eq!(
            role("gemm", "Cijk_Alik", &with("RowParallelLinear"), &[]),
            "o_proj"
        );
        let mlp = ["Qwen3DecoderLayer", "Qwen2MLP", "RowParallelLinear"];
        assert_eq!(role("gemm", "Cijk_Alik", &mlp, &[]), "down");
        assert_eq!(
            role("memory", "store_kvcache", &with("RadixAttention"), &[]),
            "kv-cache write"
        );
        assert_eq!(
            role("attention", "fmha", &with("RadixAttention"), &[]),
            "attention"
        );
        let rope = [
            "TransformerBlock",
            "OAIAttention",
            "YaRNScalingRotaryEmbedding",
        ];
        assert_eq!(role("rope", "rotary_embedding_kernel", &rope, &[]), "rope");
        let router = ["TransformerBlock", "MLPBlock", "Linear"];
        assert_eq!(role("gemm", "nvjet_tst", &router, &[]), "moe-route");
        let moe = ["TransformerBlock", "MLPBlock", "FusedMoE"];
        assert_eq!(
            role(
                "moe",
                "moe::dev::routing::routingIndicesHistogramKernel",
                &moe,
                &[]
            ),
            "moe-route"
        );
        assert_eq!(role("gemm", "bmm_MxE4m3", &moe, &[]), "moe-experts");
        assert_eq!(
            role("communication", "multimem_all_reduce_kernel", &moe, &[]),
            "all-reduce"
        );
        assert_eq!(role("gemm", "Cijk", &["LogitsProcessor"], &[]), "lm_head");
        assert_eq!(
            role("reduce_topk", "reduce_kernel", &["Sampler"], &[]),
            "sampler"
        );
        // A graph replay without its capture: no module frames, the family decides.
        assert_eq!(role("norm", "add_rmsnorm_quant_kernel", &[], &[]), "norm");
        assert_eq!(role("gemm", "Cijk", &[], &[]), "other");
        assert_eq!(
            role("gemm", "Cijk", &["VocabParallelEmbedding"], &[]),
            "other"
        );
    }

    #[test]
    fn rows_are_validated_with_one_line_naming_the_file() {
        let head = "schema = 1\nroles = [\"qkv\", \"other\"]\nlayer_opens_with = [\"qkv\"]\n";
        let path = Path::new("/c/roles.toml");
        for (text, expected) in [
            (
                "schema = 2\nroles = []\nlayer_opens_with = []",
                "unsupported roles catalog schema 2",
            ),
            (
                &format!("{head}weight = 1") as &str,
                "unknown field `weight`",
            ),
            (
                &format!(
                    "{head}[[rule]]\nrole = \"qk\"\nfamily = [\"gemm\"]\nchecked_against = [\"x\"]"
                ),
                "rule 1: unknown role \"qk\"",
            ),
            (
                &format!(
                    "{head}[[rule]]\nrole = \"qkv\"\ninside = [\"mlp\"]\nchecked_against = [\"x\"]"
                ),
                "needs one of family, kernel, module or site",
            ),
            (
                &format!(
                    "{head}[[rule]]\nrole = \"qkv\"\nfamily = [\"gemm\"]\nchecked_against = []"
                ),
                "checked_against must name the upstream file",
            ),
            (
                "schema = 1\nroles = [\"qkv\", \"other\"]\nlayer_opens_with = [\"norm\"]",
                "layer_opens_with: unknown role \"norm\"",
            ),
        ] {
            let text = parse_roles(text, path).unwrap_err().to_string();
            assert!(text.starts_with("/c/roles.toml"), "{text}");
            assert!(text.contains(expected), "{expected}: {text}");
            assert_eq!(text.lines().count(), 1, "{text}");
        }
    }
}
