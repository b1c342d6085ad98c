//! The optional facts an event's `args` carry, decoded from their JSON text: a CPU op's
//! shapes (`Input Dims`, `Input type`, `Concrete Inputs`), a kernel's or launch call's
//! geometry (`grid`, `block`), Kineto's `blocks per SM`, a launch call's `kernel`, a
//! memcpy's or memset's `bytes`.
//!
//! Why from text: both parsing tiers hand over the value's text as written (serde as a
//! `RawValue`, the scanner as the span it validated), and this one decoder types it, so
//! the tiers agree by construction. A value of the wrong type, arity or range is `None`,
//! never a malformed event: these are facts a later analysis may use, not what makes an
//! event an event.

use std::borrow::Cow;
use std::num::NonZeroU64;

use super::surrogate::{has_surrogate_escape, replace_lone_surrogates};
use crate::trace::event::{Interner, Sym};

/// `[x, y, z]` of integers that fit a `u32` (`grid`, `block`); anything else is `None`.
/// `text` is valid JSON (the tiers validated it), so a value that splits into three
/// digit-only parts on its commas is exactly a three-integer array.
pub(super) fn dim3(text: &str) -> Option<[u32; 3]> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    let mut parts = inner.split(',');
    let mut out = [0u32; 3];
    for slot in &mut out {
        let part = parts.next()?.trim_matches(is_json_space);
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = part.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// A finite, non-negative number (`blocks per SM`): JSON number text only, so a string
/// or array is `None`, and a value past `f32` is too.
pub(super) fn ratio(text: &str) -> Option<f32> {
    let first = *text.as_bytes().first()?;
    if !(first == b'-' || first.is_ascii_digit()) {
        return None;
    }
    // Through f64, as the number is written; then the f32 it is kept as.
    let value = text.parse::<f64>().ok()? as f32;
    (value.is_finite() && value >= 0.0).then_some(value)
}

/// A positive integer that fits a `u64` (a copy's `bytes`): digits only, so a float,
/// string or negative number is `None`, and so is zero (nothing moved).
pub(super) fn count(text: &str) -> Option<NonZeroU64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>().ok().and_then(NonZeroU64::new)
}

/// The symbol of an array value's text (`Input Dims`, ...), repaired (see [`repaired`])
/// and compacted (see [`compact_json`]); other types are `None`. `lone` counts strings
/// that held a lone surrogate escape.
pub(super) fn array_sym(
    text: &str,
    strings: &mut Interner,
    scratch: &mut String,
    lone: &mut u64,
) -> Option<Sym> {
    if !text.starts_with('[') {
        return None;
    }
    let text = repaired(text, lone);
    Some(strings.intern(compact_json(&text, scratch)))
}

/// How many strings of `text` hold a lone surrogate escape (what [`array_sym`] counts).
pub(super) fn lone_surrogate_strings(text: &str) -> u64 {
    let mut lone = 0;
    repaired(text, &mut lone);
    lone
}

/// A string value's characters (`kernel`); other types are `None`. Borrowed unless it
/// had escapes.
pub(super) fn string_text<'t>(text: &'t str, lone: &mut u64) -> Option<Cow<'t, str>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    let text = repaired(text, lone);
    serde_json::from_str::<String>(&text).ok().map(Cow::Owned)
}

/// `text` with each lone UTF-16 surrogate escape as `\ufffd` (serde_json keeps them in
/// raw text but refuses to decode them; Python writes them), counted per string.
fn repaired<'t>(text: &'t str, lone: &mut u64) -> Cow<'t, str> {
    // The backslash test first: most texts have none, and it is cheaper than the search.
    let bytes = text.as_bytes();
    if memchr::memchr(b'\\', bytes).is_none() || !has_surrogate_escape(bytes) {
        return Cow::Borrowed(text);
    }
    let (bytes, strings) = replace_lone_surrogates(text.as_bytes());
    *lone += strings;
    // Only ASCII escapes were rewritten, so the text is still UTF-8.
    Cow::Owned(String::from_utf8(bytes).unwrap_or_default())
}

/// JSON text without whitespace outside strings, so one shape has one text whatever
/// the writer's indentation (Kineto writes `[[1, 2880], [2880, 25136]]`, a pretty-printer
/// a line per number): `[[1,2880],[2880,25136]]`. Strings are kept as written. Borrows
/// `text` when it has nothing to remove, else builds in `scratch` (reused: no allocation
/// per event once it has grown). `text` is valid JSON, so every string is closed.
pub(super) fn compact_json<'t>(text: &'t str, scratch: &'t mut String) -> &'t str {
    let bytes = text.as_bytes();
    let mut run = 0;
    let mut removed = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                i = after_string(bytes, i + 1);
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => {
                if !removed {
                    scratch.clear();
                    removed = true;
                }
                // A space is one ASCII byte, so both ends are character boundaries.
                scratch.push_str(&text[run..i]);
                run = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if !removed {
        return text;
    }
    scratch.push_str(&text[run..]);
    scratch
}

/// The index after the closing quote of the string whose body starts at `i`.
fn after_string(bytes: &[u8], mut i: usize) -> usize {
    while let Some(k) = memchr::memchr2(b'"', b'\\', bytes.get(i..).unwrap_or_default()) {
        if bytes[i + k] == b'"' {
            return i + k + 1;
        }
        // An escape: skip it and the character it escapes.
        i += k + 2;
    }
    bytes.len()
}

/// JSON's four whitespace characters (not Unicode's wider set).
fn is_json_space(c: char) -> bool {
    matches!(c, ' ' | '\n' | '\r' | '\t')
}
