//! A kernel's Python location: the frame of its launch stack that names the model code
//! (or the engine code) that launched it, and the `nn.Module` that made the call.
//!
//! Three passes over the stack, innermost frame first, wrappers skipped (the plugin's
//! wrapper frames, among them the engine's library wrappers such as SGLang's
//! `sgl_kernel/` bindings or `quantization/unquant.py apply`, plus generic ones:
//! `nn.Module.__call__`, dynamo and inductor trampolines, TorchInductor's generated
//! files, `contextlib`, `threading`, `runpy`):
//! 1. the innermost frame of the model's own code inside an engine source root: a file
//!    under a `models/` directory (`python/sglang/srt/models/qwen3.py:263 forward`,
//!    `vllm/model_executor/models/llama.py:410 forward`) — every engine keeps its model
//!    definitions there, so this rule is generic; the line there is the one a person
//!    edits, and the module it called says which layer ran. Only when the stack has
//!    `nn.Module:` frames: without them nothing would tell the layers of one model
//!    function apart, and the engine frame does;
//! 2. else the innermost engine frame (`python/sglang/srt/layers/sampler.py:83 forward`);
//! 3. else the innermost frame of the model's own code outside the engine: not torch,
//!    triton, the standard library or a built-in
//!    (`transformers/models/qwen2/modeling_qwen2.py:123 forward`).
//!
//! The text is `path:line function` (the predecessor's location format), the path shown from
//! the matched source root on, or from after `site-packages/` for model code. The
//! module is the innermost `nn.Module: <Class>_<n>` frame's class (torch.profiler's
//! `with_modules`), the layer whose code made the launch (`RowParallelLinear`).

use std::sync::{Mutex, PoisonError};

use rustc_hash::FxHashMap;

use crate::plugins::Attribution;
use crate::trace::event::Trace;
use crate::trace::link::{Linked, StackId};

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
    // TorchInductor's generated modules (`torchinductor_<user>/`, and vLLM's
    // `~/.cache/vllm/torch_compile_cache/<hash>/rank_0_0/inductor_cache/`): their
    // `call` only runs the compiled graph; the frame that called the graph is the site.
    "torchinductor_",
    "/inductor_cache/",
    "/torch_compile_cache/",
];

/// The frame-name prefix torch.profiler gives module frames (`with_modules`).
pub const MODULE_FRAME: &str = "nn.Module: ";

/// The directory engines keep their model definitions in, below their source root.
const MODEL_DIRECTORY: &str = "models/";

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
#[derive(Debug, Default)]
pub struct Locator {
    /// Path markers of the engine's code, most specific first (`python/sglang/`).
    source_roots: Vec<String>,
    /// (path part, function) of the engine's wrapper frames; empty matches anything.
    wrappers: Vec<(String, String)>,
    /// Each distinct frame text's class. Stacks share most of their frames (the
    /// engine's loop, the model's outer layers), and every analysis that places kernels
    /// asks for each distinct stack's site, so classifying a frame once per stack was a
    /// fixed ~10 ms of a triage (perf on a 30 MB trace). Behind a lock: the analyses
    /// that ask run on two threads.
    classes: Mutex<FxHashMap<Box<str>, FrameClass>>,
}

impl Clone for Locator {
    fn clone(&self) -> Self {
        Locator {
            source_roots: self.source_roots.clone(),
            wrappers: self.wrappers.clone(),
            classes: Mutex::default(),
        }
    }
}

/// The frames [`Locator::site`] has found so far, innermost first.
#[derive(Default)]
struct Found {
    engine: Option<String>,
    model: Option<String>,
    outside: Option<String>,
}

impl Found {
    fn take(&mut self, class: &FrameClass) {
        match class {
            FrameClass::Engine { text, model } => {
                if self.engine.is_none() {
                    self.engine = Some(text.clone());
                }
                if *model && self.model.is_none() {
                    self.model = Some(text.clone());
                }
            }
            FrameClass::Outside(Some(text)) if self.outside.is_none() => {
                self.outside = Some(text.clone());
            }
            _ => {}
        }
    }
}

