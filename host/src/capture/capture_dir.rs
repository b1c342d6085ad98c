//! Where a capture's traces go, made safe against other users of the machine.
//!
//! Without `--output-dir` the run goes into a new directory in the temporary directory:
//! created fresh with a random name (an exclusive `mkdir`, retried with another name if
//! it exists; it never follows a planted symlink) and mode 0700, so another user can
//! neither predict it, redirect it, nor swap the traces before they are read. A given
//! `--output-dir` that is a symlink is refused, and so is one owned by another user
//! (neither you nor root) when llm-triage writes the traces itself; a directory the
//! server writes into (vLLM's profiler dir) may belong to the server's user.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::TriageError;
use crate::plugins::trust::effective_uid;

/// The name every default capture directory starts with.
pub(crate) const PREFIX: &str = "llm-triage-capture-";

/// A new private directory in the temporary directory.
pub(crate) fn fresh() -> Result<PathBuf, TriageError> {
    let parent = std::env::temp_dir();
    tempfile::Builder::new()
        .prefix(PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&parent)
        .map(tempfile::TempDir::keep)
        .map_err(|e| {
            TriageError::Capture(format!(
                "cannot create a capture directory in {}: {e}",
                parent.display()
            ))
        })
}

/// Refuses a `--output-dir` that is a file, a symlink, or (when llm-triage writes the
/// traces itself, `server_owned` false) a directory of another user. A missing one is
/// fine: it is created.
pub(crate) fn check_given(dir: &Path, server_owned: bool) -> Result<(), TriageError> {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return Ok(());
    };
    let refuse = |why: String| {
        Err(TriageError::Usage(format!(
            "--output-dir {} {why}",
            dir.display()
        )))
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symbolic link; pass the directory it points to".to_string());
    }
    if !meta.is_dir() {
        return refuse("is a file; pass a directory".to_string());
    }
    let (owner, me) = (meta.uid(), effective_uid());
    if !server_owned && owner != me && owner != 0 {
        return refuse(format!(
            "is owned by user {owner}, not by you (user {me}): that user could change the traces before they are read; pass a directory of your own"
        ));
    }
    Ok(())
}
