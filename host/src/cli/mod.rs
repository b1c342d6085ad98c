//! The command line, defined once: clap derives parsing, `--help` and shell
//! completions from these types (the live-capture flags are in [`capture`]).

pub mod capture;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Triage torch.profiler traces of LLM serving engines (SGLang, vLLM, TensorRT-LLM,
/// TokenSpeed, and engines that plugins add): which kernels dominate prefill and
/// decode, and which Python line launched them.
///
/// Report labels: priority P1 (act first) .. P5 (skip); verdict headroom (mostly
/// exposed) or low-roi-hidden (already hidden); dep risk low, high or unclear, with its
/// reason; recommendation try overlap, try fusion, check deps or skip; fusion confidence
/// Confirmed or Candidate; Similarity high, medium or low. docs/report-labels.md defines
/// each.
#[derive(Debug, Parser)]
#[command(
    name = "llm-triage",
    version,
    subcommand_precedence_over_arg = true,
    // The predecessor (argparse) took unambiguous prefixes: `--inp` for `--input`.
    infer_long_args = true,
    after_help = crate::exit::help_text()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub triage: TriageArgs,

    #[command(flatten)]
    pub global: GlobalArgs,
}

// The flags every subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Also look for engine plugins in DIR (repeatable; searched first).
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    pub plugin_dirs: Vec<PathBuf>,
}

