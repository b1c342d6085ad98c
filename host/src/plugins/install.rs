//! `plugins install` and `plugins remove`: the user plugin directory.
//!
//! Installing copies a plugin file into the user plugin dir under a canonical name,
//! `libllm_triage_plugin_<name>.<ext>`, after loading it once to validate it. It refuses
//! an incompatible plugin API (the load fails) and a downgrade of an installed plugin of
//! the same name, unless forced. Removing only ever touches the user plugin dir.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::load::{candidate_files, is_library, load_all, load_file, FILE_MARKER};
use super::Engine;
use crate::error::TriageError;
use crate::output;

/// `$XDG_DATA_HOME/llm-triage/plugins`, or `~/.local/share/llm-triage/plugins`. A relative
/// `XDG_DATA_HOME` or `HOME` is ignored (the XDG spec says so for the first; both would
/// make plugins load from the current directory); [`user_plugin_dir_from`] says so.
pub fn user_plugin_dir() -> Option<PathBuf> {
    user_plugin_dir_from(
        std::env::var_os("XDG_DATA_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
    .0
}

/// The user plugin dir from these variables, and a warning for each relative one ignored.
pub(crate) fn user_plugin_dir_from(
    xdg_data_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> (Option<PathBuf>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut absolute = |name: &str, dir: Option<PathBuf>| {
        let dir = dir.filter(|d| !d.as_os_str().is_empty())?;
        if dir.is_absolute() {
            return Some(dir);
        }
        warnings.push(format!(
            "ignored {name}={:?} for the user plugin directory: not an absolute path, so plugins would load from the current directory",
            dir.display().to_string()
        ));
        None
    };
    let xdg = absolute("XDG_DATA_HOME", xdg_data_home);
    let data = match xdg {
        Some(d) => Some(d),
        None => absolute("HOME", home).map(|h| h.join(".local").join("share")),
    };
    (data.map(|d| d.join("llm-triage").join("plugins")), warnings)
}

/// The file name a plugin named `name` is installed under.
pub(crate) fn installed_file_name(name: &str, source: &Path) -> String {
    let ext = source.extension().and_then(|e| e.to_str()).unwrap_or("so");
    let prefix = if ext == "dll" { "" } else { "lib" };
    format!("{prefix}{FILE_MARKER}_{}.{ext}", name.replace('-', "_"))
}

/// Installs `file` into `user_dir`; returns the text to print.
pub fn install(file: &Path, force: bool, user_dir: &Path) -> Result<String, TriageError> {
    // dlopen searches the library path for a name without a `/` and never the current
    // directory, so `install libfoo.so` would not find a file that is right there.
    let file = &std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    if !file.is_file() {
        return Err(TriageError::input(file, "no such plugin file"));
    }
    if !is_library(file) {
        return Err(TriageError::input(
            file,
            "not a plugin library (expected a .so, .dylib or .dll file)",
        ));
    }
    let new = load_file(file)
        .map_err(|reason| TriageError::plugin(file.display().to_string(), reason))?;
    let name = new.manifest.name.clone();
    let version = new.manifest.plugin_version.clone();

    let installed = load_all(&[user_dir.to_path_buf()]);
    let previous: Vec<&Engine> = installed
        .engines
        .iter()
        .filter(|e| e.manifest.name == name)
        .collect();
    let mut notes = Vec::new();
    for old in &previous {
        match compare_versions(&version, &old.manifest.plugin_version) {
            Some(std::cmp::Ordering::Less) if !force => {
                return Err(TriageError::plugin(
                    &name,
                    format!(
                        "refusing to downgrade {name} from {} (installed at {}) to {version}; \
                         pass --force to install it anyway",
                        old.manifest.plugin_version,
                        old.path.display()
                    ),
                ))
            }
            Some(std::cmp::Ordering::Less) => notes.push(format!(
                "downgraded from {} (--force)",
                old.manifest.plugin_version
            )),
            None if !force => {
                return Err(TriageError::plugin(
                    &name,
                    format!(
                        "cannot compare plugin versions {version} and {} (installed at {}); \
                         pass --force to replace it",
                        old.manifest.plugin_version,
                        old.path.display()
                    ),
                ))
            }
            _ => notes.push(format!("replaced {}", old.manifest.plugin_version)),
        }
    }

    std::fs::create_dir_all(user_dir)
        .map_err(|e| TriageError::input(user_dir, format!("cannot create plugin dir: {e}")))?;
    let target = user_dir.join(installed_file_name(&name, file));
    copy_atomically(file, &target)?;
    // An older copy of the same plugin under another file name would shadow or clash.
    for old in &previous {
        if old.path != target {
            std::fs::remove_file(&old.path).map_err(|e| {
                TriageError::input(&old.path, format!("cannot remove the replaced plugin: {e}"))
            })?;
        }
    }
    let mut text = format!(
        "installed {name} {version} (plugin API {}) to {}",
        new.manifest.api_version,
        target.display()
    );
    if !notes.is_empty() {
        let _ = write!(text, " ({})", notes.join(", "));
    }
    text.push('\n');
    Ok(text)
}

/// Removes the plugin named `name` (or one of its aliases) from `user_dir`. A file
/// under the canonical name is removed without loading anything, so a broken plugin
/// (one that would crash the loader) can always be removed; only a name that matches no
/// file is looked up among the loaded plugins' names and aliases.
pub fn remove(name: &str, user_dir: &Path) -> Result<String, TriageError> {
    let mut paths = files_named(name, user_dir);
    let mut installed = None;
    if paths.is_empty() {
        let set = load_all(&[user_dir.to_path_buf()]);
        paths.extend(set.find(name).map(|e| e.path.clone()));
        installed = Some(set);
    }
    if paths.is_empty() {
        let present: Vec<&str> = installed
            .iter()
            .flat_map(|set| set.engines.iter().map(|e| e.name()))
            .collect();
        return Err(TriageError::Usage(format!(
            "no plugin named {:?} in the user plugin dir {} (installed there: {}); plugins \
             elsewhere on the search path are not removed by llm-triage",
            name.trim(),
            user_dir.display(),
            if present.is_empty() {
                "none".to_string()
            } else {
                present.join(", ")
            }
        )));
    }
    let mut text = String::new();
    for path in paths {
        std::fs::remove_file(&path)
            .map_err(|e| TriageError::input(&path, format!("cannot remove: {e}")))?;
        let _ = writeln!(text, "removed {}", path.display());
    }
    Ok(text)
}

/// The candidate files of `user_dir` under the canonical name of plugin `name`.
fn files_named(name: &str, user_dir: &Path) -> Vec<PathBuf> {
    let stem = format!("{FILE_MARKER}_{}.", name.trim().replace('-', "_"));
    candidate_files(user_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|f| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&stem))
        })
        .collect()
}

