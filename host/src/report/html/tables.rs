//! The tables the text formats show, as HTML: every block of the shared view except the
//! kernel table (the stage sections show their own, sortable and filterable, with the
//! JSON's exact figures). So nothing markdown shows is missing from the page.

use std::fmt::Write as _;

use crate::report::escape::html_inline;
use crate::report::view::{Align, Block, Table, View};

/// The view block the stage sections replace.
const KERNEL_BLOCK: &str = "Kernel Table";

/// Every view block but the kernel table, each a `<h2>` with its stages' tables.
pub(super) fn view_tables(view: &View) -> String {
    let mut out = String::new();
    for block in view.blocks.iter().filter(|b| b.title != KERNEL_BLOCK) {
        out.push_str(&block_html(block));
    }
    out
}

fn block_html(block: &Block) -> String {
    let mut out = format!("<section class=\"block\">\n<h2>{}</h2>\n", block.title);
    if block.sections.is_empty() {
        out.push_str(&table_html(&block.placeholder));
    }
    let headings = block.needs_headings();
    for section in &block.sections {
        if headings {
            let _ = writeln!(out, "<h3>{}</h3>", html_inline(&section.label));
        }
        if !section.table.rows.is_empty() {
            out.push_str(&table_html(&section.table));
        }
        if let Some(summary) = &section.summary {
            let _ = writeln!(out, "<p class=\"summary\">{}</p>", html_inline(summary));
        }
        if !section.notes.is_empty() {
            out.push_str(&super::article::list(&section.notes));
        }
    }
    out.push_str("</section>\n");
    out
}

/// A view table: its header, its rows, a cell's lines one below the other.
fn table_html(table: &Table) -> String {
    let class = |i: usize| match table.align.get(i) {
        Some(Align::Right) => " class=\"num\"",
        _ => "",
    };
    let mut out = "<table class=\"sortable\">\n<thead><tr>".to_string();
    for (i, head) in table.header.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(i), html_inline(head));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (i, cell) in row.cells.iter().enumerate() {
            let lines: Vec<String> = cell.iter().map(|l| html_inline(l)).collect();
            let _ = write!(out, "<td{}>{}</td>", class(i), lines.join("<br>"));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}
