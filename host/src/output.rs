//! Where results leave the process: stdout, and files the user named.
//!
//! Every subcommand prints through `print_stdout`, where a closed pipe (`| head`) is
//! success, not a panic or an error. Every file the host writes for the user (a report,
//! a bundle, a tool's output) goes through `write_atomically`, which looks at what is at
//! the path first:
//!
//! * nothing, or a regular file: a temporary file beside the target, created exclusively
//!   (`O_EXCL`) under a random name with mode 0600, then renamed over it; an existing
//!   file's mode (and, where permitted, owner) carries over, a new one gets the mode the
//!   umask gives. A reader never sees half a file, and a failure at any step (disk full,
//!   target a directory) leaves the old file and no temporary file behind. A planted
//!   symlink at a temporary name is never followed: the name is unpredictable and the
//!   create fails on anything already there.
//! * the process's own stdout (`/dev/stdout`, `/proc/self/fd/1`, or the file stdout was
//!   redirected to): written to stdout, so `>> log` appends.
//! * a FIFO or a character device (`/dev/null`, a terminal), also through a symlink of
//!   the caller's or root's: opened for writing and written through, never replaced;
//!   `/dev/full` is an error. A symlink another user owns that leads to one is refused.
//! * anything else (a socket, a block device): refused as a usage error.
//!
//! A symlink that leads to a regular file (or nowhere) is replaced, not written through,
//! so a link planted at the output path cannot redirect the report onto another file.

use std::fs::{Metadata, Permissions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use crate::error::{Result, TriageError};
use crate::plugins::trust::effective_uid;

/// Writes `text` to stdout, with a final newline when it has none. A closed pipe is not
/// an error: the reader has what it wanted.
pub(crate) fn print_stdout(text: &str) -> Result<()> {
    write_stdout(&with_final_newline(text)).map_err(|e| TriageError::Output {
        path: "<stdout>".into(),
        message: e.to_string(),
    })
}

/// Writes into `path` what [`print_stdout`] would print: `text` with a final newline.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    write_atomically(path, &with_final_newline(text))
}

/// Writes exactly `bytes` into `path`: atomically over a regular file or a missing one,
/// through to a FIFO, a character device or stdout; a socket or block device is refused
/// (see the module doc).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let output_error = |e: std::io::Error| TriageError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    match target_of(path) {
        Target::Stdout => write_stdout(bytes).map_err(output_error),
        Target::Stream => write_through(path, bytes).map_err(output_error),
        Target::File(old) => {
            replace_atomically_keeping(path, old.as_ref(), |file| file.write_all(bytes))
                .map_err(output_error)
        }
        Target::Refused(kind) => Err(TriageError::Usage(format!(
            "{}: is a {kind}; --output takes a regular file, a FIFO or a character device",
            path.display()
        ))),
    }
}

