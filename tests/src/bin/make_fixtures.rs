//! `make-fixtures OUT_DIR`: writes a small SGLang capture of a Qwen3-8B server (TP=2)
//! (all 36 decoder layers) in the live-capture layout, for the README's example:
//!
//! ```text
//! OUT_DIR/prefill/<profile id>/<profile id>-TP-0-EXTEND.trace.json.gz  + server_args.json
//! OUT_DIR/decode/<profile id>/<profile id>-TP-0-DECODE.trace.json.gz   + server_args.json
//! ```
//!
//! Prefill launches every kernel; decode replays one CUDA graph. The MLP all-reduce runs
//! on a communication stream. Output is deterministic.
//!
//! `make-fixtures --matrix OUT_DIR` writes instead the 16 small fixtures of the end-to-end
//! ground-truth test (every engine, extend and decode, eager on one stream and graph replay
//! on two), as `OUT_DIR/case<N>/…`, for `scripts/report-identity.sh`.
//!
//! `make-fixtures --timeline OUT_DIR` writes the timeline scenarios (injected host
//! delays, sync waits, launch-bound stretches and in-graph gaps, CUDA and HIP) as
//! `OUT_DIR/<scenario>/<trace>` with `ground_truth.json` beside each.
//!
//! `make-fixtures --ranks OUT_DIR` writes the multi-rank runs (2, 4 and 8 ranks of one
//! SGLang decode capture, own clocks, injected lateness) as `OUT_DIR/<run>/` with one
//! trace per rank and `ground_truth.json`.
//! `make-fixtures --graph-pairs OUT_DIR` writes graph-off/graph-on trace pairs (graph
//! nodes missing, extra, fused and split against the eager launches) as
//! `OUT_DIR/<pair>/{graph-off,graph-on}/…` with `ground_truth.json`, for the mapping
//! alignment.
//! `make-fixtures --diff-pairs OUT_DIR` writes before/after trace pairs for `llm-triage
//! diff` (one SGLang prefill profile; GEMMs 5% slower, a fused add + RMSNorm split into
//! its kernels, 200 µs more host time between steps, twice the batch, the same layers on
//! an MI300X) as `OUT_DIR/<pair>/{base,new}/…` with `ground_truth.json`: the exact ns
//! per kernel, role and wall-time part of each side, and what changed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use llm_triage_tests::{write_fixture, Engine, FixtureSpec, GroundTruth, StageKind};

const USAGE: &str =
    "usage: make-fixtures [--matrix | --timeline | --ranks | --graph-pairs | --diff-pairs] OUT_DIR";

/// What each mode writes (the module doc above, in short).
const HELP: &str = concat!(
    "  (none)         the README's example: an SGLang Qwen3-8B capture, prefill and decode\n",
    "  --matrix       the 16 fixtures of the end-to-end ground-truth test, OUT_DIR/case<N>/\n",
    "  --timeline     timeline scenarios with injected idle, OUT_DIR/<scenario>/ + ground_truth.json\n",
    "  --ranks        multi-rank runs with injected lateness, OUT_DIR/<run>/ + ground_truth.json\n",
    "  --graph-pairs  graph-off/graph-on pairs for the mapping alignment, OUT_DIR/<pair>/\n",
    "  --diff-pairs   before/after pairs for `llm-triage diff` with known changes (GEMMs 5% slower,\n",
    "                 fused add+RMSNorm split, +200 us host gap per step, batch 8 -> 16, CUDA vs\n",
    "                 ROCm), OUT_DIR/<pair>/{base,new}/ + ground_truth.json"
);

