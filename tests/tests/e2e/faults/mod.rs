//! Faults around a run rather than in its input: a live capture that goes wrong, output
//! that cannot be written, plugins that panic or do not load. Each ends in its exit code
//! and one line, and leaves nothing half-done.

mod capture;
mod output;
mod output_targets;
mod plugins;
