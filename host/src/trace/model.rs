//! The model class a trace names itself: `nn.Module: LlamaForCausalLM_0`,
//! `nn.Module: Qwen3Model`, `nn.Module: GptOssForCausalLM` frames (torch.profiler
//! `with_modules=True`). Without `server_args.json` this is the only place a report can
//! say which model ran, and the fuse table's model gates read it.

use std::collections::HashMap;

use crate::trace::event::Trace;

/// Class-name endings of a whole language model (the top module), strongest first.
const TOP_MODEL_SUFFIXES: &[&str] = &["ForCausalLM", "ForConditionalGeneration", "LMHeadModel"];

/// The model class of `trace`: of its `nn.Module:` frames, a class ending in
/// [`TOP_MODEL_SUFFIXES`] wins over a bare `<Name>Model` (the decoder stack,
/// `Qwen3Model`), then the most frequent, then the alphabetically first. `None` when no
/// frame names a model.
pub fn model_class(trace: &Trace) -> Option<String> {
    let mut classes: HashMap<String, u64> = HashMap::new();
    for (name, count) in trace.frame_names() {
        if let Some(class) = module_class(name) {
            *classes.entry(class.to_string()).or_default() += count;
        }
    }
    classes
        .into_iter()
        .filter_map(|(class, count)| Some((rank(&class)?, count, class)))
        .min_by(|a, b| {
            (a.0, std::cmp::Reverse(a.1), &a.2).cmp(&(b.0, std::cmp::Reverse(b.1), &b.2))
        })
        .map(|(_, _, class)| class)
}

/// `LlamaForCausalLM` for `nn.Module: LlamaForCausalLM_0` (the profiler appends an
/// instance number).
fn module_class(frame: &str) -> Option<&str> {
    let name = frame.strip_prefix("nn.Module: ")?.trim();
    let class = match name.rsplit_once('_') {
        Some((class, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => name,
    };
    (!class.is_empty()).then_some(class)
}

/// 0 for a whole model, 1 for a decoder stack (`Qwen3Model`), `None` for any other
/// module (`Linear`, `RMSNorm`, a bare `Model`).
fn rank(class: &str) -> Option<u8> {
    let named = |suffix: &str| {
        class
            .strip_suffix(suffix)
            .is_some_and(|stem| stem.starts_with(|c: char| c.is_ascii_uppercase()))
    };
    if TOP_MODEL_SUFFIXES.iter().any(|s| named(s)) {
        Some(0)
    } else if named("Model") {
        Some(1)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TraceFixture;

    fn class_of(frames: &[&str]) -> Option<String> {
        let mut b = TraceFixture::new();
        for (i, name) in frames.iter().enumerate() {
            b.frame(name, i as i64 * 10, 5, 1);
        }
        model_class(&b.build())
    }

    #[test]
    fn the_whole_model_class_wins_over_its_decoder_stack() {
        let frames = [
            "nn.Module: LlamaModel_0",
            "nn.Module: LlamaModel_0",
            "nn.Module: LlamaForCausalLM_0",
            "nn.Module: Linear_3",
        ];
        assert_eq!(class_of(&frames).as_deref(), Some("LlamaForCausalLM"));
    }

    #[test]
    fn a_decoder_stack_alone_names_the_model() {
        let frames = [
            "nn.Module: Qwen3Model",
            "nn.Module: RMSNorm_1",
            "nn.Module: Model",
        ];
        assert_eq!(class_of(&frames).as_deref(), Some("Qwen3Model"));
    }

    #[test]
    fn no_module_frames_no_class() {
        let frames = [
            "vllm/model_executor/models/gpt_oss.py(10): forward",
            "nn.Module: Linear_0",
        ];
        assert_eq!(class_of(&frames), None);
    }
}
