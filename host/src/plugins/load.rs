//! The plugin search path, and loading every plugin file on it.
//!
//! Each file is opened with `lib_header_from_path` + `init_root_module` rather than
//! `RootModule::load_from_file`: abi_stable caches one library per root-module type per
//! process, so the latter would hand back the first plugin for every file
//! (measured with abi_stable 0.11.3; see "The plugin ABI, in short" in
//! `docs/architecture.md`). Libraries are never unloaded.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use llm_triage_plugin_api::abi_stable::library::lib_header_from_path;
use llm_triage_plugin_api::baseline::{
    v1_0 as baseline_v1_0, v1_1 as baseline_v1_1, v1_2 as baseline_v1_2, v1_3 as baseline_v1_3,
};
use llm_triage_plugin_api::{FrameworkPluginRef, PLUGIN_API_VERSION};

use super::install::user_plugin_dir_from;
use super::{library_file, trust};
use super::{CapabilityCell, Engine, EngineManifest, UpstreamRef};

/// Only files whose name contains this are opened, so the host never dlopens an
/// unrelated library that happens to sit in a search directory.
pub const FILE_MARKER: &str = "llm_triage_plugin";

/// Library file extensions, per platform convention.
pub const LIBRARY_EXTENSIONS: &[&str] = &["so", "dylib", "dll"];

/// How many trailing lines of a loader error a rejection keeps (layout errors run to
/// hundreds of lines; the cause is at the end).
const REASON_TAIL_LINES: usize = 4;

/// Every plugin found on the search path: the ones that loaded, and the files that did not.
#[derive(Debug, Default)]
pub struct PluginSet {
    /// In search order; names and aliases are unique.
    pub engines: Vec<Engine>,
    pub rejected: Vec<Rejected>,
    /// Search directories any user may write to (their plugins still load).
    pub warnings: Vec<String>,
}

/// A candidate file that was not loaded, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub path: PathBuf,
    pub reason: String,
}

impl PluginSet {
    /// The engine whose name or alias is `name` (normalised like `--framework`).
    pub fn find(&self, name: &str) -> Option<&Engine> {
        let wanted = normalize_name(name);
        self.engines.iter().find(|e| {
            normalize_name(&e.manifest.name) == wanted
                || e.manifest
                    .aliases
                    .iter()
                    .any(|a| normalize_name(a) == wanted)
        })
    }
}

/// `--framework` spelling: trimmed, lower case, `_` as `-`.
pub fn normalize_name(name: &str) -> String {
    name.trim().to_lowercase().replace('_', "-")
}

/// The directories searched for plugins, and what was left out of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchPath {
    /// In priority order, absolute, without duplicates.
    pub dirs: Vec<PathBuf>,
    /// One line per relative entry ignored (they would make plugins load from the
    /// current directory).
    pub warnings: Vec<String>,
}

/// The directories searched for plugins, in priority order (the first file with a given
/// plugin name wins): every `--plugin-dir`, the entries of `$LLM_TRIAGE_PLUGIN_PATH`,
/// the user plugin dir (`$XDG_DATA_HOME/llm-triage/plugins`, default
/// `~/.local/share/llm-triage/plugins`), and the running executable's own directory (so a
/// freshly built `target/<profile>/llm-triage` finds the plugins built beside it). Never
/// the current directory: a relative entry of the variable, or a relative `HOME` or
/// `XDG_DATA_HOME`, is ignored with a warning (a `--plugin-dir` typed on the command line
/// is taken from the current directory, as the user asked). Duplicates are dropped;
/// missing directories are kept (doctor reports them).
pub fn search_dirs(cli_dirs: &[PathBuf]) -> SearchPath {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    let (user_dir, user_warnings) = user_plugin_dir_from(
        std::env::var_os("XDG_DATA_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    );
    let mut search = search_dirs_from(
        cli_dirs,
        std::env::var_os("LLM_TRIAGE_PLUGIN_PATH"),
        user_dir,
        exe_dir,
    );
    search.warnings.extend(user_warnings);
    search
}

/// [`search_dirs`] with the environment passed in.
pub fn search_dirs_from(
    cli_dirs: &[PathBuf],
    env_path: Option<OsString>,
    user_dir: Option<PathBuf>,
    exe_dir: Option<PathBuf>,
) -> SearchPath {
    let mut warnings = Vec::new();
    // An empty entry in a PATH-like variable means the current directory: skipped.
    let from_env: Vec<PathBuf> = env_path
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| !d.as_os_str().is_empty())
                .filter(|d| {
                    let absolute = d.is_absolute();
                    if !absolute {
                        warnings.push(format!(
                            "ignored the relative entry {:?} of LLM_TRIAGE_PLUGIN_PATH: plugin directories must be absolute paths, or plugins would load from the current directory",
                            d.display().to_string()
                        ));
                    }
                    absolute
                })
                .collect()
        })
        .unwrap_or_default();
    let cli = cli_dirs
        .iter()
        .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()));
    let all = cli.chain(from_env).chain(user_dir).chain(exe_dir);
    let mut seen = HashSet::new();
    SearchPath {
        dirs: all.filter(|d| seen.insert(identity(d))).collect(),
        warnings,
    }
}

