//! Tests of the fuse table: hash stripping, run facts and gates, greedy selection,
//! conclusions, and the launch-site accounting of location and same-site hits.

use super::facts::{gate_state, run_facts, GateState, RunFacts};
use super::haystack::{is_hash_like, location_without_hashes, parts_hit, without_hashes};
use super::{fuse_table, model_gate_note, FuseInput};
use crate::catalog::{parse_fusions, FusionRule};
use crate::report::model::{KernelRow, LaunchShare, SiteShare};
use crate::trace::event::{PyFrame, Trace};

fn rules(body: &str) -> Vec<FusionRule> {
    let text = format!("schema = 1\n{body}");
    parse_fusions(&text, "test.toml", "sglang").expect("test rows parse")
}

/// A row with the required fields around `extra` (patterns, gate, shares).
fn row_text(id: &str, priority: i64, subsumes: &str, extra: &str) -> String {
    format!(
        "[[fusion]]\nid = \"sglang.{id}\"\nlabel = \"{id}\"\norigin = \"sglang\"\nstatus = \"mainline\"\n\
         priority = {priority}\nmin_share = 0.5\nlikely_share = 3.0\nsubsumes = [{subsumes}]\n\
         candidate_paths = [\"python/sglang/x.py\"]\nrationale = \"r\"\n\
         checked_against = [\"sgl-project/sglang@0000000000000000000000000000000000000000:x.py\"]\n{extra}\n"
    )
}

fn kernel(name: &str, us: f64, location: &str, op: &str) -> KernelRow {
    KernelRow {
        name: name.to_string(),
        raw_names: vec![name.to_string()],
        family: "other".to_string(),
        gpu_time_us: us,
        share_pct: us,
        launches: 1,
        python_locations: vec![SiteShare {
            location: location.to_string(),
            share_pct: 100.0,
            launch_site_source: "eager".to_string(),
        }],
        cpu_ops: vec![op.to_string()],
        launch_site_source: "eager".to_string(),
        input_dims: None,
        launch_mix: Vec::new(),
        roofline: None,
        role: None,
    }
}

fn input<'a>(facts: &'a RunFacts) -> FuseInput<'a> {
    FuseInput {
        engine: "sglang",
        facts,
        min_share_pct: 1.0,
    }
}

#[test]
fn hash_like_words_and_cache_paths_leave_the_haystack() {
    assert!(is_hash_like(
        "c2ihvjzq5hgkdrx4zqebqayhyl4hnd2cmgsvdyfvjzhcwdeoy6of"
    ));
    assert!(is_hash_like("deadbeef01"));
    assert!(is_hash_like("a1b2c3d4e5f6a7b8c9"));
    for word in [
        "fused",
        "rmsnorm",
        "torchinductor",
        "qwen3",
        "sm100a",
        "communication",
    ] {
        assert!(!is_hash_like(word), "{word}");
    }
    assert_eq!(
        location_without_hashes(
            "/tmp/torchinductor_root/wk/cwkq7a2b9c4d8e1f0a3b5c6d7e8f9a0b1c2.py:12 call"
        ),
        "/tmp call"
    );
    assert_eq!(
        location_without_hashes("/w/a3f9c2e81b7d4a6f90e1c2d3/vllm/layers/act.py:5 forward"),
        "/w/vllm/layers/act.py:5 forward"
    );
    assert_eq!(
        without_hashes("## Call CompiledFxGraph a1b2c3d4e5f6a7b8c9d0 ##"),
        "## Call CompiledFxGraph  ##"
    );
    // A location pattern never matches through a compile-cache path.
    let rule = &rules(&row_text(
        "wk",
        0,
        "",
        "[fusion.active]\nlocation = [\"wk weights proj\"]",
    ))[0];
    let cached = kernel(
        "triton_poi_fused_0",
        5.0,
        "/tmp/torchinductor_u/wk/wk_weights_proj_c7a2b9.py:3 call",
        "aten::mm",
    );
    assert!(parts_hit(rule, &cached).is_empty());
    let real = kernel(
        "k",
        5.0,
        "vllm/models/deepseek_v2.py:9 wk_weights_proj",
        "aten::mm",
    );
    assert_eq!(parts_hit(rule, &real), ["fused"]);
}

