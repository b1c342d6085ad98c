//! Who else could have put a plugin where the host finds it.
//!
//! A plugin is native code that runs with the rights of whoever runs llm-triage (often
//! root, in containers and CI). The host cannot judge the code; it can say when someone
//! other than the user could have written it: a plugin file any user may write, a plugin
//! directory any user may write or that another user owns, or a directory above it that
//! any user may write without the sticky bit (anyone may then rename the plugin
//! directory away and put their own in its place). Each is one warning line; the
//! plugins still load, since the user chose the directory.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const WORLD_WRITABLE: u32 = 0o002;
const STICKY: u32 = 0o1000;
const ROOT: u32 = 0;

/// The warnings about plugin directory `dir`: world-writable, owned by another user, or
/// below a world-writable directory without the sticky bit (the nearest such one).
pub fn directory_warnings(dir: &Path) -> Vec<String> {
    let Ok(meta) = std::fs::metadata(dir) else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    if meta.permissions().mode() & WORLD_WRITABLE != 0 {
        warnings.push(format!(
            "plugin directory {} is writable by every user: anyone can put a library there that llm-triage then runs as you; `chmod o-w` it",
            dir.display()
        ));
    }
    let me = effective_uid();
    if let Some(owner) = foreign_owner(meta.uid(), me) {
        warnings.push(format!(
            "plugin directory {} is owned by user {owner}, not by you (user {me}) or root: that user can put a library there that llm-triage then runs as you",
            dir.display()
        ));
    }
    if let Some(open) = open_ancestor(dir) {
        warnings.push(format!(
            "plugin directory {} is inside {}, which every user may write to and which has no sticky bit: anyone can put another directory in its place; `chmod o-w` or `chmod +t` that directory",
            dir.display(),
            open.display()
        ));
    }
    warnings
}

/// The warning about plugin file `file` when any user may write to it.
pub fn file_warning(file: &Path) -> Option<String> {
    let mode = std::fs::metadata(file).ok()?.permissions().mode();
    (mode & WORLD_WRITABLE != 0).then(|| {
        format!(
            "plugin file {} is writable by every user: anyone can change the code llm-triage runs as you; `chmod o-w` it",
            file.display()
        )
    })
}

/// `owner` when it is neither `me` nor root (root may replace anything anyway, and owns
/// the system's library directories).
fn foreign_owner(owner: u32, me: u32) -> Option<u32> {
    (owner != me && owner != ROOT).then_some(owner)
}

/// The nearest directory above `dir` that every user may write to and that has no
/// sticky bit. Symlinks in `dir` are resolved first: the directories that matter are
/// the ones the path really goes through.
fn open_ancestor(dir: &Path) -> Option<std::path::PathBuf> {
    let real = dir.canonicalize().ok()?;
    real.ancestors().skip(1).find_map(|above| {
        let mode = std::fs::metadata(above).ok()?.permissions().mode();
        (mode & WORLD_WRITABLE != 0 && mode & STICKY == 0).then(|| above.to_path_buf())
    })
}

/// The user llm-triage runs as, for ownership checks.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_users_than_root_count_as_foreign() {
        assert_eq!(foreign_owner(1000, 1000), None);
        assert_eq!(foreign_owner(ROOT, 1000), None);
        assert_eq!(foreign_owner(65534, 1000), Some(65534));
        assert_eq!(foreign_owner(65534, ROOT), Some(65534));
    }

    #[test]
    fn a_sticky_world_writable_parent_is_fine_a_plain_one_is_not() {
        let top = tempfile::tempdir().unwrap();
        let parent = top.path().join("p");
        let dir = parent.join("plugins");
        std::fs::create_dir_all(&dir).unwrap();
        let set = |mode| {
            std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(0o1777);
        assert_eq!(open_ancestor(&dir), None);
        set(0o777);
        assert_eq!(open_ancestor(&dir), Some(parent.canonicalize().unwrap()));
        set(0o755);
        assert_eq!(open_ancestor(&dir), None);
    }
}
