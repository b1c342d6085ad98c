//! `llm-triage diff BASE NEW`: two runs compared (`diff`), printed to stdout or
//! `--output`; then exit 7 when the regression gate was crossed, naming the first
//! regression on stderr.

use std::io::IsTerminal;

use crate::analyze::device::DeviceChoice;
use crate::cli::{DiffArgs, GlobalArgs, OutputFormat};
use crate::diff::{self, DiffOptions, DiffRequest, Gate};
use crate::error::{Result, TriageError};
use crate::output::{print_stdout, refuse_overwriting_inputs, write_text};
use crate::report::{self, Format};
use crate::triage::TriageRequest;

pub fn exec(args: &DiffArgs, global: &GlobalArgs) -> Result<()> {
    let percent = |flag: &str, value: f64| {
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(TriageError::Usage(format!(
                "{flag} must be a non-negative number, got {value}"
            )))
        }
    };
    let noise_pct = percent("--noise", args.noise)?;
    let gate = Gate {
        pct: args
            .fail_on_regression
            .map(|v| percent("--fail-on-regression", v))
            .transpose()?,
        ms: args
            .fail_on_regression_ms
            .map(|v| percent("--fail-on-regression-ms", v))
            .transpose()?,
    };
    if let Some(output) = &args.output {
        refuse_overwriting_inputs(output, &[args.base.as_path(), args.new.as_path()])?;
    }
    let request = DiffRequest {
        base: args.base.clone(),
        new: args.new.clone(),
        triage: TriageRequest {
            input: args.base.clone(),
            mapping_input: None,
            framework: args.framework.clone(),
            rank: args.rank,
            all_ranks: false,
            // Every kernel row, so the waterfall compares rows rather than a remainder.
            min_share_pct: 0.0,
            kernel_table_limit: 0,
            overlap_table_limit: 0,
            top_gaps: 5,
            catalog: args.catalog.clone(),
            plugin_dirs: global.plugin_dirs.clone(),
            // Two reads at once would draw two bars over each other.
            progress: false,
            run_logs: Vec::new(),
            pid_substring: args.pid_substring.clone().filter(|p| !p.is_empty()),
            capture_inputs: args.capture_input.clone(),
            device: match (&args.device, &args.device_spec) {
                (Some(name), _) => DeviceChoice::Named(name.clone()),
                (None, Some(file)) => DeviceChoice::SpecFile(file.clone()),
                (None, None) => DeviceChoice::FromTrace,
            },
            model_config: args.model_config.clone(),
            rank_inputs: Vec::new(),
        },
        options: DiffOptions {
            noise_pct,
            gate,
            stage: args.stage.clone(),
        },
    };
    let diff = diff::run(&request)?;
    let format = match args.format {
        OutputFormat::Markdown => Format::Markdown,
        OutputFormat::Text => Format::Text,
        OutputFormat::Json => Format::Json,
        OutputFormat::Html => Format::Html,
    };
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let text = report::render_diff(&diff, format, report::color_wanted(to_terminal));
    match &args.output {
        Some(path) => write_text(path, &text)?,
        None => print_stdout(&text)?,
    }
    match report::regression_line(&diff) {
        Some(line) => Err(TriageError::Regression(line)),
        None => Ok(()),
    }
}
