//! The fusion catalog as data: every row loads and validates, every row has a positive
//! fixture and a near miss (tests/data/fuse_fixtures/<origin>.toml), every `checked_against`
//! names a repository, a 40-hex commit and a path, and broken rows are refused with one
//! line naming the source and the row.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use llm_triage::analyze::fuse::haystack::parts_hit;
use llm_triage::catalog::{merge_fusions, parse_fusions, FusionRule, FusionSource};
use llm_triage::report::model::{KernelRow, SiteShare};

fn catalog_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/fusions")
}

/// Every file of catalog/fusions, merged as the host merges plugin registries.
fn catalog() -> Vec<FusionRule> {
    let mut sources: Vec<FusionSource> = std::fs::read_dir(catalog_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| FusionSource {
            origin: p.file_stem().unwrap().to_string_lossy().into_owned(),
            name: p.display().to_string(),
            text: std::fs::read_to_string(&p).unwrap(),
        })
        .collect();
    sources.sort_by(|a, b| a.origin.cmp(&b.origin));
    merge_fusions(sources).expect("the catalog validates").rules
}

fn kernel_row(kernel: &str, cpu_op: &str, location: &str) -> KernelRow {
    KernelRow {
        name: kernel.to_string(),
        raw_names: vec![kernel.to_string()],
        family: "other".to_string(),
        gpu_time_us: 1.0,
        share_pct: 1.0,
        launches: 1,
        python_locations: if location.is_empty() {
            Vec::new()
        } else {
            vec![SiteShare {
                location: location.to_string(),
                share_pct: 100.0,
                launch_site_source: "eager".to_string(),
            }]
        },
        cpu_ops: if cpu_op.is_empty() {
            Vec::new()
        } else {
            vec![cpu_op.to_string()]
        },
        launch_site_source: "eager".to_string(),
        input_dims: None,
        launch_mix: Vec::new(),
        roofline: None,
        role: None,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixtures {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    part: String,
    #[serde(default)]
    kernel: String,
    #[serde(default)]
    cpu_op: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    near_kernel: String,
    #[serde(default)]
    near_cpu_op: String,
    #[serde(default)]
    near_location: String,
}

fn words(text: &str) -> BTreeSet<String> {
    llm_triage::catalog::pattern::tokens(text)
        .into_iter()
        .collect()
}

#[test]
fn every_row_has_a_positive_fixture_and_a_near_miss() {
    let rules = catalog();
    assert!(rules.len() >= 60, "{} rows", rules.len());
    // One fixture file per catalog origin, so each file's rows and fixtures move together.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuse_fixtures");
    let mut fixtures = Fixtures { case: Vec::new() };
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let file: Fixtures =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        fixtures.case.extend(file.case);
    }
    let mut seen = BTreeSet::new();
    for case in &fixtures.case {
        assert!(
            seen.insert(case.id.as_str()),
            "two fixtures for {}",
            case.id
        );
    }
    let ids: BTreeSet<&str> = rules.iter().map(|r| r.id.as_str()).collect();
    let covered: BTreeSet<&str> = fixtures.case.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, covered, "rows and fixtures differ");
    for case in &fixtures.case {
        let rule = rules.iter().find(|r| r.id == case.id).unwrap();
        let positive = kernel_row(&case.kernel, &case.cpu_op, &case.location);
        let near = kernel_row(&case.near_kernel, &case.near_cpu_op, &case.near_location);
        let hit = parts_hit(rule, &positive);
        assert!(
            hit.contains(&case.part),
            "{}: positive hits {hit:?}",
            case.id
        );
        let near_hit = parts_hit(rule, &near);
        assert!(
            !near_hit.contains(&case.part),
            "{}: near miss hits {near_hit:?}",
            case.id
        );
        // A near miss really is near: it shares at least two tokens with the positive.
        let pos_words = words(&format!(
            "{} {} {}",
            case.kernel, case.cpu_op, case.location
        ));
        let near_words = words(&format!(
            "{} {} {}",
            case.near_kernel, case.near_cpu_op, case.near_location
        ));
        let shared = pos_words.intersection(&near_words).count();
        assert!(shared >= 2, "{}: near miss shares {shared} tokens", case.id);
    }
}

