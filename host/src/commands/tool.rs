//! `llm-triage tool [PLUGIN [TOOL ARGS...]]`: list or run the text tools plugins offer.

use crate::cli::{GlobalArgs, ToolArgs};
use crate::error::Result;
use crate::output::print_stdout;
use crate::tools::{self, Invocation};
use crate::triage::load_plugins;

pub fn exec(args: &ToolArgs, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    let invocation = Invocation {
        plugin: args.plugin.clone(),
        tool: args.tool.clone(),
        args: args.args.clone(),
    };
    print_stdout(&tools::run(&invocation, &plugin_set)?)
}
