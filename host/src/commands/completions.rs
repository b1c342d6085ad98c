//! `llm-triage completions SHELL`: a shell completion script, derived by clap_complete
//! from the one clap definition in `cli/`.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, GlobalArgs};
use crate::error::Result;
use crate::output::print_stdout;

pub fn exec(args: &CompletionsArgs, _global: &GlobalArgs) -> Result<()> {
    // Into a buffer first: clap_complete panics when its writer fails (`| head`).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "llm-triage", &mut script);
    print_stdout(&String::from_utf8_lossy(&script))
}
