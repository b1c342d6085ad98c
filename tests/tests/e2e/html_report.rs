//! `--format html` in a real browser: the page of every shared trace (and of an
//! `--all-ranks` run and a `bundle`) is opened in headless Chromium, which must report
//! no console message and make no network request (its net log lists none for the page);
//! the page's script must have run without an error; every number cell of the DOM after
//! the script ran must show the value of the JSON field it names, in a `--format json`
//! run of its own; the embedded JSON must be that run's output byte for byte; and no
//! `src`, `href` or CSS `url()` may name an `http:`/`https:` address. A screenshot of
//! each page is left under `target/html-report/` for a person to look at.
//!
//! The browser is required: without `chromium` on the PATH these tests fail and say how
//! to install it (CI's `.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use llm_triage_tests::ranks::write_rank_runs;
use regex::Regex;
use serde_json::Value;

use crate::util::{
    gpu_events, llm_triage, raw_events, shared_trace, shared_trace_verdicts, target_dir,
    triage_json, us_to_ns,
};

/// Pages opened at once: each launch takes a core for a second or two.
const PARALLEL: usize = 3;

/// The browser, or a failure that says how to get it.
fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "headless Chromium is needed for the HTML report tests and `chromium` is not on \
             the PATH: install it with `apt-get install -y chromium` (Debian/Ubuntu; \
             .ci/run does this when it is missing)"
        )
    })
}

/// Where the screenshots go: `target/html-report/`.
fn screenshot_dir() -> PathBuf {
    let dir = target_dir().parent().expect("target/").join("html-report");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What the browser did with one page.
struct Browsed {
    /// The DOM after the page's script ran (`--dump-dom`).
    dom: String,
    /// The console messages the browser logged (`--enable-logging=stderr`).
    console: Vec<String>,
    /// URLs the page itself asked for, from the net log (the browser's own background
    /// requests have another network isolation key than the page's `file://`).
    page_requests: Vec<String>,
}

/// Opens `page` once in headless Chromium: DOM, console, net log and a screenshot.
fn browse(page: &Path, screenshot: &Path) -> Browsed {
    let scratch = tempfile::tempdir().unwrap();
    let net_log = scratch.path().join("net.json");
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = Command::new("timeout")
        .arg("120")
        .arg(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1800",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.path().join("profile").display()
        ))
        .arg(format!("--log-net-log={}", net_log.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium on {url} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Browsed {
        dom: String::from_utf8(out.stdout).unwrap(),
        console,
        page_requests: page_requests(&net_log),
    }
}

/// The URLs of the requests a `file://` page made, from a Chromium net log: request
/// starts whose network isolation key is the page's `file://` site.
fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).expect("chromium wrote its net log");
    // The browser may stop before closing the JSON; the events are complete objects.
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("net log is JSON");
    log["events"]
        .as_array()
        .expect("net log events")
        .iter()
        .filter_map(|e| {
            let params = e.get("params")?;
            let url = params.get("url")?.as_str()?;
            let key = params.get("network_isolation_key")?.as_str()?;
            key.contains("file://").then(|| url.to_string())
        })
        .collect()
}

