//! A kernel's Python location: the frame of its launch stack that names the engine code
//! (or the model code) that launched it.
//!
//! Two passes over the stack, innermost frame first:
//! 1. the innermost frame inside one of the engine's source roots that is not a wrapper
//!    (the plugin's wrapper frames, plus generic ones: `nn.Module.__call__`, dynamo and
//!    inductor trampolines, `contextlib`, `threading`, `runpy`);
//! 2. else the innermost frame of the model's own code: not torch, triton, the standard
//!    library or a built-in (`transformers/models/qwen2/modeling_qwen2.py:123 forward`).
//!
//! The text is `path:line function` (the predecessor's location format), the path shown from
//! the matched
//! source root on (`python/sglang/srt/layers/linear.py:448 forward`), or from after
//! `site-packages/` for model code.

use crate::plugins::Attribution;

/// Frame functions that only dispatch to the real code.
const WRAPPER_FUNCTIONS: &[&str] = &[
    "__call__",
    "_call_impl",
    "_wrapped_call_impl",
    "__torch_function__",
    "__torch_dispatch__",
];

/// Path parts of frames that only dispatch to the real code.
const WRAPPER_PATHS: &[&str] = &[
    "torch/nn/modules/module.py",
    "torch/_dynamo/",
    "torch/_inductor/",
    "torch/fx/graph_module.py",
    "torch/utils/_contextlib.py",
];

/// Standard-library files and packages that are infrastructure, never a location.
/// torch.profiler shows them relative to `sys.path` (`contextlib.py`,
/// `logging/__init__.py`) or absolute under `lib/python3.x/`.
const STDLIB_MODULES: &[&str] = &[
    "contextlib",
    "threading",
    "runpy",
    "functools",
    "enum",
    "logging",
    "abc",
    "typing",
    "asyncio",
    "concurrent",
    "queue",
    "selectors",
    "socket",
    "multiprocessing",
    "dataclasses",
    "copy",
    "weakref",
    "importlib",
    "inspect",
    "collections",
    "warnings",
];

/// Top-level packages that are infrastructure or kernel libraries, never the model's
/// own code: their caller is the site.
const INFRA_PACKAGES: &[&str] = &[
    "torch",
    "triton",
    "triton_kernels",
    "numpy",
    "tqdm",
    "flash_attn",
    "flashinfer",
    "xformers",
    "aiter",
    "deep_gemm",
    "transformer_engine",
    "apex",
    "liger_kernel",
];

/// One Python frame name `path(line): function`, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub path: &'a str,
    pub line: &'a str,
    pub function: &'a str,
}

/// Splits `path(line): function`; `None` for other frame texts (`nn.Module: Linear_0`,
/// `<built-in method ...>`).
pub fn parse_frame(text: &str) -> Option<Frame<'_>> {
    let text = text.trim();
    let mut search_from = 0;
    while let Some(found) = text[search_from..].find("): ") {
        let close = search_from + found;
        let open = text[..close].rfind('(')?;
        let line = &text[open + 1..close];
        if open > 0 && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) {
            return Some(Frame {
                path: &text[..open],
                line,
                function: text[close + 3..].trim(),
            });
        }
        search_from = close + 3;
    }
    None
}

/// Chooses the location of a launch stack for one engine.
#[derive(Clone, Debug, Default)]
pub struct Locator {
    /// Path markers of the engine's code, most specific first (`python/sglang/`).
    source_roots: Vec<String>,
    /// (path part, function) of the engine's wrapper frames; empty matches anything.
    wrappers: Vec<(String, String)>,
}

impl Locator {
    /// The locator of one engine, from its plugin's attribution (the host's plain value;
    /// `plugins` converts the ABI one).
    pub fn new(attribution: &Attribution) -> Self {
        Locator {
            source_roots: attribution
                .source_roots
                .iter()
                .map(|r| normalize_path(r.as_str()))
                .filter(|r| !r.trim_matches('/').is_empty())
                .collect(),
            wrappers: attribution
                .wrapper_frames
                .iter()
                .filter(|w| !(w.path_contains.is_empty() && w.function.is_empty()))
                .map(|w| {
                    (
                        normalize_path(w.path_contains.as_str()),
                        w.function.to_string(),
                    )
                })
                .collect(),
        }
    }