/// What one frame text is to [`Locator::site`].
#[derive(Debug)]
enum FrameClass {
    /// Not a `path(line): function` frame, or a wrapper: passed over.
    Skipped,
    /// A frame in the engine's code: its text shown from the source root, and whether
    /// it is in a model file.
    Engine { text: String, model: bool },
    /// A frame outside the engine: its text, or `None` for infrastructure.
    Outside(Option<String>),
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
            classes: Mutex::default(),
        }
    }

    /// The location of a stack given outer..inner frame names, or `None` (rendered
    /// `unresolved`).
    pub fn location(&self, frames: &[&str]) -> Option<String> {
        self.site(frames).map(|site| site.location)
    }

    /// The site of a stack given outer..inner frame names: its location (the passes of
    /// the module doc), the calling module, and the innermost engine frame when the
    /// location is another (a model frame outside it). `None` without a location.
    pub fn site(&self, frames: &[&str]) -> Option<Site> {
        let module = innermost_module(frames).map(String::from);
        let mut classes = self.classes.lock().unwrap_or_else(PoisonError::into_inner);
        // Innermost first: the first engine frame (pass 2), the first model frame among
        // the engine frames (pass 1), and the first frame outside the engine that is not
        // infrastructure (pass 3, which counts only where no frame is in the engine).
        // Frames are classified as they are reached: the search mostly ends a few frames
        // in, before the engine's loop and the model's outer layers.
        let mut found = Found::default();
        for &frame in frames.iter().rev() {
            // One lookup per frame seen before (most are): a stack's walk is mostly
            // hashing its frames' texts.
            match classes.get(frame) {
                Some(class) => found.take(class),
                None => {
                    let class = self.classify(frame);
                    found.take(&class);
                    classes.insert(frame.into(), class);
                }
            }
            // The model frame counts only where a module frame says which layer it
            // called: a stack recorded without `with_modules` keeps the engine frame.
            if found.engine.is_some() && (found.model.is_some() || module.is_none()) {
                break;
            }
        }
        let Found {
            engine,
            model,
            outside,
        } = found;
        let model = model.filter(|_| module.is_some());
        let has_model = model.is_some();
        let location = model.or_else(|| engine.clone()).or(outside)?;
        let launch_frame = engine.filter(|e| has_model && *e != location);
        Some(Site {
            location,
            module,
            launch_frame,
        })
    }

    fn classify(&self, frame: &str) -> FrameClass {
        let Some(frame) = parse_frame(frame) else {
            return FrameClass::Skipped;
        };
        let path = normalize_path(frame.path);
        if self.is_wrapper(&path, frame.function) {
            return FrameClass::Skipped;
        }
        match self.shown_from_source_root(&path) {
            Some(shown) => FrameClass::Engine {
                text: format!("{shown}:{} {}", frame.line, frame.function),
                model: is_model_file(shown),
            },
            None if is_infrastructure(&path) => FrameClass::Outside(None),
            None => FrameClass::Outside(Some(format!(
                "{}:{} {}",
                model_path(&path),
                frame.line,
                frame.function
            ))),
        }
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

/// The sites of one engine's launch stacks, each stack placed once however many analyses
/// ask: the overlap's scopes, its rows and the kernel tables each ask for every stack of
/// a stage (3x the walks, two thirds of them repeats, at any trace size).
///
/// A stack is known by its [`Linked`] and trace (their addresses) and its id: both are
/// borrowed for `'l`, as long as this lives, so no other value can take their place.
pub struct StackSites<'l> {
    locator: &'l Locator,
    memo: Mutex<FxHashMap<(usize, usize, StackId), Option<Site>>>,
}

impl<'l> StackSites<'l> {
    pub fn new(locator: &'l Locator) -> Self {
        StackSites {
            locator,
            memo: Mutex::default(),
        }
    }

    /// The site of stack `id` of `linked`, the links of `trace` (see [`Locator::site`]).
    pub fn site(&self, trace: &'l Trace, linked: &'l Linked, id: StackId) -> Option<Site> {
        let key = (
            std::ptr::from_ref(trace) as usize,
            std::ptr::from_ref(linked) as usize,
            id,
        );
        let memo = || self.memo.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(site) = memo().get(&key) {
            return site.clone();
        }
        let frames: Vec<&str> = linked.stack(id).iter().map(|&s| trace.name(s)).collect();
        let site = self.locator.site(&frames);
        memo().insert(key, site.clone());
        site
    }