/// Every `src`, `href` and CSS `url()` value of `html` that names an `http:` or `https:`
/// address (or a scheme-relative `//host`).
fn remote_references(html: &str) -> Vec<String> {
    let re =
        Regex::new(r#"(?i)(?:\bsrc\s*=|\bhref\s*=|url\()\s*["']?\s*((?:https?:|//)[^"')\s>]*)"#)
            .unwrap();
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

/// The text of the element carrying article `id`'s JSON.
fn embedded_json<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("<script type=\"application/json\" id=\"{id}\" class=\"report-data\">");
    let start = html
        .find(&open)
        .unwrap_or_else(|| panic!("no embedded JSON {id}"))
        + open.len();
    let end = start
        + html[start..]
            .find("</script>")
            .expect("end of the embedded JSON");
    &html[start..end]
}

/// The value a number cell shows, checked against the JSON field it names: the text is
/// the field's value with the decimals the cell shows (an integer field without any).
fn check_cell(report: &Value, path: &str, shown: &str, what: &str) {
    let value = report
        .pointer(path)
        .unwrap_or_else(|| panic!("{what}: cell names {path}, which the JSON lacks"));
    let expected = match (value.as_u64(), shown.split_once('.')) {
        (Some(n), None) => n.to_string(),
        (_, decimals) => {
            let v = value
                .as_f64()
                .unwrap_or_else(|| panic!("{what}: {path} is {value}, not a number"));
            let d = decimals.map_or(0, |(_, frac)| frac.len());
            format!("{v:.d$}")
        }
    };
    assert_eq!(
        shown, expected,
        "{what}: the cell of {path} against the JSON's {value}"
    );
}

/// The checks on one page whose article `id` has the JSON report `json` (a separate
/// `--format json` run's stdout).
fn check_page(what: &str, html_path: &Path, reports: &[(&str, &str)]) {
    let html = std::fs::read_to_string(html_path).unwrap();
    assert_eq!(
        remote_references(&html),
        Vec::<String>::new(),
        "{what}: remote references"
    );
    for (id, json) in reports {
        assert!(
            embedded_json(&html, id) == *json,
            "{what}: the embedded JSON {id} differs from --format json"
        );
    }
    let shot = screenshot_dir().join(format!("{what}.png"));
    let browsed = browse(html_path, &shot);
    assert_eq!(
        browsed.console,
        Vec::<String>::new(),
        "{what}: console messages"
    );
    assert_eq!(
        browsed.page_requests,
        Vec::<String>::new(),
        "{what}: network requests"
    );
    let dom = &browsed.dom;
    assert!(
        dom.contains("data-script=\"done\""),
        "{what}: the page's script did not finish"
    );
    assert!(
        dom.contains("data-errors=\"0\""),
        "{what}: the page's script counted errors"
    );
    assert!(
        std::fs::metadata(&shot)
            .map(|m| m.len() > 1000)
            .unwrap_or(false),
        "{what}: no screenshot"
    );

    // Every number cell of every article against its own JSON.
    let article_re = Regex::new(r#"<article class="report" data-report="([^"]+)">"#).unwrap();
    let cell_re = Regex::new(r#"<td class="num" data-path="([^"]+)">([^<]*)</td>"#).unwrap();
    let starts: Vec<(usize, String)> = article_re
        .captures_iter(dom)
        .map(|c| (c.get(0).unwrap().start(), c[1].to_string()))
        .collect();
    assert_eq!(starts.len(), reports.len(), "{what}: articles in the DOM");
    for (i, (start, id)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(dom.len(), |n| n.0);
        let part = &dom[*start..end];
        let json = reports
            .iter()
            .find(|r| r.0 == id)
            .expect("article has a report")
            .1;
        let report: Value = serde_json::from_str(json).unwrap();
        let mut cells = 0;
        for c in cell_re.captures_iter(part) {
            check_cell(&report, &c[1], &c[2], what);
            cells += 1;
        }
        if let Some(diff) = report.get("diff") {
            check_diff(diff, part, what);
            continue;
        }
        // Each kernel row of the JSON is a row of its stage's table, with its figures.
        for (s, stage) in report["stages"].as_array().unwrap().iter().enumerate() {
            let kernels = stage["kernels"].as_array().unwrap();
            for k in 0..kernels.len() {
                for field in ["gpu_time_us", "share_pct", "launches"] {
                    let path = format!("data-path=\"/stages/{s}/kernels/{k}/{field}\"");
                    assert_eq!(part.matches(&path).count(), 1, "{what}: {path}");
                }
            }
            if !kernels.is_empty() {
                let drawn = format!("data-chart=\"families\" data-stage=\"{s}\"><svg");
                assert!(
                    part.contains(&drawn),
                    "{what}: stage {s}'s family split was not drawn"
                );
            }
            let steps = stage["timeline"]["steps"].as_array().map_or(0, Vec::len);
            let waterfall = format!("data-chart=\"waterfall\" data-stage=\"{s}\"><svg");
            assert_eq!(
                part.contains(&waterfall),
                steps > 0,
                "{what}: stage {s}'s waterfall"
            );
            check_histogram_labels(stage, s, part, what);
        }
        assert!(
            cells > 0 || report["stages"].as_array().unwrap().is_empty(),
            "{what}: no number cells"
        );
    }
}

/// Stage `s`'s idle-gap histogram, when drawn, labels its bars as the table beside it
/// labels its rows (`0 – 5 µs`, from the JSON's bounds), bin for bin.
fn check_histogram_labels(stage: &Value, s: usize, part: &str, what: &str) {
    let chart = format!("data-chart=\"histogram\" data-stage=\"{s}\"><svg");
    let Some(at) = part.find(&chart) else {
        return;
    };
    let svg = &part[at..at + part[at..].find("</svg>").expect("the chart's svg ends")];
    let bar_re = Regex::new(r#"<text [^>]*text-anchor="middle">([^<]*)</text>"#).unwrap();
    let bars: Vec<&str> = bar_re
        .captures_iter(svg)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    let row_re = Regex::new(&format!(
        r#"<tr><td>([^<]*)</td><td class="num" data-path="/stages/{s}/timeline/histogram/\d+/count">"#
    ))
    .unwrap();
    let rows: Vec<&str> = row_re
        .captures_iter(part)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    let from_json: Vec<String> = stage["timeline"]["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| match b["hi_us"].as_f64() {
            Some(hi) => format!("{} – {hi} µs", b["lo_us"].as_f64().unwrap()),
            None => format!("≥ {} µs", b["lo_us"].as_f64().unwrap()),
        })
        .collect();
    assert_eq!(rows, from_json, "{what}: stage {s}'s histogram table rows");
    assert_eq!(bars, rows, "{what}: stage {s}'s histogram bar labels");
}

/// A diff page: each waterfall row of each stage is a table row with its figures, and
/// the stage's waterfall chart was drawn.
fn check_diff(diff: &Value, part: &str, what: &str) {
    for (s, stage) in diff["stages"].as_array().unwrap().iter().enumerate() {
        let rows = stage["rows"].as_array().unwrap();
        for r in 0..rows.len() {
            for field in ["base_us", "new_us", "delta_us"] {
                let path = format!("data-path=\"/diff/stages/{s}/rows/{r}/{field}\"");
                assert_eq!(part.matches(&path).count(), 1, "{what}: {path}");
            }
        }
        let drawn = format!("data-chart=\"diffwaterfall\" data-stage=\"{s}\"><svg");
        assert_eq!(
            part.contains(&drawn),
            !rows.is_empty(),
            "{what}: stage {s}'s waterfall"
        );
    }
}

/// `llm-triage ARGS --format FORMAT` to stdout; its output, which must be a success.
fn run(args: &[String], format: &str) -> Vec<u8> {
    let out = llm_triage()
        .args(args)
        .args(["--format", format])
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "llm-triage {args:?} --format {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The triage of `args` as HTML (in `dir/NAME.html`) and as JSON, then the page checks.
fn check_triage(name: &str, args: &[String], dir: &Path) {
    let html = run(args, "html");
    let json = String::from_utf8(run(args, "json")).unwrap();
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, html).unwrap();
    check_page(name, &path, &[("report", &json)]);
}

#[test]
fn the_html_report_of_every_shared_trace_passes_in_a_real_browser() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    // Traces `--framework auto` refuses are triaged as vLLM, as the identity check does.
    let cases: Vec<(String, Vec<String>)> = shared_trace_verdicts()
        .into_iter()
        .map(|(path, verdict)| {
            let name = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".json", "")
                .replace(".gz", "");
            let framework = if verdict.starts_with("refuse") {
                "vllm"
            } else {
                "auto"
            };
            let args = vec![
                "--framework".to_string(),
                framework.to_string(),
                "--input".to_string(),
                path.display().to_string(),
            ];
            (name, args)
        })
        .collect();
    for chunk in cases.chunks(cases.len().div_ceil(PARALLEL)) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|(name, args)| scope.spawn(|| check_triage(name, args, dir.path())))
                .collect();
            for h in handles {
                if let Err(panic) = h.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }
}