    /// The location of a stack given outer..inner frame names, or `None` (rendered
    /// `unresolved`).
    pub fn location(&self, frames: &[&str]) -> Option<String> {
        let parsed: Vec<Frame<'_>> = frames.iter().rev().filter_map(|f| parse_frame(f)).collect();
        let engine = parsed.iter().find_map(|frame| {
            let path = normalize_path(frame.path);
            if self.is_wrapper(&path, frame.function) {
                return None;
            }
            let shown = self.shown_from_source_root(&path)?;
            Some(format!("{shown}:{} {}", frame.line, frame.function))
        });
        engine.or_else(|| {
            parsed.iter().find_map(|frame| {
                let path = normalize_path(frame.path);
                if self.is_wrapper(&path, frame.function) || is_infrastructure(&path) {
                    return None;
                }
                Some(format!(
                    "{}:{} {}",
                    model_path(&path),
                    frame.line,
                    frame.function
                ))
            })
        })
    }

    fn is_wrapper(&self, path: &str, function: &str) -> bool {
        WRAPPER_FUNCTIONS.contains(&function)
            || WRAPPER_PATHS.iter().any(|p| path.contains(p))
            || is_stdlib(path)
            || self.wrappers.iter().any(|(part, func)| {
                (part.is_empty() || path.contains(part.as_str()))
                    && (func.is_empty() || func == function)
            })
    }

    /// `path` from the first source root (in the plugin's order) that starts one of
    /// its components; the last such occurrence, so a checkout directory named like
    /// the package (`/ws/sglang/python/sglang/srt/...`) is skipped.
    fn shown_from_source_root<'p>(&self, path: &'p str) -> Option<&'p str> {
        self.source_roots.iter().find_map(|root| {
            let root = root.trim_start_matches('/');
            path.match_indices(root)
                .map(|(i, _)| i)
                .filter(|&i| i == 0 || path.as_bytes()[i - 1] == b'/')
                .last()
                .map(|i| &path[i..])
        })
    }
}

fn normalize_path(path: &str) -> String {
    path.trim().replace('\\', "/")
}

/// The top-level module of a path as torch.profiler shows it: the component after
/// `site-packages/`, `dist-packages/` or `lib/python3.x/`, else the first one.
fn top_module(path: &str) -> &str {
    let rest = ["site-packages/", "dist-packages/"]
        .iter()
        .find_map(|marker| path.rfind(marker).map(|i| &path[i + marker.len()..]))
        .or_else(|| stdlib_relative(path))
        .unwrap_or(path);
    let first = rest.split('/').next().unwrap_or(rest);
    first.strip_suffix(".py").unwrap_or(first)
}

/// For `/usr/lib/python3.12/contextlib.py`, `contextlib.py`.
fn stdlib_relative(path: &str) -> Option<&str> {
    let i = path.rfind("/lib/python3")?;
    let after = &path[i + "/lib/".len()..];
    let slash = after.find('/')?;
    Some(&after[slash + 1..])
}

fn is_stdlib(path: &str) -> bool {
    if path.contains("site-packages/") || path.contains("dist-packages/") {
        return false;
    }
    let relative = stdlib_relative(path).unwrap_or(path);
    let first = relative.split('/').next().unwrap_or(relative);
    let module = first.strip_suffix(".py").unwrap_or(first);
    STDLIB_MODULES.contains(&module) || path.starts_with('<')
}

fn is_infrastructure(path: &str) -> bool {
    is_stdlib(path)
        || path.starts_with('<')
        || INFRA_PACKAGES.contains(&top_module(path))
        || path.contains("/torch/")
}

