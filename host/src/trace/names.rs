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

use std::collections::HashMap;

/// Strips and collapses every whitespace run to one space.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The demangled form of an Itanium-mangled name (`_ZN5aiter...`), if it is one. When
/// cpp_demangle rejects the symbol (it does not know C++20's `Tn` template parameter
/// declarations, which hipcc emits for `sgl_hip::activation::act_and_mul_kernel`), the
/// nested name is read by [`nested_name`] instead, so no table prints a `_Z` symbol.
pub(crate) fn demangle(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    if !trimmed.starts_with("_Z") {
        return None;
    }
    cpp_demangle::Symbol::new(trimmed.as_bytes())
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .or_else(|| nested_name(trimmed))
}

/// The name part of a mangled symbol the full demangler rejects:
/// `_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_...` ->
/// `sgl_hip::activation::act_and_mul_kernel<__hip_bfloat16, …>`. The components
/// (`<length><identifier>`) are read up to the template arguments; of those, the leading
/// ones that are plain type names or simple builtins are kept (so two instances for
/// different types stay two rows) and the rest become `…`.
fn nested_name(symbol: &str) -> Option<String> {
    let mut rest = symbol.strip_prefix("_Z")?.as_bytes();
    let nested = rest.first() == Some(&b'N');
    if nested {
        rest = &rest[1..];
        // cv-qualifiers of a member function (`K` const, `V` volatile) come first.
        while let Some((b'K' | b'V', tail)) = rest.split_first() {
            rest = tail;
        }
    }
    let mut components: Vec<&str> = Vec::new();
    while let Some((ident, tail)) = source_name(rest) {
        components.push(ident);
        rest = tail;
        if !nested {
            break;
        }
    }
    if components.is_empty() {
        return None;
    }
    let mut name = components.join("::");
    if let Some(args) = rest.strip_prefix(b"I") {
        let mut kept: Vec<String> = Vec::new();
        let mut args = args;
        while let Some((arg, tail)) = simple_template_arg(args) {
            kept.push(arg);
            args = tail;
        }
        if args.first() != Some(&b'E') {
            kept.push("…".to_string());
        }
        name.push('<');
        name.push_str(&kept.join(", "));
        name.push('>');
    }
    Some(name)
}

/// `<decimal length><identifier>` at the start of `bytes`: the identifier and the rest.
fn source_name(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let len: usize = std::str::from_utf8(&bytes[..digits]).ok()?.parse().ok()?;
    let ident = bytes.get(digits..digits + len)?;
    if len == 0 || !ident.iter().all(|&b| is_ident_byte(b)) {
        return None;
    }
    Some((std::str::from_utf8(ident).ok()?, &bytes[digits + len..]))
}

