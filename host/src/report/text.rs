//! `--format text`: the same facts as the markdown report, as aligned plain-text
//! tables for a terminal. Colour (ANSI) only when the caller asks for it.

use super::escape;
use super::markdown::finish;
use super::view::{view, Align, Block, Table, View};
use super::{Renderer, Report, DEFAULT_MIN_SHARE_PCT};

pub(crate) struct Text {
    pub color: bool,
    /// The kernel-table share bar, named in the empty-table row.
    pub min_share_pct: f64,
}

impl Default for Text {
    fn default() -> Self {
        Text {
            color: false,
            min_share_pct: DEFAULT_MIN_SHARE_PCT,
        }
    }
}

impl Renderer for Text {
    fn render(&self, report: &Report) -> String {
        let paint = Paint { on: self.color };
        finish(&document(&view(report, self.min_share_pct), paint))
    }
}

/// A view built elsewhere (the diff's), laid out as this format lays out a report.
pub(super) fn render_view(view: &View, color: bool) -> String {
    finish(&document(view, Paint { on: color }))
}

/// Columns are separated by this much space.
const GAP: &str = "  ";

/// No line is wider than this (characters): long cells wrap inside their column and
/// long notes wrap with an indent, so a report reads in a terminal without scrolling
/// sideways (one note was 639 characters wide). Markdown keeps one row per line.
pub(crate) const LINE_WIDTH: usize = 120;

/// Shares at or above these get a warning colour: where the time goes.
const HOT_SHARE_PCT: f64 = 20.0;
const WARM_SHARE_PCT: f64 = 5.0;

#[derive(Copy, Clone)]
struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn heading(self, text: &str) -> String {
        self.wrap("1", text)
    }

    fn share(self, text: &str, pct: Option<f64>) -> String {
        match pct {
            Some(p) if p >= HOT_SHARE_PCT => self.wrap("1;31", text),
            Some(p) if p >= WARM_SHARE_PCT => self.wrap("33", text),
            _ => text.to_string(),
        }
    }
}

fn document(view: &View, paint: Paint) -> Vec<String> {
    let mut lines = vec![paint.heading(view.title)];
    lines.extend(view.header.iter().flat_map(|l| wrap_text(l, "", "  ")));
    for block in &view.blocks {
        lines.push(String::new());
        lines.extend(block_lines(block, paint));
    }
    if !view.similarity.is_empty() {
        lines.push(String::new());
        lines.push(paint.heading("Similarity Notes (heuristic, not part of the tables)"));
        lines.extend(
            view.similarity
                .iter()
                .flat_map(|n| wrap_text(n, "- ", "  ")),
        );
    }
    if !view.notes.is_empty() {
        lines.push(String::new());
        lines.push(paint.heading("Notes"));
        lines.extend(view.notes.iter().flat_map(|n| wrap_text(n, "- ", "  ")));
    }
    lines
}

fn block_lines(block: &Block, paint: Paint) -> Vec<String> {
    let mut lines = vec![paint.heading(block.title)];
    if block.sections.is_empty() {
        lines.extend(table_lines(&block.placeholder, paint));
        return lines;
    }
    let headings = block.needs_headings();
    for (i, section) in block.sections.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
        }
        if headings {
            lines.push(paint.heading(&format!("[{}]", escape::plain(&section.label))));
        }
        // A section without rows (an overlap stage with one stream) is only its lines.
        let has_table = !section.table.rows.is_empty();
        if has_table {
            lines.extend(table_lines(&section.table, paint));
        }
        if has_table && (section.summary.is_some() || !section.notes.is_empty()) {
            lines.push(String::new());
        }
        lines.extend(section.summary.iter().flat_map(|s| wrap_text(s, "", "  ")));
        lines.extend(section.notes.iter().flat_map(|n| wrap_text(n, "- ", "  ")));
    }
    lines
}

