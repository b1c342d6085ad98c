//! Lone UTF-16 surrogate escapes: `\ud800` without the low half that should follow it, a
//! lone low half `\udc00`, or a high half followed by something else. Python's `json`
//! writes and reads them (a kernel name cut mid-character by a C++ profiler does this);
//! serde_json refuses them as invalid JSON, which would reject the whole trace over one
//! name. So an event serde refuses is rewritten with `\ufffd` in each lone half's place
//! (the same six bytes, so error offsets stay right) and read again, and the strings
//! repaired are counted for the report's notes.
//!
//! Only the slow path (an element serde refused) runs this: a well-formed event never
//! pays for it.

/// Whether `span` may hold a surrogate escape (`\ud8..` to `\udf..`, any case): the
/// cheap test before rewriting.
pub(super) fn has_surrogate_escape(span: &[u8]) -> bool {
    memchr::memmem::find_iter(span, b"\\u").any(|i| is_surrogate_at(span, i).is_some())
}

/// The surrogate at `span[i..]` if it starts `\uD800`-`\uDFFF`: its value.
fn is_surrogate_at(span: &[u8], i: usize) -> Option<u16> {
    let hex = span.get(i + 2..i + 6)?;
    if span.get(i..i + 2)? != b"\\u" {
        return None;
    }
    let text = std::str::from_utf8(hex).ok()?;
    let value = u16::from_str_radix(text, 16).ok()?;
    (0xd800..=0xdfff).contains(&value).then_some(value)
}

fn is_high(v: u16) -> bool {
    (0xd800..=0xdbff).contains(&v)
}

fn is_low(v: u16) -> bool {
    (0xdc00..=0xdfff).contains(&v)
}

/// `span` with every lone surrogate escape inside a string replaced by `\ufffd`, and the
/// number of strings that held one. Escaped backslashes (`\\ud800` is text, not an
/// escape) and text outside strings are left alone.
pub(super) fn replace_lone_surrogates(span: &[u8]) -> (Vec<u8>, u64) {
    let mut out = span.to_vec();
    let mut strings = 0u64;
    let mut in_string = false;
    let mut repaired_this_string = false;
    let mut i = 0;
    while i < span.len() {
        let b = span[i];
        if !in_string {
            in_string = b == b'"';
            repaired_this_string = false;
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                i += 1;
            }
            b'\\' => {
                let Some(unit) = is_surrogate_at(span, i) else {
                    // Any other escape: skip the escaped byte with it.
                    i += 2;
                    continue;
                };
                let paired = is_high(unit) && is_surrogate_at(span, i + 6).is_some_and(is_low);
                if paired {
                    i += 12;
                    continue;
                }
                out[i + 2..i + 6].copy_from_slice(b"fffd");
                if !repaired_this_string {
                    repaired_this_string = true;
                    strings += 1;
                }
                i += 6;
            }
            _ => i += 1,
        }
    }
    (out, strings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(text: &str) -> (String, u64) {
        let (out, n) = replace_lone_surrogates(text.as_bytes());
        (String::from_utf8(out).unwrap(), n)
    }

    #[test]
    fn only_lone_halves_inside_strings_are_replaced() {
        assert_eq!(replaced(r#""a\ud800b""#), (r#""a\ufffdb""#.into(), 1));
        assert_eq!(replaced(r#""\udc00""#), (r#""\ufffd""#.into(), 1));
        assert_eq!(
            replaced(r#""\uD800\u0041""#),
            (r#""\ufffd\u0041""#.into(), 1)
        );
        // A high half before a high half: both lone.
        assert_eq!(
            replaced(r#""\ud800\ud800""#),
            (r#""\ufffd\ufffd""#.into(), 1)
        );
        // A pair, an escaped backslash before `ud800`, and two strings of one span.
        assert_eq!(
            replaced(r#""\ud83d\ude00""#),
            (r#""\ud83d\ude00""#.into(), 0)
        );
        assert_eq!(replaced(r#""\\ud800""#), (r#""\\ud800""#.into(), 0));
        assert_eq!(
            replaced(r#"{"a\udfff": "\ud800", "b": 1}"#),
            (r#"{"a\ufffd": "\ufffd", "b": 1}"#.into(), 2)
        );
        // Cut short: nothing to pair with, nothing read past the end.
        assert_eq!(replaced(r#""\ud800"#), (r#""\ufffd"#.into(), 1));
        assert_eq!(replaced(r#""\ud8"#), (r#""\ud8"#.into(), 0));
        assert!(has_surrogate_escape(br#""\uDBFF""#));
        assert!(!has_surrogate_escape(br#""\u00e9 \ue000""#));
    }
}
