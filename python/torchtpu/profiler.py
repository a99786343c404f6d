"""Host-side ranges for torch.profiler: the tpu calls that launch or wait for device work
(torch.tpu.mark_step, torch.tpu.synchronize) appear as "torchtpu::..." ranges in the profiler's
trace while a profiler records. Ops on tpu tensors appear there anyway, as aten ops on the CPU
track; a sync op (item, .cpu()) lasts as long as the flush and the device work it waits for."""

import contextlib

import torch


def record(name):
    """A record_function range named name while a profiler is enabled, else a no-op."""
    if torch.autograd.profiler._is_profiler_enabled:
        return torch.profiler.record_function(name)
    return contextlib.nullcontext()
