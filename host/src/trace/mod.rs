//! Reading traces: find the files, stream them into compact events (keeping only some
//! pids, on request), link kernels to their launch sites, split them into stages.
pub mod compact;
pub mod discover;
pub mod event;
pub mod evidence;
pub mod graph_capture;
pub mod link;
pub mod model;
pub mod model_config;
pub(crate) mod names;
pub(crate) mod pid_filter;
pub mod read;
pub mod stage;