fn trace_with(strings: &[&str], frames: &[&str], world_size: Option<u32>) -> Trace {
    let mut trace = Trace::default();
    for s in strings {
        trace.strings.intern(s);
    }
    let pid = trace.strings.intern("pid");
    for f in frames {
        let name = trace.strings.intern(f);
        trace.py_frames.push(PyFrame {
            name,
            ts: 0,
            dur: 1,
            pid,
            tid: pid,
        });
    }
    trace.meta.world_size = world_size;
    trace
}

#[test]
fn facts_come_from_every_server_arg_spelling_then_the_trace() {
    let args = |v: serde_json::Value| v.as_object().unwrap().clone();
    let none: Vec<&Trace> = Vec::new();
    let facts = run_facts(
        Some(&args(
            serde_json::json!({"served_model_name": ["Llama-3"], "tensor_parallel_size": "4"}),
        )),
        &none,
    );
    assert_eq!(facts.models, ["llama-3"]);
    assert_eq!(facts.tp, Some(4));
    assert_eq!(
        facts.tp_source.as_deref(),
        Some("server args tensor_parallel_size")
    );
    // A non-numeric tp_size is not a crash, just not a fact; `tp` is read next.
    let facts = run_facts(
        Some(&args(serde_json::json!({"tp_size": "two", "tp": 2}))),
        &none,
    );
    assert_eq!(facts.tp, Some(2));

    let trace = trace_with(
        &["nn.Module: GptOssForCausalLM_0", "Qwen3ForCausalLM.forward"],
        &[
            "/x/vllm/model_executor/models/gpt_oss.py(120): forward",
            "/x/vllm/models/__init__.py(1): f",
        ],
        Some(8),
    );
    let facts = run_facts(None, &[&trace]);
    assert_eq!(
        facts.models,
        ["gptossforcausallm", "qwen3forcausallm", "gpt_oss"]
    );
    assert_eq!(facts.tp, Some(8));
    assert_eq!(
        facts.tp_source.as_deref(),
        Some("trace distributedInfo.world_size")
    );
    assert_eq!(
        run_facts(None, &[&trace_with(&[], &[], None)]),
        RunFacts::default()
    );
}

#[test]
fn gates_pass_fail_or_stay_unknown() {
    let gated = &rules(&row_text(
        "g",
        0,
        "",
        "[fusion.active]\nkernel = [\"fused thing kernel\"]\n[fusion.gate]\nmodels_include = [\"qwen3\", \"gpt-oss\"]\nmodels_exclude = [\"qwen3.5\"]\nmin_tp = 2",
    ))[0];
    let facts = |models: &[&str], tp: Option<u32>| RunFacts {
        models: models.iter().map(|m| m.to_string()).collect(),
        tp,
        ..RunFacts::default()
    };
    assert_eq!(
        gate_state(gated, &facts(&["qwen/qwen3-8b"], Some(2))),
        GateState::Passed
    );
    assert_eq!(
        gate_state(gated, &facts(&["gptossforcausallm"], Some(8))),
        GateState::Passed
    );
    assert_eq!(
        gate_state(gated, &facts(&["qwen/qwen3.5-9b"], Some(2))),
        GateState::Failed
    );
    assert_eq!(
        gate_state(gated, &facts(&["meta-llama/llama-3"], Some(2))),
        GateState::Failed
    );
    assert_eq!(
        gate_state(gated, &facts(&["qwen3"], Some(1))),
        GateState::Failed
    );
    assert_eq!(
        gate_state(gated, &facts(&[], None)),
        GateState::Unknown(
            "TP size unknown (the row needs TP >= 2); model unknown (the row applies to qwen3/gpt-oss, not qwen3.5)"
                .to_string()
        )
    );
    // An unevaluated gate caps a fused-kernel hit at Candidate, and says why.
    let kernels = [kernel("fused_thing_kernel", 50.0, "a.py:1 f", "op")];
    let unknown = RunFacts::default();
    let rows = fuse_table(
        std::slice::from_ref(gated),
        &kernels,
        100.0,
        &input(&unknown),
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].confidence, "Candidate");
    assert_eq!(rows[0].conclusion, "present");
    assert!(
        rows[0]
            .rationale
            .contains("Gate not evaluated: TP size unknown"),
        "{}",
        rows[0].rationale
    );
    // The stage says how many of its rows wait for a model name; a run that names the
    // model, or a table without model-gated rows, says nothing.
    let note = model_gate_note(std::slice::from_ref(gated), &rows, &unknown).unwrap();
    assert!(
        note.starts_with("1 fuse-table row(s) apply only to some models"),
        "{note}"
    );
    assert_eq!(
        model_gate_note(std::slice::from_ref(gated), &[], &unknown),
        None
    );
    let known = facts(&["qwen3"], Some(4));
    assert_eq!(
        model_gate_note(std::slice::from_ref(gated), &rows, &known),
        None
    );
    let rows = fuse_table(std::slice::from_ref(gated), &kernels, 100.0, &input(&known));
    assert_eq!(rows[0].confidence, "Confirmed");
    // Rows of another engine's origin never apply.
    let other = FuseInput {
        engine: "vllm",
        ..input(&known)
    };
    assert!(fuse_table(std::slice::from_ref(gated), &kernels, 100.0, &other).is_empty());
}