    /// The location of stack `id` (see [`Locator::location`]).
    pub fn location(&self, trace: &'l Trace, linked: &'l Linked, id: StackId) -> Option<String> {
        self.site(trace, linked, id).map(|site| site.location)
    }
}

/// A launch's Python site as the report shows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    /// `path:line function`: the model's frame, else the engine's (module doc).
    pub location: String,
    /// The class of the innermost `nn.Module` frame (`RowParallelLinear`), when the
    /// trace recorded module frames.
    pub module: Option<String>,
    /// The innermost engine frame, when `location` is a model frame outside it
    /// (`python/sglang/srt/layers/linear.py:1360 forward`): catalog patterns written
    /// against the engine's layer functions still see it.
    pub launch_frame: Option<String>,
}

/// Whether a path shown from its source root is the model's own code: a file below a
/// `models/` directory.
fn is_model_file(shown: &str) -> bool {
    shown
        .match_indices(MODEL_DIRECTORY)
        .any(|(i, _)| i == 0 || shown.as_bytes()[i - 1] == b'/')
}

/// The class of the innermost `nn.Module:` frame of a stack given outer..inner.
fn innermost_module<'a>(frames: &[&'a str]) -> Option<&'a str> {
    frames
        .iter()
        .rev()
        .find_map(|f| f.trim().strip_prefix(MODULE_FRAME))
        .map(module_class)
        .filter(|class| !class.is_empty())
}