/// The files in `dir` the host will try to load, sorted by name.
pub fn candidate_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && is_candidate(p))
        .collect();
    files.sort();
    Ok(files)
}

/// A library file (by extension) whose name carries [`FILE_MARKER`].
pub fn is_candidate(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.contains(FILE_MARKER) && is_library(path)
}

pub fn is_library(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| LIBRARY_EXTENSIONS.contains(&e))
}

/// Loads every plugin of `search`: [`load_all`] of its directories, with the search
/// path's own warnings first.
pub fn load_search_path(search: &SearchPath) -> PluginSet {
    let mut set = load_all(&search.dirs);
    set.warnings.splice(0..0, search.warnings.iter().cloned());
    set
}

/// Loads every candidate file of `dirs`, in order. Never fails: a file that cannot be
/// used lands in `rejected` with its reason; a missing directory is skipped. Files and
/// directories others could have written are warned about ([`trust`]) and still load.
pub fn load_all(dirs: &[PathBuf]) -> PluginSet {
    let mut set = PluginSet::default();
    let mut opened = HashSet::new();
    for dir in dirs {
        let Ok(files) = candidate_files(dir) else {
            continue;
        };
        set.warnings.extend(trust::directory_warnings(dir));
        for path in files {
            // The same file reached twice (a symlinked dir, a dir listed twice) is one plugin.
            if !opened.insert(identity(&path)) {
                continue;
            }
            set.warnings.extend(trust::file_warning(&path));
            match load_file(&path) {
                Ok(engine) => match name_clash(&set, &engine) {
                    Some(reason) => set.rejected.push(Rejected { path, reason }),
                    None => set.engines.push(engine),
                },
                Err(reason) => set.rejected.push(Rejected { path, reason }),
            }
        }
    }
    set
}

/// Opens one plugin file and checks it: its structure (before it is mapped, see
/// [`library_file`]), abi_stable header, plugin-API version, type
/// layout, manifest. The error is a one-line reason.
pub fn load_file(path: &Path) -> Result<Engine, String> {
    // Never map a file whose segments run past its end: that is a SIGBUS, not an error.
    library_file::check(path).map_err(|why| format!("not a loadable plugin library: {why}"))?;
    let header = lib_header_from_path(path)
        .map_err(|e| format!("not a loadable plugin library: {}", tail(&e.to_string())))?;
    let plugin_api = header.version_strings().version.as_str().to_string();
    let layout = check_api_version(&plugin_api)?;
    let abi_error = |e: AbiLoadError| {
        format!(
            "failed the ABI check (plugin API {plugin_api}, host plugin API {PLUGIN_API_VERSION}): {}",
            tail(&e.to_string())
        )
    };
    let module = match layout {
        Layout::Current => header
            .init_root_module::<FrameworkPluginRef>()
            .map_err(abi_error)?,
        Layout::BaselineV1_0 => {
            let old = header
                .init_root_module::<baseline_v1_0::FrameworkPluginRef>()
                .map_err(abi_error)?;
            // SAFETY: `old` passed the full layout check against the frozen 1.0 layout,
            // which is the prefix of the current one; later fields read as `None`.
            unsafe { old.upgrade() }
        }
        Layout::BaselineV1_1 => {
            let old = header
                .init_root_module::<baseline_v1_1::FrameworkPluginRef>()
                .map_err(abi_error)?;
            // SAFETY: as above, against the frozen 1.1 layout.
            unsafe { old.upgrade() }
        }
        Layout::BaselineV1_2 => {
            let old = header
                .init_root_module::<baseline_v1_2::FrameworkPluginRef>()
                .map_err(abi_error)?;
            // SAFETY: as above, against the frozen 1.2 layout.
            unsafe { old.upgrade() }
        }
        Layout::BaselineV1_3 => {
            let old = header
                .init_root_module::<baseline_v1_3::FrameworkPluginRef>()
                .map_err(abi_error)?;
            // SAFETY: as above, against the frozen 1.3 layout.
            unsafe { old.upgrade() }
        }
    };
    let manifest = (module.manifest())()
        .into_result()
        .map_err(|e| format!("its manifest entry point failed: {e}"))?;
    let manifest = plain_manifest(&manifest);
    check_name(&manifest.name)?;
    Ok(Engine {
        path: path.to_path_buf(),
        manifest,
        module,
    })
}