#[test]
fn greedy_selection_orders_by_priority_and_span_reevaluates_and_subsumes() {
    let text = [
        // Low priority, one split group over both norm kernels.
        row_text("norm-only", 0, "", "[fusion.active]\n[[fusion.split]]\nname = \"norm\"\nkernel = [\"rms norm kernel\"]"),
        // Two groups: all-reduce and norm.
        row_text(
            "ar-norm",
            0,
            "",
            "[fusion.active]\n[[fusion.split]]\nname = \"ar\"\nkernel = [\"cross device reduce\"]\n[[fusion.split]]\nname = \"norm\"\nkernel = [\"rms norm kernel\"]",
        ),
        // High priority, claims the QK-norm kernel by location, subsumes norm-only.
        row_text(
            "qk",
            30,
            "\"sglang.norm-only\"",
            "[fusion.active]\n[[fusion.split]]\nname = \"qk\"\nlocation = [\"apply qk norm\"]\n[[fusion.split]]\nname = \"rope\"\nkernel = [\"rotary embedding kernel\"]",
        ),
    ]
    .concat();
    let rules = rules(&text);
    let kernels = [
        kernel(
            "void cross_device_reduce_2stage<bf16>",
            10.0,
            "c.py:1 all_reduce",
            "sgl::ar",
        ),
        kernel(
            "void rms_norm_kernel<bf16>",
            4.0,
            "models/utils.py:9 apply_qk_norm",
            "sgl::rmsnorm",
        ),
        kernel(
            "void rotary_embedding_kernel<bf16>",
            2.0,
            "rope.py:3 forward",
            "sgl::rope",
        ),
        kernel(
            "void fused_add_rms_norm_kernel<bf16>",
            6.0,
            "layernorm.py:7 forward",
            "sgl::fused",
        ),
    ];
    let facts = RunFacts::default();
    let rows = fuse_table(&rules, &kernels, 100.0, &input(&facts));
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    // qk first (priority), then ar-norm (span 2) on the norm kernel qk left unclaimed;
    // norm-only is subsumed by qk.
    assert_eq!(ids, ["sglang.qk", "sglang.ar-norm"]);
    assert_eq!(rows[0].related_gpu_time_us, 6.0);
    assert_eq!(rows[1].related_gpu_time_us, 16.0);
    let evidence: Vec<(&str, &str)> = rows[1]
        .evidence
        .iter()
        .map(|e| (e.kernel.as_str(), e.part.as_str()))
        .collect();
    assert_eq!(
        evidence,
        [
            ("void cross_device_reduce_2stage<bf16>", "split:ar"),
            ("void fused_add_rms_norm_kernel<bf16>", "split:norm")
        ]
    );
    assert_eq!(rows[1].conclusion, "not-fired");
    // 16% >= likely_share 3%: the split path is confirmed.
    assert_eq!(rows[1].confidence, "Confirmed");
}

