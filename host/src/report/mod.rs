//! Rendering the `Report` value. One file per output format, one trait for all: every
//! format sees the same `Report`, so they can differ in layout but never in facts.
mod device;
mod diff;
mod ep;
pub(crate) mod escape;
pub(crate) mod html;
pub(crate) mod json;
mod layers;
pub(crate) mod markdown;
pub mod model;
mod ranks;
mod roofline;
pub(crate) mod text;
mod timeline;
mod view;

#[cfg(test)]
mod sample;

pub use model::*;

/// One output format.
pub trait Renderer {
    /// The whole report as printable text, ending in exactly one newline.
    fn render(&self, report: &Report) -> String;
}

/// The formats `--format` offers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Text,
    Json,
    Html,
}

/// How a report is laid out, beyond its format.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RenderOptions {
    /// ANSI colour (text format only; markdown and JSON never carry escape codes).
    pub color: bool,
    /// The per-row share bar the kernel table was cut at, named in its empty-table row.
    pub min_share_pct: f64,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            color: false,
            min_share_pct: DEFAULT_MIN_SHARE_PCT,
        }
    }
}

/// The predecessor's per-row bar, and `--min-share`'s default.
pub const DEFAULT_MIN_SHARE_PCT: f64 = 1.0;

/// Renders `report` in `format`, with the default 1.0 % share bar.
pub fn render(report: &Report, format: Format, color: bool) -> String {
    let options = RenderOptions {
        color,
        ..RenderOptions::default()
    };
    render_with(report, format, &options)
}

/// Renders `report` in `format` with every layout option spelled out.
pub fn render_with(report: &Report, format: Format, options: &RenderOptions) -> String {
    match format {
        Format::Markdown => markdown::Markdown {
            min_share_pct: options.min_share_pct,
        }
        .render(report),
        Format::Text => text::Text {
            color: options.color,
            min_share_pct: options.min_share_pct,
        }
        .render(report),
        Format::Json => json::Json.render(report),
        Format::Html => html::Html {
            min_share_pct: options.min_share_pct,
        }
        .render(report),
    }
}

/// Renders a diff of two runs (`llm-triage diff`) in `format`: markdown and text from one
/// view (`report/diff.rs`), JSON as the `{"diff": ...}` document.
pub fn render_diff(diff: &DiffReport, format: Format, color: bool) -> String {
    match format {
        Format::Markdown => markdown::render_view(&diff::diff_view(diff)),
        Format::Text => text::render_view(&diff::diff_view(diff), color),
        Format::Json => json::render_diff(diff),
        Format::Html => html::diff_page::diff_page(diff, &json::render_diff(diff)),
    }
}

pub(crate) use diff::regression_line;

/// Whether to colour terminal output: `NO_COLOR` (any non-empty value) turns colour off,
/// else `CLICOLOR_FORCE` (non-empty, not `0`) turns it on, else only a terminal gets it.
pub fn color_wanted(is_terminal: bool) -> bool {
    color_wanted_from(
        is_terminal,
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("CLICOLOR_FORCE").as_deref(),
    )
}

/// `color_wanted` with the environment passed in, so it can be tested without touching
/// the process environment.
pub fn color_wanted_from(
    is_terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    clicolor_force: Option<&std::ffi::OsStr>,
) -> bool {
    let set = |v: Option<&std::ffi::OsStr>| v.is_some_and(|v| !v.is_empty());
    if set(no_color) {
        return false;
    }
    if set(clicolor_force) && clicolor_force != Some(std::ffi::OsStr::new("0")) {
        return true;
    }
    is_terminal
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn colour_follows_terminal_no_color_and_clicolor_force() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert!(color_wanted_from(true, None, None));
        assert!(!color_wanted_from(false, None, None));
        assert!(!color_wanted_from(true, os("1"), None));
        // An empty NO_COLOR does not count (no-color.org).
        assert!(color_wanted_from(true, os(""), None));
        assert!(color_wanted_from(false, None, os("1")));
        assert!(!color_wanted_from(false, None, os("0")));
        assert!(!color_wanted_from(true, os("1"), os("1")));
    }

    #[test]
    fn render_dispatches_on_format_and_only_text_is_coloured() {
        let report = sample::qwen3();
        assert!(render(&report, Format::Markdown, true)
            .starts_with("# Triage View\nMode: single-trace\n"));
        assert!(render(&report, Format::Json, true).starts_with("{\n  \"schema_version\": 1,"));
        assert!(render(&report, Format::Text, true).contains('\x1b'));
        assert!(!render(&report, Format::Text, false).contains('\x1b'));
        assert!(!render(&report, Format::Markdown, true).contains('\x1b'));
        let options = RenderOptions {
            color: false,
            min_share_pct: 0.5,
        };
        let empty = sample::report(vec![]);
        assert!(render_with(&empty, Format::Text, &options)
            .contains("No kernel rows at or above 0.5% share."));
    }
}
