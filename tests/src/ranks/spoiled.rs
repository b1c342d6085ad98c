//! A rank's trace with events its reader must skip: the all-ranks report has to say so
//! for every rank, not only for the reference rank.

use std::io::{Read, Write};
use std::path::Path;

/// What [`spoil_events`] put into a trace, as the reader counts it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Spoiled {
    /// Events that are not objects or have a field of the wrong type.
    pub malformed: u64,
    /// GPU events with a negative duration.
    pub bad_time: u64,
}

impl Spoiled {
    pub fn total(self) -> u64 {
        self.malformed + self.bad_time
    }
}

/// Rewrites the gzipped trace at `path` with `spoiled.malformed` malformed events
/// (alternately a bare number and an event whose name is a number) and
/// `spoiled.bad_time` kernels of negative duration at the head of its `traceEvents`.
/// Nothing else changes, so the run's ground truth still holds.
pub fn spoil_events(path: &Path, spoiled: Spoiled) -> std::io::Result<()> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    const LIST: &str = "\"traceEvents\": [";
    let at = text
        .find(LIST)
        .map(|i| i + LIST.len())
        .ok_or_else(|| std::io::Error::other(format!("{}: no traceEvents", path.display())))?;
    let mut events = String::from("\n");
    for i in 0..spoiled.malformed {
        events.push_str(match i % 2 {
            0 => "17,\n",
            _ => "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": 5, \"pid\": 1, \"tid\": 1, \"ts\": 1.0, \"dur\": 1.0},\n",
        });
    }
    for _ in 0..spoiled.bad_time {
        events.push_str("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"spoiled_kernel\", \"pid\": 0, \"tid\": 7, \"ts\": 10.0, \"dur\": -3.0, \"args\": {\"stream\": 7, \"correlation\": 1}},\n");
    }
    text.insert_str(at, &events);
    let mut encoder =
        flate2::write::GzEncoder::new(std::fs::File::create(path)?, flate2::Compression::fast());
    encoder.write_all(text.as_bytes())?;
    encoder.finish()?;
    Ok(())
}
