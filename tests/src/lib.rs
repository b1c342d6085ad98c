//! Fixture traces and helpers for end-to-end tests.
