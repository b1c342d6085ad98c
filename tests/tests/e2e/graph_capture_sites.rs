//! Issue 17 point 1b/2/3: a capture trace gives every graph-replayed kernel of the SGLang
//! decode trace the launch site, CPU op and `Input Dims` recorded when its graph was
//! captured, the site being the model's own frame and the module it called (at least
//! 99% of the replayed time under `python/sglang/srt/` model or layer code); without one the report is today's plus a note on how to record it. Every
//! expected number is recounted here from the raw events of both files.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::util::{gpu_events, raw_events, shared_trace, triage_json, us_to_ns};

const DECODE: &str = "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz";
const CAPTURE: &str = "AMD-AGI__TraceLens__bs_32_rank0.json.gz";

/// A captured node as the raw events record it: kernel, CPU op name, `Input Dims`, and
/// from its launch's Python stack the model's own frame and the calling module.
#[derive(Clone, Debug)]
struct RawNode {
    kernel: String,
    cpu_op: String,
    input_dims: Value,
    /// The innermost frame under `python/sglang/srt/models/`, as `path:line function`
    /// from `python/sglang/` on.
    model_frame: Option<String>,
    /// The innermost `nn.Module: <Class>_<n>` frame's class.
    module: Option<String>,
}

/// The Python frames (`python_function` events) active at `ts_ns` on one thread,
/// outer..inner.
fn stack_at<'e>(frames: &[&'e Value], ts_ns: i64) -> Vec<&'e str> {
    let mut active: Vec<(i64, i64, &str)> = frames
        .iter()
        .map(|f| {
            let start = us_to_ns(&f["ts"]);
            (
                start,
                start + us_to_ns(&f["dur"]),
                f["name"].as_str().unwrap(),
            )
        })
        .filter(|&(start, end, _)| start <= ts_ns && ts_ns <= end)
        .collect();
    active.sort_by_key(|&(start, end, _)| (start, -end));
    active.into_iter().map(|(_, _, name)| name).collect()
}

/// `/sgl-workspace/sglang/python/sglang/srt/models/qwen3.py(263): forward` ->
/// `python/sglang/srt/models/qwen3.py:263 forward`, for model frames only.
fn model_frame(frame: &str) -> Option<String> {
    let at = frame.find("python/sglang/srt/models/")?;
    let (path, rest) = frame[at..].split_once('(')?;
    let (line, function) = rest.split_once("): ")?;
    Some(format!("{path}:{line} {function}"))
}

/// The launches inside `capture_32_DECODE` (all 546 of them) and, of those, the nodes:
/// the launches whose kernel did not run in the capture trace, in launch order.
fn raw_capture_nodes(path: &Path) -> (usize, Vec<RawNode>) {
    let events = raw_events(path);
    let window = events
        .iter()
        .find(|e| e["cat"] == "user_annotation" && e["name"] == "capture_32_DECODE")
        .expect("a capture_32_DECODE annotation");
    let (start, end) = (
        us_to_ns(&window["ts"]),
        us_to_ns(&window["ts"]) + us_to_ns(&window["dur"]),
    );
    let ran: Vec<&Value> = gpu_events(&events)
        .iter()
        .map(|k| &k["args"]["correlation"])
        .collect();
    let mut launches: Vec<&Value> = events
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime")
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.contains("LaunchKernel"))
        })
        .filter(|e| e["pid"] == window["pid"] && e["tid"] == window["tid"])
        .filter(|e| (start..=end).contains(&us_to_ns(&e["ts"])))
        .collect();
    launches.sort_by_key(|e| us_to_ns(&e["ts"]));
    let cpu_op_of = |id: &Value| {
        events
            .iter()
            .find(|e| e["cat"] == "cpu_op" && &e["args"]["External id"] == id)
            .expect("each launch's External id names a cpu_op")
    };
    let frames: Vec<&Value> = events
        .iter()
        .filter(|e| e["cat"] == "python_function")
        .filter(|e| e["pid"] == window["pid"] && e["tid"] == window["tid"])
        .filter(|e| us_to_ns(&e["ts"]) <= end && us_to_ns(&e["ts"]) + us_to_ns(&e["dur"]) >= start)
        .collect();
    let nodes = launches
        .iter()
        .filter(|l| !ran.contains(&&l["args"]["correlation"]))
        .map(|l| {
            let op = cpu_op_of(&l["args"]["External id"]);
            let stack = stack_at(&frames, us_to_ns(&l["ts"]));
            RawNode {
                kernel: l["args"]["kernel"].as_str().unwrap().to_string(),
                cpu_op: op["name"].as_str().unwrap().to_string(),
                input_dims: op["args"]["Input Dims"].clone(),
                model_frame: stack.iter().rev().find_map(|f| model_frame(f)),
                module: stack.iter().rev().find_map(|f| {
                    let instance = f.strip_prefix("nn.Module: ")?;
                    let (class, n) = instance.rsplit_once('_')?;
                    n.bytes()
                        .all(|b| b.is_ascii_digit())
                        .then(|| class.to_string())
                }),
            }
        })
        .collect();
    (launches.len(), nodes)
}