/// Header, a dashed rule, then the rows; a cell of several lines makes its row that
/// many lines tall. Widths count characters, so padding is computed before colouring.
fn table_lines(table: &Table, paint: Paint) -> Vec<String> {
    let rows: Vec<Vec<Vec<String>>> = table
        .rows
        .iter()
        .map(|row| row.cells.iter().map(|cell| cell_lines(cell)).collect())
        .collect();
    let natural: Vec<usize> = (0..table.header.len())
        .map(|c| {
            rows.iter()
                .flat_map(|row| row[c].iter())
                .map(|line| width(line))
                .chain([width(table.header[c])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let widths = fit_columns(natural, table.header);
    // Every cell line and header wrapped to its column.
    let rows: Vec<Vec<Vec<String>>> = rows
        .into_iter()
        .map(|cells| {
            cells
                .into_iter()
                .enumerate()
                .map(|(c, lines)| {
                    lines
                        .iter()
                        .flat_map(|l| wrap_words(l, widths[c]))
                        .collect()
                })
                .collect()
        })
        .collect();
    let header: Vec<Vec<String>> = table
        .header
        .iter()
        .enumerate()
        .map(|(c, h)| wrap_words(h, widths[c]))
        .collect();

    let pad = |text: &str, c: usize| {
        let fill = " ".repeat(widths[c] - width(text));
        match table.align[c] {
            Align::Left => format!("{text}{fill}"),
            Align::Right => format!("{fill}{text}"),
        }
    };
    let header_height = header.iter().map(Vec::len).max().unwrap_or(1);
    let mut lines: Vec<String> = (0..header_height)
        .map(|i| {
            (0..widths.len())
                .map(|c| pad(header[c].get(i).map(String::as_str).unwrap_or(""), c))
                .collect::<Vec<_>>()
                .join(GAP)
        })
        .collect();
    lines.push(
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join(GAP),
    );
    for (row, cells) in table.rows.iter().zip(&rows) {
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            let line = (0..widths.len())
                .map(|c| {
                    let text = cells[c].get(i).map(String::as_str).unwrap_or("");
                    let padded = pad(text, c);
                    // A blank continuation line stays unpainted, so its padding is
                    // trimmed like any trailing space.
                    if Some(c) == table.share_column && !text.is_empty() {
                        paint.share(&padded, row.share_pct)
                    } else {
                        padded
                    }
                })
                .collect::<Vec<_>>()
                .join(GAP);
            lines.push(line);
        }
    }
    lines
}

/// A cell's lines, with any embedded newline splitting a line further.
/// A cell's lines, each escaped and cut ([`escape::cell`]): a newline inside a trace name
/// shows as `\n` rather than breaking the row.
fn cell_lines(cell: &[String]) -> Vec<String> {
    let lines: Vec<String> = cell.iter().map(|l| escape::cell(l)).collect();
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

/// Column widths that fit [`LINE_WIDTH`] with their gaps: the widest column gives up a
/// character at a time, down to its header's longest word (at least 5), so narrow
/// columns keep their values whole and long names and notes wrap.
fn fit_columns(mut widths: Vec<usize>, header: &[&str]) -> Vec<usize> {
    let floor: Vec<usize> = header
        .iter()
        .zip(&widths)
        .map(|(h, &w)| h.split(' ').map(width).max().unwrap_or(0).max(5).min(w))
        .collect();
    let gaps = GAP.len() * widths.len().saturating_sub(1);
    while widths.iter().sum::<usize>() + gaps > LINE_WIDTH {
        let widest = (0..widths.len())
            .filter(|&c| widths[c] > floor[c])
            .max_by_key(|&c| (widths[c], std::cmp::Reverse(c)));
        match widest {
            Some(c) => widths[c] -= 1,
            None => break,
        }
    }
    widths
}

/// `text` in lines of at most `max` characters, broken at spaces; a word longer than a
/// line is cut into pieces.
fn wrap_words(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = width(&current);
            let sep = usize::from(used > 0);
            if used + sep + word.len() <= max {
                if sep == 1 {
                    current.push(' ');
                }
                current.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut current));
                continue;
            }
            // The word alone is too long: cut it.
            let rest = word.split_off(max);
            lines.push(word.iter().collect());
            word = rest;
        }
    }
    if !current.is_empty() || lines.is_empty() {
        lines.push(current);
    }
    lines
}