#[test]
fn every_checked_against_names_repo_commit_and_path() {
    let shape =
        regex::Regex::new(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+@[0-9a-f]{40}:[^\s/][^\s]*$").unwrap();
    let known_repos = [
        "sgl-project/sglang",
        "vllm-project/vllm",
        "NVIDIA/TensorRT-LLM",
        "lightseekorg/tokenspeed",
        "pytorch/pytorch",
        "flashinfer-ai/flashinfer",
        "ROCm/aiter",
    ];
    for rule in catalog() {
        assert!(!rule.checked_against.is_empty(), "{}", rule.id);
        for c in &rule.checked_against {
            assert!(shape.is_match(c), "{}: {c}", rule.id);
            let repo = c.split('@').next().unwrap();
            assert!(
                known_repos.contains(&repo),
                "{}: unexpected repo {repo}",
                rule.id
            );
        }
        assert!(!rule.rationale.is_empty() && !rule.candidate_paths.is_empty());
    }
}

/// The torch file with one edit, parsed as the torch origin.
fn torch_with(from: &str, to: &str) -> String {
    let good = std::fs::read_to_string(catalog_dir().join("torch.toml")).unwrap();
    assert!(good.contains(from), "{from}");
    let bad = good.replacen(from, to, 1);
    parse_fusions(&bad, "x/torch.toml", "torch")
        .map(|rows| format!("{} rows", rows.len()))
        .unwrap_or_else(|e| e.to_string())
}

#[test]
fn broken_rows_are_refused_naming_the_source_and_row() {
    let cases = [
        ("min_share = 0.3\n", "min_share = 0.3\nweight = 2\n", "unknown field `weight`"),
        (
            "id = \"torch.inductor-silu-mul\"",
            "id = \"torch.inductor-rmsnorm\"",
            "row torch.inductor-rmsnorm: duplicate id",
        ),
        (
            "kernel = [\"native anonymous namespace silu kernel\", \"native silu kernel\"]",
            "kernel = [\"re:triton_(poi\"]",
            "row torch.eager-unfused-silu-mul: split group \"silu\": pattern \"re:triton_(poi\" is not a valid regex",
        ),
        (
            "kernel = [\"mul functor\"]",
            "kernel = [\"wk\"]",
            "pattern \"wk\" is a single generic or short token",
        ),
        (
            "\"pytorch/pytorch@520ba556cd4fcb80efc2849ca169bcfa8dfeff5e:torch/_inductor/utils.py\",\n]\n\n[fusion.active]\nkernel = [\"re:^triton_poi",
            "\"pytorch/pytorch@520ba55:torch/_inductor/utils.py\",\n]\n\n[fusion.active]\nkernel = [\"re:^triton_poi",
            "row torch.inductor-silu-mul: checked_against \"pytorch/pytorch@520ba55:torch/_inductor/utils.py\" is not owner/repo@<40-hex commit>:<path>",
        ),
        ("origin = \"torch\"", "origin = \"vllm\"", "does not match its file/plugin origin \"torch\""),
        ("status = \"mainline\"", "status = \"inflight\"", "an inflight row needs pr = <number>"),
        ("likely_share = 2.0", "likely_share = 0.1", "need 0 <= min_share <= likely_share"),
        ("id = \"torch.inductor-rmsnorm\"", "id = \"torch.Inductor_RMSNorm\"", "id must be torch.<kebab-name>"),
        (
            "same_site_as = \"silu\"",
            "same_site_as = \"mul\"",
            "row torch.eager-unfused-silu-mul: split group \"mul\": same_site_as \"mul\" names no earlier split group",
        ),
    ];
    for (from, to, needle) in cases {
        let err = torch_with(from, to);
        assert!(err.starts_with("x/torch.toml: "), "{err}");
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // Cross-row checks happen on merge.
    let text = std::fs::read_to_string(catalog_dir().join("torch.toml"))
        .unwrap()
        .replacen("subsumes = []", "subsumes = [\"torch.nope\"]", 1);
    let err = merge_fusions(vec![FusionSource {
        origin: "torch".into(),
        name: "y/torch.toml".into(),
        text,
    }])
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "y/torch.toml: row torch.inductor-rmsnorm: subsumes \"torch.nope\", which no loaded row has as id"
    );
}

/// Issue 14 point 2: a row whose fused path can exist on one platform only is gated to it,
/// so it never says "did not fire" on the other. What a cited path shows decides: the
/// engine TensorRT-LLM and CUDA-only kernel trees (`thirdparty/cuda`, CuTe DSL such as
/// TokenSpeed's MLA decode, TMA/PDL kernels ported from TensorRT-LLM) are CUDA; AITER and
/// `rocm` files are ROCm (or `split_ambiguous_on = ["rocm"]` where both platforms have it).
#[test]
fn platform_only_fused_paths_carry_a_devices_gate() {
    let cuda_paths = [
        "/thirdparty/cuda/",
        "/cute_dsl/",
        // The CuTe DSL MLA kernels; the package's KV pack + FP8 quant is Triton (both).
        "tokenspeed_mla/mla_decode",
        "gpt_oss_router_gemm",
        "dsv3_router_gemm",
        "dsv3_fused_a_gemm",
        "minimax_reduce_rms",
    ];
    let rocm_paths = ["rocm", "aiter"];
    // Rows that cite an AITER file next to the engine's own CUDA path: the fused path
    // exists on both (SGLang's fused add + RMSNorm is sgl-kernel/FlashInfer on CUDA and
    // AITER's add_rmsnorm on ROCm).
    const BOTH_PLATFORMS: [&str; 1] = ["sglang.fused-add-rmsnorm"];
    let mut missing = Vec::new();
    for rule in catalog() {
        let gate = &rule.gate;
        let cited = rule.checked_against.join(" ").to_ascii_lowercase();
        let want = if rule.origin == "trtllm" || cuda_paths.iter().any(|p| cited.contains(p)) {
            Some("cuda")
        } else if rocm_paths.iter().any(|p| cited.contains(p)) {
            Some("rocm")
        } else {
            None
        };
        let Some(want) = want else { continue };
        let gated = gate.devices == [want]
            || (want == "rocm" && !gate.split_ambiguous_on.is_empty())
            || BOTH_PLATFORMS.contains(&rule.id.as_str());
        if !gated {
            missing.push(format!(
                "{} (wants {want}, has {:?})",
                rule.id, gate.devices
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "rows without their platform gate: {missing:#?}"
    );
}
