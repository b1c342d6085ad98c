//! Where results leave the process: stdout, and files written atomically.
//!
//! Every subcommand prints through `print_stdout`, where a closed pipe (`| head`) is
//! success, not a panic or an error. Every file the host writes for the user (a report,
//! a bundle, a tool's output, an installed plugin) goes through `replace_atomically`:
//! a temporary file beside the target, then a rename, so a reader never sees half a
//! file, and a failure at any step (disk full, target a directory) leaves the old file
//! and no temporary file behind.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Result, TriageError};

/// Writes `text` to stdout, with a final newline when it has none. A closed pipe is not
/// an error: the reader has what it wanted.
pub(crate) fn print_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let result = out
        .write_all(text.as_bytes())
        .and_then(|_| {
            if text.ends_with('\n') {
                Ok(())
            } else {
                out.write_all(b"\n")
            }
        })
        .and_then(|_| out.flush());
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(TriageError::Output {
            path: "<stdout>".into(),
            message: e.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Writes into `path` what [`print_stdout`] would print: `text` with a final newline.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    let mut bytes = text.as_bytes().to_vec();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    write_atomically(path, &bytes)
}

/// Writes exactly `bytes` into `path`, atomically (see [`replace_atomically`]).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_atomically(path, |tmp| std::fs::write(tmp, bytes)).map_err(|e| TriageError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Lets `fill` write a temporary file beside `path` (`.NAME.PID.tmp` in the same
/// directory, so the rename never crosses file systems), then renames it over `path`.
/// When `fill` or the rename fails, the temporary file is removed and `path` is left as
/// it was.
pub(crate) fn replace_atomically(
    path: &Path,
    fill: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temporary_beside(path);
    let result = fill(&tmp).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        // A write that failed part way (disk full) may have left some of the file.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `.NAME.PID.tmp` in `path`'s directory (the working directory for a bare name).
fn temporary_beside(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(".{name}.{}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.md");
        std::fs::write(&path, "old and longer\n").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(names_in(dir.path()), ["report.md"]);
    }

    #[test]
    fn write_text_ends_the_file_with_one_newline_like_stdout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_text(&path, "no newline").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "no newline\n");
        write_text(&path, "one newline\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one newline\n");
    }

    #[test]
    fn a_write_that_fails_part_way_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.py");
        std::fs::write(&path, "old\n").unwrap();
        let failed = replace_atomically(&path, |tmp| {
            std::fs::write(tmp, "half of the ")?;
            Err(std::io::Error::other("No space left on device"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(names_in(dir.path()), ["out.py"]);
    }

    #[test]
    fn a_failed_rename_leaves_no_temporary_file_and_names_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a-directory");
        std::fs::create_dir(&path).unwrap();
        let error = write_atomically(&path, b"text").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}: ", path.display())),
            "{error}"
        );
        assert_eq!(names_in(dir.path()), ["a-directory"]);
    }

    #[test]
    fn a_bare_file_name_gets_its_temporary_file_in_the_working_directory() {
        assert_eq!(
            temporary_beside(Path::new("report.md")),
            PathBuf::from(format!("./.report.md.{}.tmp", std::process::id()))
        );
    }
}
