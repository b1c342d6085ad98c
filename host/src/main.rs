//! `llm-triage`: parse the command line, run one command, map errors to exit codes.

use std::io::IsTerminal;

use clap::{CommandFactory, Parser};

use llm_triage::cli::{
    CatalogCommand, CatalogFormat, Cli, Command, OutputFormat, PluginsCommand, TriageArgs,
};
use llm_triage::error::{Result, TriageError};
use llm_triage::exit;
use llm_triage::output::{print_stdout, write_text};
use llm_triage::plugins;
use llm_triage::report::{self, Format};
use llm_triage::run::{triage, TriageRequest};

fn main() {
    let args = compat_args(std::env::args_os());
    // As the predecessor: no arguments at all prints the help, and that is no error.
    if args.len() <= 1 {
        let _ = Cli::command().print_help();
        std::process::exit(exit::OK);
    }
    let cli = Cli::parse_from(args);
    let code = match run(cli) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("llm-triage: error: {}", e.one_line());
            e.exit_code()
        }
    };
    std::process::exit(code);
}

/// The predecessor took an optional leading `triage` word; clap's subcommand covers
/// it, so nothing to rewrite yet. Kept as the one place for spelling compatibility.
fn compat_args(args: std::env::ArgsOs) -> Vec<std::ffi::OsString> {
    args.collect()
}

fn run(cli: Cli) -> Result<()> {
    // Triage flags before another subcommand would be silently ignored; say so instead.
    let other_subcommand = !matches!(cli.command, None | Some(Command::Triage(_)));
    if other_subcommand && triage_flags_given(&cli.triage) {
        return Err(TriageError::Usage(
            "triage flags (--input, --url, ...) go with triage, not before another subcommand"
                .to_string(),
        ));
    }
    match cli.command {
        None => run_triage(&cli.triage, &cli.plugin_dirs),
        Some(Command::Triage(ref args)) => run_triage(args, &cli.plugin_dirs),
        Some(Command::Plugins(ref command)) => run_plugins(command, &cli.plugin_dirs),
        Some(Command::Catalog(ref command)) => run_catalog(command, &cli.plugin_dirs),
        Some(Command::Probe(ref args)) => {
            let plugin_set = llm_triage::run::load_plugins(&cli.plugin_dirs)?;
            let (text, ok) = llm_triage::capture::probe(args, &plugin_set)?;
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
        Some(Command::CapturePlan(ref args)) => {
            let plugin_set = llm_triage::run::load_plugins(&cli.plugin_dirs)?;
            print_stdout(&llm_triage::capture::capture_plan_text(args, &plugin_set)?)
        }
        Some(Command::Completions { shell }) => {
            // Into a buffer first: clap_complete panics when its writer fails (`| head`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "llm-triage", &mut script);
            print_stdout(&String::from_utf8_lossy(&script))
        }
        Some(Command::Bundle(ref args)) => run_bundle(args),
        Some(Command::Tool(ref args)) => {
            let plugin_set = llm_triage::run::load_plugins(&cli.plugin_dirs)?;
            print_stdout(&llm_triage::tools::run(args, &plugin_set)?)
        }
        Some(Command::Man { ref output_dir }) => match output_dir {
            Some(dir) => print_stdout(&llm_triage::manpage::write_pages(dir)?),
            None => print_stdout(&llm_triage::manpage::page()?),
        },
    }
}

fn triage_flags_given(args: &TriageArgs) -> bool {
    args.input.is_some()
        || args.mapping_input.is_some()
        || args.formal_input.is_some()
        || args.output.is_some()
}

/// `bundle`: saved reports into one markdown document, to stdout or `--output`.
fn run_bundle(args: &llm_triage::cli::BundleArgs) -> Result<()> {
    use llm_triage::bundle;
    let request = bundle::BundleRequest {
        analysis_root: args.analysis_root.clone(),
        analysis_files: args.analysis_file.clone(),
        title: args.title.clone(),
        include_toc: !args.no_toc,
        generated_at: llm_triage::dates::now_secs(),
    };
    let text = bundle::bundle(&request)?;
    match &args.output {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| TriageError::Output {
                    path: dir.to_path_buf(),
                    message: format!("cannot create directory: {e}"),
                })?;
            }
            write_text(path, &text)
        }
        None => print_stdout(&text),
    }
}

/// `catalog list|show|validate`: the merged catalog of the loaded plugins and the host.
fn run_catalog(command: &CatalogCommand, plugin_dirs: &[std::path::PathBuf]) -> Result<()> {
    use llm_triage::catalog;
    let plugin_set = llm_triage::run::load_plugins(plugin_dirs)?;
    let text = match command {
        CatalogCommand::List {
            format,
            catalog: dir,
        } => {
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            catalog::list_rows(&rows, *format == CatalogFormat::Json)
        }
        CatalogCommand::Show {
            id,
            format,
            catalog: dir,
        } => {
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            catalog::show_row(&rows, id, *format == CatalogFormat::Json)?
        }
        CatalogCommand::Validate { catalog: dir } => {
            let families = catalog::load_families(dir.as_deref())?;
            let rows = catalog::load_fusions(dir.as_deref(), &plugin_set)?;
            catalog::validation_summary(&families, &rows)
        }
    };
    print_stdout(&text)
}

fn run_triage(args: &TriageArgs, plugin_dirs: &[std::path::PathBuf]) -> Result<()> {
    if !(args.min_share.is_finite() && (0.0..=100.0).contains(&args.min_share)) {
        return Err(TriageError::Usage(format!(
            "--min-share must be a percentage between 0 and 100, got {}",
            args.min_share
        )));
    }
    // Live capture (--url, --mapping-url, --formal-url) first; else the input paths.
    let inputs =
        llm_triage::capture::resolve_inputs(args, || llm_triage::run::load_plugins(plugin_dirs))?;
    let request = TriageRequest {
        input: inputs.input,
        mapping_input: inputs.mapping_input,
        framework: inputs.framework,
        rank: args.rank,
        min_share_pct: args.min_share,
        kernel_table_limit: args.kernel_table_limit,
        overlap_table_limit: args.overlap_table_limit,
        catalog: args.catalog.clone(),
        plugin_dirs: plugin_dirs.to_vec(),
        progress: !args.quiet && std::io::stderr().is_terminal(),
        run_logs: args.run_log.clone(),
        pid_substring: args.pid_substring.clone().filter(|p| !p.is_empty()),
    };
    let mut report = triage(&request)?;
    report.notes.extend(inputs.notes);
    let format = match args.format {
        OutputFormat::Markdown => Format::Markdown,
        OutputFormat::Text => Format::Text,
        OutputFormat::Json => Format::Json,
    };
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let options = report::RenderOptions {
        color: report::color_wanted(to_terminal),
        min_share_pct: args.min_share,
    };
    let text = report::render_with(&report, format, &options);
    match &args.output {
        Some(path) => write_text(path, &text),
        None => print_stdout(&text),
    }
}

fn run_plugins(command: &PluginsCommand, plugin_dirs: &[std::path::PathBuf]) -> Result<()> {
    let dirs = plugins::search_dirs(plugin_dirs);
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
fn user_dir() -> Result<std::path::PathBuf> {
    plugins::user_plugin_dir().ok_or_else(|| {
        TriageError::Usage("no user plugin directory: set XDG_DATA_HOME or HOME".to_string())
    })
}
