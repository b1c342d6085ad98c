//! Number text to values, exactly: microsecond times (`ts`, `dur`) to integer nanoseconds
//! from their decimal text, never via `f64`, so sums of `dur` are exact; and Python's
//! `NaN` / `Infinity` literals, which are not JSON, rewritten to `null` so serde can read
//! the event around them (the value then counts as absent).

use super::raw::{RawText, Time};
use crate::trace::event::Ns;

/// Microseconds (a JSON number or numeric string) to integer nanoseconds, exactly from
/// the decimal text; rounds to the nearest ns past three decimals. `None` for absent,
/// `null` and non-numeric values.
pub(super) fn micros_to_ns(raw: Option<Time>) -> Option<Ns> {
    let text = match raw? {
        Time::Ns(ns) => return Some(ns),
        Time::Text(RawText(text)) => text,
    };
    let text = match text.as_bytes().first() {
        Some(b'"') => text.get(1..text.len().saturating_sub(1))?.trim(),
        _ => text,
    };
    decimal_micros_to_ns(text)
}

#[inline]
pub(super) fn decimal_micros_to_ns(text: &str) -> Option<Ns> {
    plain_micros_to_ns(text.as_bytes()).or_else(|| general_micros_to_ns(text))
}

/// The common case, `digits[.ddd]` with at most 16 integer and 3 fraction digits, in
/// plain integer arithmetic.
fn plain_micros_to_ns(bytes: &[u8]) -> Option<Ns> {
    let mut i = 0;
    let mut whole: u64 = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        whole = whole * 10 + u64::from(bytes[i] - b'0');
        i += 1;
        if i > 16 {
            return None;
        }
    }
    if i == 0 {
        return None;
    }
    let mut fraction: u64 = 0;
    let mut unit: u64 = 1000;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let first = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() && i - first < 3 {
            unit /= 10;
            fraction += u64::from(bytes[i] - b'0') * unit;
            i += 1;
        }
        if i == first {
            return None;
        }
    }
    if i != bytes.len() {
        return None;
    }
    i64::try_from(whole * 1000 + fraction).ok()
}

/// Any decimal number: sign, exponent, more than 3 decimals (rounded to nearest).
fn general_micros_to_ns(text: &str) -> Option<Ns> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut mantissa: u128 = 0;
    let mut digits = 0u32;
    let mut scale: i32 = 3; // micro -> nano
    let mut any_digit = false;
    let mut push = |d: u8, mantissa: &mut u128, scale: &mut i32, fraction: bool| {
        // Beyond 36 significant digits extra digits only shift the exponent.
        if digits < 36 {
            *mantissa = *mantissa * 10 + u128::from(d);
            if *mantissa > 0 {
                digits += 1;
            }
            if fraction {
                *scale -= 1;
            }
        } else if !fraction {
            *scale += 1;
        }
    };
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        push(bytes[i] - b'0', &mut mantissa, &mut scale, false);
        any_digit = true;
        i += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            push(bytes[i] - b'0', &mut mantissa, &mut scale, true);
            any_digit = true;
            i += 1;
        }
    }
    if !any_digit {
        return None;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let exponent: i32 = text[i + 1..].parse().ok()?;
        scale = scale.checked_add(exponent)?;
        i = bytes.len();
    }
    if i != bytes.len() {
        return None;
    }
    let magnitude: u128 = if scale >= 0 {
        mantissa.checked_mul(10u128.checked_pow(scale as u32)?)?
    } else if scale < -38 {
        0
    } else {
        let divisor = 10u128.pow((-scale) as u32);
        let (q, r) = (mantissa / divisor, mantissa % divisor);
        if r >= divisor - r {
            q + 1
        } else {
            q
        }
    };
    let magnitude = i64::try_from(magnitude).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

// ---------------------------------------------------------------------------------------
// Rewriting Python's non-JSON number literals

/// True when `span` holds a bare `NaN` or `Infinity` outside strings.
pub(super) fn has_non_finite(span: &[u8]) -> bool {
    memchr::memmem::find(span, b"NaN").is_some()
        || memchr::memmem::find(span, b"Infinity").is_some()
}

/// Rewrites bare `NaN`, `Infinity` and `-Infinity` (outside strings) to `null`.
pub(super) fn non_finite_to_null(span: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(span.len() + 8);
    let mut i = 0;
    let mut in_string = false;
    while i < span.len() {
        let b = span[i];
        if in_string {
            out.push(b);
            if b == b'\\' && i + 1 < span.len() {
                out.push(span[i + 1]);
                i += 2;
                continue;
            }
            if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        let rest = &span[i..];
        let token = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t));
        match token {
            Some(t) => {
                out.extend_from_slice(b"null");
                i += t.len();
            }
            None => {
                if b == b'"' {
                    in_string = true;
                }
                out.push(b);
                i += 1;
            }
        }
    }
    out
}
