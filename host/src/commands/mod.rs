//! One file per subcommand. Each has one `exec(args, &global)` that turns its clap
//! arguments into the library's plain request value, calls the library, and prints the
//! answer through [`crate::output`]. clap types go no further than here and `cli/`.

pub mod bundle;
mod capture_options;
pub mod capture_plan;
pub mod catalog;
pub mod completions;
pub mod diff;
pub mod man;
pub mod plugins;
pub mod probe;
pub mod tool;
pub mod triage;
