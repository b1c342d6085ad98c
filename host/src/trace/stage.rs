//! Splitting a trace's GPU work into stages (extend/prefill, decode).

/// A report section.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    Extend,
    Decode,
    /// No stage signal, or a mixed step: one section for everything.
    All,
}

impl Stage {
    /// The section label of the predecessor's report contract.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Extend => "extend/prefill",
            Stage::Decode => "decode",
            Stage::All => "all",
        }
    }
}

impl Stage {
    /// Section order: extend/prefill, decode, all.
    pub fn order(self) -> u8 {
        match self {
            Stage::Extend => 0,
            Stage::Decode => 1,
            Stage::All => 2,
        }
    }
}

/// The stage a file's path names, by the generic rules every engine's capture layout
/// follows: a `prefill/`, `extend/` or `decode/` directory, or a `-EXTEND`, `_prefill`,
/// `-DECODE` ... marker in a name. Only the last six components count, and the
/// innermost component with a marker decides (the predecessor let an outer
/// `x_prefill_study/` directory beat an inner `decode/`).
pub fn stage_from_path(path: &std::path::Path) -> Stage {
    let components: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    let start = components.len().saturating_sub(6);
    for component in components[start..].iter().rev() {
        if let Some(stage) = stage_of_component(component) {
            return stage;
        }
    }
    Stage::All
}

/// The stage one lower-cased path component names, if any. When a name carries both
/// markers, the later one wins (`run_prefill_then-decode` is decode).
fn stage_of_component(component: &str) -> Option<Stage> {
    match component {
        "extend" | "prefill" => return Some(Stage::Extend),
        "decode" => return Some(Stage::Decode),
        _ => {}
    }
    let last_of = |markers: &[&str]| markers.iter().filter_map(|m| component.rfind(m)).max();
    let extend = last_of(&["-extend", "_extend", "-prefill", "_prefill"]);
    let decode = last_of(&["-decode", "_decode"]);
    match (extend, decode) {
        (Some(e), Some(d)) => Some(if d > e { Stage::Decode } else { Stage::Extend }),
        (Some(_), None) => Some(Stage::Extend),
        (None, Some(_)) => Some(Stage::Decode),
        (None, None) => None,
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn workload_directories_and_suffixes() {
        assert_eq!(stage_from_path(Path::new("/r/prefill/rank0.trace.json")), Stage::Extend);
        assert_eq!(stage_from_path(Path::new("/r/decode/rank0.trace.json")), Stage::Decode);
        assert_eq!(
            stage_from_path(Path::new("/x/1761000000.5-TP-0-EXTEND.trace.json.gz")),
            Stage::Extend
        );
        assert_eq!(
            stage_from_path(Path::new("/x/1761000000.5-TP-0-DECODE.trace.json.gz")),
            Stage::Decode
        );
        assert_eq!(stage_from_path(Path::new("/x/host_12.34.pt.trace.json.gz")), Stage::All);
    }

    #[test]
    fn innermost_marker_wins() {
        // The predecessor said extend here because `_prefill` was checked first anywhere.
        assert_eq!(
            stage_from_path(Path::new("/runs/qwen_prefill_study/decode/x.json")),
            Stage::Decode
        );
    }

    #[test]
    fn only_last_six_components_count() {
        let p = Path::new("/prefill/a/b/c/d/e/f/trace.json");
        assert_eq!(stage_from_path(p), Stage::All);
    }
}
