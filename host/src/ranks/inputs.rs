//! Which ranks an `--all-ranks` run compares, and where each rank's traces are: the
//! ranks a profile directory's trace names carry, or several `--input` files, each one
//! rank's (its name's rank, else its `distributedInfo` rank; a rank may have one file per
//! stage, `-EXTEND` and `-DECODE`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{Result, TriageError};
use crate::trace::discover::discover_ranks;
use crate::trace::discover::rank_files::{rank_of_file, HEAD_BYTES};
use crate::trace::stage::stage_from_path;
use crate::triage::TriageRequest;

/// One rank to triage: its id and its own files (empty: the input directory's files of
/// that rank).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RankInput {
    pub rank: u32,
    pub files: Vec<PathBuf>,
}

/// The ranks of the request, in rank order.
pub(super) fn rank_inputs(request: &TriageRequest) -> Result<Vec<RankInput>> {
    if request.rank_inputs.is_empty() {
        let ranks = discover_ranks(&request.input)?;
        if ranks.is_empty() {
            return Err(TriageError::input(
                &request.input,
                "--all-ranks needs a profile directory whose trace names carry ranks (-TP-<r>, rank<r>, ...), or several --input files",
            ));
        }
        return Ok(ranks
            .into_iter()
            .map(|rank| RankInput {
                rank,
                files: Vec::new(),
            })
            .collect());
    }
    rank_files(&request.rank_inputs)
}

/// Several `--input` files grouped by rank. A file whose rank cannot be told, a
/// directory among them, and two files of one rank and one stage are each an error
/// naming the file.
fn rank_files(files: &[PathBuf]) -> Result<Vec<RankInput>> {
    let mut by_rank: BTreeMap<u32, Vec<PathBuf>> = BTreeMap::new();
    for file in files {
        if file.is_dir() {
            return Err(TriageError::input(
                file,
                "--all-ranks with several --input takes trace files, one or more per rank; pass a directory alone",
            ));
        }
        let rank = rank_of_file(file)?.ok_or_else(|| {
            TriageError::input(
                file,
                format!(
                    "its rank cannot be told: no rank in its name (-TP-<r>, rank<r>, ...) and no distributedInfo rank in its first {} KiB",
                    HEAD_BYTES / 1024
                ),
            )
        })?;
        let own = by_rank.entry(rank).or_default();
        if let Some(twin) = own
            .iter()
            .find(|f| stage_from_path(f) == stage_from_path(file))
        {
            return Err(TriageError::input(
                file,
                format!(
                    "claims rank {rank}, as {} does (one file per rank and stage)",
                    twin.display()
                ),
            ));
        }
        own.push(file.clone());
    }
    Ok(by_rank
        .into_iter()
        .map(|(rank, files)| RankInput { rank, files })
        .collect())
}
