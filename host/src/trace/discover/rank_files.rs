//! Several trace files given one by one (`--all-ranks --input a --input b ...`): which
//! rank each file is, and one rank's files as a [`TraceSet`], as a profile directory's
//! rank would be.
//!
//! A file's rank is the one its name carries (`-TP-<r>`, `rank<r>`, ...), else the
//! `rank` of the `distributedInfo` torch.profiler writes near the top of the document
//! (looked for in the first [`HEAD_BYTES`], decompressed, so no file is read whole
//! before the ranks are known).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{discover_file, file_name, rank_from_name, TraceSet};
use crate::error::TriageError;

/// How much of a file's decompressed start is searched for `distributedInfo`.
pub const HEAD_BYTES: u64 = 64 * 1024;

/// The rank of one trace file: from its name, else from its `distributedInfo`; `None`
/// when neither tells. A file that cannot be opened is an error naming it.
pub fn rank_of_file(path: &Path) -> Result<Option<u32>, TriageError> {
    if let Some(rank) = rank_from_name(&file_name(path)) {
        return Ok(Some(rank));
    }
    let head = read_head(path)?;
    Ok(distributed_rank(&head))
}

/// One rank's files (each given as `--input`) as one set: each file discovered as a
/// single input, its rank set to `rank` (the name may not carry it), the files in stage
/// order, the first `server_args.json` found beside any of them.
pub fn discover_rank_files(files: &[PathBuf], rank: u32) -> Result<TraceSet, TriageError> {
    let mut sets = files
        .iter()
        .map(|f| discover_file(f, None))
        .collect::<Result<Vec<TraceSet>, TriageError>>()?
        .into_iter();
    let mut set = sets
        .next()
        .ok_or_else(|| TriageError::Usage(format!("rank {rank}: no trace file given")))?;
    for other in sets {
        set.files.extend(other.files);
        set.notes.extend(other.notes);
        set.server_args = set.server_args.or(other.server_args);
        for capture in other.capture_files {
            if !set.capture_files.contains(&capture) {
                set.capture_files.push(capture);
            }
        }
    }
    for file in &mut set.files {
        file.rank = Some(rank);
    }
    set.files
        .sort_by(|a, b| (a.path_stage.order(), &a.path).cmp(&(b.path_stage.order(), &b.path)));
    Ok(set)
}

/// The first [`HEAD_BYTES`] of the file, gzip inflated.
fn read_head(path: &Path) -> Result<Vec<u8>, TriageError> {
    let open =
        || fs::File::open(path).map_err(|e| TriageError::input(path, format!("cannot open: {e}")));
    let mut magic = [0u8; 2];
    let gzip = open()?.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    let mut head = Vec::new();
    let read = if gzip {
        flate2::read::MultiGzDecoder::new(open()?)
            .take(HEAD_BYTES)
            .read_to_end(&mut head)
    } else {
        open()?.take(HEAD_BYTES).read_to_end(&mut head)
    };
    // A cut gzip still gives its first bytes; judge what arrived.
    match read {
        Err(e) if head.is_empty() => Err(TriageError::input(path, format!("cannot read: {e}"))),
        _ => Ok(head),
    }
}

/// The `rank` inside the first `"distributedInfo"` value of `head`: as JSON
/// (`"rank": 3`) or as the Python repr some writers store as a string (`'rank': 3`).
fn distributed_rank(head: &[u8]) -> Option<u32> {
    const KEY: &[u8] = b"\"distributedInfo\"";
    let at = head.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    // The value is a small object; its `rank` comes within its first few hundred bytes.
    let value = &head[at..head.len().min(at + 4096)];
    let end = value.iter().position(|&b| b == b'}').unwrap_or(value.len());
    let value = &value[..end];
    [&b"\"rank\""[..], &b"'rank'"[..]].iter().find_map(|key| {
        let from = value.windows(key.len()).position(|w| w == *key)? + key.len();
        let rest = value[from..].trim_ascii_start().strip_prefix(b":")?;
        let digits: Vec<u8> = rest
            .trim_ascii_start()
            .iter()
            .copied()
            .take_while(u8::is_ascii_digit)
            .collect();
        std::str::from_utf8(&digits).ok()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distributed_rank_is_read_as_json_or_as_a_python_repr() {
        let json = br#"{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}, "traceEvents": []}"#;
        assert_eq!(distributed_rank(json), Some(3));
        let repr = br#"{"distributedInfo": "{'backend': 'nccl', 'rank': 12, 'world_size': 16, 'pg_config': [{'ranks': [0, 1]}]}", "traceEvents": []}"#;
        assert_eq!(distributed_rank(repr), Some(12));
        // Only the key itself: `local_rank`, `ranks` and a rank outside the value do not count.
        let other = br#"{"distributedInfo": {"local_rank": 2, "ranks": [0, 1]}, "rank": 5}"#;
        assert_eq!(distributed_rank(other), None);
        assert_eq!(distributed_rank(br#"{"traceEvents": []}"#), None);
    }
}
