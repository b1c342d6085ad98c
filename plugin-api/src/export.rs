//! What a plugin author implements ([`EnginePlugin`]) and the macro that exports it as
//! the library's root module ([`export_plugin!`](crate::export_plugin)).
//!
//! The macro wraps every entry point in `guarded` (reached through the hidden
//! `__private` module): a panic in a plugin becomes an `RErr` the host reports in one
//! line, because a panic that unwinds into `extern "C"` would abort the host.

use abi_stable::std_types::{RResult, RString};

use crate::{
    Attribution, CapturePlan, CaptureRequest, Claim, EndpointEvidence, Manifest, MarkerKind,
    StageHint, ToolFile, ToolOutput, ToolSpec, TraceEvidence,
};

/// What a plugin author implements; [`export_plugin!`](crate::export_plugin!) turns it
/// into the root module.
pub trait EnginePlugin {
    fn manifest() -> Manifest;
    fn detect(evidence: &TraceEvidence) -> Option<Claim>;
    fn attribution() -> Attribution;
    fn stage_of(kind: MarkerKind, text: &str) -> StageHint;

    /// The live-capture protocol (API 1.2). The default refuses: no live capture.
    fn capture_plan(
        request: &CaptureRequest,
        evidence: &EndpointEvidence,
    ) -> Result<CapturePlan, String> {
        let _ = (request, evidence);
        Err("this engine plugin does not support live capture".to_string())
    }

    /// A verdict on a server's probe answers (API 1.2). The default claims nothing.
    fn detect_endpoint(evidence: &EndpointEvidence) -> Option<Claim> {
        let _ = evidence;
        None
    }

    /// The plugin's text tools (API 1.3). The default offers none.
    fn tools() -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Runs the tool `name` on `inputs` (one [`ToolFile`] per input flag of its spec);
    /// `Err` with a one-line reason when the input is not recognised.
    fn run_tool(name: &str, inputs: &[ToolFile]) -> Result<ToolOutput, String> {
        let _ = inputs;
        Err(format!("this plugin has no tool named {name:?}"))
    }
}

/// Runs `f`, turning a panic into an error value so it never crosses `extern "C"`.
///
/// The panic is reported once, by the host, as one line: while `f` runs, this library's
/// panic hook records where the panic happened instead of printing std's multi-line
/// report. Panics outside `guarded` still reach the hook that was installed before.
pub fn guarded<T>(entry: &str, f: impl FnOnce() -> T) -> RResult<T, RString> {
    install_quiet_hook();
    let outer = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(outer));
    match result {
        Ok(v) => RResult::ROk(v),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_string());
            let at = PANIC_AT
                .with(|at| at.take())
                .map(|at| format!(" (at {at})"))
                .unwrap_or_default();
            RResult::RErr(RString::from(format!(
                "plugin panicked in {entry}: {msg}{at}"
            )))
        }
    }
}

thread_local! {
    /// Whether this thread is inside [`guarded`].
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// `file:line` of the last panic caught inside [`guarded`] on this thread.
    static PANIC_AT: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
}

/// Installs, once per library, a hook that is silent inside [`guarded`] and defers to
/// the previous hook elsewhere (a plugin's rlib linked into a test keeps std's report).
fn install_quiet_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(|g| g.get()) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                PANIC_AT.with(|slot| slot.set(at));
            } else {
                previous(info);
            }
        }));
    });
}

