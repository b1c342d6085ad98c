//! `llm-triage tool [PLUGIN [TOOL ARGS...]]`: list or run the text tools plugins offer.

use crate::cli::{GlobalArgs, ToolArgs};
use crate::error::Result;
use crate::output::print_stdout;
use crate::run::load_plugins;
use crate::tools::{self, Invocation};

pub fn exec(args: &ToolArgs, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    let invocation = Invocation {
        plugin: args.plugin.clone(),
        tool: args.tool.clone(),
        args: args.args.clone(),
    };
    print_stdout(&tools::run(&invocation, &plugin_set)?)
}
