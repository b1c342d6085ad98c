//! `server_args.json` is read only from the input's own capture layout (issue 15 point
//! 7): one planted in a parent directory (a shared `/tmp`) naming another model and TP size
//! changes nothing, and the file that is used is named in every report format.

use std::path::Path;

use super::support::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn report(input: &Path, format: &str) -> String {
    let ran = run(&[
        "--framework",
        "sglang",
        "--format",
        format,
        "--input",
        input.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    ran.stdout
}

#[test]
fn a_planted_parent_server_args_is_ignored_and_the_one_used_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let planted = dir.path().join("server_args.json");
    write(
        &planted,
        r#"{"model_path": "planted/Other-70B", "tp_size": 8}"#,
    );
    let trace = dir.path().join("run/trace.json");
    write(&trace, &trace_text(&valid_events()));
    for input in [trace.clone(), dir.path().join("run")] {
        let json: serde_json::Value = serde_json::from_str(&report(&input, "json")).unwrap();
        assert_eq!(
            json["model"],
            serde_json::Value::Null,
            "{}",
            input.display()
        );
        assert_eq!(json["server_args"], serde_json::json!({}));
        assert_eq!(json["server_args_path"], serde_json::Value::Null);
        assert!(!report(&input, "markdown").contains("planted"));
    }

    let own = dir.path().join("run/server_args.json");
    write(&own, r#"{"model_path": "Qwen/Qwen3-8B", "tp_size": 1}"#);
    let json: serde_json::Value = serde_json::from_str(&report(&trace, "json")).unwrap();
    assert_eq!(json["model"], "Qwen/Qwen3-8B");
    assert_eq!(json["server_args_path"], own.to_str().unwrap());
    // Whatever quoting a format gives the path, the line names it.
    let own_text = own.display().to_string();
    for format in ["markdown", "text"] {
        let text = report(&trace, format);
        assert!(
            text.lines()
                .any(|l| l.starts_with("Server args file: ") && l.contains(&own_text)),
            "{format}: {text}"
        );
    }
}