#[test]
fn the_html_report_of_all_ranks_shows_the_rank_sections_in_a_real_browser() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let truth = write_rank_runs(dir.path()).unwrap().remove(1);
    let args = vec![
        "--input".to_string(),
        truth.dir.display().to_string(),
        "--all-ranks".to_string(),
    ];
    check_triage("all-ranks", &args, dir.path());
    let html = std::fs::read_to_string(dir.path().join("all-ranks.html")).unwrap();
    for heading in [
        "<h2>Ranks</h2>",
        "<h2>Collective wait</h2>",
        "data-chart=\"ranks\"",
    ] {
        assert!(html.contains(heading), "{heading} missing");
    }
}

/// The checks above can fail: a page that asks the network for an image and logs to
/// the console is caught by both, a planted reference by the static check, and a cell
/// showing another value than its field's by the DOM check.
#[test]
fn the_browser_checks_catch_a_request_and_a_console_message() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\">\
         <script>console.log('hello');</script></body></html>",
    )
    .unwrap();
    let browsed = browse(&page, &dir.path().join("bad.png"));
    assert_eq!(browsed.page_requests, ["http://127.0.0.1:9/x.png"]);
    assert_eq!(browsed.console.len(), 1, "{:?}", browsed.console);
    assert_eq!(
        remote_references("<a href='https://x.org'>x</a><div style=\"background:url( //cdn/x)\">"),
        ["https://x.org", "//cdn/x"]
    );
    // A cell whose text is not its field's value fails the DOM check.
    let report = serde_json::json!({ "a": 1.25, "n": 3 });
    check_cell(&report, "/a", "1.25", "good");
    check_cell(&report, "/n", "3", "good");
    for (path, shown) in [("/a", "1.30"), ("/n", "4"), ("/missing", "1")] {
        let caught = std::panic::catch_unwind(|| check_cell(&report, path, shown, "bad"));
        assert!(caught.is_err(), "{path} shown as {shown} passed");
    }
}

