//! Plugin tools (API 1.3): named pure text transforms a plugin offers, run as
//! `llm-triage tool <plugin> <tool> --<input> FILE ... --<output> FILE ...`.
//!
//! The plugin never touches the file system: the host reads each input file named on
//! the command line and passes its text in, and writes each output the tool returns,
//! after the check the tool asks for (e.g. `python3 -m py_compile`), atomically. A tool
//! that cannot recognise its input returns `Err` with the reason; the host then writes
//! nothing.

use abi_stable::{
    std_types::{RResult, RSlice, RStr, RString, RVec},
    StableAbi,
};

/// What a tool is and which files it takes.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct ToolSpec {
    /// The command-line name, e.g. `py-executor-override`.
    pub name: RString,
    /// One line for `llm-triage tool <plugin>`.
    pub summary: RString,
    /// Flags whose FILE the host reads and passes in under the flag's name, e.g.
    /// `source` for `--source FILE`.
    pub inputs: RVec<RString>,
    /// Flags whose FILE the host writes from the returned file of the same name, e.g.
    /// `output` for `--output FILE`.
    pub outputs: RVec<RString>,
    /// How the host checks each output before writing it: one of [`check`].
    pub check: RString,
}

/// Output checks a tool can ask for.
pub mod check {
    /// No check.
    pub const NONE: &str = "";
    /// The output must compile as Python (`python3 -m py_compile`, when Python is present).
    pub const PYTHON: &str = "python";
}

/// One named text: an input the host read, or an output the tool made.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct ToolFile {
    /// The flag name (`source`, `output`).
    pub name: RString,
    pub text: RString,
}

/// What a tool run made: the outputs, and notes the host prints (what changed, what was
/// already there).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOutput {
    pub files: RVec<ToolFile>,
    pub notes: RVec<RString>,
}

/// A plugin's tools and the one entry point that runs them.
#[repr(C)]
#[derive(StableAbi)]
pub struct ToolBox {
    pub tools: RVec<ToolSpec>,
    /// Runs the tool named by the first argument on the inputs.
    pub run: extern "C" fn(RStr<'_>, RSlice<'_, ToolFile>) -> RResult<ToolOutput, RString>,
}

impl ToolSpec {
    pub fn new(name: &str, summary: &str, inputs: &[&str], outputs: &[&str], check: &str) -> Self {
        ToolSpec {
            name: name.into(),
            summary: summary.into(),
            inputs: inputs.iter().map(|s| RString::from(*s)).collect(),
            outputs: outputs.iter().map(|s| RString::from(*s)).collect(),
            check: check.into(),
        }
    }
}

impl ToolOutput {
    /// The text of the input or output named `name`.
    pub fn file(&self, name: &str) -> Option<&str> {
        find(&self.files, name)
    }
}

/// The text of the file named `name` in `files`.
pub fn find<'a>(files: &'a [ToolFile], name: &str) -> Option<&'a str> {
    files
        .iter()
        .find(|f| f.name.as_str() == name)
        .map(|f| f.text.as_str())
}
