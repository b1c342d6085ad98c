//! The role of each GPU op (`catalog/roles.toml`), from the text its trace gives: the
//! kernel's family and name, the `nn.Module:` frames of its launch stack and the paths
//! of its Python frames.
//!
//! Each distinct frame is read once, each distinct stack is reduced once to what the
//! rules can see of it (its [`StackContext`]), and the rules run once per distinct
//! (name, context): stacks that differ only in lines, functions or frame order share a
//! context. Reading every frame of every distinct stack and running the rules per
//! (name, stack) was a fixed 5-9 ms of every triage (629 stacks, 847 pairs and 11,114
//! path frames on the bench's trace, whatever its size).

use rustc_hash::FxHashMap;

use crate::analyze::location::{module_class, parse_frame, MODULE_FRAME};
use crate::catalog::pattern::tokens;
use crate::catalog::roles::{RoleId, RoleSubject};
use crate::catalog::{FamilyRules, RoleRules};
use crate::trace::event::{Sym, Trace};
use crate::trace::link::{Linked, StackId};
use crate::trace::names::demangle;

/// What the role rules see of one launch stack. A rule asks whether *any* enclosing
/// class or *any* path matches, so those two are sets (sorted, without repeats).
/// Paths are numbered, so that sorting and hashing a context compares numbers, not
/// path texts (that was a third of the role work).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct StackContext {
    /// The innermost `nn.Module:` class (an index into `RoleLabels::module_tokens`).
    module: Option<u32>,
    /// The classes around it.
    inside: Vec<u32>,
    /// Paths of the stack's Python frames (indices into `RoleLabels::path_list`).
    paths: Vec<u32>,
}

/// One frame, as the role rules read it.
#[derive(Copy, Clone, Debug)]
enum FrameText {
    /// An `nn.Module:` frame: its class (an index into `RoleLabels::module_tokens`).
    Module(u32),
    /// A Python frame: its path (an index into `RoleLabels::path_list`).
    Path(u32),
    Neither,
}

/// Roles of one trace's GPU ops, cached per (name, stack).
pub(super) struct RoleLabels<'t> {
    trace: &'t Trace,
    linked: &'t Linked,
    families: &'t FamilyRules,
    rules: &'t RoleRules,
    kernel_tokens: FxHashMap<Sym, Vec<String>>,
    frames: FxHashMap<Sym, FrameText>,
    /// Tokens of each distinct module class, and the index of each class.
    module_tokens: Vec<Vec<String>>,
    module_ids: FxHashMap<&'t str, u32>,
    /// Each distinct frame path, and the index of each.
    path_list: Vec<&'t str>,
    path_ids: FxHashMap<&'t str, u32>,
    /// Each distinct context and its index, the context of each stack, and each
    /// context's paths as text (what the rules read).
    contexts: FxHashMap<StackContext, u32>,
    context_list: Vec<StackContext>,
    context_paths: Vec<Vec<&'t str>>,
    stack_contexts: FxHashMap<StackId, u32>,
    by_context: FxHashMap<(Sym, Option<u32>), RoleId>,
    roles: FxHashMap<(Sym, Option<StackId>), RoleId>,
}

impl<'t> RoleLabels<'t> {
    pub(super) fn new(
        trace: &'t Trace,
        linked: &'t Linked,
        families: &'t FamilyRules,
        rules: &'t RoleRules,
    ) -> Self {
        RoleLabels {
            trace,
            linked,
            families,
            rules,
            kernel_tokens: FxHashMap::default(),
            frames: FxHashMap::default(),
            module_tokens: Vec::new(),
            module_ids: FxHashMap::default(),
            path_list: Vec::new(),
            path_ids: FxHashMap::default(),
            contexts: FxHashMap::default(),
            context_list: Vec::new(),
            context_paths: Vec::new(),
            stack_contexts: FxHashMap::default(),
            by_context: FxHashMap::default(),
            roles: FxHashMap::default(),
        }
    }

    /// The role of GPU op `op` (an index into `trace.gpu_ops`).
    pub(super) fn role(&mut self, op: usize) -> RoleId {
        let name = self.trace.gpu_ops.at(op).name;
        let stack = self.linked.sites.get(op).and_then(|s| s.stack);
        if let Some(&role) = self.roles.get(&(name, stack)) {
            return role;
        }
        let context = stack.map(|id| self.context_of(id));
        let role = match self.by_context.get(&(name, context)) {
            Some(&role) => role,
            None => {
                let role = self.compute(name, context);
                self.by_context.insert((name, context), role);
                role
            }
        };
        self.roles.insert((name, stack), role);
        role
    }

    fn compute(&mut self, name: Sym, context: Option<u32>) -> RoleId {
        let raw = self.trace.name(name);
        let family = self.families.family_of(raw);
        let kernel_tokens = self
            .kernel_tokens
            .entry(name)
            .or_insert_with(|| tokens(demangle(raw).as_deref().unwrap_or(raw)));
        let paths = context.map_or(&[][..], |c| self.context_paths[c as usize].as_slice());
        let context = context.map(|c| &self.context_list[c as usize]);
        let module_tokens = &self.module_tokens;
        let class = |id: &u32| module_tokens[*id as usize].as_slice();
        let inside: Vec<&[String]> =
            context.map_or(Vec::new(), |c| c.inside.iter().map(class).collect());
        self.rules.role_of(&RoleSubject {
            family,
            kernel_tokens,
            module_tokens: context.and_then(|c| c.module.as_ref()).map(class),
            inside_tokens: &inside,
            frame_paths: paths,
        })
    }

