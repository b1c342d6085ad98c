# Test fixture written for llm-triage: the shape of TensorRT-LLM's newer generator form
# (4-space indent, rank from ctx.svc.dist.rank, closing parenthesis on its own line).
import os

import torch

PROFILE_TRACE_ENV_VAR_NAME = "TLLM_TORCH_PROFILE_TRACE"
PROFILE_START_STOP_ENV_VAR_NAME = "TLLM_PROFILE_START_STOP"


def profiled_steps(ctx, steps):
    """Yields steps; with_stack=False in torch.profiler.profile(...) keeps traces small."""
    torch_trace_path = os.environ.get(PROFILE_TRACE_ENV_VAR_NAME, None)
    if torch_trace_path is not None:
        base, ext = os.path.splitext(torch_trace_path)
        torch_trace_path = f"{base}-rank-{ctx.svc.dist.rank}{ext}"
    profile_start_stop = os.environ.get(PROFILE_START_STOP_ENV_VAR_NAME,
                                        None)
    # llm-triage py-executor-override: only rank 0 records the torch trace.
    enable_torch_trace = bool(torch_trace_path and profile_start_stop and ctx.svc.dist.rank == 0)
    if enable_torch_trace:
        torch_profiler = torch.profiler.profile(
            activities=[
                torch.profiler.ProfilerActivity.CPU,
                torch.profiler.ProfilerActivity.CUDA,
            ],
            record_shapes=True,  # shapes help the fuse table
            with_modules=True,
            with_stack=True,
        )
        torch_profiler.start()
    for step in steps:
        yield step
    if enable_torch_trace:
        torch_profiler.stop()
        torch_profiler.export_chrome_trace(torch_trace_path)
