//! `llm-triage probe`: a smoke test of a running server, printed as JSON; exit 5 when a
//! request failed or answered with empty text.

use crate::capture::ProbeRequest;
use crate::cli::capture::ProbeArgs;
use crate::cli::GlobalArgs;
use crate::error::{Result, TriageError};
use crate::output::print_stdout;
use crate::triage::load_plugins;

pub fn exec(args: &ProbeArgs, global: &GlobalArgs) -> Result<()> {
    let plugin_set = load_plugins(&global.plugin_dirs)?;
    let request = ProbeRequest {
        url: args.url.clone(),
        framework: args.framework.clone(),
        control_url: args.control_url.clone(),
        requests: args.requests,
        max_tokens: args.max_tokens,
        timeout: args.timeout,
        prompts: args.prompts.clone(),
    };
    let (text, ok) = crate::capture::probe(&request, &plugin_set)?;
    print_stdout(&text)?;
    if ok {
        Ok(())
    } else {
        Err(TriageError::Capture(format!(
            "probe of {}: a request failed or returned empty text (see the JSON above)",
            args.url
        )))
    }
}