/// One template argument the fallback understands: a type by name, a builtin type, or
/// an integer or bool literal (`Li64E`, `Lb1E`).
fn simple_template_arg(bytes: &[u8]) -> Option<(String, &[u8])> {
    if let Some((ident, tail)) = source_name(bytes) {
        return Some((ident.to_string(), tail));
    }
    let builtins: [(&str, &str); 12] = [
        ("DF16b", "std::bfloat16_t"),
        ("DF16_", "std::float16_t"),
        ("Dh", "half"),
        ("f", "float"),
        ("d", "double"),
        ("i", "int"),
        ("j", "unsigned int"),
        ("l", "long"),
        ("m", "unsigned long"),
        ("b", "bool"),
        ("c", "char"),
        ("h", "unsigned char"),
    ];
    for (code, spelled) in builtins {
        if let Some(tail) = bytes.strip_prefix(code.as_bytes()) {
            return Some((spelled.to_string(), tail));
        }
    }
    let literal = bytes.strip_prefix(b"L")?;
    let (kind, value) = literal.split_first()?;
    let end = value.iter().position(|&b| b == b'E')?;
    let number = std::str::from_utf8(&value[..end]).ok()?;
    let number = number
        .strip_prefix('n')
        .map_or(number.to_string(), |n| format!("-{n}"));
    if number.is_empty()
        || !number
            .trim_start_matches('-')
            .bytes()
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let text = match kind {
        b'b' if number == "0" => "false".to_string(),
        b'b' if number == "1" => "true".to_string(),
        b'i' | b'j' | b'l' | b'm' => number,
        _ => return None,
    };
    Some((text, &value[end + 1..]))
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
/// - a leading `void` and any other return type are dropped (`std::enable_if<…>::type
///   vllm::rms_norm_kernel<…>` -> `vllm::rms_norm_kernel<…>`): the kernel's own name
///   is what tells rows apart;
/// - template argument lists nested inside others become `<…>`;
/// - a top-level list longer than `args_max` keeps its leading arguments up to that
///   length, then `…` (`<std::bfloat16_t, std::bfloat16_t, 256, 16, true, …>`), so rows
///   that differ in their first arguments stay distinct; the first argument is always
///   kept (`cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x64_64x6_tn_align8>`:
///   that argument is the kernel);
/// - a name still longer than [`SHORT_NAME_MAX`] characters shortens its qualifier, never
///   the last `::name`; a plain name that long (hipBLASLt's `Cijk_...` names run to 600)
///   keeps its head and tail around `…`.
///
/// JSON keeps the whole name; [`distinct_short_names`] tells colliding rows apart.
///
/// `void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>,
/// std::array<char*, 1ul> >` -> `at::native::vectorized_elementwise_kernel<4,
/// at::native::FillFunctor<…>, std::array<…> >`.
pub(crate) fn short_name(name: &str, args_max: usize) -> String {
    let collapsed = collapse_template_args(without_return_type(name), 2);
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
    fit_keeping_own_name(&out, SHORT_NAME_MAX)
}

/// The short names of one table's rows, each distinct: where two rows would print the
/// same [`short_name`], each of them gets the first part of its full name that differs
/// from the others, in brackets (`flash::FlashAttnFwdSm90<…> [Is_causal=true…]`). Rows
/// whose full names differ only in what display drops (a return type) are numbered.
pub(crate) fn distinct_short_names(names: &[&str], args_max: usize) -> Vec<String> {
    let mut shown: Vec<String> = names.iter().map(|n| short_name(n, args_max)).collect();
    // Grouped, not compared pairwise: a hostile trace may hold many thousand rows.
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, short) in shown.iter().enumerate() {
        groups.entry(short.clone()).or_default().push(i);
    }
    for rows in groups.values().filter(|rows| rows.len() > 1) {
        for &i in rows {
            let mine = without_return_type(names[i]);
            let differs_at = rows
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| common_prefix_len(mine, without_return_type(names[j])))
                .max()
                .unwrap_or(0);
            if let Some(part) = differing_part(mine, differs_at) {
                shown[i] = format!("{} [{part}]", shown[i]);
            }
        }
    }
    // Whatever still collides (the same text after all) is numbered in row order.
    let mut seen: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, short) in shown.iter().enumerate() {
        seen.entry(short.clone()).or_default().push(i);
    }
    for rows in seen.values().filter(|rows| rows.len() > 1) {
        for (n, &i) in rows.iter().enumerate() {
            shown[i] = format!("{} #{}", shown[i], n + 1);
        }
    }
    shown
}

/// Characters of a differing part that [`distinct_short_names`] shows.
const DIFFERING_PART_MAX: usize = 40;

/// Bytes that `a` and `b` share at their start, on a character boundary.
fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

/// The template argument (or word) of `name` that holds byte `at`, from its start, at most
/// [`DIFFERING_PART_MAX`] characters and always including `at`; `None` past the end.
fn differing_part(name: &str, at: usize) -> Option<String> {
    if at >= name.len() {
        return None;
    }
    let start = name[..at].rfind(['<', ',', ' ', '(']).map_or(0, |i| i + 1);
    let start = if name[start..at].chars().count() > DIFFERING_PART_MAX / 2 {
        name[..at]
            .char_indices()
            .rev()
            .nth(DIFFERING_PART_MAX / 2 - 1)
            .map_or(start, |(i, _)| i)
    } else {
        start
    };
    let part: String = name[start..].chars().take(DIFFERING_PART_MAX).collect();
    let cut = part.len() < name.len() - start;
    let part = part.trim();
    let lead = if start > 0 { "…" } else { "" };
    let tail = if cut { "…" } else { "" };
    Some(format!("{lead}{part}{tail}"))
}

/// Bracket depth while walking a C++ name: `<…>`, `(…)` and `{…}` nest, and a `>` inside
/// parentheses is an operator, not the end of a template list. `at_top_level(c)` takes
/// the next character and says whether it stands outside every bracket (a bracket that
/// opens or closes a level is never at the top level itself).
#[derive(Default)]
struct Brackets {
    open: Vec<char>,
}

