//! Pre-flight checks: evidence, found before any analysis, that the run profiled the wrong
//! thing, so the triage stops with an input error instead of reporting on it.
//!
//! One today, the diffusers-backend fallback; each check is a file of its own.
pub(crate) mod diffusers_fallback;