#[test]
fn each_status_gives_its_conclusion_and_an_active_hit_is_present() {
    // Four rows with disjoint split kernels: the same split evidence means "did not
    // fire", "only upstream" or "open PR" depending on the row's status alone.
    let split = |name: &str| {
        format!("[fusion.active]\nkernel = []\n[[fusion.split]]\nname = \"{name}\"\nkernel = [\"{name} split kernel\"]\n")
    };
    let with_status = |row: String, status: &str| {
        row.replace("status = \"mainline\"", &format!("status = \"{status}\""))
    };
    let body = [
        row_text("main", 10, "", &split("alpha")),
        with_status(row_text("up", 10, "", &split("bravo")), "upstream"),
        with_status(row_text("pr", 10, "", &split("charlie")), "inflight")
            .replace("priority = 10", "priority = 10\npr = 4242"),
        with_status(
            row_text(
                "ran",
                10,
                "",
                "[fusion.active]\nkernel = [\"delta fused kernel\"]\n",
            ),
            "upstream",
        ),
    ]
    .concat();
    let rules = rules(&body);
    let kernels = vec![
        kernel("void alpha_split_kernel<bf16>", 5.0, "a.py:1 f", "op::a"),
        kernel("void bravo_split_kernel<bf16>", 4.0, "b.py:1 f", "op::b"),
        kernel("void charlie_split_kernel<bf16>", 3.0, "c.py:1 f", "op::c"),
        kernel("void delta_fused_kernel<bf16>", 2.0, "d.py:1 f", "op::d"),
    ];
    let facts = RunFacts::default();
    let rows = fuse_table(&rules, &kernels, 100.0, &input(&facts));
    let got: Vec<(&str, &str, f64)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.conclusion.as_str(), r.share_pct))
        .collect();
    assert_eq!(
        got,
        [
            ("sglang.main", "not-fired", 5.0),
            ("sglang.up", "upstream-only", 4.0),
            ("sglang.pr", "open-pr", 3.0),
            ("sglang.ran", "present", 2.0),
        ]
    );
    assert!(
        rows[1].rationale.starts_with(
            "The fused path exists only upstream or in another engine; split kernels take 4.0%"
        ),
        "{}",
        rows[1].rationale
    );
    assert!(
        rows[2]
            .rationale
            .starts_with("An open upstream PR (#4242) adds this fusion"),
        "{}",
        rows[2].rationale
    );
    assert_eq!(rows[2].pr, Some(4242));
}

#[test]
fn a_same_site_group_counts_only_launches_at_its_anchor_sites() {
    let body = row_text(
        "silu-mul",
        0,
        "",
        "[fusion.active]\nkernel = []\n\
         [[fusion.split]]\nname = \"silu\"\nkernel = [\"silu kernel\"]\n\
         [[fusion.split]]\nname = \"mul\"\nsame_site_as = \"silu\"\nkernel = [\"mul functor\"]\n",
    );
    let rules = rules(&body);
    let shared_mul = kernel_at(
        "void mul_functor_a<bf16>",
        10.0,
        "aten::mul",
        &[
            ("mlp.py:5 forward", 40.0),
            ("rope.py:3 apply", 35.0),
            ("unresolved", 25.0),
        ],
    );
    let rope_mul = kernel(
        "void mul_functor_b<bf16>",
        20.0,
        "rope.py:3 apply",
        "aten::mul",
    );
    let silu = kernel_at(
        "void silu_kernel<bf16>",
        4.0,
        "aten::silu",
        &[("mlp.py:5 forward", 75.0), ("unresolved", 25.0)],
    );
    let kernels = vec![rope_mul, shared_mul, silu];
    let facts = RunFacts::default();
    let rows = fuse_table(&rules, &kernels, 100.0, &input(&facts));
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    // silu whole (4) + 40% of the shared multiply (4); the RoPE-only multiply and the
    // shared one's RoPE and unresolved launches are not the gated-MLP multiply.
    assert!((row.related_gpu_time_us - 8.0).abs() < 1e-9, "{row:?}");
    let evidence: Vec<(&str, &str, f64)> = row
        .evidence
        .iter()
        .map(|e| (e.kernel.as_str(), e.part.as_str(), e.gpu_time_us))
        .collect();
    assert_eq!(
        evidence,
        [
            ("void silu_kernel<bf16>", "split:silu", 4.0),
            ("void mul_functor_a<bf16>", "split:mul", 4.0)
        ]
    );
    assert_eq!(row.python_locations, ["mlp.py:5 forward", "unresolved"]);

    // With no multiply launched at the SiLU's site, the split path is incomplete.
    let apart = vec![kernels[0].clone(), kernels[2].clone()];
    assert!(fuse_table(&rules, &apart, 100.0, &input(&facts)).is_empty());
}