// Parsed once per process: the size of the largest variant does not matter.
#[expect(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Triage a trace (the default; the word may be left out).
    #[command(infer_long_args = true)]
    Triage(TriageArgs),
    /// List, inspect, install and check engine plugins.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// List, show and validate the fusion catalog (plugins' rows, the host's torch rows,
    /// and `--catalog DIR` overrides).
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// Smoke-test a running server: latency statistics and sample answers (JSON);
    /// exit 5 when a request fails or returns empty text.
    Probe(capture::ProbeArgs),
    /// Print an engine's live-capture protocol (environment, start/stop requests, trace
    /// names) without capturing, e.g. the per-stage TensorRT-LLM run.
    CapturePlan(capture::CapturePlanArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Bundle saved triage reports (text, markdown or --format json) of many models and
    /// engines into one markdown document, grouped by model.
    #[command(infer_long_args = true)]
    Bundle(BundleArgs),
    /// Run a plugin's text tool, e.g. `tool trtllm py-executor-override --source F
    /// --output F`; without a tool name, list the tools.
    Tool(ToolArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    Man(ManArgs),
    /// Compare two runs (each a trace, a profile directory or a saved --format json
    /// report): per stage, the step time and a waterfall of its change; exit 7 when
    /// --fail-on-regression(-ms) is crossed.
    #[command(infer_long_args = true, after_help = crate::exit::help_text())]
    Diff(DiffArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write llm-triage.1 and llm-triage-<command>.1 into DIR instead of printing.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct BundleArgs {
    /// Scan DIR recursively for analysis_*.txt, analysis_*.md and analysis_*.json; the
    /// first directory below DIR is the model id.
    #[arg(long, value_name = "DIR")]
    pub analysis_root: Option<PathBuf>,
    /// A report to include, as PATH or LABEL=PATH (repeatable); without a label the
    /// file's directory name is the model id.
    #[arg(long, value_name = "[LABEL=]PATH")]
    pub analysis_file: Vec<String>,
    /// Document title.
    #[arg(long, value_name = "TEXT", default_value = crate::bundle::DEFAULT_TITLE)]
    pub title: String,
    /// Write the bundle to FILE (parent directories created) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Leave out the table of contents.
    #[arg(long, visible_alias = "no-include-toc", overrides_with = "include_toc")]
    pub no_toc: bool,
    /// Include the table of contents (the default; the predecessor's spelling).
    #[arg(long, hide = true, overrides_with = "no_toc")]
    pub include_toc: bool,
    /// Output format: one markdown document, or one self-contained HTML page (JSON
    /// reports drawn whole, text and markdown reports as written).
    #[arg(long, value_enum, default_value_t = BundleFormat::Markdown)]
    pub format: BundleFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BundleFormat {
    Markdown,
    Html,
}

// ---- `diff` ----

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The baseline: a trace file, a profile directory or a saved --format json report
    /// (save it with --min-share 0 so every kernel row is compared).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run compared with it, of the same kinds.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Engine of the traces (both sides): auto, or a plugin name or alias.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub framework: String,
    /// Analyse this TP rank of a directory that holds several (both sides).
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Compare only this stage: extend/prefill, decode or all.
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// A capture trace of the graphs the traces replay (repeatable; both sides).
    #[arg(long, value_name = "PATH")]
    pub capture_input: Vec<PathBuf>,
    /// Load the catalog from DIR instead of the built-in one.
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// Analyse only GPU work whose trace pid contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub pid_substring: Option<String>,
    /// The GPU the roofline divides by (both sides), as for a triage.
    #[arg(long, value_name = "NAME", conflicts_with = "device_spec")]
    pub device: Option<String>,
    /// The GPU the roofline divides by, from a one-row device TOML file.
    #[arg(long, value_name = "FILE")]
    pub device_spec: Option<PathBuf>,
    /// The model's config.json for the roofline's shapes (both sides), as for a triage.
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// A row whose per-step time changed by at most PCT percent of its base is `same`.
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    pub noise: f64,
    /// Exit 7 when a stage's step time or any row grew by more than PCT percent.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// Exit 7 when a stage's step time or any row grew by more than MS milliseconds
    /// per step.
    #[arg(long, value_name = "MS")]
    pub fail_on_regression_ms: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Markdown)]
    pub format: OutputFormat,
    /// Write the diff to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ToolArgs {
    /// The plugin that provides the tool (name or alias); none: list every plugin's tools.
    pub plugin: Option<String>,
    /// The tool; none: list the plugin's tools.
    pub tool: Option<String>,
    /// The tool's own arguments, e.g. --source FILE --output FILE.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Loaded plugins and the capability matrix.
    List,
    /// Everything one plugin declares.
    Info { name: String },
    /// Copy a plugin library into the user plugin directory.
    Install {
        file: PathBuf,
        /// Install even over a newer version of the same plugin.
        #[arg(long)]
        force: bool,
    },
    /// Delete a plugin from the user plugin directory.
    Remove { name: String },
    /// Every search directory and candidate file, and why each loaded or not.
    Doctor,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Every fusion row: id, origin, status, label (`--format json`: every field).
    List {
        #[arg(long, value_enum, default_value_t = CatalogFormat::Text)]
        format: CatalogFormat,
        /// Use DIR/kernel-families.toml and DIR/fusions/*.toml where present.
        #[arg(long, value_name = "DIR")]
        catalog: Option<PathBuf>,
    },
    /// Everything one fusion row says.
    Show {
        id: String,
        #[arg(long, value_enum, default_value_t = CatalogFormat::Text)]
        format: CatalogFormat,
        #[arg(long, value_name = "DIR")]
        catalog: Option<PathBuf>,
    },
    /// Load and check every row (exit 3 with the file and row on the first error).
    Validate {
        #[arg(long, value_name = "DIR")]
        catalog: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CatalogFormat {
    Text,
    Json,
}

/// `--rank N` or `--rank all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankArg {
    One(u32),
    All,
}

fn parse_rank(text: &str) -> Result<RankArg, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(RankArg::All);
    }
    text.parse()
        .map(RankArg::One)
        .map_err(|_| format!("expected a rank number or `all`, got {text:?}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Markdown,
    Text,
    Json,
    /// One self-contained HTML page: tables, charts, the JSON embedded (no network).
    Html,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::exit::help_text())]
pub struct TriageArgs {
    /// A trace file (.json or .json.gz) or a profile directory (single-trace mode). With
    /// --all-ranks it may be given several times, one trace file (or one per stage) per rank.
    #[arg(long, value_name = "PATH")]
    pub input: Vec<PathBuf>,

    /// Mapping+formal mode: the mapping trace (file or directory), captured with CUDA
    /// graphs off; it supplies each kernel's Python scope for the overlap table.
    #[arg(long, value_name = "PATH")]
    pub mapping_input: Option<PathBuf>,

    /// Mapping+formal mode: the formal trace (file or directory), captured in the
    /// production config; every table's times come from it.
    #[arg(long, value_name = "PATH")]
    pub formal_input: Option<PathBuf>,

    /// A capture trace (file or directory; repeatable) of the CUDA/HIP graphs the trace
    /// replays: SGLang --enable-profile-cuda-graph's capture_traces/bs_<bs>_rank<r>.json.gz,
    /// vLLM's graph_capture_rank_<r>.*.pt.trace.json.gz. Replayed kernels take the launch
    /// site recorded at capture; capture_traces/ beside the trace is read without it.
    #[arg(long, value_name = "PATH")]
    pub capture_input: Vec<PathBuf>,

    /// Engine that wrote the trace: auto, or a plugin name or alias (sglang, vllm,
    /// trtllm, tokenspeed, ...). `auto` refuses traces no plugin recognises.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub framework: String,

    /// Analyse this TP rank instead of rank 0 when a directory holds several; `all` is
    /// --all-ranks.
    #[arg(long, value_name = "N|all", value_parser = parse_rank)]
    pub rank: Option<RankArg>,

    /// Read every rank of the profile directory (in parallel) and compare them: clock
    /// offsets, each collective's transfer vs wait, and per step the straggler and why.
    #[arg(long)]
    pub all_ranks: bool,

    /// Hide kernel rows below this share of their stage's GPU time.
    #[arg(
        long,
        visible_alias = "min-share-pct",
        value_name = "PCT",
        default_value_t = 1.0
    )]
    pub min_share: f64,

    /// Keep only the top N kernel rows per stage (0 = all), before the share cut.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub kernel_table_limit: usize,

    /// Keep only the first N overlap rows per stage (0 = all), before the share cut.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub overlap_table_limit: usize,

    /// List the N longest GPU idle gaps per stage in the timeline section.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub top_gaps: usize,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Markdown)]
    pub format: OutputFormat,

    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Load the catalog (kernel-families.toml, ...) from DIR instead of the built-in one.
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,

    /// No progress bar on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// A log of the run that produced the trace (repeatable). It and every *.log beside
    /// the traces are checked for the diffusers-backend fallback (exit 3).
    #[arg(long, value_name = "FILE")]
    pub run_log: Vec<PathBuf>,

    /// Analyse only GPU work whose trace pid contains TEXT (the predecessor's flag; e.g.
    /// one rank of a merged trace).
    #[arg(long, value_name = "TEXT")]
    pub pid_substring: Option<String>,

    /// The GPU the roofline divides by: a row of the device table (its name or a
    /// deviceProperties spelling, e.g. "H100 SXM", "AMD Instinct MI300X"), instead of the
    /// one matched from the trace.
    #[arg(long, value_name = "NAME", conflicts_with = "device_spec")]
    pub device: Option<String>,

    /// The GPU the roofline divides by, from FILE: a TOML file with one [[device]] row in
    /// the format of catalog/devices.toml (exit 3 when it does not parse or validate).
    #[arg(long, value_name = "FILE")]
    pub device_spec: Option<PathBuf>,

    /// The model's Hugging Face config.json, for the roofline's shapes of launches
    /// without Input Dims (graph replays): decode GEMMs and attention from its
    /// dimensions, the TP size and the step's tokens (default: a config.json beside
    /// server_args.json or the traces; exit 3 when FILE cannot be read or parsed).
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,

    /// The predecessor's spelling of leaving --merge-profiles off (the default).
    #[arg(long, hide = true, overrides_with = "merge_profiles")]
    pub no_merge_profiles: bool,

    #[command(flatten)]
    pub capture: capture::CaptureArgs,
}
