//! What the diff tests share: writing a pair, running `llm-triage diff`, and reading its
//! JSON with every time taken from the decimal text as integer ns (no float sums).

use std::collections::BTreeMap;
use std::path::Path;

use llm_triage_tests::diff_pairs::{pairs, write_pair, PairTruth};
use serde_json::value::RawValue;

use crate::util::llm_triage;

/// Writes the pair named `name` into `dir` and returns its truth.
pub(super) fn pair(dir: &Path, name: &str) -> PairTruth {
    let spec = pairs()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no diff pair {name}"));
    write_pair(&dir.join(name), &spec).expect("the pair is written")
}

/// One run of the binary: exit code, stdout, stderr.
pub(super) struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub(super) fn run(args: &[&str]) -> Run {
    let out = llm_triage().args(args).output().expect("binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `llm-triage diff BASE NEW --format json EXTRA…`.
pub(super) fn diff(base: &Path, new: &Path, extra: &[&str]) -> Run {
    let (base, new) = (base.display().to_string(), new.display().to_string());
    let mut args = vec!["diff", base.as_str(), new.as_str(), "--format", "json"];
    args.extend_from_slice(extra);
    run(&args)
}

/// [`diff`] that must succeed; its stages.
pub(super) fn diff_stages(base: &Path, new: &Path, extra: &[&str]) -> Vec<Stage> {
    let out = diff(base, new, extra);
    assert_eq!(
        out.code,
        Some(0),
        "diff {} {} {extra:?}: {}",
        base.display(),
        new.display(),
        out.stderr
    );
    stages(&out.stdout)
}

/// Integer ns from a JSON number's decimal text in µs (`-12.345`, `7`, `0.5`): exact, or
/// a panic naming the text when it has more than 3 decimals or an exponent.
pub(super) fn decimal_ns(text: &str) -> i64 {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    assert!(
        digits.bytes().all(|b| b.is_ascii_digit() || b == b'.'),
        "not a plain decimal: {text}"
    );
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    assert!(frac.len() <= 3, "finer than 1 ns: {text}");
    let frac = format!("{frac:0<3}");
    let ns = int.parse::<i64>().expect("integer part") * 1000 + frac.parse::<i64>().unwrap();
    if negative {
        -ns
    } else {
        ns
    }
}

type Object<'a> = BTreeMap<String, &'a RawValue>;

fn object<'a>(raw: &'a RawValue, what: &str) -> Object<'a> {
    serde_json::from_str(raw.get()).unwrap_or_else(|e| panic!("{what}: not an object: {e}"))
}

fn array<'a>(raw: &'a RawValue, what: &str) -> Vec<&'a RawValue> {
    serde_json::from_str(raw.get()).unwrap_or_else(|e| panic!("{what}: not an array: {e}"))
}

fn field<'a>(obj: &Object<'a>, key: &str, what: &str) -> &'a RawValue {
    obj.get(key)
        .copied()
        .unwrap_or_else(|| panic!("{what}: no `{key}`"))
}

fn text(obj: &Object<'_>, key: &str, what: &str) -> String {
    serde_json::from_str(field(obj, key, what).get())
        .unwrap_or_else(|e| panic!("{what}.{key}: not a string: {e}"))
}

fn ns(obj: &Object<'_>, key: &str, what: &str) -> i64 {
    decimal_ns(field(obj, key, what).get())
}

/// One waterfall row, its times per step in exact ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Row {
    pub key: String,
    pub base_ns: i64,
    pub new_ns: i64,
    pub delta_ns: i64,
    pub status: String,
    pub matched_by: String,
}

/// One stage of the diff, its step times per step in exact ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stage {
    pub stage: String,
    pub base_step_ns: i64,
    pub new_step_ns: i64,
    pub delta_ns: i64,
    pub rows: Vec<Row>,
}

impl Stage {
    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }
}

/// The stages of a `diff --format json` output (`{"diff": {"stages": […]}}`).
pub(super) fn stages(json: &str) -> Vec<Stage> {
    let top: Object<'_> = serde_json::from_str(json).expect("the diff is a JSON object");
    let diff = object(field(&top, "diff", "output"), "diff");
    array(field(&diff, "stages", "diff"), "diff.stages")
        .into_iter()
        .map(|raw| {
            let s = object(raw, "stage");
            let name = text(&s, "stage", "stage");
            let what = format!("stage {name}");
            let rows = array(field(&s, "rows", &what), &what)
                .into_iter()
                .map(|raw| {
                    let r = object(raw, &what);
                    let key = text(&r, "key", &what);
                    let what = format!("{what} row {key}");
                    Row {
                        base_ns: ns(&r, "base_us", &what),
                        new_ns: ns(&r, "new_us", &what),
                        delta_ns: ns(&r, "delta_us", &what),
                        status: text(&r, "status", &what),
                        matched_by: text(&r, "matched_by", &what),
                        key,
                    }
                })
                .collect();
            Stage {
                base_step_ns: ns(&s, "base_step_us", &what),
                new_step_ns: ns(&s, "new_step_us", &what),
                delta_ns: ns(&s, "delta_us", &what),
                stage: name,
                rows,
            }
        })
        .collect()
}

/// The `regressions` of a diff's JSON, each as its text.
pub(super) fn regressions(json: &str) -> Vec<String> {
    let top: Object<'_> = serde_json::from_str(json).expect("the diff is a JSON object");
    let diff = object(field(&top, "diff", "output"), "diff");
    array(field(&diff, "regressions", "diff"), "diff.regressions")
        .into_iter()
        .map(|r| r.get().to_string())
        .collect()
}

#[test]
fn decimal_text_becomes_exact_signed_ns() {
    assert_eq!(decimal_ns("12.345"), 12_345);
    assert_eq!(decimal_ns("-0.5"), -500);
    assert_eq!(decimal_ns("-3"), -3_000);
    assert_eq!(decimal_ns("0.001"), 1);
    assert_eq!(decimal_ns("1700000000018.1"), 1_700_000_000_018_100);
}