/// Integer ns of a report's µs value (exact ns divided by 1000).
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) * 1000.0).round() as i64
}

/// The data the page draws beyond the text formats' tables, recounted from the raw
/// events of the SGLang Qwen3 trace: each layer's role times sum to the layer exactly and
/// its attention is that layer's prefill attention kernel; the representative step holds
/// every GPU op that ran in its window, and its gaps are its idle time exactly.
#[test]
fn the_heatmap_and_the_representative_step_recount_from_the_raw_events() {
    let path = shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz");
    let report = triage_json(&["--input", path.to_str().unwrap()]);
    let raw = raw_events(&path);
    let gpu = gpu_events(&raw);
    let stages = report["stages"].as_array().unwrap();
    let prefill = stages
        .iter()
        .find(|s| s["stage"] == "extend/prefill")
        .unwrap();
    let rows = prefill["layers"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 36);
    let mut attention = Vec::new();
    for row in rows {
        let roles = row["roles"].as_array().expect("a layer's roles");
        let sum: i64 = roles.iter().map(|r| ns(&r["gpu_time_us"])).sum();
        assert_eq!(sum, ns(&row["gpu_time_us"]), "{row}");
        let attn = roles
            .iter()
            .find(|r| r["role"] == "attention")
            .expect("attention");
        attention.push(ns(&attn["gpu_time_us"]));
    }
    let mut fmha: Vec<(i64, i64)> = gpu
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .unwrap_or("")
                .contains("FmhaBatchPrefill")
        })
        .map(|e| (us_to_ns(&e["ts"]), us_to_ns(&e["dur"])))
        .collect();
    fmha.sort();
    assert_eq!(attention, fmha.iter().map(|f| f.1).collect::<Vec<_>>());

    for stage in stages {
        let rep = &stage["timeline"]["representative_step"];
        let step = &stage["timeline"]["steps"][rep["step"].as_u64().unwrap() as usize];
        assert_eq!(rep["wall_us"], step["wall_us"]);
        let (start, end) = (
            ns(&rep["start_us"]),
            ns(&rep["start_us"]) + ns(&rep["wall_us"]),
        );
        let inside = gpu
            .iter()
            .filter(|e| {
                let ts = us_to_ns(&e["ts"]);
                ts < end && ts + us_to_ns(&e["dur"]) > start
            })
            .count();
        let drawn: usize = rep["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["ops"].as_array().unwrap().len())
            .sum();
        assert_eq!(
            drawn + rep["ops_left_out"].as_u64().unwrap() as usize,
            inside,
            "{}",
            stage["stage"]
        );
        let gaps: i64 = rep["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| ns(&g["dur_us"]))
            .sum();
        let idle: i64 = [
            "launch_idle_us",
            "sync_idle_us",
            "graph_gap_us",
            "host_gap_us",
        ]
        .iter()
        .map(|k| ns(&step[*k]))
        .sum();
        assert_eq!(gaps, idle, "{}", stage["stage"]);
    }
}

/// `bundle --format html` of two saved JSON reports and one text report: each JSON
/// report becomes an article whose embedded JSON is the saved file byte for byte, the
/// text report is shown as written, and the page passes the browser checks.
#[test]
fn the_html_bundle_of_saved_reports_passes_in_a_real_browser() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let mut saved = Vec::new();
    for (label, trace) in [
        (
            "qwen3",
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz",
        ),
        ("gpt-oss", "AMD-AGI__TraceLens__eager_trace.json.gz"),
    ] {
        let args = vec![
            "--input".to_string(),
            shared_trace(trace).display().to_string(),
        ];
        let json = String::from_utf8(run(&args, "json")).unwrap();
        let path = dir.path().join(format!("analysis_{label}.json"));
        std::fs::write(&path, &json).unwrap();
        saved.push((format!("{label}={}", path.display()), json));
    }
    let text_path = dir.path().join("analysis_vllm.txt");
    std::fs::write(
        &text_path,
        "Triage View\nFramework: vLLM\n<b>kept as text</b>\n",
    )
    .unwrap();
    let page = dir.path().join("bundle.html");
    let out = llm_triage()
        .arg("bundle")
        .args(
            saved
                .iter()
                .flat_map(|(spec, _)| ["--analysis-file", spec.as_str()]),
        )
        .arg("--analysis-file")
        .arg(format!("text={}", text_path.display()))
        .args(["--format", "html", "--output"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("&lt;b&gt;kept as text&lt;/b&gt;"),
        "the text report as written"
    );
    // Which article holds which saved report: each embedded JSON is one of them, whole.
    let reports: Vec<(String, String)> = (1..=saved.len())
        .map(|n| {
            let id = format!("report-{n}");
            let embedded = embedded_json(&html, &id).to_string();
            assert!(
                saved.iter().any(|(_, json)| *json == embedded),
                "{id} is no saved report"
            );
            (id, embedded)
        })
        .collect();
    let pairs: Vec<(&str, &str)> = reports
        .iter()
        .map(|(i, j)| (i.as_str(), j.as_str()))
        .collect();
    check_page("bundle", &page, &pairs);
}

/// `diff --format html` of the SGLang Qwen3 decode trace against its prefill+decode
/// run: the waterfall page passes the browser checks and embeds `diff --format json`.
#[test]
fn the_html_diff_page_passes_in_a_real_browser() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let args = vec![
        "diff".to_string(),
        shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz")
            .display()
            .to_string(),
        shared_trace("AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz")
            .display()
            .to_string(),
    ];
    check_triage("diff", &args, dir.path());
}