/// Free text as lines of at most [`LINE_WIDTH`]: `first` before the first line, `indent`
/// before the others.
/// Free text (header lines, summaries, notes), escaped ([`escape::plain`]) and wrapped.
fn wrap_text(text: &str, first: &str, indent: &str) -> Vec<String> {
    wrap_words(
        &escape::plain(text),
        LINE_WIDTH - first.len().max(indent.len()),
    )
    .into_iter()
    .enumerate()
    .map(|(i, line)| format!("{}{line}", if i == 0 { first } else { indent }))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{self, row, site, stage};

    fn two_rows() -> Report {
        let mut gemm = row("nvjet_a", "gemm", 750.0, 1000.0, 12);
        gemm.python_locations = vec![site("a.py:1 f", 60.0), site("b.py:2 g", 40.0)];
        gemm.cpu_ops = vec!["aten::mm".to_string()];
        let memset = row("Memset (Device)", "memory", 250.0, 1000.0, 3);
        sample::report(vec![stage("all", 1000.0, vec![gemm, memset])])
    }

    /// Issue 14 point 12: no text line is wider than the terminal needs, and long
    /// cells and notes keep every word.
    #[test]
    fn no_line_is_wider_than_the_line_width() {
        let long_name = format!(
            "void flash::FlashAttnFwdSm90<{}>",
            "cute::tuple<int, int>, ".repeat(30)
        );
        let mut kernel = row(&long_name, "attention", 750.0, 1000.0, 12);
        kernel.python_locations = vec![site(
            "python/sglang/srt/layers/attention/flashattention_backend.py:812 forward_extend",
            100.0,
        )];
        let mut report = sample::report(vec![stage("all", 1000.0, vec![kernel])]);
        let note = format!("a note naming {long_name} in full");
        report.notes = vec![note.clone()];
        let text = Text::default().render(&report);
        let widest = text.lines().map(width).max().unwrap();
        assert!(widest <= LINE_WIDTH, "{widest}:\n{text}");
        // Every word of the note is still there, in order.
        let words: Vec<&str> = text
            .split("- a note naming ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .take_while(|w| *w != "full")
            .collect();
        assert_eq!(words.join(""), format!("{long_name}in").replace(' ', ""));
    }

    #[test]
    fn columns_are_padded_to_their_widest_cell() {
        // Widths 15, 8, 8, 5, 8, 28, 8, worked out in a scratch python script.
        let text = Text::default().render(&two_rows());
        let expected = "\
Kernel Table
Kernel           Category  GPU time  Share  Launches  Python location (site share)  CPU op
---------------  --------  --------  -----  --------  ----------------------------  --------
nvjet_a          gemm       0.75 ms  75.0%        12  a.py:1 f (site share 60%)     aten::mm
                                                      b.py:2 g (site share 40%)
Memset (Device)  memory     0.25 ms  25.0%         3  unresolved                    -
";
        assert!(text.contains(expected), "{text}");
    }

    #[test]
    fn no_colour_unless_asked() {
        let plain = Text::default().render(&sample::qwen3());
        assert!(!plain.contains('\x1b'), "{plain}");
        let coloured = Text {
            color: true,
            ..Text::default()
        }
        .render(&sample::qwen3());
        assert!(
            coloured.starts_with("\x1b[1mTriage View\x1b[0m\n"),
            "{coloured}"
        );
        // 38.9% is hot (red), 5.3% warm (yellow), 12.5% of decode warm too; the padded
        // cell is coloured whole, so columns stay aligned.
        assert!(coloured.contains("\x1b[1;31m38.9%\x1b[0m"), "{coloured}");
        assert!(coloured.contains("\x1b[33m 5.3%\x1b[0m"), "{coloured}");
        assert!(coloured.contains("\x1b[33m12.5%\x1b[0m"), "{coloured}");
        // Without the escape codes it is the plain text, byte for byte.
        let stripped = regex_lite::Regex::new("\x1b\\[[0-9;]*m")
            .unwrap()
            .replace_all(&coloured, "");
        assert_eq!(stripped, plain);
    }

    #[test]
    fn stage_sections_and_placeholders_carry_the_same_facts_as_markdown() {
        let text = Text::default().render(&sample::qwen3());
        assert!(
            text.contains("Kernel Table\n[extend/prefill]\nKernel "),
            "{text}"
        );
        assert!(text.contains("\n[decode]\n"), "{text}");
        assert!(
            text.contains("gemm takes 38.9% of GPU time (1 kernel)."),
            "{text}"
        );
        assert!(
            text.contains("- 180 kernels replayed from 1 CUDA graph."),
            "{text}"
        );
        // The Formal signal cell wraps inside its column (LINE_WIDTH), every part kept.
        for part in ["27452.8 us, share", "38.9%, excl 100.0% /", "hid 0.0%"] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert!(
            text.contains("[decode]\n- one GPU stream (stream 7) ran all 180 GPU ops"),
            "{text}"
        );
        assert!(text
            .contains("Server args: tp_size=2, attention_backend=fa3, disable_cuda_graph=false"));
        assert!(text.lines().all(|l| l == l.trim_end()), "{text}");
    }
}
