//! Lone UTF-16 surrogate escapes (`\ud800`) in kernel names, which Python's json reader
//! accepts: the trace is read, the half becomes U+FFFD, and a note counts the strings.

use super::support::*;

#[test]
fn a_lone_surrogate_in_a_kernel_name_is_replaced_and_counted_not_a_rejected_trace() {
    let dir = tempfile::tempdir().unwrap();
    // serde_json's text of the events, with the escapes written in by hand (serde_json
    // itself cannot hold a lone surrogate).
    let text = trace_text(&valid_events())
        .replacen("\"gemm_kernel\"", "\"gemm\\ud800_kernel\"", 1)
        .replacen(
            "\"rms_norm_kernel\"",
            "\"rms_norm\\udc00\\ud800x_kernel\"",
            1,
        );
    let path = dir.path().join("lone.trace.json");
    std::fs::write(&path, text).unwrap();
    let report = report_of(&path);
    let mut rows = kernel_rows(&report);
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "gemm_kernel",
            "gemm\u{fffd}_kernel",
            "rms_norm_kernel",
            "rms_norm\u{fffd}\u{fffd}x_kernel",
        ]
    );
    let launches: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(launches, 8, "no kernel lost: {rows:?}");
    let notes = notes(&report);
    assert!(
        notes.contains(
            &"lone.trace.json: 2 strings held lone UTF-16 surrogates, replaced with U+FFFD"
                .to_string()
        ),
        "{notes:?}"
    );
}