/// Semver order of two plugin versions; `None` when either does not parse.
fn compare_versions(new: &str, old: &str) -> Option<std::cmp::Ordering> {
    let new = semver::Version::parse(new).ok()?;
    let old = semver::Version::parse(old).ok()?;
    Some(new.cmp(&old))
}

/// The mode every installed plugin gets, whatever the source's: the owner may replace
/// it, everyone may run it, nobody else may write it (`std::fs::copy` would carry a
/// 0777 source's mode over).
pub(crate) const INSTALLED_MODE: u32 = 0o755;

/// Copies through a temporary file in the target's directory and renames it into place
/// ([`output::replace_atomically`]), so a running host never sees a half-written plugin.
fn copy_atomically(from: &Path, to: &Path) -> Result<(), TriageError> {
    use std::os::unix::fs::PermissionsExt;
    output::replace_atomically(to, |tmp| {
        std::fs::copy(from, tmp)?;
        std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(INSTALLED_MODE))
    })
    .map_err(|e| TriageError::input(to, format!("cannot install plugin: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_dir_follows_xdg() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            user_plugin_dir_from(Some("/data".into()), home.clone()),
            (Some(PathBuf::from("/data/llm-triage/plugins")), vec![])
        );
        let (dir, warnings) = user_plugin_dir_from(Some("relative".into()), home.clone());
        assert_eq!(
            dir,
            Some(PathBuf::from("/home/u/.local/share/llm-triage/plugins"))
        );
        assert!(warnings[0].starts_with("ignored XDG_DATA_HOME=\"relative\" "));
        let (dir, warnings) = user_plugin_dir_from(None, Some(".".into()));
        assert_eq!(dir, None);
        assert!(
            warnings[0].starts_with("ignored HOME=\".\" "),
            "{warnings:?}"
        );
        assert_eq!(user_plugin_dir_from(None, None), (None, vec![]));
    }

    #[test]
    fn canonical_file_names() {
        let so = Path::new("/x/libwhatever.so");
        assert_eq!(
            installed_file_name("sglang", so),
            "libllm_triage_plugin_sglang.so"
        );
        assert_eq!(
            installed_file_name("my-engine", Path::new("x.dll")),
            "llm_triage_plugin_my_engine.dll"
        );
    }

    #[test]
    fn version_order() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("0.1.0", "0.2.0"), Some(Less));
        assert_eq!(compare_versions("0.10.0", "0.9.9"), Some(Greater));
        assert_eq!(compare_versions("x", "0.1.0"), None);
    }
}