/// Refuses an `output` that is one of `inputs` (the same file by device and inode, so
/// also through a symlink, `./` or `..`): the report would overwrite the trace it reads.
/// A missing output or input is no conflict.
pub(crate) fn refuse_overwriting_inputs(output: &Path, inputs: &[&Path]) -> Result<()> {
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(());
    };
    for input in inputs {
        if std::fs::metadata(input).is_ok_and(|meta| same_file(&meta, &out)) {
            return Err(TriageError::Usage(format!(
                "--output {} is the input {}: refusing to overwrite it",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// Lets `fill` write a temporary file beside `path` (created exclusively under a random
/// name in the same directory, mode 0600, so the rename never crosses file systems and
/// nothing planted there is followed), then renames it over `path`. When `fill` or the
/// rename fails, the temporary file is removed and `path` is left as it was. `fill`
/// decides the file's final mode (a plugin install copies its source's).
pub(crate) fn replace_atomically(
    path: &Path,
    fill: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temporary_beside(path)?;
    fill(tmp.path())?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// What [`write_atomically`] does at a path, decided from what is there.
enum Target {
    /// The process's own stdout, by whatever name.
    Stdout,
    /// A FIFO or a character device: written through.
    Stream,
    /// A regular file (its metadata, to keep its mode), or nothing yet (`None`): replaced.
    File(Option<Metadata>),
    /// Neither: named in the refusal.
    Refused(&'static str),
}

fn target_of(path: &Path) -> Target {
    let Ok(own) = std::fs::symlink_metadata(path) else {
        return Target::File(None);
    };
    if own.file_type().is_file() {
        return if is_stdout(&own) {
            Target::Stdout
        } else {
            Target::File(Some(own))
        };
    }
    // A symlink is judged by what it leads to; a dangling one is replaced like nothing.
    let Ok(led_to) = std::fs::metadata(path) else {
        return Target::File(None);
    };
    let kind = led_to.file_type();
    if is_stdout(&led_to) {
        Target::Stdout
    } else if (kind.is_fifo() || kind.is_char_device()) && planted_by_another_user(&own) {
        Target::Refused("symlink another user owns, leading to a device or FIFO")
    } else if kind.is_fifo() || kind.is_char_device() {
        Target::Stream
    } else if kind.is_socket() {
        Target::Refused("socket")
    } else if kind.is_block_device() {
        Target::Refused("block device")
    } else {
        // A directory fails at the rename with its own message; a symlink to a regular
        // file is replaced by the report (never written through), with a new file's mode.
        Target::File(None)
    }
}

/// Whether a symlink is neither the caller's nor root's (the system's `/dev/stdout`,
/// `/dev/fd/N` are root's): one planted in a shared directory such as `/tmp` must not
/// steer root's report into a device (`report.md -> /dev/mem`).
fn planted_by_another_user(link: &Metadata) -> bool {
    link.file_type().is_symlink() && link.uid() != 0 && link.uid() != effective_uid()
}

/// Whether `meta` is the file stdout is open on (a pipe, a terminal, a redirected file).
fn is_stdout(meta: &Metadata) -> bool {
    use std::os::fd::AsFd;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .is_ok_and(|out| same_file(&out, meta))
}

fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// `bytes` to stdout; a closed pipe is success.
fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    quiet_broken_pipe(out.write_all(bytes).and_then(|()| out.flush()))
}

/// Opens an existing FIFO or device for writing (no create, no truncate) and writes
/// `bytes` into it; a reader that closed its end early is success, as on stdout.
fn write_through(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    quiet_broken_pipe(file.write_all(bytes).and_then(|()| file.flush()))
}

fn quiet_broken_pipe(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// [`replace_atomically`] for a file the host fills itself: the old file's mode (and
/// owner, where this user may give it away) carries over; a new file gets the mode the
/// umask leaves of 0666. The mode is set only after the content is written, so a
/// private report is never readable by others through its temporary file.
fn replace_atomically_keeping(
    path: &Path,
    old: Option<&Metadata>,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut tmp = temporary_beside(path)?;
    fill(tmp.as_file_mut())?;
    let file = tmp.as_file();
    match old {
        Some(old) => {
            // Only root may give a file away; anyone else keeps the report as theirs.
            let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
            file.set_permissions(Permissions::from_mode(old.mode() & 0o777))?;
        }
        None => file.set_permissions(Permissions::from_mode(new_file_mode()))?,
    }
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// An exclusive, randomly named `.NAME.XXXXXX.tmp` in `path`'s directory (the working
/// directory for a bare name), mode 0600; removed when dropped unless persisted.
fn temporary_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o600))
        .tempfile_in(dir)
}

/// The mode `open(…, 0666)` gives a new file under this process's umask (Linux's
/// `/proc/self/status`; without it, 0600, the private choice).
fn new_file_mode() -> u32 {
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Umask:"))
                .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
        });
    umask.map_or(0o600, |umask| 0o666 & !umask)
}

/// `text` as bytes, with a final newline when it has none.
fn with_final_newline(text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
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
        let tmp = temporary_beside(Path::new("report.md")).unwrap();
        let here = std::env::current_dir().unwrap();
        assert_eq!(tmp.path().parent(), Some(here.as_path()));
        let name = tmp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(".report.md.") && name.ends_with(".tmp"),
            "{name}"
        );
    }

    #[test]
    fn a_symlink_planted_at_the_old_predictable_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        // What the writer used to call its temporary file: `.NAME.PID.tmp`.
        let planted = dir
            .path()
            .join(format!(".report.md.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let report = dir.path().join("report.md");
        write_atomically(&report, b"the report\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "the report\n");
        assert!(std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn the_temporary_file_exists_before_it_is_filled_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.md");
        let mut seen = None;
        replace_atomically(&path, |tmp| {
            seen = Some(std::fs::metadata(tmp)?.mode() & 0o777);
            std::fs::write(tmp, "text")
        })
        .unwrap();
        assert_eq!(seen, Some(0o600), "created exclusively with mode 0600");
    }

    #[test]
    fn temporary_files_get_fresh_names_and_leave_existing_ones_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.md");
        let first = temporary_beside(&path).unwrap();
        std::fs::write(first.path(), "someone else's\n").unwrap();
        let second = temporary_beside(&path).unwrap();
        assert_ne!(first.path(), second.path());
        assert_eq!(
            std::fs::read_to_string(first.path()).unwrap(),
            "someone else's\n"
        );
    }

    #[test]
    fn a_new_file_mode_is_what_the_umask_leaves_of_0666() {
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        std::fs::write(&probe, "").unwrap();
        let usual = std::fs::metadata(&probe).unwrap().mode() & 0o777;
        assert_eq!(new_file_mode(), usual);
    }
}
