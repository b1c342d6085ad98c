//! Input discovery over odd directory trees: nested capture layouts, symlinks (loops
//! too), named pipes, junk files. Then the chosen files are read.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some((&rank, steps)) = bytes.split_first() else {
        return;
    };
    let root = llm_triage_fuzz::scratch_dir().join("tree");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    llm_triage_fuzz::tree::build(&root, steps);
    let rank = (rank < 4).then_some(u32::from(rank));
    llm_triage_fuzz::check_discover(&root, rank);
});
