//! `llm-triage`: parse the command line, run one command, map errors to exit codes.
//! Each subcommand's work is in `commands/`, one file each.

use clap::{CommandFactory, Parser};

use llm_triage::cli::{Cli, Command};
use llm_triage::commands;
use llm_triage::error::{Result, TriageError};
use llm_triage::exit;

fn main() {
    keep_large_blocks_mapped();
    report_bus_errors();
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

/// A plain trace is read where it is mapped (`trace/read/source.rs`); should another
/// process truncate it mid-read, touching the lost pages raises SIGBUS, which would end
/// the process with no word. This says what happened, as the one-line error of a bad
/// input, and exits with that code. (Plugin libraries are mapped too, but checked
/// against their size before, `plugins/library_file.rs`.)
fn report_bus_errors() {
    extern "C" fn on_bus_error(_: libc::c_int) {
        const MESSAGE: &[u8] = b"llm-triage: error: a file read where it is mapped (a plain \
            trace) lost bytes while it was read (SIGBUS: another process truncated it, or \
            the storage failed); triage a copy that nothing else writes to\n";
        // SAFETY: write(2) and _exit(2) are async-signal-safe; the message is static.
        unsafe {
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(exit::INPUT);
        }
    }
    // SAFETY: installs a handler that calls only async-signal-safe functions; called
    // before any thread starts.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_bus_error as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
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