    /// The index of stack `id`'s context, reading the stack the first time.
    fn context_of(&mut self, id: StackId) -> u32 {
        if let Some(&context) = self.stack_contexts.get(&id) {
            return context;
        }
        let stack = self.linked.stack(id);
        let mut modules = Vec::with_capacity(stack.len());
        let mut paths = Vec::with_capacity(stack.len());
        for &frame in stack {
            match self.frame_text(frame) {
                FrameText::Module(class) => modules.push(class),
                FrameText::Path(path) => paths.push(path),
                FrameText::Neither => {}
            }
        }
        let module = modules.pop();
        modules.sort_unstable();
        modules.dedup();
        paths.sort_unstable();
        paths.dedup();
        let context = StackContext {
            module,
            inside: modules,
            paths,
        };
        let next = self.context_list.len() as u32;
        let index = *self.contexts.entry(context).or_insert_with_key(|context| {
            let path_list = &self.path_list;
            let paths = context.paths.iter().map(|&p| path_list[p as usize]);
            self.context_paths.push(paths.collect());
            self.context_list.push(context.clone());
            next
        });
        self.stack_contexts.insert(id, index);
        index
    }

    /// What the rules read of one frame (`nn.Module: Qwen3Attention_0` -> the class
    /// `Qwen3Attention`, tokenised; a Python frame -> its path).
    fn frame_text(&mut self, frame: Sym) -> FrameText {
        if let Some(&text) = self.frames.get(&frame) {
            return text;
        }
        let raw = self.trace.name(frame);
        let text = if let Some(instance) = raw.strip_prefix(MODULE_FRAME) {
            let class = module_class(instance);
            let next = self.module_tokens.len() as u32;
            let id = *self.module_ids.entry(class).or_insert_with(|| {
                self.module_tokens.push(tokens(class));
                next
            });
            FrameText::Module(id)
        } else if let Some(parsed) = parse_frame(raw) {
            let next = self.path_list.len() as u32;
            let id = *self.path_ids.entry(parsed.path).or_insert_with(|| {
                self.path_list.push(parsed.path);
                next
            });
            FrameText::Path(id)
        } else {
            FrameText::Neither
        };
        self.frames.insert(frame, text);
        text
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{load_families, load_roles};
    use crate::testutil::shared_trace_path;
    use crate::trace::link::link;
    use crate::trace::read::read_trace;

    /// The role of one op read the long way: every frame of its own stack, in order.
    fn role_read_alone(
        trace: &Trace,
        linked: &Linked,
        families: &FamilyRules,
        rules: &RoleRules,
        op: usize,
    ) -> RoleId {
        let raw = trace.name(trace.gpu_ops.at(op).name);
        let kernel_tokens = tokens(demangle(raw).as_deref().unwrap_or(raw));
        let frames = linked.sites[op]
            .stack
            .map_or(&[][..], |id| linked.stack(id));
        let mut modules: Vec<Vec<String>> = Vec::new();
        let mut paths = Vec::new();
        for &frame in frames {
            let text = trace.name(frame);
            match text.strip_prefix(MODULE_FRAME) {
                Some(instance) => modules.push(tokens(module_class(instance))),
                None => paths.extend(parse_frame(text).map(|f| f.path)),
            }
        }
        let inner = modules.pop();
        let inside: Vec<&[String]> = modules.iter().map(Vec::as_slice).collect();
        rules.role_of(&RoleSubject {
            family: families.family_of(raw),
            kernel_tokens: &kernel_tokens,
            module_tokens: inner.as_deref(),
            inside_tokens: &inside,
            frame_paths: &paths,
        })
    }

    #[test]
    fn roles_through_shared_stack_contexts_are_each_stacks_own() {
        let families = load_families(None).unwrap();
        let rules = load_roles(None).unwrap();
        for name in [
            "AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz",
            "AMD-AGI__TraceLens__eager_trace.json.gz",
        ] {
            let trace = read_trace(&shared_trace_path(name), &mut |_| {}).unwrap();
            let linked = link(&trace);
            let mut labels = RoleLabels::new(&trace, &linked, &families, &rules);
            let mut named = 0;
            for op in 0..trace.gpu_ops.len() {
                let alone = role_read_alone(&trace, &linked, &families, &rules, op);
                assert_eq!(labels.role(op), alone, "{name}: op {op}");
                named += usize::from(alone != rules.fallback());
            }
            // Real roles, from module frames, and far fewer contexts than stacks.
            assert!(named > trace.gpu_ops.len() / 2, "{name}: {named} named");
            assert!(
                labels.context_list.len() * 10 < labels.stack_contexts.len(),
                "{name}: {} contexts for {} stacks",
                labels.context_list.len(),
                labels.stack_contexts.len()
            );
        }
    }

    #[test]
    fn module_instances_lose_their_number_only() {
        assert_eq!(module_class("Qwen3Attention_0"), "Qwen3Attention");
        assert_eq!(module_class("RMSNorm_143"), "RMSNorm");
        assert_eq!(module_class("Linear"), "Linear");
        assert_eq!(module_class("my_module"), "my_module");
    }
}
