//! Kernel names: the canonical name rows are grouped by, and a short form for tables.
//! A leaf module: the analyses group rows by these names and the renderers shorten them,
//! so it depends on neither.
//!
//! Canonical name (the predecessor's grouping key, with two fixes): demangle an Itanium
//! `_Z...` name,
//! strip and collapse whitespace, mask hex addresses (`0x7f3a` -> `0xADDR`), and cut the
//! trailing parameter list of a C++ signature (`void foo<int>(float*, int)` ->
//! `void foo<int>`). Fixes: an address is masked only where a token starts, so the
//! tile shape `MT320x224x64` stays as it is; and the parameter list is cut from any
//! signature (`...::type vllm::fused_add_rms_norm_kernel<...>(...)`,
//! `ncclDevKernel_AllGather_RING_LL(...)`), not only from `void ...` ones. Text such as
//! `Memset (Device)` is not a signature and is kept.

/// Strips and collapses every whitespace run to one space.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The demangled form of an Itanium-mangled name (`_ZN5aiter...`), if it is one.
pub(crate) fn demangle(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    if !trimmed.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(trimmed.as_bytes()).ok()?;
    symbol.demangle().ok()
}

/// The name kernel rows are grouped by (see the module docs).
pub(crate) fn canonical_name(raw: &str) -> String {
    let text = demangle(raw).unwrap_or_else(|| raw.to_string());
    let text = mask_addresses(&normalize(&text));
    cut_parameter_list(&text).to_string()
}

/// Replaces each `0x<hex digits>` that starts a token with `0xADDR`.
fn mask_addresses(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let starts_token = i == 0 || !is_ident_byte(bytes[i - 1]);
        let is_hex_prefix = bytes[i] == b'0' && bytes.get(i + 1) == Some(&b'x');
        if starts_token && is_hex_prefix {
            let digits = bytes[i + 2..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
            if digits > 0 {
                out.push_str(&text[copied..i]);
                out.push_str("0xADDR");
                i += 2 + digits;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `name<args>(params)` -> `name<args>`: the last balanced parenthesised group is cut
/// when the text ends with it and it directly follows a name or a template argument
/// list (a C++ signature). `Memcpy DtoD (Device -> Device)` has a space before its
/// group and is kept.
fn cut_parameter_list(text: &str) -> &str {
    if !text.ends_with(')') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = &text[..i];
                    let follows_name = head
                        .as_bytes()
                        .last()
                        .is_some_and(|&b| is_ident_byte(b) || b == b'>');
                    let is_signature = follows_name || text.starts_with("void ");
                    return if is_signature && !head.trim().is_empty() {
                        head.trim_end()
                    } else {
                        text
                    };
                }
            }
            _ => {}
        }
    }
    text
}

/// Template argument lists longer than this are shortened by [`short_name`].
pub(crate) const SHORT_ARGS_MAX: usize = 48;

/// Names longer than this (after shortening the argument lists) keep their head and
/// tail around a `…` in [`short_name`].
pub(crate) const SHORT_NAME_MAX: usize = 100;

/// A shorter form of a canonical name for text and markdown tables:
/// - template argument lists nested inside others become `<…>`;
/// - a top-level list longer than `args_max` keeps its leading arguments up to that
///   length, then `…` (`<std::bfloat16_t, std::bfloat16_t, 256, 16, true, …>`), so rows
///   that differ in their first arguments stay distinct;
/// - a name still longer than [`SHORT_NAME_MAX`] characters (hipBLASLt's `Cijk_...`
///   names run to 600) keeps its head and tail around `…`.
///
/// JSON keeps the whole name.
///
/// `void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>,
/// std::array<char*, 1ul> >` -> `void at::native::vectorized_elementwise_kernel<4,
/// at::native::FillFunctor<…>, std::array<…> >`.
pub(crate) fn short_name(name: &str, args_max: usize) -> String {
    let collapsed = collapse_template_args(name, 2);
    let mut out = String::with_capacity(collapsed.len());
    let mut last = 0;
    for (open, close) in template_lists(&collapsed, 1) {
        let args = &collapsed[open + 1..close];
        if args.chars().count() > args_max {
            out.push_str(&collapsed[last..=open]);
            out.push_str(&leading_args(args, args_max));
            last = close;
        }
    }
    out.push_str(&collapsed[last..]);
    cut_middle(&out, SHORT_NAME_MAX)
}

