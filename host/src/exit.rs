//! Process exit codes. Documented in `--help` and the README; tests assert them.

/// The report was printed (or the subcommand succeeded).
pub const OK: i32 = 0;
/// Bad command line: unknown flag, invalid combination, bad value.
pub const USAGE: i32 = 2;
/// An input is missing, unreadable, truncated, or not a torch.profiler trace.
pub const INPUT: i32 = 3;
/// `--framework auto` found no engine claim, or two equally strong ones.
pub const FRAMEWORK_REFUSED: i32 = 4;
/// Live capture failed: server down, protocol error or timeout.
pub const CAPTURE: i32 = 5;
/// A plugin could not be loaded, was incompatible, or failed (panicked) at run time.
pub const PLUGIN: i32 = 6;

/// `(code, meaning)` for help texts, in order.
pub const TABLE: &[(i32, &str)] = &[
    (OK, "report printed"),
    (USAGE, "usage error"),
    (INPUT, "input unreadable or not a torch.profiler trace"),
    (
        FRAMEWORK_REFUSED,
        "framework refused (no engine claim, or a tie)",
    ),
    (CAPTURE, "live capture failed"),
    (PLUGIN, "plugin error (load, ABI, panic)"),
];
