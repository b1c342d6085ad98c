//! `catalog/collectives.toml`: which kernels are collectives the all-ranks analysis
//! matches across ranks, and their collective family (`all_reduce`, `all_gather`,
//! `reduce_scatter`, `all_to_all`, `broadcast`, `ep_dispatch`, `ep_combine`). Ordered
//! rows in the token pattern language ([`super::pattern`]); the first row that fires
//! wins, and a kernel no row claims is not a collective here.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::one_line;
use super::pattern::{appears_consecutively, parse_pattern, tokens, TokenMatcher};
use crate::error::TriageError;
use crate::trace::names::demangle;

pub const COLLECTIVES_FILE: &str = "collectives.toml";

pub const BUILTIN_COLLECTIVES: &str = include_str!("../../../catalog/collectives.toml");

/// The collective families a row may name.
pub const COLLECTIVE_FAMILIES: &[&str] = &[
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "ep_dispatch",
    "ep_combine",
];

/// One row: the family a kernel gets when any pattern appears in its tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveRule {
    pub family: String,
    pub patterns: Vec<Vec<TokenMatcher>>,
}

/// Every row of the catalog, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectiveRules {
    pub rules: Vec<CollectiveRule>,
}

impl CollectiveRules {
    /// The collective family of a raw kernel name, if it is one.
    pub fn family_of(&self, raw_name: &str) -> Option<&str> {
        let text = demangle(raw_name);
        let name_tokens = tokens(text.as_deref().unwrap_or(raw_name));
        self.rules
            .iter()
            .find(|r| {
                r.patterns
                    .iter()
                    .any(|p| appears_consecutively(p, &name_tokens))
            })
            .map(|r| r.family.as_str())
    }
}

/// `dir`'s `collectives.toml` when it has one, else the built-in file.
pub fn load_collectives(dir: Option<&Path>) -> Result<CollectiveRules, TriageError> {
    if let Some(dir) = dir {
        let path = dir.join(COLLECTIVES_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            return parse_collectives(&text, &path);
        }
    }
    parse_collectives(
        BUILTIN_COLLECTIVES,
        Path::new("built-in catalog/collectives.toml"),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectivesFile {
    schema: u32,
    #[serde(default)]
    collective: Vec<RowEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowEntry {
    family: String,
    patterns: Vec<String>,
    checked_against: Vec<String>,
}

/// Parses and validates the rows; `path` only names the source in errors.
pub fn parse_collectives(text: &str, path: &Path) -> Result<CollectiveRules, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: CollectivesFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid collectives catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported collectives catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    let mut rules = Vec::new();
    for (i, entry) in file.collective.into_iter().enumerate() {
        let row = i + 1;
        if !COLLECTIVE_FAMILIES.contains(&entry.family.as_str()) {
            return Err(error(format!(
                "collective {row}: family {:?} is not one of {}",
                entry.family,
                COLLECTIVE_FAMILIES.join(", ")
            )));
        }
        if entry.patterns.is_empty() {
            return Err(error(format!("collective {row}: no patterns")));
        }
        if entry.checked_against.is_empty() {
            return Err(error(format!(
                "collective {row}: checked_against must name the upstream file"
            )));
        }
        let mut patterns = Vec::new();
        for pattern in &entry.patterns {
            patterns
                .push(parse_pattern(pattern).ok_or_else(|| {
                    error(format!("collective {row}: empty pattern {pattern:?}"))
                })?);
        }
        rules.push(CollectiveRule {
            family: entry.family,
            patterns,
        });
    }
    Ok(CollectiveRules { rules })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_collective_kernels_get_their_family() {
        let rules = load_collectives(None).unwrap();
        let cases = [
            ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Some("all_reduce")),
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", Some("all_reduce")),
            ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Some("all_gather")),
            ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", Some("reduce_scatter")),
            ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", Some("all_to_all")),
            ("void cross_device_reduce_2stage<__nv_bfloat16, 2>(RankData*, RankSignals, Signal*, __nv_bfloat16*, int, int)", Some("all_reduce")),
            // The B200 vLLM trace's symmetric-memory all-reduce.
            ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)", Some("all_reduce")),
            ("void c10d::symmetric_memory::two_shot_all_reduce_kernel<c10::BFloat16, 16>", Some("all_reduce")),
            ("void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<bf16>", Some("all_reduce")),
            ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*)", Some("ep_dispatch")),
            ("void deep_ep::internode_ll::combine<false, 7168>(void*)", Some("ep_combine")),
            // Not collectives: a GEMM, a norm, Inductor's embedding before an all-reduce.
            ("nvjet_tst_128x64_64x6_1x1_v_bz_coopA_TNT", None),
            ("void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>", None),
            ("triton_poi_fused_all_reduce_embedding_0", None),
        ];
        for (name, want) in cases {
            assert_eq!(rules.family_of(name), want, "{name}");
        }
    }

    #[test]
    fn the_b200_vllm_traces_multimem_all_reduce_kernels_are_all_reduce_collectives() {
        let path = crate::testutil::shared_trace_path("AMD-AGI__TraceLens__eager_trace.json.gz");
        let trace = crate::trace::read::read_trace(&path, &mut |_| {}).unwrap();
        let rules = load_collectives(None).unwrap();
        let mut multimem = 0;
        for op in &trace.gpu_ops {
            let name = trace.name(op.name);
            if name.contains("multimem_all_reduce_kernel") {
                assert_eq!(rules.family_of(name), Some("all_reduce"), "{name}");
                multimem += 1;
            }
        }
        // Kineto wrote 73 of them (one per layer call of the step).
        assert_eq!(multimem, 73);
    }

    #[test]
    fn a_row_without_its_upstream_or_with_an_unknown_family_is_refused() {
        let path = Path::new("c.toml");
        let no_source = "schema = 1\n[[collective]]\nfamily = \"all_reduce\"\npatterns = [\"x\"]\nchecked_against = []\n";
        let e = parse_collectives(no_source, path).unwrap_err().one_line();
        assert!(e.contains("c.toml") && e.contains("checked_against"), "{e}");
        let bad = "schema = 1\n[[collective]]\nfamily = \"gossip\"\npatterns = [\"x\"]\nchecked_against = [\"y\"]\n";
        let e = parse_collectives(bad, path).unwrap_err().one_line();
        assert!(e.contains("gossip"), "{e}");
    }
}
