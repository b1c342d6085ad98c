//! `llm-triage catalog list|show|validate`: the merged fusion catalog of the loaded
//! plugins and the host (`--catalog DIR` overrides).

use crate::catalog;
use crate::cli::{CatalogCommand, CatalogFormat, GlobalArgs};
use crate::error::Result;
use crate::output::print_stdout;
use crate::run::load_plugins;

pub fn exec(command: &CatalogCommand, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    let text = match command {
        CatalogCommand::List {
            format,
            catalog: dir,
        } => {
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            catalog::list_rows(&rows, *format == CatalogFormat::Json)
        }
        CatalogCommand::Show {
            id,
            format,
            catalog: dir,
        } => {
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            catalog::show_row(&rows, id, *format == CatalogFormat::Json)?
        }
        CatalogCommand::Validate { catalog: dir } => {
            let families = catalog::load_families(dir.as_deref())?;
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            catalog::validation_summary(&families, &rows)
        }
    };
    print_stdout(&text)
}