type WriteFixtures = fn(&Path) -> std::io::Result<Vec<GroundTruth>>;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    // An OUT_DIR that looks like a flag (`--matrix` alone, `--ranks --help`) is a slip,
    // not a directory to create.
    let flag_as_dir = match args.as_slice() {
        [one] => one != "--help" && one != "-h" && one.to_string_lossy().starts_with('-'),
        [_, out] => out.to_string_lossy().starts_with('-'),
        _ => false,
    };
    if flag_as_dir {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let (out, write): (_, WriteFixtures) = match args.as_slice() {
        [flag] if flag == "--help" || flag == "-h" => {
            println!("{USAGE}\n\n{HELP}");
            return ExitCode::SUCCESS;
        }
        [out] => (out, write_example),
        [flag, out] if flag == "--matrix" => (out, llm_triage_tests::write_matrix),
        [flag, out] if flag == "--timeline" => return write_timeline(Path::new(out)),
        [flag, out] if flag == "--ranks" => return write_ranks(Path::new(out)),
        [flag, out] if flag == "--graph-pairs" => return write_graph_pairs(Path::new(out)),
        [flag, out] if flag == "--diff-pairs" => return write_diff_pairs(Path::new(out)),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match write(Path::new(out)) {
        Ok(truths) => {
            for truth in truths {
                println!("{}", truth.path.display());
                for (stage, st) in &truth.stages {
                    println!(
                        "  {stage}: {} kernels, {} GPU ops, {:.3} ms GPU time",
                        st.kernels.len(),
                        st.kernels.values().map(|k| k.count).sum::<u64>(),
                        st.total_gpu_ns as f64 / 1e6
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "make-fixtures: cannot write {}: {e}",
                PathBuf::from(&out).display()
            );
            ExitCode::from(3)
        }
    }
}

fn write_timeline(out: &Path) -> ExitCode {
    match llm_triage_tests::timeline::write_timeline_set(out) {
        Ok(truths) => {
            for truth in truths {
                println!(
                    "{}: {} steps, {} injected delays",
                    truth.trace.display(),
                    truth.steps.len(),
                    truth.delays.len()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make-fixtures: cannot write {}: {e}", out.display());
            ExitCode::from(3)
        }
    }
}

fn write_ranks(out: &Path) -> ExitCode {
    let runs = llm_triage_tests::ranks::write_rank_runs(out).and_then(|mut tp| {
        tp.extend(llm_triage_tests::ranks::write_ep_runs(out)?);
        Ok(tp)
    });
    match runs {
        Ok(truths) => {
            for truth in truths {
                println!(
                    "{}: {} ranks, {} collectives, {} injected stragglers",
                    truth.dir.display(),
                    truth.files.len(),
                    truth.collectives.len(),
                    truth.stragglers.len()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make-fixtures: cannot write {}: {e}", out.display());
            ExitCode::from(3)
        }
    }
}

fn write_graph_pairs(out: &Path) -> ExitCode {
    match llm_triage_tests::graph_pairs::write_graph_pairs(out) {
        Ok(truths) => {
            for truth in truths {
                let (ops, ns) = truth.unmatched();
                println!(
                    "{}: {} graph nodes x {} replays, {ops} replayed ops without a counterpart ({ns} ns)",
                    truth.name,
                    truth.nodes.len(),
                    truth.replays
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make-fixtures: cannot write {}: {e}", out.display());
            ExitCode::from(3)
        }
    }
}

fn write_diff_pairs(out: &Path) -> ExitCode {
    match llm_triage_tests::diff_pairs::write_diff_pairs(out) {
        Ok(truths) => {
            for truth in truths {
                println!(
                    "{}: {} changed kernels, {} changed roles, wall {} -> {} ns ({})",
                    truth.name,
                    truth.changed_kernels().len(),
                    truth.changed_roles().len(),
                    truth.base.wall_ns(),
                    truth.new.wall_ns(),
                    truth.change
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make-fixtures: cannot write {}: {e}", out.display());
            ExitCode::from(3)
        }
    }
}

fn server_args() -> serde_json::Value {
    serde_json::json!({
        "model_path": "Qwen/Qwen3-8B",
        "served_model_name": "Qwen/Qwen3-8B",
        "tp_size": 2,
        "dp_size": 1,
        "pp_size": 1,
        "ep_size": 1,
        "attention_backend": "flashinfer",
        "dtype": "bfloat16",
        "kv_cache_dtype": "auto",
        "quantization": null,
        "chunked_prefill_size": 8192,
        "cuda_graph_max_bs": 160,
        "disable_cuda_graph": false,
        "enable_torch_compile": false,
        "port": 30000
    })
}

fn write_example(out: &Path) -> std::io::Result<Vec<GroundTruth>> {
    let captures = [
        ("prefill", StageKind::Extend, 11, false),
        ("decode", StageKind::Decode, 12, true),
    ];
    let mut truths = Vec::new();
    for (workload, stage, seed, graph_replay) in captures {
        let spec = FixtureSpec {
            layers: 36,
            streams: 2,
            graph_replay,
            seed,
            batch_size: 8,
            server_args: Some(server_args()),
            ..FixtureSpec::new(Engine::Sglang, stage)
        };
        let file = llm_triage_tests::file_name(spec.engine, stage, spec.tp_rank, seed, spec.gzip);
        let profile_id = file.split("-TP-").next().unwrap_or("capture").to_string();
        let (_, truth) = write_fixture(&out.join(workload).join(profile_id), &spec)?;
        truths.push(truth);
    }
    Ok(truths)
}
