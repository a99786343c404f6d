"""Host-side ranges for torch.profiler: the tpu calls that launch or wait for device work
(torch.tpu.mark_step, torch.tpu.synchronize) appear as "torchtpu::..." ranges on the calling
thread while a profiler records. The device side (compiles, executions, transfers, flushes) comes
from the engine through csrc/device_profiler.cpp when ProfilerActivity.PrivateUse1 is asked for."""

import contextlib

import torch


def record(name):
    """A record_function range named name while a profiler is enabled, else a no-op."""
    if torch.autograd.profiler._is_profiler_enabled:
        return torch.profiler.record_function(name)
    return contextlib.nullcontext()
