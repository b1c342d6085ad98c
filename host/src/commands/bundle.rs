//! `llm-triage bundle`: saved reports into one markdown document (or `--format html`
//! page), to stdout or
//! `--output` (its parent directories created). Files of the root left out are listed at
//! the end of the document and counted on stderr.

use crate::bundle::{self, BundleRequest};
use crate::cli::{BundleArgs, BundleFormat, GlobalArgs};
use crate::error::{Result, TriageError};
use crate::output::{print_stdout, write_text};

pub fn exec(args: &BundleArgs, _global: &GlobalArgs) -> Result<()> {
    let request = BundleRequest {
        analysis_root: args.analysis_root.clone(),
        analysis_files: args.analysis_file.clone(),
        title: args.title.clone(),
        include_toc: !args.no_toc,
        generated_at: crate::dates::now_secs(),
        html: args.format == BundleFormat::Html,
    };
    let bundle = bundle::bundle(&request)?;
    if !bundle.skipped.is_empty() {
        eprintln!(
            "llm-triage: warning: {} file{} under the analysis root not bundled (listed under \"Skipped files\")",
            bundle.skipped.len(),
            if bundle.skipped.len() == 1 { "" } else { "s" }
        );
    }
    match &args.output {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| TriageError::Output {
                    path: dir.to_path_buf(),
                    message: format!("cannot create directory: {e}"),
                })?;
            }
            write_text(path, &bundle.document)
        }
        None => print_stdout(&bundle.document),
    }
}