/// A split group that recognises the QK norm only by its call site.
const QK_NORM_BY_LOCATION: &str = "[fusion.active]\nkernel = []\n\
     [[fusion.split]]\nname = \"norm\"\nlocation = [\"apply qk norm\"]\n";

/// `kernel` with its launches spread over `(location, share %)` sites.
fn kernel_at(name: &str, us: f64, op: &str, sites: &[(&str, f64)]) -> KernelRow {
    let mut row = kernel(name, us, "", op);
    row.python_locations = sites
        .iter()
        .map(|(location, share_pct)| SiteShare {
            location: location.to_string(),
            share_pct: *share_pct,
            launch_site_source: "eager".to_string(),
        })
        .collect();
    row
}

/// One 10 us RMSNorm kernel row: 70% from the layer norm, 30% from apply_qk_norm.
fn two_site_norm() -> KernelRow {
    kernel_at(
        "void rms_norm_kernel<bf16>",
        10.0,
        "sgl::rmsnorm",
        &[
            ("layers/layernorm.py:20 forward", 70.0),
            ("models/qwen3.py:88 apply_qk_norm", 30.0),
        ],
    )
}

#[test]
fn a_location_pattern_counts_only_the_launches_at_the_sites_it_matched() {
    // One RMSNorm kernel row launched from the layer norm (70%) and from apply_qk_norm
    // (30%): a split group keyed on the apply_qk_norm location claims only its 30%.
    let body = row_text("qk-norm", 0, "", QK_NORM_BY_LOCATION);
    let rules = rules(&body);
    let norm = two_site_norm();
    let facts = RunFacts::default();
    let rows = fuse_table(&rules, &[norm], 100.0, &input(&facts));
    assert_eq!(rows.len(), 1);
    assert!(
        (rows[0].related_gpu_time_us - 3.0).abs() < 1e-9,
        "{:?}",
        rows[0]
    );
    assert!((rows[0].evidence[0].share_pct - 3.0).abs() < 1e-9);
    assert_eq!(rows[0].evidence[0].field, "location");
    assert_eq!(
        rows[0].python_locations,
        ["models/qwen3.py:88 apply_qk_norm"]
    );
}

#[test]
fn greedy_selection_claims_launch_sites_not_whole_rows() {
    // The QK-norm row claims the RMSNorm launches at apply_qk_norm (30%); the
    // residual-norm row still gets the layer-norm launches (70%) of the same kernel row.
    let body = [
        row_text("qk-norm", 10, "", QK_NORM_BY_LOCATION),
        row_text(
            "layer-norm",
            0,
            "",
            "[fusion.active]\nkernel = []\n\
             [[fusion.split]]\nname = \"norm\"\nkernel = [\"rms norm kernel\"]\n",
        ),
    ]
    .concat();
    let rules = rules(&body);
    let norm = two_site_norm();
    let facts = RunFacts::default();
    let rows = fuse_table(&rules, &[norm], 100.0, &input(&facts));
    let got: Vec<(&str, f64, Vec<&str>)> = rows
        .iter()
        .map(|r| {
            (
                r.id.as_str(),
                (r.related_gpu_time_us * 1e6).round() / 1e6,
                r.python_locations.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "sglang.qk-norm",
                3.0,
                vec!["models/qwen3.py:88 apply_qk_norm"]
            ),
            (
                "sglang.layer-norm",
                7.0,
                vec!["layers/layernorm.py:20 forward"]
            ),
        ]
    );
}

