//! How text that came from a trace, a server or a plugin leaves the tool: the one place
//! that makes it safe to show (issue 15, point 18).
//!
//! Such text may hold terminal escape sequences, HTML, backticks, pipes and newlines.
//! Every renderer and every command that prints it goes through these functions:
//!
//! * [`plain`]: control characters (C0 including tab and newline, DEL, C1) and the
//!   bidirectional-override characters are written as Rust escapes (`\u{1b}`, `\n`), so
//!   the text stays on one line and cannot drive a terminal or reorder what is shown.
//! * [`cell`]: `plain`, then cut to [`MAX_CELL_CHARS`] with an ellipsis, for a table cell
//!   (a 70,000-character cell used to panic the padding of `catalog list`).
//! * [`code_span`]: a markdown code span holding the text literally (`<img onerror=…>` is
//!   inert there and `void f<int>` stays readable), safe inside a table row.
//! * [`trace`] marks trace text inside a line the view builds; [`markdown_inline`] turns
//!   the marked parts into code spans and backslash-escapes the rest, and [`plain`] drops
//!   the marks. So the view says once what is trace text, and each format shows it its way.
//! * [`html`]: `plain`, then `&`, `<`, `>`, `"` and `'` as character references, for HTML
//!   text and attribute values; [`html_inline`] turns marked parts into `<code>` elements.

/// The longest table cell shown, in characters; a longer one is cut with `…`. Four times
/// the longest catalog rationale, and far below the 65,535 a format width can pad.
pub(crate) const MAX_CELL_CHARS: usize = 2048;

/// Around trace text inside a view line (private-use characters; [`trace`] removes any
/// the text itself holds, so a trace cannot forge a mark).
const OPEN: char = '\u{e000}';
const CLOSE: char = '\u{e001}';

/// `text` marked as trace text: a code span in markdown, plain in text.
pub(crate) fn trace(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 6);
    out.push(OPEN);
    out.extend(text.chars().filter(|c| !is_mark(*c)));
    out.push(CLOSE);
    out
}

/// `text` on one line with nothing a terminal acts on: control and bidirectional
/// characters escaped (`\u{1b}`, `\n`, `\u{202e}`), trace marks dropped.
pub(crate) fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_mark(c) {
            continue;
        }
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A cell of a plain-text table: [`plain`], cut to [`MAX_CELL_CHARS`].
pub(crate) fn cell(text: &str) -> String {
    cut(&plain(text), MAX_CELL_CHARS)
}

/// `text` cut to at most `max` characters, the last one `…` when anything was cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` as a markdown code span, safe inside a table cell: [`plain`] first (no
/// newline can end the row), pipes escaped (GFM splits cells before it parses spans, and
/// shows `\|` in a span as `|`), and a backtick fence one longer than the longest run of
/// backticks inside, padded with a space where the text starts or ends with a backtick.
/// Cut to [`MAX_CELL_CHARS`]. Empty text is an empty string (a span cannot be empty).
pub(crate) fn code_span(text: &str) -> String {
    let body = cut(&plain(text), MAX_CELL_CHARS).replace('|', "\\|");
    if body.is_empty() {
        return String::new();
    }
    let longest_run = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    // CommonMark strips one space from each end when both are there; pad so a backtick
    // (or a space) at either end is kept.
    let pad = body.starts_with(['`', ' ']) || body.ends_with(['`', ' ']);
    let space = if pad { " " } else { "" };
    format!("{fence}{space}{body}{space}{fence}")
}

/// The text of a line that is one whole code span (as [`code_span`] writes it), else
/// the line unchanged: what a reader of a saved report (`bundle`) takes as the value.
pub(crate) fn code_span_text(line: &str) -> String {
    let run = line.chars().take_while(|c| *c == '`').count();
    let fence = &line[..run];
    let inner = match line.get(run..line.len().saturating_sub(run)) {
        Some(inner) if run > 0 && line.len() > 2 * run && line.ends_with(fence) => inner,
        _ => return line.to_string(),
    };
    let inner = match inner.strip_prefix(' ').and_then(|i| i.strip_suffix(' ')) {
        Some(unpadded) if !unpadded.is_empty() => unpadded,
        _ => inner,
    };
    inner.replace("\\|", "|")
}

