//! `llm-triage plugins list|info|install|remove|doctor`: the engine plugins on the
//! search path, and the user plugin directory.

use std::path::PathBuf;

use crate::cli::{GlobalArgs, PluginsCommand};
use crate::error::{Result, TriageError};
use crate::output::print_stdout;
use crate::plugins;

pub fn exec(command: &PluginsCommand, global: &GlobalArgs) -> Result<()> {
    let search = plugins::search_dirs(&global.plugin_dirs);
    for warning in &search.warnings {
        eprintln!("llm-triage: warning: {warning}");
    }
    let dirs = search.dirs;
    let text = match command {
        PluginsCommand::List => plugins::list(&dirs)?,
        PluginsCommand::Info { name } => plugins::info(&dirs, name)?,
        PluginsCommand::Install { file, force } => plugins::install(file, *force, &user_dir()?)?,
        PluginsCommand::Remove { name } => plugins::remove(name, &user_dir()?)?,
        PluginsCommand::Doctor => plugins::doctor(&dirs)?,
    };
    print_stdout(&text)
}

/// The user plugin directory `install` and `remove` work in.
fn user_dir() -> Result<PathBuf> {
    plugins::user_plugin_dir().ok_or_else(|| {
        TriageError::Usage("no user plugin directory: set XDG_DATA_HOME or HOME".to_string())
    })
}
