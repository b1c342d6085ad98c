//! `llm-triage [triage]`: the report of one trace, one profile directory, a mapping and
//! a formal trace, or traces captured live first; to stdout or `--output`.

use std::io::IsTerminal;

use super::capture_options::capture_options;
use crate::analyze::device::DeviceChoice;
use crate::capture::{self, Sources};
use crate::cli::{GlobalArgs, OutputFormat, RankArg, TriageArgs};
use crate::error::{Result, TriageError};
use crate::output::{print_stdout, refuse_overwriting_inputs, write_text};
use crate::report::{self, Format};
use crate::triage::{self, load_plugins, TriageRequest};

pub fn exec(args: &TriageArgs, global: &GlobalArgs) -> Result<()> {
    if !(args.min_share.is_finite() && (0.0..=100.0).contains(&args.min_share)) {
        return Err(TriageError::Usage(format!(
            "--min-share must be a percentage between 0 and 100, got {}",
            args.min_share
        )));
    }
    let all_ranks = args.all_ranks || args.rank == Some(RankArg::All);
    if args.input.len() > 1 && !all_ranks {
        return Err(TriageError::Usage(
            "--input was given several times: that compares ranks, one trace file each, and needs --all-ranks"
                .to_string(),
        ));
    }
    // Live capture (--url, --mapping-url, --formal-url) first; else the input paths.
    let sources = Sources {
        input: args.input.first().cloned(),
        mapping_input: args.mapping_input.clone(),
        formal_input: args.formal_input.clone(),
        framework: args.framework.clone(),
        capture: capture_options(&args.capture),
    };
    let inputs = capture::resolve_inputs(&sources, || load_plugins(&global.plugin_dirs))?;
    let request = TriageRequest {
        input: inputs.input,
        mapping_input: inputs.mapping_input,
        framework: inputs.framework,
        rank: match args.rank {
            Some(RankArg::One(n)) => Some(n),
            _ => None,
        },
        all_ranks,
        min_share_pct: args.min_share,
        kernel_table_limit: args.kernel_table_limit,
        overlap_table_limit: args.overlap_table_limit,
        top_gaps: args.top_gaps,
        catalog: args.catalog.clone(),
        plugin_dirs: global.plugin_dirs.clone(),
        progress: !args.quiet && std::io::stderr().is_terminal(),
        run_logs: args.run_log.clone(),
        pid_substring: args.pid_substring.clone().filter(|p| !p.is_empty()),
        model_config: args.model_config.clone(),
        capture_inputs: args.capture_input.clone(),
        device: device_choice(args),
        rank_inputs: match args.input.len() {
            0 | 1 => Vec::new(),
            _ => args.input.clone(),
        },
    };
    if let Some(output) = &args.output {
        // Before the run, so a refused output costs no analysis.
        let inputs: Vec<&std::path::Path> = std::iter::once(&request.input)
            .chain(&request.rank_inputs)
            .chain(&request.mapping_input)
            .chain(&request.run_logs)
            .chain(&request.capture_inputs)
            .map(|p| p.as_path())
            .collect();
        refuse_overwriting_inputs(output, &inputs)?;
    }
    let mut phases = triage::Phases::from_env();
    let mut report = triage::run(&request)?;
    phases.done("triage");
    report.notes.extend(inputs.notes);
    let format = match args.format {
        OutputFormat::Markdown => Format::Markdown,
        OutputFormat::Text => Format::Text,
        OutputFormat::Json => Format::Json,
        OutputFormat::Html => Format::Html,
    };
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let options = report::RenderOptions {
        color: report::color_wanted(to_terminal),
        min_share_pct: args.min_share,
    };
    let text = report::render_with(&report, format, &options);
    phases.done("render");
    let written = match &args.output {
        Some(path) => write_text(path, &text),
        None => print_stdout(&text),
    };
    phases.done("write");
    written
}

/// `--device` or `--device-spec`, else the table's match of the trace's device.
fn device_choice(args: &TriageArgs) -> DeviceChoice {
    match (&args.device, &args.device_spec) {
        (Some(name), _) => DeviceChoice::Named(name.clone()),
        (None, Some(file)) => DeviceChoice::SpecFile(file.clone()),
        (None, None) => DeviceChoice::FromTrace,
    }
}

/// Whether any triage flag that names a trace or a report file was given; before
/// another subcommand such flags would be silently ignored.
pub fn flags_given(args: &TriageArgs) -> bool {
    !args.input.is_empty()
        || args.mapping_input.is_some()
        || args.formal_input.is_some()
        || !args.capture_input.is_empty()
        || args.output.is_some()
}
