//! Process exit codes, defined once: [`TABLE`] is the text of `--help`'s "Exit codes"
//! section (`help_text`), and a test holds the README's table to it; tests of the
//! binary assert the codes themselves.

use std::fmt::Write as _;

/// The report was printed (or the subcommand succeeded).
pub const OK: i32 = 0;
/// Bad command line: unknown flag, invalid combination, bad value.
pub const USAGE: i32 = 2;
/// An input is missing, unreadable, truncated, or not a torch.profiler trace.
pub const INPUT: i32 = 3;
/// `--framework auto` found no engine claim, or two equally strong ones.
pub const FRAMEWORK_REFUSED: i32 = 4;
/// Live capture failed: server down, protocol error or timeout.
pub const CAPTURE: i32 = 5;
/// A plugin could not be loaded, was incompatible, or failed (panicked) at run time.
pub const PLUGIN: i32 = 6;
/// `diff`: a step time or a row regressed beyond `--fail-on-regression(-ms)` (the diff is
/// printed first).
pub const REGRESSION: i32 = 7;

/// `(code, meaning)` for help texts, in order.
pub const TABLE: &[(i32, &str)] = &[
    (OK, "report printed"),
    (USAGE, "usage error"),
    (INPUT, "input unreadable or not a torch.profiler trace"),
    (
        FRAMEWORK_REFUSED,
        "framework refused (--framework auto found no engine claim, or a tie)",
    ),
    (CAPTURE, "live capture failed"),
    (PLUGIN, "plugin error (load, ABI, panic)"),
    (
        REGRESSION,
        "diff: a regression beyond --fail-on-regression or --fail-on-regression-ms",
    ),
];

/// The "Exit codes" section at the end of `--help`: one `  CODE  MEANING` line per row
/// of [`TABLE`].
pub(crate) fn help_text() -> String {
    let mut text = String::from("Exit codes:");
    for (code, meaning) in TABLE {
        let _ = write!(text, "\n  {code}  {meaning}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_code_in_order() {
        assert_eq!(
            help_text(),
            "Exit codes:\n  0  report printed\n  2  usage error\n  \
             3  input unreadable or not a torch.profiler trace\n  \
             4  framework refused (--framework auto found no engine claim, or a tie)\n  \
             5  live capture failed\n  6  plugin error (load, ABI, panic)\n  \
             7  diff: a regression beyond --fail-on-regression or --fail-on-regression-ms"
        );
    }

    /// The rows of the README's "Exit codes" table, as `(code, meaning)` with inline code
    /// marks (`` ` ``) dropped, the way the table reads once rendered.
    fn readme_rows(readme: &str) -> Vec<(i32, String)> {
        let section = readme
            .split("\n### Exit codes\n")
            .nth(1)
            .expect("README has an \"### Exit codes\" section");
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // the header and the alignment row
            .map(|row| {
                let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
                assert_eq!(cells.len(), 2, "two cells in {row:?}");
                let code = cells[0].parse().expect("a numeric code");
                (code, cells[1].replace('`', ""))
            })
            .collect()
    }

    #[test]
    fn the_readme_table_says_what_the_table_says() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"));
        let table: Vec<(i32, String)> = TABLE.iter().map(|(c, m)| (*c, m.to_string())).collect();
        assert_eq!(readme_rows(readme), table);
    }
}
