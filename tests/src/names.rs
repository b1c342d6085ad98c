//! Kernel names as a correct report gives them, for the generators' ground truths and
//! the recount that checks them.

/// The predecessor's canonical-name rule: a `void …(…)` name loses its last balanced
/// parenthesised group (the parameter list).
pub fn canonical_name(raw: &str) -> String {
    // A trailing parameter list is cut when it directly follows a name or template
    // arguments (a C++ signature, `void` or not); `Memset (Device)` keeps its group.
    if !raw.ends_with(')') {
        return raw.to_string();
    }
    let mut depth = 0;
    for (i, c) in raw.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = &raw[..i];
                    let follows_name = head
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '>');
                    if (follows_name || raw.starts_with("void ")) && !head.trim().is_empty() {
                        return head.trim_end().to_string();
                    }
                    return raw.to_string();
                }
            }
            _ => {}
        }
    }
    raw.to_string()
}
