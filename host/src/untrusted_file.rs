//! Opening files that someone else may control (run logs, saved reports under a shared
//! directory, `server_args.json`): never block, never read a special file, never read
//! more than a cap.
//!
//! A file is opened with `O_NONBLOCK`, so opening a named pipe with no writer returns at
//! once instead of waiting forever, and then judged by the metadata of the open file
//! itself (`fstat`), so a path swapped for a FIFO or a device between a check and the
//! open is still caught. Callers that must not follow a final symlink (the bundle, which
//! resolves every path first) ask for `O_NOFOLLOW` too.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Whether the last component of a path may be a symbolic link.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Links {
    Follow,
    /// The path was resolved already; a link now means it changed under us.
    Refuse,
}

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// A FIFO, device, socket, directory or (with [`Links::Refuse`]) a symbolic link.
    NotRegular(&'static str),
    /// Longer than the cap (in bytes).
    TooLarge {
        cap: u64,
    },
    Io(io::Error),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotRegular(what) => write!(f, "not a regular file: {what}"),
            Refusal::TooLarge { cap } => write!(f, "larger than the {} cap", size_text(*cap)),
            Refusal::Io(e) => write!(f, "cannot read: {e}"),
        }
    }
}

/// `16 MiB`, `64 KiB`, `100 bytes`: a cap as people write it.
pub(crate) fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a file that is not a plain file is, in words; `None` for a plain file.
pub(crate) fn special_kind(kind: &std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else if kind.is_fifo() {
        Some("a named pipe")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        Some("a special file")
    }
}

/// Opens `path` for reading if, once open, it is a plain file. The open itself cannot
/// block (`O_NONBLOCK`; on a plain file the flag changes nothing).
pub(crate) fn open_regular(path: &Path, links: Links) -> Result<File, Refusal> {
    let mut flags = libc::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a link.
            Some(libc::ELOOP) if links == Links::Refuse => Refusal::NotRegular("a symbolic link"),
            // A socket cannot be opened at all.
            Some(libc::ENXIO) => Refusal::NotRegular("a socket"),
            _ => Refusal::Io(e),
        })?;
    let meta = file.metadata().map_err(Refusal::Io)?;
    match special_kind(&meta.file_type()) {
        Some(what) => Err(Refusal::NotRegular(what)),
        None => Ok(file),
    }
}

/// The whole of a plain file of at most `cap` bytes. Reads at most `cap + 1` bytes, so
/// a file that grows, or lies about its size, costs no more than that.
pub(crate) fn read_capped(path: &Path, cap: u64, links: Links) -> Result<Vec<u8>, Refusal> {
    let file = open_regular(path, links)?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refusal::TooLarge { cap });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .unwrap();
        assert!(status.success());
        let refused = |path: &Path, links| match open_regular(path, links) {
            Err(Refusal::NotRegular(what)) => what,
            other => panic!("{}: {other:?}", path.display()),
        };
        assert_eq!(refused(&pipe, Links::Follow), "a named pipe");
        assert_eq!(refused(Path::new("/dev/zero"), Links::Follow), "a device");
        assert_eq!(refused(dir.path(), Links::Follow), "a directory");
        let file = dir.path().join("plain");
        std::fs::write(&file, "12345").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(refused(&link, Links::Refuse), "a symbolic link");
        assert_eq!(read_capped(&link, 5, Links::Follow).unwrap(), b"12345");
        assert!(matches!(
            read_capped(&file, 4, Links::Refuse),
            Err(Refusal::TooLarge { cap: 4 })
        ));
        assert_eq!(size_text(16 << 20), "16 MiB");
        assert_eq!(size_text(4), "4 bytes");
    }
}
