//! The trace reader on gzip-wrapped bytes: whole, cut short, or followed by junk (the
//! first byte chooses).
#![no_main]
use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some((&mode, body)) = bytes.split_first() else {
        return;
    };
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(body).unwrap();
    let mut gz = encoder.finish().unwrap();
    match mode % 4 {
        0 => {}
        1 => gz.truncate(gz.len() * usize::from(mode) / 256),
        2 => gz.extend_from_slice(body),
        _ => {
            // A second member: gzip files may be concatenated.
            let again = gz.clone();
            gz.extend_from_slice(&again);
        }
    }
    llm_triage_fuzz::check_trace_bytes(&gz);
});