impl Brackets {
    fn at_top_level(&mut self, c: char) -> bool {
        match c {
            '<' | '(' | '{' => self.open.push(c),
            ')' | '}' => {
                let opener = if c == ')' { '(' } else { '{' };
                while self.open.pop().is_some_and(|o| o != opener) {}
            }
            '>' if self.open.last() == Some(&'<') => {
                self.open.pop();
            }
            _ => return self.open.is_empty(),
        }
        false
    }
}

/// `name` without a leading return type: the text after the last space outside
/// brackets, when what comes before it is a type (`void`, or a qualified or templated
/// name) and what follows is a name. `Memcpy DtoD (Device -> Device)` is kept.
fn without_return_type(name: &str) -> &str {
    let mut brackets = Brackets::default();
    let mut last_space = None;
    let mut spaces = 0;
    for (i, c) in name.char_indices() {
        if brackets.at_top_level(c) && c == ' ' {
            last_space = Some(i);
            spaces += 1;
        }
    }
    // One type, one name: `Memcpy PtoP`-like text of several words is no signature.
    let Some(space) = last_space.filter(|_| spaces == 1) else {
        return name;
    };
    let (head, tail) = (&name[..space], &name[space + 1..]);
    const BUILTIN_TYPES: [&str; 8] = [
        "void", "int", "unsigned", "long", "float", "double", "bool", "char",
    ];
    let head_is_type =
        BUILTIN_TYPES.contains(&head) || head.ends_with(['>', '*', '&']) || head.contains("::");
    let tail_is_name = tail.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        || tail.starts_with("(anonymous namespace)");
    if head_is_type && tail_is_name {
        tail
    } else {
        name
    }
}

/// `text` in at most `max` characters without touching its last `::name`: the qualifier
/// before it is cut first (`very::long::…::kernel<…>`); a name with no qualifier to cut
/// keeps its head and tail around `…`.
fn fit_keeping_own_name(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let own_start = last_top_level_scope(text).map_or(0, |i| i + 2);
    let (qualifier, own) = text.split_at(own_start);
    let own_len = own.chars().count();
    if qualifier.is_empty() || own_len + 8 > max {
        return cut_middle(text, max);
    }
    let budget = max - own_len;
    let mut kept: String = qualifier.chars().take(budget.saturating_sub(3)).collect();
    kept.push_str("…::");
    kept.push_str(own);
    kept
}

/// Byte position of the last `::` outside template lists and parentheses.
fn last_top_level_scope(text: &str) -> Option<usize> {
    let mut brackets = Brackets::default();
    let mut found = None;
    for (i, c) in text.char_indices() {
        if brackets.at_top_level(c) && c == ':' && text.as_bytes().get(i + 1) == Some(&b':') {
            found = Some(i);
        }
    }
    found
}

/// The first arguments of a template argument list that fit in `max` characters,
/// followed by `…` (just `…` when not even the first fits).
fn leading_args(args: &str, max: usize) -> String {
    let mut brackets = Brackets::default();
    let mut kept = 0;
    // Counted as we go, not per comma: re-counting `args[..i]` at every comma made a
    // hostile name with many commas quadratic.
    let leading_blanks = args.chars().take_while(|c| c.is_whitespace()).count();
    // Whitespace characters that end `args[..i]`; `seen` below counts all of them.
    let mut trailing_blanks = 0;
    for (seen, (i, c)) in args.char_indices().enumerate() {
        if brackets.at_top_level(c) && c == ',' {
            // == args[..i].trim().chars().count()
            if seen.saturating_sub(leading_blanks + trailing_blanks) > max {
                break;
            }
            kept = i;
        }
        trailing_blanks = if c.is_whitespace() {
            trailing_blanks + 1
        } else {
            0
        };
    }
    if kept == 0 {
        // Not even the first argument fits: keep it anyway (it may be the kernel itself,
        // as in `cutlass::Kernel2<cutlass_80_tensorop_…>`), unless it is the only one.
        let first = first_arg(args);
        if first.len() == args.trim().len() {
            first.to_string()
        } else {
            format!("{first}, …")
        }
    } else {
        format!("{}, …", args[..kept].trim())
    }
}

