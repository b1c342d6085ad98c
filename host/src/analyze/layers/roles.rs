//! The role of each GPU op (`catalog/roles.toml`), from the text its trace gives: the
//! kernel's family and name, the `nn.Module:` frames of its launch stack and the paths
//! of its Python frames. Roles are looked up once per distinct (name, stack) pair.

use rustc_hash::FxHashMap;

use crate::analyze::location::{module_class, parse_frame, MODULE_FRAME};
use crate::catalog::pattern::tokens;
use crate::catalog::roles::{RoleId, RoleSubject};
use crate::catalog::{FamilyRules, RoleRules};
use crate::trace::event::{Sym, Trace};
use crate::trace::link::{Linked, StackId};
use crate::trace::names::demangle;

/// The module classes and frame paths of one launch stack.
struct StackText<'t> {
    /// Tokens of each module class, outer..inner.
    modules: Vec<Vec<String>>,
    paths: Vec<&'t str>,
}

/// Roles of one trace's GPU ops, cached per (name, stack).
pub(super) struct RoleLabels<'t> {
    trace: &'t Trace,
    linked: &'t Linked,
    families: &'t FamilyRules,
    rules: &'t RoleRules,
    kernel_tokens: FxHashMap<Sym, Vec<String>>,
    stacks: FxHashMap<StackId, StackText<'t>>,
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
            stacks: FxHashMap::default(),
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
        let role = self.compute(name, stack);
        self.roles.insert((name, stack), role);
        role
    }

    fn compute(&mut self, name: Sym, stack: Option<StackId>) -> RoleId {
        let (trace, linked) = (self.trace, self.linked);
        let raw = trace.name(name);
        let family = self.families.family_of(raw);
        let kernel_tokens = self
            .kernel_tokens
            .entry(name)
            .or_insert_with(|| tokens(demangle(raw).as_deref().unwrap_or(raw)));
        let text = stack.map(|id| {
            &*self
                .stacks
                .entry(id)
                .or_insert_with(|| stack_text(trace, linked.stack(id)))
        });
        let (module_tokens, inside_tokens, frame_paths): (
            Option<&[String]>,
            &[Vec<String>],
            &[&str],
        ) = match text {
            Some(t) => match t.modules.split_last() {
                Some((inner, outer)) => (Some(inner.as_slice()), outer, &t.paths),
                None => (None, &[], &t.paths),
            },
            None => (None, &[], &[]),
        };
        self.rules.role_of(&RoleSubject {
            family,
            kernel_tokens,
            module_tokens,
            inside_tokens,
            frame_paths,
        })
    }
}

/// Module classes (`nn.Module: Qwen3Attention_0` -> `Qwen3Attention`, tokenised) and
/// frame paths of a stack given outer..inner.
fn stack_text<'t>(trace: &'t Trace, frames: &[Sym]) -> StackText<'t> {
    let mut modules = Vec::new();
    let mut paths = Vec::new();
    for &frame in frames {
        let text = trace.name(frame);
        if let Some(class) = text.strip_prefix(MODULE_FRAME) {
            modules.push(tokens(module_class(class)));
        } else if let Some(parsed) = parse_frame(text) {
            paths.push(parsed.path);
        }
    }
    StackText { modules, paths }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_instances_lose_their_number_only() {
        assert_eq!(module_class("Qwen3Attention_0"), "Qwen3Attention");
        assert_eq!(module_class("RMSNorm_143"), "RMSNorm");
        assert_eq!(module_class("Linear"), "Linear");
        assert_eq!(module_class("my_module"), "my_module");
    }
}
