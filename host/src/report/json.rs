//! `--format json`: the `Report` value as-is (schema: `model.rs`, versioned by
//! `SCHEMA_VERSION`), pretty-printed, ending in a newline.
//!
//! Two spellings are escaped beyond serde's: `</` as `<\/` and `<!--` as `\u003c!--`
//! (both valid JSON escapes of the same string), so the HTML report can embed this very
//! text in a `<script>` element without a trace's kernel name ending it.

use super::{DiffDocument, DiffReport, Renderer, Report};

pub(crate) struct Json;

impl Renderer for Json {
    fn render(&self, report: &Report) -> String {
        // Serialising plain structs, strings, maps and finite-or-null numbers cannot fail;
        // should it ever, the output still says so in valid JSON.
        let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
            serde_json::json!({ "error": format!("cannot serialise report: {e}") }).to_string()
        });
        text.push('\n');
        script_safe(text)
    }
}

/// `diff --format json`: `{"diff": {...}}` (the `DiffReport` under the key `diff`).
pub(crate) fn render_diff(diff: &DiffReport) -> String {
    let document = DiffDocument { diff: diff.clone() };
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot serialise diff: {e}") }).to_string()
    });
    text.push('\n');
    script_safe(text)
}

/// `text` with `</` and `<!--` spelled with JSON escapes. `<` occurs in JSON text only
/// inside strings (it is no structural character), so replacing it anywhere is safe.
pub(crate) fn script_safe(text: String) -> String {
    if !text.contains("</") && !text.contains("<!--") {
        return text;
    }
    text.replace("<!--", "\\u003c!--").replace("</", "<\\/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    #[test]
    fn json_parses_back_with_every_field() {
        let text = Json.render(&sample::qwen3());
        assert!(text.ends_with("}\n"));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["schema_version"], crate::report::SCHEMA_VERSION);
        assert_eq!(value["framework"]["display_name"], "SGLang");
        assert_eq!(value["model"], "Qwen/Qwen3-8B");
        assert_eq!(value["server_args"]["tp_size"], 2);
        assert_eq!(value["stages"][0]["stage"], "extend/prefill");
        let nvjet = &value["stages"][0]["kernels"][0];
        assert_eq!(nvjet["gpu_time_us"], 27452.8);
        assert_eq!(nvjet["launches"], 216);
        assert_eq!(nvjet["python_locations"][1]["share_pct"], 42.5);
        assert_eq!(
            value["stages"][1]["kernels"][0]["python_locations"],
            serde_json::json!([])
        );
        assert_eq!(value["notes"].as_array().map(Vec::len), Some(1));
        // Exactly the serde view of the value, nothing added or renamed.
        assert_eq!(value, serde_json::to_value(sample::qwen3()).unwrap());
    }

    #[test]
    fn json_never_holds_a_script_end_or_comment_open_yet_parses_back_to_the_same_name() {
        // The HTML report embeds this text in a <script> element: `</script` or `<!--`
        // inside a string must not end or derail it.
        let name = "k</script><!--x<b>";
        let report = sample::report(vec![sample::stage(
            "decode",
            10.0,
            vec![sample::row(name, "gemm", 10.0, 10.0, 1)],
        )]);
        let text = Json.render(&report);
        assert!(!text.contains("</"), "{text}");
        assert!(!text.contains("<!--"), "{text}");
        assert!(text.contains(r#"k<\/script>\u003c!--x<b>"#), "{text}");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["stages"][0]["kernels"][0]["name"], name);
    }
}