/// The replayed kernels of the decode trace: those carrying the graph launch's
/// correlation, in GPU start order, as (name, dur ns).
fn raw_replayed_kernels(path: &Path) -> Vec<(String, i64)> {
    let events = raw_events(path);
    let launch = events
        .iter()
        .find(|e| e["cat"] == "cuda_runtime" && e["name"] == "hipGraphLaunch")
        .expect("one hipGraphLaunch");
    let mut kernels: Vec<&Value> = gpu_events(&events)
        .into_iter()
        .filter(|k| k["args"]["correlation"] == launch["args"]["correlation"])
        .collect();
    kernels.sort_by_key(|k| us_to_ns(&k["ts"]));
    kernels
        .iter()
        .map(|k| (k["name"].as_str().unwrap().to_string(), us_to_ns(&k["dur"])))
        .collect()
}

fn decode_stage(report: &Value) -> &Value {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "decode")
        .expect("a decode stage")
}

/// The graph launch's location in the report without a capture: where every replayed
/// kernel is charged today.
fn graph_launch_location() -> String {
    let report = triage_json(&["--input", shared_trace(DECODE).to_str().unwrap()]);
    let rows = decode_stage(&report)["kernels"].as_array().unwrap().clone();
    let row = rows
        .iter()
        .find(|r| r["launch_site_source"] == "graph-launch")
        .expect("a replayed row");
    row["python_locations"][0]["location"]
        .as_str()
        .unwrap()
        .to_string()
}

/// SGLang model or layer code (`python/sglang/srt/models/`, `python/sglang/srt/layers/`):
/// where the acceptance wants a replayed kernel's site, rather than a kernel library's
/// binding (`sgl_kernel/`, `python/sglang/jit_kernel/`) or the runner.
fn is_model_or_layer_code(location: &str) -> bool {
    location.starts_with("python/sglang/srt/models/")
        || location.starts_with("python/sglang/srt/layers/")
}

/// Replayed time by site: ((model frame, module), ns).
type SiteTimes = Vec<((String, String), i64)>;

/// One raw kernel name's replays: their time, that time by the node's `Input Dims`, and
/// the nodes' CPU ops.
type Replayed<'a> = (i64, Vec<(Value, i64)>, Vec<&'a str>);

