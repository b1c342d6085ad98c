//! Finding, loading and choosing engine plugins.
