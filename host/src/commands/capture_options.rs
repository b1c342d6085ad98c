//! The live-capture flags as the plain `capture::Options` that `triage` and
//! `capture-plan` hand to the capture code.

use crate::capture::{Options, Workloads};
use crate::cli::capture::{CaptureArgs, ProfileWorkload};

pub(super) fn capture_options(args: &CaptureArgs) -> Options {
    Options {
        url: args.url.clone(),
        output_dir: args.output_dir.clone(),
        control_url: args.control_url.clone(),
        mapping_url: args.mapping_url.clone(),
        formal_url: args.formal_url.clone(),
        mapping_output_dir: args.mapping_output_dir.clone(),
        formal_output_dir: args.formal_output_dir.clone(),
        workloads: match args.profile_workload {
            ProfileWorkload::Legacy => Workloads::Legacy,
            ProfileWorkload::Prefill => Workloads::Prefill,
            ProfileWorkload::Decode => Workloads::Decode,
            ProfileWorkload::Both => Workloads::Both,
        },
        warmup_steps: args.warmup_steps,
        num_steps: args.num_steps,
        prefill_input_len: args.prefill_input_len,
        prefill_output_len: args.prefill_output_len,
        decode_input_len: args.decode_input_len,
        decode_output_len: args.decode_output_len,
        profile_prefix: args.profile_prefix.clone(),
        mapping_profile_prefix: args.mapping_profile_prefix.clone(),
        formal_profile_prefix: args.formal_profile_prefix.clone(),
        // `--profile-by-stage` / `--no-profile-by-stage`, or neither.
        profile_by_stage: match (args.profile_by_stage, args.no_profile_by_stage) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        merge_profiles: args.merge_profiles,
        start_step: args.start_step,
        sglang_guard_step: args.sglang_guard_step,
        probe_requests: args.probe_requests,
        probe_prompt: args.probe_prompt.clone(),
        probe_max_new_tokens: args.probe_max_new_tokens,
        probe_delay: args.probe_delay,
        request_timeout: args.request_timeout,
        flush_timeout: args.flush_timeout,
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::Cli;

    fn options(flags: &[&str]) -> Options {
        let argv = std::iter::once("llm-triage").chain(flags.iter().copied());
        capture_options(&Cli::try_parse_from(argv).unwrap().triage.capture)
    }

    #[test]
    fn profile_by_stage_is_on_off_or_left_to_the_engine() {
        assert_eq!(options(&[]).profile_by_stage, None);
        assert_eq!(
            options(&["--profile-by-stage"]).profile_by_stage,
            Some(true)
        );
        assert_eq!(
            options(&["--no-profile-by-stage"]).profile_by_stage,
            Some(false)
        );
    }

    #[test]
    fn profile_workload_names_the_workloads_in_capture_order() {
        assert_eq!(options(&[]).workloads, Workloads::Both);
        assert_eq!(
            options(&["--profile-workload", "legacy"]).workloads,
            Workloads::Legacy
        );
        assert_eq!(
            Workloads::Both.in_order(),
            [
                llm_triage_plugin_api::Workload::Prefill,
                llm_triage_plugin_api::Workload::Decode
            ]
        );
    }
}
