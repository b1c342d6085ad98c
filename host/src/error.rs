//! The one error type that reaches `main`, each variant mapped to an exit code.

use std::path::PathBuf;

use crate::exit;

#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    #[error("{0}")]
    Usage(String),
    /// An input file or directory that cannot be used; the message names it.
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },
    /// Framework auto-detection refused; the message lists the evidence and the advice.
    #[error("{0}")]
    FrameworkRefused(String),
    #[error("{0}")]
    Capture(String),
    /// A plugin failed; `plugin` is its name or path.
    #[error("plugin {plugin}: {message}")]
    Plugin { plugin: String, message: String },
    /// `diff`: a threshold of the regression gate was crossed; the message says which.
    #[error("{0}")]
    Regression(String),
    /// Writing the report (`--output`, stdout) failed.
    #[error("{}: {message}", path.display())]
    Output { path: PathBuf, message: String },
}

impl TriageError {
    pub fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        TriageError::Input {
            path: path.into(),
            message: message.into(),
        }
    }

    pub fn plugin(plugin: impl Into<String>, message: impl Into<String>) -> Self {
        TriageError::Plugin {
            plugin: plugin.into(),
            message: message.into(),
        }
    }

    /// The message as exactly one line: control characters (a newline in a file name,
    /// say) are escaped as `\n`, `\u{1b}`, ...
    pub fn one_line(&self) -> String {
        crate::report::escape::plain(&self.to_string())
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            TriageError::Usage(_) => exit::USAGE,
            TriageError::Input { .. } | TriageError::Output { .. } => exit::INPUT,
            TriageError::FrameworkRefused(_) => exit::FRAMEWORK_REFUSED,
            TriageError::Capture(_) => exit::CAPTURE,
            TriageError::Plugin { .. } => exit::PLUGIN,
            TriageError::Regression(_) => exit::REGRESSION,
        }
    }
}

pub type Result<T, E = TriageError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_control_characters_only() {
        let e = TriageError::input("a\nb\u{1b}[31m.trace.json", "not a trace: \"x\" \u{e9}");
        assert_eq!(
            e.one_line(),
            "a\\nb\\u{1b}[31m.trace.json: not a trace: \"x\" \u{e9}"
        );
    }
}
