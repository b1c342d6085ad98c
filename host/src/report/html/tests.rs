//! The HTML page of hand-built reports: the embedded JSON is `--format json` byte for
//! byte, trace text never becomes markup, nothing points off the page, number cells name
//! their JSON fields, and charts appear only where their data is.

use super::*;
use crate::report::model::{GapBin, StageTimeline, Step};
use crate::report::sample;

fn html_of(report: &Report) -> String {
    Html { min_share_pct: 1.0 }.render(report)
}

/// The text of the `<script>` element that carries the report's JSON.
fn embedded_json(page: &str) -> &str {
    let open = "<script type=\"application/json\" id=\"report\" class=\"report-data\">";
    let start = page.find(open).expect("embedded JSON") + open.len();
    let end = start + page[start..].find("</script>").expect("its end");
    &page[start..end]
}

#[test]
fn the_embedded_json_is_the_json_report_byte_for_byte_even_with_a_script_end_in_a_name() {
    let mut report = sample::qwen3();
    report.stages[0].kernels[0].name = "evil</script><img src=x onerror=alert(1)><!--".into();
    let page = html_of(&report);
    assert_eq!(embedded_json(&page), Json.render(&report));
    assert_eq!(page.matches("id=\"report\"").count(), 1);
    // The name shows as text, never as an element (the JSON string inside the data
    // script is inert: the element's content is not parsed as markup).
    let outside_json = page.replace(embedded_json(&page), "");
    assert!(!outside_json.contains("<img"), "trace text became markup");
    assert!(page.contains("evil&lt;/script&gt;&lt;img src=x"));
}

#[test]
fn nothing_on_the_page_points_off_it() {
    let page = html_of(&sample::qwen3());
    let lower = page.to_ascii_lowercase();
    for attribute in ["src=", "href=", "url("] {
        for (at, _) in lower.match_indices(attribute) {
            let value = &lower[at + attribute.len()..(at + attribute.len() + 12).min(lower.len())];
            let value = value.trim_start_matches(['"', '\'']);
            assert!(
                !value.starts_with("http:")
                    && !value.starts_with("https:")
                    && !value.starts_with("//"),
                "{attribute}{value}"
            );
        }
    }
    assert!(page.contains("default-src 'none'"));
}

#[test]
fn kernel_cells_name_their_json_fields_and_show_the_json_values() {
    let report = sample::qwen3();
    let page = html_of(&report);
    for (s, stage) in report.stages.iter().enumerate() {
        for (k, row) in stage.kernels.iter().enumerate() {
            let cell = format!(
                "data-path=\"/stages/{s}/kernels/{k}/gpu_time_us\">{:.3}</td>",
                row.gpu_time_us
            );
            assert!(page.contains(&cell), "{cell}");
            let launches = format!(
                "data-path=\"/stages/{s}/kernels/{k}/launches\">{}</td>",
                row.launches
            );
            assert!(page.contains(&launches), "{launches}");
        }
    }
}

#[test]
fn a_chart_appears_only_where_its_stage_has_data() {
    let mut report = sample::qwen3();
    let page = html_of(&report);
    assert!(!page.contains("data-chart=\"waterfall\""));
    assert!(!page.contains("data-chart=\"histogram\""));
    assert!(!page.contains("data-chart=\"roofline\""));
    assert!(!page.contains("data-chart=\"ranks\""));
    assert!(page.contains("data-chart=\"families\""));
    report.stages[1].timeline = Some(StageTimeline {
        steps: vec![Step {
            wall_us: 5.0,
            compute_us: 5.0,
            ..Step::default()
        }],
        histogram: vec![GapBin {
            lo_us: 0.0,
            hi_us: Some(5.0),
            count: 2,
            total_us: 3.5,
        }],
        ..StageTimeline::default()
    });
    let page = html_of(&report);
    assert_eq!(
        page.matches("data-chart=\"waterfall\" data-stage=\"1\"")
            .count(),
        1
    );
    assert_eq!(
        page.matches("data-chart=\"histogram\" data-stage=\"1\"")
            .count(),
        1
    );
    assert!(page.contains("data-path=\"/stages/1/timeline/histogram/0/count\">2</td>"));
}

#[test]
fn a_placeholder_in_the_template_is_filled_once_and_never_in_a_value() {
    assert_eq!(
        fill("a{{x}}b{{y}}", &[("x", "{{y}}"), ("y", "2")]),
        "a{{y}}b2"
    );
    assert_eq!(fill("{{z}}", &[]), "{{z}}");
}