#[test]
fn a_devices_gate_drops_the_row_on_the_other_platform_and_caps_it_when_unknown() {
    // SGLang's fused RoPE + KV store exists only on CUDA: on a ROCm trace its split
    // kernels are no "did not fire", and with no platform sign it stays a Candidate.
    let gated = &rules(&row_text(
        "cuda-only",
        0,
        "",
        "[fusion.active]\n[[fusion.split]]\nname = \"rope\"\nkernel = [\"rotary embedding kernel\"]\n\
         [[fusion.split]]\nname = \"store\"\nkernel = [\"store kvcache\"]\n[fusion.gate]\ndevices = [\"cuda\"]",
    ))[0];
    let kernels = [
        kernel("void rotary_embedding_kernel<bf16>", 3.0, "a.py:1 f", "op"),
        kernel("void store_kvcache<2048l>", 3.0, "b.py:2 g", "op"),
    ];
    let on = |device: Option<&str>| RunFacts {
        device: device.map(str::to_string),
        ..RunFacts::default()
    };
    let table =
        |facts: &RunFacts| fuse_table(std::slice::from_ref(gated), &kernels, 100.0, &input(facts));
    assert_eq!(gate_state(gated, &on(Some("rocm"))), GateState::Failed);
    assert!(table(&on(Some("rocm"))).is_empty());
    let cuda = table(&on(Some("cuda")));
    assert_eq!(cuda.len(), 1);
    assert_eq!(
        (cuda[0].conclusion.as_str(), cuda[0].confidence.as_str()),
        ("not-fired", "Confirmed")
    );
    let unknown = table(&on(None));
    assert_eq!(unknown[0].confidence, "Candidate");
    assert!(
        unknown[0].rationale.contains(
            "Gate not evaluated: GPU platform unknown (the fused path exists only on cuda)."
        ),
        "{}",
        unknown[0].rationale
    );
    // The loader refuses a platform it cannot evaluate.
    let bad = format!(
        "schema = 1\n{}",
        row_text("bad", 0, "", "[fusion.active]\nkernel = [\"fused thing kernel\"]\n[fusion.gate]\ndevices = [\"tpu\"]")
    );
    let e = parse_fusions(&bad, "t.toml", "sglang").unwrap_err();
    assert!(
        e.to_string()
            .contains("devices entry \"tpu\" is not one of cuda, rocm"),
        "{e}"
    );
}

#[test]
fn the_platform_is_read_from_runtime_calls_device_names_and_roctracer() {
    let mut rocm = trace_with(&[], &[], None);
    rocm.meta.device_names = vec!["AMD Instinct MI300X".to_string()];
    let facts = run_facts(None, &[&rocm]);
    assert_eq!(facts.device.as_deref(), Some("rocm"));
    assert_eq!(
        facts.device_source.as_deref(),
        Some("deviceProperties name")
    );
    let mut cuda = trace_with(&[], &[], None);
    cuda.meta.device_names = vec!["NVIDIA H100 80GB HBM3".to_string()];
    assert_eq!(run_facts(None, &[&cuda]).device.as_deref(), Some("cuda"));
    let mut roctracer = trace_with(&[], &[], None);
    roctracer.meta.keys = vec!["roctracer_version".to_string()];
    assert_eq!(
        run_facts(None, &[&roctracer]).device.as_deref(),
        Some("rocm")
    );
    // Disagreeing traces, or none with a sign: unknown, never a guess.
    assert_eq!(run_facts(None, &[&rocm, &cuda]).device, None);
    assert_eq!(run_facts(None, &[&trace_with(&[], &[], None)]).device, None);
}

/// The built-in vLLM rows, as the vLLM plugin exports them.
fn vllm_rules() -> Vec<FusionRule> {
    parse_fusions(
        include_str!("../../../../catalog/fusions/vllm.toml"),
        "vllm.toml",
        "vllm",
    )
    .expect("the vLLM rows parse")
}

/// vLLM Llama TP=4 under torch.compile (the shapes of issue 14): NCCL and custom
/// all-reduce, each followed by an Inductor-compiled RMSNorm with the residual add.
fn llama_tp4_compiled() -> Vec<KernelRow> {
    vec![
        kernel(
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            6.0,
            "vllm/distributed/device_communicators/pynccl.py:140 all_reduce",
            "c10d::allreduce_",
        ),
        kernel(
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 4>",
            5.0,
            "vllm/distributed/device_communicators/custom_all_reduce.py:283 custom_all_reduce",
            "_C_custom_ar::all_reduce",
        ),
        kernel(
            "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2",
            4.0,
            "vllm/model_executor/models/llama.py:330 forward",
            "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2",
        ),
    ]
}