/// The acceptance check of issue 17 on one report of the decode trace with its capture.
fn assert_capture_sites(report: &Value) {
    let (in_window, nodes) = raw_capture_nodes(&shared_trace(CAPTURE));
    assert_eq!(in_window, 546, "launches inside capture_32_DECODE");
    let replayed = raw_replayed_kernels(&shared_trace(DECODE));
    let replayed_ns: i64 = replayed.iter().map(|(_, ns)| ns).sum();
    // In this run the graph replays its nodes one to one, in order.
    let names: Vec<&str> = replayed.iter().map(|(n, _)| n.as_str()).collect();
    let node_names: Vec<&str> = nodes.iter().map(|n| n.kernel.as_str()).collect();
    assert_eq!(names, node_names);

    // Per raw kernel name: the replayed time by the node's model frame and module, the
    // site the report should show (every node here has a model frame).
    let mut sites_of: HashMap<&str, SiteTimes> = HashMap::new();
    for ((name, ns), node) in replayed.iter().zip(&nodes) {
        let site = (
            node.model_frame
                .clone()
                .expect("a model frame in every captured stack"),
            node.module
                .clone()
                .expect("a module frame in every captured stack"),
        );
        let sites = sites_of.entry(name).or_default();
        match sites.iter_mut().find(|(s, _)| *s == site) {
            Some(s) => s.1 += ns,
            None => sites.push((site, *ns)),
        }
    }
    // Per raw kernel name: replayed time, and that time by the node's Input Dims.
    let mut by_name: HashMap<&str, Replayed<'_>> = HashMap::new();
    for ((name, ns), node) in replayed.iter().zip(&nodes) {
        let entry = by_name.entry(name).or_default();
        entry.0 += ns;
        match entry.1.iter_mut().find(|(d, _)| *d == node.input_dims) {
            Some(d) => d.1 += ns,
            None => entry.1.push((node.input_dims.clone(), *ns)),
        }
        entry.2.push(&node.cpu_op);
    }

    let stage = decode_stage(report);
    let graph_launch = graph_launch_location();
    let mut resolved_ns = 0.0;
    for row in stage["kernels"].as_array().unwrap() {
        let raw: Vec<&str> = row["raw_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        let replayed_here: Vec<_> = raw.iter().filter_map(|n| by_name.get(n)).collect();
        if replayed_here.is_empty() {
            continue;
        }
        assert_eq!(row["launch_site_source"], "capture", "{}", row["name"]);
        let row_us = row["gpu_time_us"].as_f64().unwrap();
        // The row's sites are its nodes' model frames and modules, in time.
        let mut want: SiteTimes = Vec::new();
        for name in &raw {
            for (site, ns) in sites_of.get(name).into_iter().flatten() {
                match want.iter_mut().find(|(s, _)| s == site) {
                    Some(s) => s.1 += ns,
                    None => want.push((site.clone(), *ns)),
                }
            }
        }
        let sites = row["python_locations"].as_array().unwrap();
        let captured: Vec<&Value> = sites
            .iter()
            .filter(|s| s["launch_site_source"] == "capture")
            .collect();
        assert_eq!(
            captured.len(),
            want.len(),
            "{}: {sites:?} vs {want:?}",
            row["name"]
        );
        for ((location, module), ns) in &want {
            let site = captured
                .iter()
                .find(|s| s["location"] == location.as_str() && s["module"] == module.as_str())
                .unwrap_or_else(|| {
                    panic!(
                        "{}: no site {location} ({module}) in {sites:?}",
                        row["name"]
                    )
                });
            let share_ns = row_us * 1000.0 * site["share_pct"].as_f64().unwrap() / 100.0;
            assert!(
                (share_ns - *ns as f64).abs() < 1.0,
                "{location}: {share_ns} vs {ns}"
            );
        }
        for site in sites {
            let location = site["location"].as_str().unwrap();
            if site["launch_site_source"] == "capture"
                && is_model_or_layer_code(location)
                && location != graph_launch
            {
                resolved_ns += row_us * 1000.0 * site["share_pct"].as_f64().unwrap() / 100.0;
            }
        }
        // The CPU ops recorded at capture, not the graph launch.
        let cpu_ops: Vec<&str> = row["cpu_ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        assert!(!cpu_ops.contains(&"hipGraphLaunch"), "{cpu_ops:?}");
        for (_, _, ops) in &replayed_here {
            assert!(
                ops.iter().all(|op| cpu_ops.contains(op)),
                "{ops:?} in {cpu_ops:?}"
            );
        }
        // The row's Input Dims: those of its replayed launches with the most time
        // (a row of one raw name here; ties by text).
        if let [(_, dims, _)] = replayed_here.as_slice() {
            let most = dims.iter().map(|(_, ns)| *ns).max().unwrap();
            let want: Vec<&Value> = dims
                .iter()
                .filter(|(_, ns)| *ns == most)
                .map(|(d, _)| d)
                .collect();
            let got: Value = serde_json::from_str(row["input_dims"].as_str().unwrap()).unwrap();
            assert!(
                want.contains(&&got),
                "{}: {got} not in {want:?}",
                row["name"]
            );
        }
    }
    assert!(
        resolved_ns >= 0.99 * replayed_ns as f64,
        "{resolved_ns} of {replayed_ns} replayed ns at a captured SGLang model or layer site"
    );
}

#[test]
fn replayed_kernels_take_the_sites_recorded_at_capture() {
    let decode = shared_trace(DECODE);
    let capture = shared_trace(CAPTURE);
    let report = triage_json(&[
        "--input",
        decode.to_str().unwrap(),
        "--capture-input",
        capture.to_str().unwrap(),
        "--min-share",
        "0",
    ]);
    assert_capture_sites(&report);
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let replayed = raw_replayed_kernels(&decode).len();
    let want = format!("graph replays: {replayed} of {replayed} replayed GPU ops (100.0%");
    assert!(notes.iter().any(|n| n.starts_with(&want)), "{notes:#?}");
}

/// A capture trace in `capture_traces/` beside the trace is found by itself, and a
/// directory given to `--capture-input` is read for its captures.
#[test]
fn capture_traces_beside_the_trace_or_in_a_directory_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profile");
    std::fs::create_dir_all(profile.join("capture_traces")).unwrap();
    std::fs::copy(
        shared_trace(DECODE),
        profile.join("1761-TP-0-DECODE.trace.json.gz"),
    )
    .unwrap();
    std::fs::copy(
        shared_trace(CAPTURE),
        profile.join("capture_traces/bs_32_rank0.json.gz"),
    )
    .unwrap();
    let found = triage_json(&["--input", profile.to_str().unwrap(), "--min-share", "0"]);
    assert_eq!(
        found["inputs"].as_array().unwrap().len(),
        1,
        "the capture is no input"
    );
    assert_capture_sites(&found);

    let captures = dir.path().join("captures");
    std::fs::create_dir_all(&captures).unwrap();
    std::fs::copy(shared_trace(CAPTURE), captures.join("bs_32_rank0.json.gz")).unwrap();
    let given = triage_json(&[
        "--input",
        shared_trace(DECODE).to_str().unwrap(),
        "--capture-input",
        captures.to_str().unwrap(),
        "--min-share",
        "0",
    ]);
    assert_capture_sites(&given);
}

/// Without a capture trace: every replayed row keeps the graph launch, and one note says
/// how to record the capture.
#[test]
fn without_a_capture_the_report_says_how_to_record_one() {
    let report = triage_json(&["--input", shared_trace(DECODE).to_str().unwrap()]);
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let how: Vec<&&str> = notes
        .iter()
        .filter(|n| n.contains("--enable-profile-cuda-graph") && n.contains("--capture-input"))
        .collect();
    assert_eq!(how.len(), 1, "{notes:#?}");
    let rows = decode_stage(&report)["kernels"].as_array().unwrap();
    assert!(rows
        .iter()
        .all(|r| r["cpu_ops"][0] == "hipGraphLaunch" || r["launch_site_source"] == "eager"));
    assert!(rows
        .iter()
        .any(|r| r["launch_site_source"] == "graph-launch"));
    // The eager kernels launched through SGLang's JIT-kernel bindings show the engine
    // code that called them (the plugin names the bindings as wrapper frames).
    let events = raw_events(&shared_trace(DECODE));
    let bindings = events
        .iter()
        .filter(|e| e["cat"] == "python_function")
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.contains("sglang/jit_kernel/"))
        })
        .count();
    assert!(bindings > 0, "the trace launches through jit_kernel/");
    let every = triage_json(&[
        "--input",
        shared_trace(DECODE).to_str().unwrap(),
        "--min-share",
        "0",
    ]);
    let rows = decode_stage(&every)["kernels"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["python_locations"][0]["location"]
        == "python/sglang/srt/managers/overlap_utils.py:130 resolve_future"));
    for row in rows {
        for site in row["python_locations"].as_array().unwrap() {
            let location = site["location"].as_str().unwrap();
            assert!(
                !location.contains("jit_kernel/") && !location.starts_with("sgl_kernel/"),
                "{}: {location}",
                row["name"]
            );
        }
    }
}
