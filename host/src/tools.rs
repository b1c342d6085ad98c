//! `llm-triage tool`: plugins' text tools (placeholder until plugin API 1.3).

use crate::cli::ToolArgs;
use crate::error::{Result, TriageError};
use crate::plugins::PluginSet;

pub fn run(_args: &ToolArgs, _plugins: &PluginSet) -> Result<String> {
    Err(TriageError::Usage("no plugin tools yet".to_string()))
}
