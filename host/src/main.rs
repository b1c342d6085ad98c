//! `llm-triage`: parse the command line, run one command, map errors to exit codes.
//! Each subcommand's work is in `commands/`, one file each.

use clap::{CommandFactory, Parser};

use llm_triage::cli::{Cli, Command};
use llm_triage::commands;
use llm_triage::error::{Result, TriageError};
use llm_triage::exit;

fn main() {
    keep_large_blocks_mapped();
    // As the predecessor: no arguments at all prints the help, and that is no error.
    if std::env::args_os().len() <= 1 {
        let _ = Cli::command().print_help();
        std::process::exit(exit::OK);
    }
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("llm-triage: error: {}", e.one_line());
            e.exit_code()
        }
    };
    std::process::exit(code);
}

/// glibc raises its mmap threshold each time a large block is freed (up to 32 MiB); from
/// then on blocks that large come from the heap, and once freed stay resident for
/// whatever is allocated next. The analyses' temporaries (a few MB each, one after the
/// other) so added 20 MB of peak RSS to a 1 GB triage. A fixed threshold keeps every
/// block past it mapped on its own and handed back to the system when freed.
fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}

fn run(cli: Cli) -> Result<()> {
    // Triage flags before another subcommand would be silently ignored; say so instead.
    let other_subcommand = !matches!(cli.command, None | Some(Command::Triage(_)));
    if other_subcommand && commands::triage::flags_given(&cli.triage) {
        return Err(TriageError::Usage(
            "triage flags (--input, --url, ...) go with triage, not before another subcommand"
                .to_string(),
        ));
    }
    let global = &cli.global;
    match &cli.command {
        None => commands::triage::exec(&cli.triage, global),
        Some(Command::Triage(args)) => commands::triage::exec(args, global),
        Some(Command::Plugins(command)) => commands::plugins::exec(command, global),
        Some(Command::Catalog(command)) => commands::catalog::exec(command, global),
        Some(Command::Probe(args)) => commands::probe::exec(args, global),
        Some(Command::CapturePlan(args)) => commands::capture_plan::exec(args, global),
        Some(Command::Completions(args)) => commands::completions::exec(args, global),
        Some(Command::Bundle(args)) => commands::bundle::exec(args, global),
        Some(Command::Tool(args)) => commands::tool::exec(args, global),
        Some(Command::Man(args)) => commands::man::exec(args, global),
        Some(Command::Diff(args)) => commands::diff::exec(args, global),
    }
}
