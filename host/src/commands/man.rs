//! `llm-triage man`: man pages rendered from the clap definition in `cli/`, so they
//! never drift from `--help`. `man` prints `llm-triage(1)`; `man --output-dir DIR` writes
//! it and one page per subcommand (`llm-triage-bundle.1`, `llm-triage-plugins-list.1`,
//! ...), ready for `MANPATH` or a package's `share/man/man1`.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::cli::{Cli, GlobalArgs, ManArgs};
use crate::error::{Result, TriageError};
use crate::output::print_stdout;

pub fn exec(args: &ManArgs, _global: &GlobalArgs) -> Result<()> {
    match &args.output_dir {
        Some(dir) => print_stdout(&write_pages(dir)?),
        None => print_stdout(&page()?),
    }
}

/// The top-level page as roff.
pub fn page() -> Result<String> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut roff)
        .map_err(|e| output_error(Path::new("<stdout>"), e))?;
    String::from_utf8(roff).map_err(|e| TriageError::Output {
        path: "<stdout>".into(),
        message: format!("man page is not UTF-8: {e}"),
    })
}

/// Writes every page into `dir` (created if missing); returns one line per file written.
pub fn write_pages(dir: &Path) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
    clap_mangen::generate_to(Cli::command(), dir).map_err(|e| output_error(dir, e))?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| output_error(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "1")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("llm-triage"))
        })
        .collect();
    pages.sort();
    Ok(pages
        .iter()
        .map(|p| format!("wrote {}\n", p.display()))
        .collect())
}

fn output_error(path: &Path, e: std::io::Error) -> TriageError {
    TriageError::Output {
        path: path.to_path_buf(),
        message: format!("cannot write man page: {e}"),
    }
}
