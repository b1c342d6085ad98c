//! The overlap table end to end: on hand-built and generated traces whose hidden and
//! exclusive times are known by construction, and on real traces against a recount.

mod fixtures;
mod shared_traces;