/// Exports `$plugin: EnginePlugin` as this library's root module, every entry point
/// wrapped in `guarded` (a panic returns as an error). `registry = <&'static str>` adds
/// the plugin's fusion-catalog rows (usually `include_str!` of
/// `catalog/fusions/<origin>.toml`); without it the plugin exports an empty registry.
/// `steps = <&'static str>` (API 1.4) adds the engine's step markers and forward calls
/// (usually `include_str!` of `catalog/steps/<origin>.toml`, the format of
/// `catalog/steps.toml`); without it the plugin names none and the host's rows apply.
///
/// The plugin crate must be a `cdylib` whose library name contains `llm_triage_plugin`
/// (the host only opens such files) and must depend on `abi_stable` itself: the
/// `#[export_root_module]` attribute this expands to names `::abi_stable` by absolute path.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        $crate::export_plugin!($plugin, registry = "", steps = "");
    };
    ($plugin:ty, registry = $registry:expr) => {
        $crate::export_plugin!($plugin, registry = $registry, steps = "");
    };
    ($plugin:ty, steps = $steps:expr) => {
        $crate::export_plugin!($plugin, registry = "", steps = $steps);
    };
    ($plugin:ty, registry = $registry:expr, steps = $steps:expr) => {
        mod __llm_triage_exported {
            use super::*;
            use $crate::__private::*;

            extern "C" fn manifest() -> RResult<$crate::Manifest, RString> {
                $crate::__private::guarded("manifest", || {
                    <$plugin as $crate::EnginePlugin>::manifest()
                })
            }
            extern "C" fn detect(
                e: &$crate::TraceEvidence,
            ) -> RResult<ROption<$crate::Claim>, RString> {
                $crate::__private::guarded("detect", || {
                    <$plugin as $crate::EnginePlugin>::detect(e).into()
                })
            }
            extern "C" fn attribution() -> RResult<$crate::Attribution, RString> {
                $crate::__private::guarded("attribution", || {
                    <$plugin as $crate::EnginePlugin>::attribution()
                })
            }
            extern "C" fn stage_of(
                kind: $crate::MarkerKind,
                text: RStr<'_>,
            ) -> RResult<$crate::StageHint, RString> {
                $crate::__private::guarded("stage_of", || {
                    <$plugin as $crate::EnginePlugin>::stage_of(kind, text.as_str())
                })
            }

            extern "C" fn fusion_registry() -> RResult<RString, RString> {
                $crate::__private::guarded("fusion_registry", || {
                    let text: &'static str = $registry;
                    RString::from(text)
                })
            }

            extern "C" fn step_catalog() -> RResult<RString, RString> {
                $crate::__private::guarded("step_catalog", || {
                    let text: &'static str = $steps;
                    RString::from(text)
                })
            }

            extern "C" fn capture_plan(
                request: &$crate::CaptureRequest,
                evidence: &$crate::EndpointEvidence,
            ) -> RResult<$crate::CapturePlan, RString> {
                match $crate::__private::guarded("capture_plan", || {
                    <$plugin as $crate::EnginePlugin>::capture_plan(request, evidence)
                }) {
                    RResult::ROk(Ok(plan)) => RResult::ROk(plan),
                    RResult::ROk(Err(reason)) => RResult::RErr(RString::from(reason)),
                    RResult::RErr(panic) => RResult::RErr(panic),
                }
            }
            extern "C" fn detect_endpoint(
                evidence: &$crate::EndpointEvidence,
            ) -> RResult<ROption<$crate::Claim>, RString> {
                $crate::__private::guarded("detect_endpoint", || {
                    <$plugin as $crate::EnginePlugin>::detect_endpoint(evidence).into()
                })
            }

            extern "C" fn run_tool(
                name: RStr<'_>,
                inputs: RSlice<'_, $crate::ToolFile>,
            ) -> RResult<$crate::ToolOutput, RString> {
                match $crate::__private::guarded("run_tool", || {
                    <$plugin as $crate::EnginePlugin>::run_tool(name.as_str(), inputs.as_slice())
                }) {
                    RResult::ROk(Ok(output)) => RResult::ROk(output),
                    RResult::ROk(Err(reason)) => RResult::RErr(RString::from(reason)),
                    RResult::RErr(panic) => RResult::RErr(panic),
                }
            }
            extern "C" fn tools() -> RResult<$crate::ToolBox, RString> {
                $crate::__private::guarded("tools", || $crate::ToolBox {
                    tools: <$plugin as $crate::EnginePlugin>::tools()
                        .into_iter()
                        .collect(),
                    run: run_tool,
                })
            }

            #[export_root_module]
            pub fn get_library() -> $crate::FrameworkPluginRef {
                $crate::FrameworkPlugin {
                    manifest,
                    detect,
                    attribution,
                    stage_of,
                    fusion_registry,
                    capture_plan,
                    detect_endpoint,
                    tools,
                    step_catalog,
                }
                .leak_into_prefix()
            }
        }
    };
}