/// `Qwen3Attention_0` -> `Qwen3Attention`: torch numbers each module instance.
pub fn module_class(instance: &str) -> &str {
    match instance.rsplit_once('_') {
        Some((class, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => instance,
    }
    .trim()
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

    /// The SGLang plugin's attribution as plugins/sglang gives it, library wrappers
    /// included (restated: the host does not link plugins).
    fn sglang_plugin_locator() -> Locator {
        Locator::new(&Attribution {
            source_roots: ["python/sglang/", "sglang_omni/", "sglang/", "sgl_kernel/"]
                .map(String::from)
                .into(),
            wrapper_frames: [
                ("sglang/srt/model_executor/cuda_graph_runner", "replay"),
                ("sglang/srt/utils/kernel_shape_profiler.py", ""),
                ("sgl_kernel/", ""),
                ("sglang/jit_kernel/", ""),
                (
                    "sglang/srt/distributed/device_communicators/pynccl_wrapper.py",
                    "",
                ),
                ("sglang/srt/layers/quantization/", "apply"),
            ]
            .map(|(path_contains, function)| WrapperFrame {
                path_contains: path_contains.into(),
                function: function.into(),
            })
            .into(),
        })
    }

    const SRT: &str = "/sgl-workspace/sglang/python/sglang/srt";

    /// The decoder layer's frames above a launch of the SGLang Qwen3 capture trace
    /// (`bs_32_rank0`), outer..inner, then `inner`.
    fn qwen3_stack(inner: &[&str]) -> Vec<String> {
        let mut stack: Vec<String> = [
            "threading.py(1012): run",
            "{SRT}/managers/scheduler.py(2919): _run_batch_inner",
            "{SRT}/model_executor/model_runner.py(3003): forward_extend",
            "{SRT}/models/qwen3.py(507): forward",
            "nn.Module: Qwen3Model_0",
            "torch/nn/modules/module.py(1779): _call_impl",
            "{SRT}/models/qwen2.py(340): forward",
            "nn.Module: Qwen3DecoderLayer_0",
            "torch/nn/modules/module.py(1779): _call_impl",
            "{SRT}/models/qwen3.py(384): forward",
            "nn.Module: Qwen3Attention_0",
            "torch/nn/modules/module.py(1779): _call_impl",
        ]
        .iter()
        .chain(inner)
        .map(|f| f.replace("{SRT}", SRT))
        .collect();
        stack.push("<built-in method of pybind11_builtins object at 0x7f>".into());
        stack
    }

    fn site_of(locator: &Locator, stack: &[String]) -> Option<Site> {
        let frames: Vec<&str> = stack.iter().map(String::as_str).collect();
        locator.site(&frames)
    }

    fn site(location: &str, module: &str, launch_frame: Option<&str>) -> Option<Site> {
        Some(Site {
            location: location.into(),
            module: Some(module.into()),
            launch_frame: launch_frame.map(String::from),
        })
    }

    #[test]
    fn frames_classified_for_one_stack_place_every_other_stack_alike() {
        // The locator remembers each frame's class: stacks that share frames, asked in
        // any order, get what a fresh locator gives each alone.
        let stacks = [
            qwen3_stack(&["{SRT}/layers/linear.py(1360): forward"]),
            qwen3_stack(&[]),
            qwen3_stack(&["sgl_kernel/elementwise.py(50): rmsnorm"]),
            qwen3_stack(&["/usr/lib/python3.12/contextlib.py(81): inner"])[..3].to_vec(),
            vec!["transformers/models/qwen2/modeling_qwen2.py(123): forward".to_string()],
            vec!["threading.py(1012): run".to_string()],
        ];
        let stacks: Vec<Vec<String>> = stacks
            .iter()
            .map(|s| s.iter().map(|f| f.replace("{SRT}", SRT)).collect())
            .collect();
        let alone: Vec<Option<Site>> = stacks
            .iter()
            .map(|s| site_of(&sglang_plugin_locator(), s))
            .collect();
        assert!(
            alone.iter().filter(|s| s.is_some()).count() >= 4,
            "{alone:?}"
        );
        let shared = sglang_plugin_locator();
        for order in [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]] {
            for i in order {
                assert_eq!(site_of(&shared, &stacks[i]), alone[i], "stack {i}");
            }
        }
    }

    #[test]
    fn model_frame_and_calling_module_over_library_wrappers() {
        let locator = sglang_plugin_locator();
        // o_proj: the model's line that called RowParallelLinear, not `unquant.py apply`.
        let o_proj = qwen3_stack(&[
            "{SRT}/models/qwen3.py(263): forward",
            "nn.Module: RowParallelLinear_0",
            "torch/nn/modules/module.py(1779): _call_impl",
            "{SRT}/layers/linear.py(1360): forward",
            "{SRT}/layers/quantization/unquant.py(136): apply",
            "aiter/tuned_gemm.py(552): mm",
        ]);
        assert_eq!(
            site_of(&locator, &o_proj),
            site(
                "python/sglang/srt/models/qwen3.py:263 forward",
                "RowParallelLinear",
                Some("python/sglang/srt/layers/linear.py:1360 forward"),
            )
        );
        // RoPE through sgl_kernel: the model's line, the RotaryEmbedding module.
        let rope = qwen3_stack(&[
            "{SRT}/models/qwen3.py(263): forward",
            "{SRT}/models/qwen3.py(167): forward_prepare_native",
            "nn.Module: RotaryEmbedding_0",
            "{SRT}/layers/utils/multi_platform.py(81): forward",
            "{SRT}/layers/rotary_embedding/base.py(335): forward_cuda",
            "sgl_kernel/elementwise.py(327): rotary_embedding",
            "torch/_ops.py(840): __call__",
        ]);
        assert_eq!(
            site_of(&locator, &rope),
            site(
                "python/sglang/srt/models/qwen3.py:167 forward_prepare_native",
                "RotaryEmbedding",
                Some("python/sglang/srt/layers/rotary_embedding/base.py:335 forward_cuda"),
            )
        );
        // The KV-cache write through the JIT kernel: RadixAttention's caller.
        let store = qwen3_stack(&[
            "{SRT}/models/qwen3.py(263): forward",
            "nn.Module: RadixAttention_0",
            "{SRT}/layers/radix_attention.py(105): forward",
            "{SRT}/layers/attention/aiter_backend.py(2435): forward_decode",
            "{SRT}/mem_cache/memory_pool.py(1038): set_kv_buffer",
            "{SRT}/utils/kernel_shape_profiler.py(326): dispatch_wrapper",
            "{SRT}/mem_cache/memory_pool.py(90): _set_kv_buffer_impl",
            "/sgl-workspace/sglang/python/sglang/jit_kernel/kvcache.py(50): store_cache",
        ]);
        assert_eq!(
            site_of(&locator, &store),
            site(
                "python/sglang/srt/models/qwen3.py:263 forward",
                "RadixAttention",
                Some("python/sglang/srt/mem_cache/memory_pool.py:90 _set_kv_buffer_impl"),
            )
        );
        // A launch from the model's own code: no other frame to name.
        let qk_norm = qwen3_stack(&[
            "{SRT}/models/qwen3.py(263): forward",
            "{SRT}/models/qwen3.py(167): forward_prepare_native",
            "{SRT}/models/utils.py(394): _reshape_for_qk_norm",
        ]);
        assert_eq!(
            site_of(&locator, &qk_norm),
            site(
                "python/sglang/srt/models/utils.py:394 _reshape_for_qk_norm",
                "Qwen3Attention",
                None
            )
        );
    }

    #[test]
    fn library_wrappers_outside_the_model_give_their_caller() {
        // The sampler's all-gather runs outside the model: the engine frame that called
        // the NCCL wrapper, and no module (the stack has none).
        let stack = [
            format!("{SRT}/layers/sampler.py(83): forward"),
            format!("{SRT}/distributed/device_communicators/pynccl.py(140): all_gather"),
            format!("{SRT}/distributed/device_communicators/pynccl_wrapper.py(402): ncclAllGather"),
        ];
        assert_eq!(
            site_of(&sglang_plugin_locator(), &stack),
            Some(Site {
                location:
                    "python/sglang/srt/distributed/device_communicators/pynccl.py:140 all_gather"
                        .into(),
                module: None,
                launch_frame: None,
            })
        );
    }

    #[test]
    fn inductor_generated_code_gives_the_model_frame() {
        let vllm = Locator::new(&Attribution {
            source_roots: vec!["vllm/".to_string()],
            wrapper_frames: Default::default(),
        });
        // vLLM's compile cache lives under `~/.cache/vllm/`, which names the source root.
        for generated in [
            "/root/.cache/vllm/torch_compile_cache/3f9a/rank_0_0/inductor_cache/xy/cxyabc.py(428): call",
            "/tmp/torchinductor_root/ob/cobhwrc24pdghpl.py(132): call",
        ] {
            let stack = [
                "vllm/v1/worker/gpu_model_runner.py(2907): execute_model",
                "vllm/model_executor/models/llama.py(410): forward",
                "nn.Module: LlamaModel_0",
                "torch/_inductor/output_code.py(590): __call__",
                generated,
                "torch/_inductor/runtime/triton_heuristics.py(1242): run",
            ];
            assert_eq!(
                vllm.site(&stack),
                site("vllm/model_executor/models/llama.py:410 forward", "LlamaModel", None),
                "{generated}"
            );
        }
    }

    #[test]
    fn sglang_omni_is_engine_code() {
        let stack = [
            "/ws/sglang-omni/sglang_omni/engines/omni_runner.py(210): run_step",
            "/ws/sglang-omni/sglang_omni/models/qwen3_omni/thinker.py(88): forward",
            "nn.Module: Qwen3OmniMoeThinkerTextAttention_3",
            "/usr/local/lib/python3.12/dist-packages/flash_attn/flash_attn_interface.py(1464): flash_attn_func",
        ];
        assert_eq!(
            sglang_plugin_locator().site(&stack),
            site(
                "sglang_omni/models/qwen3_omni/thinker.py:88 forward",
                "Qwen3OmniMoeThinkerTextAttention",
                None
            )
        );
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
        // Without a model frame: the innermost engine frame.
        let no_model = [
            "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(2919): _run_batch_inner",
            "/sgl-workspace/sglang/python/sglang/srt/layers/sampler.py(83): forward",
            "torch/nn/modules/module.py(1750): _call_impl",
            "/sgl-workspace/sglang/python/sglang/srt/layers/linear.py(448): forward",
            "torch/nn/functional.py(2380): linear",
        ];
        assert_eq!(
            sglang_locator().location(&no_model).as_deref(),
            Some("python/sglang/srt/layers/linear.py:448 forward")
        );
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
        // A model frame without module frames (no `with_modules`): nothing would say
        // which layer it called, so the engine frame stays.
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