type AbiLoadError = abi_stable::library::LibraryError;

/// The root-module layout a plugin is loaded through.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The host's own layout (the plugin's minor API is the host's or newer).
    Current,
    /// The frozen 1.0 layout: the plugin predates `fusion_registry`.
    BaselineV1_0,
    /// The frozen 1.1 layout: the plugin predates live capture (`capture_plan`,
    /// `detect_endpoint`).
    BaselineV1_1,
    /// The frozen 1.2 layout: the plugin predates tools (`tools`).
    BaselineV1_2,
    /// The frozen 1.3 layout: the plugin predates its step catalog (`step_catalog`).
    BaselineV1_3,
}

/// Which layout a plugin built for `plugin_api` loads through, or why it cannot load:
/// another major is refused; an older minor goes through its frozen baseline (a newer
/// plugin never does, so a broken field after the old ones is still caught).
pub fn check_api_version(plugin_api: &str) -> Result<Layout, String> {
    let host = semver::Version::parse(PLUGIN_API_VERSION).expect("plugin-api's own version parses");
    let plugin = semver::Version::parse(plugin_api)
        .map_err(|_| format!("its plugin API version {plugin_api:?} is not a version number"))?;
    if plugin.major != host.major {
        return Err(format!(
            "built for plugin API {plugin}, but this host speaks plugin API {host} (major versions \
             differ); rebuild the plugin against llm-triage-plugin-api {}.x",
            host.major
        ));
    }
    if plugin.minor >= host.minor {
        return Ok(Layout::Current);
    }
    let baselines = [
        (baseline_v1_0::API_VERSION, Layout::BaselineV1_0),
        (baseline_v1_1::API_VERSION, Layout::BaselineV1_1),
        (baseline_v1_2::API_VERSION, Layout::BaselineV1_2),
        (baseline_v1_3::API_VERSION, Layout::BaselineV1_3),
    ];
    for (version, layout) in baselines {
        let baseline = semver::Version::parse(version).expect("a baseline's own version parses");
        if (plugin.major, plugin.minor) == (baseline.major, baseline.minor) {
            return Ok(layout);
        }
    }
    Err(format!(
        "built for plugin API {plugin}, older than this host's plugin API {host}, and this \
         host keeps no baseline layout for it; rebuild the plugin"
    ))
}

fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "its manifest name {name:?} is not a lower-case word (a-z, 0-9, -, _)"
        ))
    }
}

/// Why `engine` cannot join `set`: its name or an alias is already taken.
fn name_clash(set: &PluginSet, engine: &Engine) -> Option<String> {
    let name = &engine.manifest.name;
    if let Some(first) = set.engines.iter().find(|e| e.manifest.name == *name) {
        return Some(format!(
            "duplicate plugin name {name}, already loaded from {}",
            first.path.display()
        ));
    }
    let spellings = std::iter::once(name).chain(&engine.manifest.aliases);
    for spelling in spellings {
        if let Some(other) = set.find(spelling) {
            return Some(format!(
                "plugin {name}: the name or alias {spelling} is already taken by plugin {} \
                 loaded from {}",
                other.manifest.name,
                other.path.display()
            ));
        }
    }
    None
}

fn plain_manifest(m: &llm_triage_plugin_api::Manifest) -> EngineManifest {
    EngineManifest {
        name: m.name.to_string(),
        aliases: m.aliases.iter().map(|a| a.to_string()).collect(),
        display_name: m.display_name.to_string(),
        plugin_version: m.plugin_version.to_string(),
        api_version: m.api_version.to_string(),
        upstream: UpstreamRef {
            repo: m.upstream.repo.to_string(),
            commit: m.upstream.commit.to_string(),
            date: m.upstream.date.to_string(),
        },
        capabilities: m
            .capabilities
            .iter()
            .map(|c| CapabilityCell {
                key: c.key.to_string(),
                support: c.support,
                note: c.note.to_string(),
            })
            .collect(),
    }
}

/// The last few non-empty lines of a loader error, as one sentence: a line ending in `:`
/// (abi_stable's headings, `version:`) runs on into the next, others are joined by `; `.
/// abi_stable's open error repeats the path and then says `because:`; only the cause
/// after it is kept, since the caller names the file already.
pub fn tail(reason: &str) -> String {
    let lines: Vec<&str> = reason
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let lines = match lines
        .iter()
        .rposition(|l| l.eq_ignore_ascii_case("because:"))
    {
        Some(i) if i + 1 < lines.len() => &lines[i + 1..],
        _ => &lines[..],
    };
    let start = lines.len().saturating_sub(REASON_TAIL_LINES);
    let mut shown = String::new();
    for line in &lines[start..] {
        if !shown.is_empty() {
            shown.push_str(if shown.ends_with(':') { " " } else { "; " });
        }
        shown.push_str(line);
    }
    if start > 0 {
        format!("… {shown}")
    } else {
        shown
    }
}

