# Test fixture written for llm-triage: the shape of TensorRT-LLM's PyExecutor._profiler
# (method layout, 8-space indent, arguments hanging under the open parenthesis).
import os
from contextlib import contextmanager

import torch

PROFILE_TRACE_ENV_VAR_NAME = "TLLM_TORCH_PROFILE_TRACE"
PROFILE_START_STOP_ENV_VAR_NAME = "TLLM_PROFILE_START_STOP"


class PyExecutor:

    def __init__(self, dist):
        self.dist = dist
        self.note = "torch_profiler = torch.profiler.profile(  # not code"

    @contextmanager
    def _profiler(self):
        it = -1
        torch_trace_path = os.environ.get(PROFILE_TRACE_ENV_VAR_NAME, None)
        profile_start_stop = os.environ.get(PROFILE_START_STOP_ENV_VAR_NAME,
                                            None)
        enable_torch_trace = bool(torch_trace_path and profile_start_stop)
        if enable_torch_trace:
            activities = [
                torch.profiler.ProfilerActivity.CPU,
                torch.profiler.ProfilerActivity.CUDA,
            ]
            torch_profiler = torch.profiler.profile(activities=activities,
                                                    record_shapes=True,
                                                    with_modules=True)

        def profile_step():
            nonlocal it
            it += 1
            if enable_torch_trace and it == 3:
                torch_profiler.start()

        yield profile_step
        if enable_torch_trace:
            torch_profiler.stop()
            torch_profiler.export_chrome_trace(torch_trace_path)