/// The first top-level argument of a template argument list, trimmed.
fn first_arg(args: &str) -> &str {
    let mut brackets = Brackets::default();
    for (i, c) in args.char_indices() {
        if brackets.at_top_level(c) && c == ',' {
            return args[..i].trim();
        }
    }
    args.trim()
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
    fn symbols_the_demangler_rejects_read_their_nested_name() {
        // From AMD-AGI__TraceLens__sglang_Qwen3-8B_decode: C++20 `Tn` in the arguments.
        let raw = "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i";
        assert_eq!(
            canonical_name(raw),
            "sgl_hip::activation::act_and_mul_kernel<__hip_bfloat16, …>"
        );
        // Other leading arguments stay, so two instances stay two rows.
        assert_eq!(
            nested_name("_ZN3foo6kernelILi64ELb1EDF16bTnPFvvEEEvv"),
            Some("foo::kernel<64, true, std::bfloat16_t, …>".to_string())
        );
        assert_eq!(nested_name("_Z4siluv"), Some("silu".to_string()));
    }

    #[test]
    fn short_name_collapses_nested_and_long_template_lists() {
        let name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >";
        assert_eq!(
            short_name(name, 60),
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, std::array<…> >"
        );
        assert_eq!(
            short_name(name, 20),
            "at::native::vectorized_elementwise_kernel<4, …>"
        );
        // The first argument always stays.
        assert_eq!(
            short_name(name, 0),
            "at::native::vectorized_elementwise_kernel<4, …>"
        );
        // Rows that differ in their leading arguments stay distinct.
        assert_eq!(
            short_name(
                "void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, true, false, true, 1>",
                48
            ),
            "aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, true, …>"
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
            "vllm::rotary_embedding_kernel<c10::BFloat16, true>"
        );
        assert_eq!(
            short_name("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", 48),
            "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"
        );
        // `>` inside parentheses does not close a list.
        assert_eq!(
            short_name("std::enable_if<(((8)>(0))), void>::type f<a<b>>", 48),
            "f<a<…>>"
        );
        assert_eq!(
            short_name("std::enable_if<(((8)>(0))), void, int>::type f", 20),
            "f"
        );
    }

    #[test]
    fn short_names_drop_return_types_and_keep_the_kernels_own_name() {
        // From the vLLM traces: the return type used to be kept and the name cut.
        let norm =
            "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type \
                    vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>";
        assert_eq!(
            short_name(norm, SHORT_ARGS_MAX),
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>"
        );
        // The template argument is the kernel.
        assert_eq!(
            short_name(
                "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x64_64x6_tn_align8>",
                SHORT_ARGS_MAX
            ),
            "cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x64_64x6_tn_align8>"
        );
        // A long qualifier is cut, never the last `::name`.
        let deep = format!("void {}::the_kernel<int>", "namespace_part".repeat(10));
        let short = short_name(&deep, SHORT_ARGS_MAX);
        assert!(short.ends_with("…::the_kernel<int>"), "{short}");
        assert!(short.chars().count() <= SHORT_NAME_MAX, "{short}");
        // Not signatures: kept.
        assert_eq!(
            short_name("Memcpy DtoD (Device -> Device)", SHORT_ARGS_MAX),
            "Memcpy DtoD (Device -> Device)"
        );
        assert_eq!(
            short_name(
                "void (anonymous namespace)::clamp_position_kernel<long>",
                48
            ),
            "(anonymous namespace)::clamp_position_kernel<long>"
        );
    }

    #[test]
    fn rows_that_would_print_the_same_keep_their_first_differing_part() {
        // Two FA3 forward instances differ deep in a nested template argument.
        let a = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>, true, false>>>>";
        let b = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>, false, false>>>>";
        let plain = "nvjet_tst_64x64";
        assert_eq!(short_name(a, 48), short_name(b, 48));
        let shown = distinct_short_names(&[a, plain, b], 48);
        assert_ne!(shown[0], shown[2], "{shown:?}");
        assert_eq!(shown[1], plain);
        assert!(shown[0].starts_with(&short_name(a, 48)), "{shown:?}");
        assert!(shown[0].contains("true"), "{shown:?}");
        assert!(shown[2].contains("false, false"), "{shown:?}");
        // Names that differ only in what display drops are numbered.
        let shown = distinct_short_names(&["void k<int>", "int k<int>"], 48);
        assert_eq!(shown, ["k<int> #1", "k<int> #2"]);
    }

    #[test]
    fn leading_args_counts_trimmed_characters_like_a_recount() {
        // Blanks at either end of the kept prefix do not count; multi-byte characters
        // count once.
        assert_eq!(leading_args("  ab, cd, ef", 2), "ab, …");
        assert_eq!(leading_args("  ab  , cd, ef", 2), "ab, …");
        // The first argument stays even when it does not fit.
        assert_eq!(leading_args("ab, cd, ef", 1), "ab, …");
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
