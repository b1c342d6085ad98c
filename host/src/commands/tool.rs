//! `llm-triage tool [PLUGIN [TOOL ARGS...]]`: list or run the text tools plugins offer.

use crate::cli::{GlobalArgs, ToolArgs};
use crate::error::Result;
use crate::output::print_stdout;
use crate::run::load_plugins;

pub fn exec(args: &ToolArgs, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    print_stdout(&crate::tools::run(args, &plugin_set)?)
}
