//! Hand-built reports for the renderer tests (numbers chosen so the expected text can
//! be checked by hand: 27452.8 us of 70560 us is 38.9%).

use super::model::*;

pub(super) fn site(location: &str, share_pct: f64) -> SiteShare {
    SiteShare {
        module: None,
        launch_frame: None,
        location: location.to_string(),
        share_pct,
        launch_site_source: "eager".to_string(),
    }
}

pub(super) fn row(
    name: &str,
    family: &str,
    gpu_time_us: f64,
    stage_total_us: f64,
    launches: u64,
) -> KernelRow {
    KernelRow {
        matched_by: None,
        mapping_confidence: None,
        name: name.to_string(),
        raw_names: vec![name.to_string()],
        family: family.to_string(),
        gpu_time_us,
        share_pct: 100.0 * gpu_time_us / stage_total_us,
        launches,
        python_locations: Vec::new(),
        cpu_ops: Vec::new(),
        launch_site_source: "eager".to_string(),
        input_dims: None,
        launch_mix: Vec::new(),
        roofline: None,
        role: None,
    }
}

pub(super) fn stage(label: &str, total_gpu_time_us: f64, kernels: Vec<KernelRow>) -> StageReport {
    StageReport {
        stage: label.to_string(),
        total_gpu_time_us,
        summary: String::new(),
        kernels,
        overlap: Vec::new(),
        fusions: Vec::new(),
        similarity: Vec::new(),
        timeline: None,
        sol: None,
        notes: Vec::new(),
        layers: None,
        roles: Vec::new(),
    }
}

pub(super) fn report(stages: Vec<StageReport>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".to_string(),
        mode: "single-trace".to_string(),
        framework: FrameworkInfo {
            name: "sglang".to_string(),
            display_name: "SGLang".to_string(),
            plugin_version: "0.1.0".to_string(),
            decided_by: vec!["--framework sglang".to_string()],
        },
        inputs: vec![InputInfo {
            path: "/p/1761000000.5-TP-0-EXTEND.trace.json.gz".to_string(),
            rank: Some(0),
            path_stage: "extend/prefill".to_string(),
            events: 1200,
            gpu_events: 300,
            graph_capture: None,
        }],
        model: None,
        model_class: None,
        server_args: serde_json::Map::new(),
        server_args_path: None,
        stages,
        notes: Vec::new(),
        mapping_framework: None,
        mapping_inputs: Vec::new(),
        overlap_stages: Vec::new(),
        ranks: Vec::new(),
        collectives: Vec::new(),
        stragglers: Vec::new(),
        ep_imbalance: None,
        device: None,
    }
}

/// Two stages, two sites on one row, an unresolved row, notes, model and server args.
pub(super) fn qwen3() -> Report {
    let mut nvjet = row(
        "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT",
        "gemm",
        27452.8,
        70560.0,
        216,
    );
    nvjet.python_locations = vec![
        site("python/sglang/srt/layers/linear.py:1360 forward", 57.5),
        site("python/sglang/srt/layers/linear.py:448 forward", 42.5),
    ];
    nvjet.cpu_ops = vec!["aten::mm".to_string()];
    let mut norm = row(
        "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>",
        "norm",
        3740.0,
        70560.0,
        144,
    );
    norm.python_locations = vec![site(
        "python/sglang/srt/layers/layernorm.py:76 forward_cuda",
        100.0,
    )];
    norm.cpu_ops = vec!["sgl_kernel::fused_add_rmsnorm".to_string()];
    let mut extend = stage("extend/prefill", 70560.0, vec![nvjet, norm]);
    extend.summary = "gemm takes 38.9% of GPU time (1 kernel).".to_string();
    extend.overlap = vec![OverlapRow {
        kernel: "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT".to_string(),
        raw_names: vec!["nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT".to_string()],
        verdict: "headroom".to_string(),
        priority: "P2".to_string(),
        python_scope: Some("python/sglang/srt/layers/linear.py:1360 forward".to_string()),
        hidden_us: 0.0,
        exclusive_us: 27452.8,
        hidden_by_compute_us: 0.0,
        total_us: 27452.8,
        overlaps_with: Vec::new(),
        dep_risk: "high".to_string(),
        dep_reason: "previous op on the same stream (gemm, 0.4 us gap): same Python scope family"
            .to_string(),
        recommendation: "check deps".to_string(),
        known_path: None,
    }];

    let memcpy = row(
        "Memcpy DtoD (Device -> Device)",
        "memory",
        1625.0,
        13000.0,
        180,
    );
    let mut decode = stage("decode", 13000.0, vec![memcpy]);
    decode.summary = "memory takes 12.5% of GPU time (1 kernel).".to_string();
    decode.notes = vec!["180 kernels replayed from 1 CUDA graph.".to_string()];

    let mut report = report(vec![extend, decode]);
    report.framework.decided_by = vec![
        "python frames under sglang/srt/ (412)".to_string(),
        "annotation step[EXTEND bs=4 toks=512]".to_string(),
    ];
    report.inputs.push(InputInfo {
        path: "/p/1761000000.5-TP-0-DECODE.trace.json.gz".to_string(),
        rank: Some(0),
        path_stage: "decode".to_string(),
        events: 800,
        gpu_events: 180,
        graph_capture: None,
    });
    report.model = Some("Qwen/Qwen3-8B".to_string());
    let args = serde_json::json!({
        "model_path": "Qwen/Qwen3-8B",
        "tp_size": 2,
        "attention_backend": "fa3",
        "disable_cuda_graph": false,
        "chunked_prefill_size": 8192,
    });
    report.server_args = args.as_object().cloned().unwrap_or_default();
    report.notes =
        vec!["1 other rank ignored: /p/1761000000.5-TP-1-EXTEND.trace.json.gz".to_string()];
    // The Formal signal's share is of busy time: 27452.8 us of 70560 us is 38.9%.
    report.overlap_stages = vec![
        OverlapStage {
            stage: "extend/prefill".to_string(),
            busy_us: 70560.0,
            overlapped_us: 1200.0,
            idle_us: 35.5,
            same_stream_overlap_us: 0.0,
            streams: 2,
            effectively_one_stream: false,
            notes: vec!["single-trace mode: hidden and exclusive times are exact".to_string()],
        },
        OverlapStage {
            stage: "decode".to_string(),
            busy_us: 13000.0,
            overlapped_us: 0.0,
            idle_us: 0.0,
            same_stream_overlap_us: 0.0,
            streams: 1,
            effectively_one_stream: false,
            notes: vec!["one GPU stream (stream 7) ran all 180 GPU ops of this stage: nothing overlaps, so there are no overlap rows".to_string()],
        },
    ];
    report
}