/// A view line as markdown: [`trace`]-marked parts as code spans, the rest [`plain`] with
/// what markdown would act on backslash-escaped (`\`, `` ` ``, `<`, `>`, `[`, `|`), so no
/// trace text becomes HTML, a link (none opens without `[`) or a cell break.
pub(crate) fn markdown_inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&markdown_text(&rest[..start]));
        let after = &rest[start + OPEN.len_utf8()..];
        let (inside, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len_utf8()..]),
            None => (after, ""),
        };
        out.push_str(&code_span(inside));
        rest = next;
    }
    out.push_str(&markdown_text(rest));
    out
}

/// Tool text (and unmarked text) for markdown: [`plain`], markdown punctuation escaped.
fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in plain(text).chars() {
        if matches!(c, '\\' | '`' | '<' | '>' | '[' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` for HTML element content or a quoted attribute value: [`plain`] (one line,
/// nothing a terminal acts on), then the five characters HTML acts on as references.
pub(crate) fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in plain(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A view line as HTML: [`trace`]-marked parts as `<code>` elements, everything
/// [`html`]-escaped, so no trace text becomes markup.
pub(crate) fn html_inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&html(&rest[..start]));
        let after = &rest[start + OPEN.len_utf8()..];
        let (inside, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len_utf8()..]),
            None => (after, ""),
        };
        out.push_str("<code>");
        out.push_str(&html(inside));
        out.push_str("</code>");
        rest = next;
    }
    out.push_str(&html(rest));
    out
}

fn is_mark(c: char) -> bool {
    c == OPEN || c == CLOSE
}

/// Control characters (C0, DEL, C1) and the bidirectional embeddings, overrides and
/// isolates (U+202A..U+202E, U+2066..U+2069), which reorder a line on screen.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_escapes_escape_sequences_newlines_tabs_del_c1_and_bidi_overrides() {
        assert_eq!(
            plain("a\u{1b}[31mb\nc\td\u{7f}e\u{9b}f\u{202e}g é"),
            "a\\u{1b}[31mb\\nc\\td\\u{7f}e\\u{9b}f\\u{202e}g é"
        );
    }

    #[test]
    fn a_code_span_holds_html_literally_and_keeps_templates_readable() {
        assert_eq!(
            code_span("<img src=x onerror=alert(1)>"),
            "`<img src=x onerror=alert(1)>`"
        );
        assert_eq!(code_span("void f<int>"), "`void f<int>`");
    }

    #[test]
    fn a_code_span_fences_backticks_and_escapes_pipes_and_newlines() {
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("``x"), "``` ``x ```");
        assert_eq!(code_span("a|b\nc"), "`a\\|b\\nc`");
        assert_eq!(code_span(""), "");
    }

    #[test]
    fn marked_trace_text_becomes_code_spans_and_the_rest_is_escaped() {
        let line = format!("{} (site share 58%) <b>", trace("x.py:3 f<T>"));
        assert_eq!(
            markdown_inline(&line),
            "`x.py:3 f<T>` (site share 58%) \\<b\\>"
        );
        assert_eq!(plain(&line), "x.py:3 f<T> (site share 58%) <b>");
        // A trace cannot forge a mark to leave its code span.
        let forged = trace(&format!("a{CLOSE}<img>"));
        assert_eq!(markdown_inline(&forged), "`a<img>`");
    }

    #[test]
    fn html_text_holds_no_markup_and_marked_trace_text_becomes_code() {
        assert_eq!(
            html("<img src=x onerror='a'>&\"\u{1b}"),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;&quot;\\u{1b}"
        );
        let line = format!("{} at <b>", trace("f<T>\n</script>"));
        assert_eq!(
            html_inline(&line),
            "<code>f&lt;T&gt;\\n&lt;/script&gt;</code> at &lt;b&gt;"
        );
        let forged = trace(&format!("a{CLOSE}<i>"));
        assert_eq!(html_inline(&forged), "<code>a&lt;i&gt;</code>");
    }

    #[test]
    fn a_code_span_reads_back_as_its_text() {
        for text in ["Qwen/Qwen3-8B", "a`b", "``x", "a|b"] {
            assert_eq!(code_span_text(&code_span(text)), text);
        }
        assert_eq!(code_span_text("plain words"), "plain words");
    }

    #[test]
    fn a_long_cell_is_cut_with_an_ellipsis() {
        let long = "x".repeat(70_000);
        let shown = cell(&long);
        assert_eq!(shown.chars().count(), MAX_CELL_CHARS);
        assert!(shown.ends_with('…'));
        assert_eq!(cell("short"), "short");
    }
}
