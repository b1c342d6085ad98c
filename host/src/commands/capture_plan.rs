//! `llm-triage capture-plan`: an engine's live-capture protocol, printed instead of run.

use super::capture_options::capture_options;
use crate::cli::capture::CapturePlanArgs;
use crate::cli::GlobalArgs;
use crate::error::Result;
use crate::output::print_stdout;
use crate::triage::load_plugins;

pub fn exec(args: &CapturePlanArgs, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    let options = capture_options(&args.capture);
    print_stdout(&crate::capture::capture_plan_text(
        &args.framework,
        &options,
        &plugin_set,
    )?)
}