/// The first arguments of a template argument list that fit in `max` characters,
/// followed by `…` (just `…` when not even the first fits).
fn leading_args(args: &str, max: usize) -> String {
    // Brackets as in `template_lists`: a `>` inside parentheses is an operator.
    let mut open: Vec<char> = Vec::new();
    let mut kept = 0;
    // Counted as we go, not per comma: re-counting `args[..i]` at every comma made a
    // hostile name with many commas quadratic.
    let leading_blanks = args.chars().take_while(|c| c.is_whitespace()).count();
    // Whitespace characters that end `args[..i]`; `seen` below counts all of them.
    let mut trailing_blanks = 0;
    for (seen, (i, c)) in args.char_indices().enumerate() {
        match c {
            '<' | '(' | '{' => open.push(c),
            ')' | '}' => {
                let opener = if c == ')' { '(' } else { '{' };
                while open.pop().is_some_and(|o| o != opener) {}
            }
            '>' if open.last() == Some(&'<') => {
                open.pop();
            }
            ',' if open.is_empty() => {
                // == args[..i].trim().chars().count()
                if seen.saturating_sub(leading_blanks + trailing_blanks) > max {
                    break;
                }
                kept = i;
            }
            _ => {}
        }
        trailing_blanks = if c.is_whitespace() {
            trailing_blanks + 1
        } else {
            0
        };
    }
    if kept == 0 {
        "…".to_string()
    } else {
        format!("{}, …", args[..kept].trim())
    }
}

/// `text` if it has at most `max` characters, else its head and tail around `…`.
fn cut_middle(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max || max < 8 {
        return text.to_string();
    }
    let head = (max - 1) * 2 / 3;
    let tail = max - 1 - head;
    let mut out: String = text.chars().take(head).collect();
    out.push('…');
    out.extend(text.chars().skip(count - tail));
    out
}

/// Replaces the contents of every template argument list at `depth` (1 = outermost)
/// with `…`.
fn collapse_template_args(name: &str, depth: usize) -> String {
    let mut out = String::with_capacity(name.len());
    let mut last = 0;
    for (open, close) in template_lists(name, depth) {
        out.push_str(&name[last..=open]);
        out.push('…');
        last = close;
    }
    out.push_str(&name[last..]);
    out
}

