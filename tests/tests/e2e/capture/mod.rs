//! Live capture through the real binary against the engine emulators
//! (`llm_triage_tests::emulator`): what a capture of each engine asks and reports, how it
//! fails, and the mapping+formal pair.

mod engines;
mod failures;
mod mapping_formal;