/// A model-code path as shown: from after `site-packages/` when present, else
/// without a leading `/`.
fn model_path(path: &str) -> &str {
    ["site-packages/", "dist-packages/"]
        .iter()
        .find_map(|marker| path.rfind(marker).map(|i| &path[i + marker.len()..]))
        .unwrap_or(path)
        .trim_start_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::WrapperFrame;

    fn sglang_locator() -> Locator {
        Locator::new(&Attribution {
            source_roots: ["python/sglang/", "sglang/", "sgl_kernel/"]
                .map(String::from)
                .into(),
            wrapper_frames: vec![WrapperFrame {
                path_contains: "sglang/srt/model_executor/cuda_graph_runner".into(),
                function: "replay".into(),
            }],
        })
    }

    #[test]
    fn parse_frame_splits_path_line_function() {
        assert_eq!(
            parse_frame("/a/b(c)/x.py(448): forward"),
            Some(Frame {
                path: "/a/b(c)/x.py",
                line: "448",
                function: "forward"
            })
        );
        assert_eq!(parse_frame("nn.Module: Linear_0"), None);
        assert_eq!(
            parse_frame("<built-in method mm of type object at 0x7f>"),
            None
        );
    }

    #[test]
    fn innermost_engine_frame_skipping_wrappers() {
        let stack = [
            "threading.py(1012): run",
            "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(2919): _run_batch_inner",
            "/sgl-workspace/sglang/python/sglang/srt/models/qwen3.py(310): forward",
            "torch/nn/modules/module.py(1750): _call_impl",
            "/sgl-workspace/sglang/python/sglang/srt/layers/linear.py(448): forward",
            "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/unquant.py(130): __call__",
            "torch/nn/functional.py(2380): linear",
            "<built-in function linear>",
        ];
        assert_eq!(
            sglang_locator().location(&stack).as_deref(),
            Some("python/sglang/srt/layers/linear.py:448 forward")
        );
    }

    #[test]
    fn graph_replay_wrapper_is_skipped() {
        let stack = [
            "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py(3194): _forward_raw",
            "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py(1333): replay",
            "torch/cuda/graphs.py(139): replay",
        ];
        assert_eq!(
            sglang_locator().location(&stack).as_deref(),
            Some("python/sglang/srt/model_executor/model_runner.py:3194 _forward_raw")
        );
    }

    #[test]
    fn vllm_relative_frames_and_component_aligned_roots() {
        let vllm = Locator::new(&Attribution {
            source_roots: vec!["vllm/".to_string()],
            wrapper_frames: Default::default(),
        });
        let stack = [
            "vllm/model_executor/layers/linear.py(510): forward",
            "vllm/model_executor/custom_op.py(46): forward",
            "torch/_ops.py(1243): __call__",
        ];
        assert_eq!(
            vllm.location(&stack).as_deref(),
            Some("vllm/model_executor/custom_op.py:46 forward")
        );
        // `nanovllm/` is not `vllm/`; its frame is model code instead.
        let nano = ["/home/u/nano-vllm/nanovllm/layers/linear.py(80): forward"];
        assert_eq!(
            vllm.location(&nano).as_deref(),
            Some("home/u/nano-vllm/nanovllm/layers/linear.py:80 forward")
        );
    }

    #[test]
    fn model_frame_when_no_engine_frame() {
        let stack = [
            "runpy.py(198): _run_module_as_main",
            "/usr/local/lib/python3.12/dist-packages/transformers/models/qwen2/modeling_qwen2.py(123): forward",
            "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py(1750): _call_impl",
            "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/linear.py(125): forward",
            "/usr/lib/python3.12/contextlib.py(81): inner",
        ];
        assert_eq!(
            sglang_locator().location(&stack).as_deref(),
            Some("transformers/models/qwen2/modeling_qwen2.py:123 forward")
        );
        assert_eq!(
            sglang_locator().location(&["torch/nn/functional.py(1): linear", "enum.py(3): x"]),
            None
        );
        assert_eq!(sglang_locator().location(&[]), None);
        // A kernel library's frame is not the site; its caller is.
        let nano = [
            "/w/nanovllm/layers/attention.py(217): forward",
            "/usr/lib/python3/dist-packages/flash_attn/flash_attn_interface.py(1464): flash_attn_with_kvcache",
        ];
        assert_eq!(
            sglang_locator().location(&nano).as_deref(),
            Some("w/nanovllm/layers/attention.py:217 forward")
        );
    }
}