/// Byte positions `(open '<', close '>')` of the template argument lists at `depth`.
/// A `>` inside parentheses (`std::enable_if<((8)>(0))>`) is an operator, not a
/// closing bracket, and `operator<<`-like stray brackets are tolerated.
fn template_lists(name: &str, depth: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut found = Vec::new();
    for (i, b) in name.bytes().enumerate() {
        match b {
            b'<' | b'(' => stack.push((b, i)),
            b')' => {
                // Close the paren, dropping any unbalanced '<' opened inside it.
                while let Some((open, _)) = stack.pop() {
                    if open == b'(' {
                        break;
                    }
                }
            }
            b'>' if stack.last().is_some_and(|&(open, _)| open == b'<') => {
                let (_, at) = stack.pop().unwrap_or((b'<', i));
                let angle_depth = stack.iter().filter(|&&(open, _)| open == b'<').count() + 1;
                if angle_depth == depth {
                    found.push((at, i));
                }
            }
            _ => {}
        }
    }
    // Lists nested in a collapsed list are inside an outer one; keep outermost only.
    let mut outermost: Vec<(usize, usize)> = Vec::with_capacity(found.len());
    found.sort_unstable();
    for (open, close) in found {
        if outermost.last().is_none_or(|&(_, c)| open > c) {
            outermost.push((open, close));
        }
    }
    outermost.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_cuts_parameters_and_masks_addresses() {
        assert_eq!(
            canonical_name("void foo<int>(float*, int)"),
            "void foo<int>"
        );
        assert_eq!(canonical_name("  Memset   (Device) "), "Memset (Device)");
        assert_eq!(
            canonical_name("Memcpy DtoD (Device -> Device)"),
            "Memcpy DtoD (Device -> Device)"
        );
        assert_eq!(canonical_name("kernel_at 0x7f3A9c,x"), "kernel_at 0xADDR,x");
        // A tile shape is not an address.
        assert_eq!(
            canonical_name("Cijk_Alik_MT320x224x64_MI16x16x1"),
            "Cijk_Alik_MT320x224x64_MI16x16x1"
        );
        assert_eq!(
            canonical_name("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllGather_RING_LL"
        );
        assert_eq!(
            canonical_name(
                "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type \
                 vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, float, int)"
            ),
            "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type \
             vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>"
        );
        // Parentheses inside template arguments are kept.
        assert_eq!(
            canonical_name("void k<(vllm::Fp8KVCacheDataType)1>(int)"),
            "void k<(vllm::Fp8KVCacheDataType)1>"
        );
    }

    #[test]
    fn mangled_names_are_demangled_then_canonical() {
        let raw = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib";
        let name = canonical_name(raw);
        assert!(
            name.starts_with("void aiter::add_rmsnorm_quant_kernel<"),
            "{name}"
        );
        assert!(name.ends_with('>'), "{name}");
        assert_eq!(demangle("not_mangled"), None);
        assert_eq!(demangle("_Zgarbage!"), None);
    }

    #[test]
    fn short_name_collapses_nested_and_long_template_lists() {
        let name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >";
        assert_eq!(
            short_name(name, 60),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, std::array<…> >"
        );
        assert_eq!(
            short_name(name, 20),
            "void at::native::vectorized_elementwise_kernel<4, …>"
        );
        assert_eq!(
            short_name(name, 0),
            "void at::native::vectorized_elementwise_kernel<…>"
        );
        // Rows that differ in their leading arguments stay distinct.
        assert_eq!(
            short_name(
                "void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, true, false, true, 1>",
                48
            ),
            "void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, true, …>"
        );
        // Very long plain names keep head and tail.
        let cijk = format!("Cijk_Alik_Bljk_MT256x32x64_{}_WG64_4_1", "X".repeat(500));
        let short = short_name(&cijk, 48);
        assert_eq!(short.chars().count(), SHORT_NAME_MAX);
        assert!(short.starts_with("Cijk_Alik_Bljk_MT256x32x64_"), "{short}");
        assert!(short.ends_with("X_WG64_4_1"), "{short}");
        assert!(short.contains('…'), "{short}");
        assert_eq!(
            short_name(
                "void vllm::rotary_embedding_kernel<c10::BFloat16, true>",
                48
            ),
            "void vllm::rotary_embedding_kernel<c10::BFloat16, true>"
        );
        assert_eq!(
            short_name("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", 48),
            "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"
        );
        // `>` inside parentheses does not close a list.
        assert_eq!(
            short_name("std::enable_if<(((8)>(0))), void>::type f<a<b>>", 48),
            "std::enable_if<(((8)>(0))), void>::type f<a<…>>"
        );
        assert_eq!(
            short_name("std::enable_if<(((8)>(0))), void, int>::type f", 20),
            "std::enable_if<(((8)>(0))), void, …>::type f"
        );
    }

    #[test]
    fn leading_args_counts_trimmed_characters_like_a_recount() {
        // Blanks at either end of the kept prefix do not count; multi-byte characters
        // count once.
        assert_eq!(leading_args("  ab, cd, ef", 2), "ab, …");
        assert_eq!(leading_args("  ab  , cd, ef", 2), "ab, …");
        assert_eq!(leading_args("ab, cd, ef", 1), "…");
        assert_eq!(leading_args("éé, ü, x", 5), "éé, ü, …");
        assert_eq!(leading_args("éé, ü, x", 4), "éé, …");
        assert_eq!(leading_args("a<b, c>, d, e", 10), "a<b, c>, d, …");
        assert_eq!(leading_args("a<b, c>, d, e", 9), "a<b, c>, …");
        // Many top-level commas after a long blank run: linear now; the kept prefix
        // is still the one that fits.
        let hostile = format!("{}x{}", " ".repeat(100_000), ",y".repeat(100_000));
        assert_eq!(leading_args(&hostile, 5), "x,y,y, …");
    }
}