#[test]
fn allreduce_rmsnorm_sees_the_inductor_norm_and_is_undecided_on_rocm() {
    let rules = vllm_rules();
    let kernels = llama_tp4_compiled();
    let on = |device: &str| RunFacts {
        models: vec!["llamaforcausallm".to_string()],
        tp: Some(4),
        device: Some(device.to_string()),
        ..RunFacts::default()
    };
    let vllm = |facts: &RunFacts| {
        let input = FuseInput {
            engine: "vllm",
            facts,
            min_share_pct: 1.0,
        };
        fuse_table(&rules, &kernels, 100.0, &input)
    };
    // On H100 the split path is seen: both all-reduces and the compiled norm, 15%.
    let cuda = vllm(&on("cuda"));
    let row = cuda
        .iter()
        .find(|r| r.id == "vllm.allreduce-rmsnorm")
        .unwrap_or_else(|| panic!("{cuda:#?}"));
    assert_eq!(row.conclusion, "not-fired");
    assert_eq!(row.confidence, "Confirmed");
    assert!((row.share_pct - 15.0).abs() < 1e-9, "{}", row.share_pct);
    let parts: Vec<&str> = row.evidence.iter().map(|e| e.part.as_str()).collect();
    assert_eq!(parts, ["split:allreduce", "split:allreduce", "split:norm"]);
    // On MI300X the AITER variant launches the same two kernels: names cannot decide.
    let rocm = vllm(&on("rocm"));
    let row = rocm
        .iter()
        .find(|r| r.id == "vllm.allreduce-rmsnorm")
        .unwrap_or_else(|| panic!("{rocm:#?}"));
    assert_eq!(row.conclusion, "undecided");
    assert_eq!(row.confidence, "Candidate");
    assert!(
        row.rationale.starts_with(
            "Undecided: on rocm the fused path launches these same kernels, so kernel names cannot tell whether it fired; split kernels take 15.0% of GPU time."
        ),
        "{}",
        row.rationale
    );
}

#[test]
fn a_row_mixing_an_excluded_and_an_included_cpu_op_counts_only_the_included_launches() {
    // AITER's add_rmsnorm_quant_kernel row: 4 us launched by the fused add + RMSNorm op
    // (from the layer norm), 6 us by the plain aiter::rmsnorm (Qwen3's q/k-norm from
    // apply_qk_norm). Only the 4 us are residual-add evidence (issue 14 point 4).
    let body = row_text(
        "fused-add-rmsnorm",
        0,
        "",
        "[fusion.active]\nkernel = [\"add rmsnorm quant kernel\"]\nnot_cpu_op = ['re:^aiter::rmsnorm$']",
    );
    let rules = rules(&body);
    let mut norm = kernel_at(
        "void aiter::add_rmsnorm_quant_kernel<bf16>",
        10.0,
        "aiter::rmsnorm2d_fwd_with_add",
        &[
            ("models/qwen3.py:88 apply_qk_norm", 60.0),
            ("layers/layernorm.py:20 forward", 40.0),
        ],
    );
    norm.cpu_ops.push("aiter::rmsnorm".to_string());
    norm.launch_mix = vec![
        LaunchShare {
            site: 0,
            cpu_op: Some(1),
            share_pct: 60.0,
        },
        LaunchShare {
            site: 1,
            cpu_op: Some(0),
            share_pct: 40.0,
        },
    ];
    let facts = RunFacts::default();
    let mut fuse_input = input(&facts);
    fuse_input.min_share_pct = 0.0;
    let rows = fuse_table(&rules, &[norm], 100.0, &fuse_input);
    assert_eq!(rows.len(), 1);
    assert!(
        (rows[0].related_gpu_time_us - 4.0).abs() < 1e-9,
        "{:?}",
        rows[0]
    );
    assert!((rows[0].evidence[0].share_pct - 4.0).abs() < 1e-9);
    assert_eq!(rows[0].python_locations, ["layers/layernorm.py:20 forward"]);
}
