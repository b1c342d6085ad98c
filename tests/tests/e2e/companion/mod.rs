//! The subcommands and companions around a triage: `bundle`, the predecessor's script
//! names and flags, the diffusion-backend gate, third-party plugins and `plugins
//! install`, and `tool trtllm py-executor-override`.

mod bundle;
mod compat;
mod gate;
mod plugin;
mod tools;