/// A path's identity for de-duplication: canonical when it exists.
fn identity(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_order_and_no_current_dir() {
        let search = search_dirs_from(
            &[PathBuf::from("/opt/a"), PathBuf::from("/opt/b")],
            Some(OsString::from("/env/one::/env/two:rel/three:/opt/a:.")),
            Some(PathBuf::from("/home/u/.local/share/llm-triage/plugins")),
            Some(PathBuf::from("/build/target/debug")),
        );
        let expect: Vec<PathBuf> = [
            "/opt/a",
            "/opt/b",
            "/env/one",
            "/env/two",
            "/home/u/.local/share/llm-triage/plugins",
            "/build/target/debug",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(search.dirs, expect);
        let ignored: Vec<&str> = search
            .warnings
            .iter()
            .map(|w| w.split(' ').nth(4).unwrap_or(""))
            .collect();
        assert_eq!(ignored, ["\"rel/three\"", "\".\""], "{:?}", search.warnings);
    }

    #[test]
    fn candidates_need_the_marker_and_a_library_extension() {
        assert!(is_candidate(Path::new("/x/libllm_triage_plugin_sglang.so")));
        assert!(is_candidate(Path::new("/x/llm_triage_plugin_vllm.dll")));
        assert!(is_candidate(Path::new(
            "/x/libllm_triage_plugin_vllm.dylib"
        )));
        assert!(!is_candidate(Path::new("/x/libssl.so")));
        assert!(!is_candidate(Path::new(
            "/x/libllm_triage_plugin_sglang.rlib"
        )));
        assert!(!is_candidate(Path::new(
            "/x/libllm_triage_plugin_sglang.so.txt"
        )));
    }

    #[test]
    fn api_versions() {
        assert_eq!(PLUGIN_API_VERSION, "1.4.0");
        assert_eq!(check_api_version(PLUGIN_API_VERSION), Ok(Layout::Current));
        assert_eq!(check_api_version("1.7.2"), Ok(Layout::Current));
        assert_eq!(check_api_version("1.0.0"), Ok(Layout::BaselineV1_0));
        assert_eq!(check_api_version("1.0.9"), Ok(Layout::BaselineV1_0));
        assert_eq!(check_api_version("1.1.0"), Ok(Layout::BaselineV1_1));
        assert_eq!(check_api_version("1.1.4"), Ok(Layout::BaselineV1_1));
        assert_eq!(check_api_version("1.2.0"), Ok(Layout::BaselineV1_2));
        assert_eq!(check_api_version("1.2.3"), Ok(Layout::BaselineV1_2));
        assert_eq!(check_api_version("1.3.0"), Ok(Layout::BaselineV1_3));
        assert_eq!(check_api_version("1.3.5"), Ok(Layout::BaselineV1_3));
        let major = check_api_version("2.0.0").unwrap_err();
        assert!(
            major.contains("plugin API 2.0.0") && major.contains("plugin API 1.4.0"),
            "{major}"
        );
        let old = check_api_version("0.9.0").unwrap_err();
        assert!(old.contains("0.9.0") && old.contains("1.4.0"), "{old}");
        assert!(check_api_version("one").is_err());
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let long: String = (1..=200).map(|i| format!("line {i}\n\n")).collect();
        assert_eq!(tail(&long), "… line 197; line 198; line 199; line 200");
        assert_eq!(tail("\nonly\n"), "only");
    }

    #[test]
    fn a_loader_error_becomes_one_clear_line() {
        // abi_stable's LibraryError::OpenError, as it prints: the cause is after `because:`.
        let open = "\nCould not open library at:\n\t/x/libfoo.so\nbecause:\n\t/x/libfoo.so: \
                    invalid ELF header\n\n";
        assert_eq!(tail(open), "/x/libfoo.so: invalid ELF header");
        // A heading ending in `:` runs on into its value instead of a separator.
        assert_eq!(
            tail("\nversion:\n\t1.0.0\nthe error:\n\nboom\n"),
            "version: 1.0.0; the error: boom"
        );
    }

    #[test]
    fn names_normalise_like_the_cli() {
        assert_eq!(normalize_name(" TensorRT_LLM "), "tensorrt-llm");
    }
}
