"""torch.distributed for tpu tensors: the "tpu_gloo" c10d backend, registered for the tpu device.

`init_process_group()` under torchrun picks it for tpu tensors (as NCCL is picked for CUDA), and
`init_process_group("cpu:gloo,tpu:tpu_gloo")` adds gloo for CPU tensors. Each rank uses one device:
`tpu:<LOCAL_RANK % device_count>` (with the default one device per process, `tpu:0`).
"""

import torch

BACKEND = "tpu_gloo"


def all_reduce_devices(tensors, op="sum"):
    """Reduce one tensor per device of this process in one XLA collective (see in_process.py)."""
    from .in_process import all_reduce_devices as impl

    return impl(tensors, op)


def _create(store, rank, size, timeout):
    from .host_backend import HostStagedBackend

    return HostStagedBackend(store, rank, size, timeout)


def register():
    """Register the backend with c10d and make it the default for the tpu device (idempotent)."""
    if not torch.distributed.is_available():
        return
    from torch.distributed import Backend

    if hasattr(Backend, BACKEND.upper()):
        return
    Backend.register_backend(BACKEND, _create, devices=["tpu"])


def traffic():
    """What this process has handed to the tpu_gloo backend: {"collectives": n, "bytes": input bytes,
    "staging_made": host buffers allocated, "staging_reused": host buffers reused from earlier collectives}."""
    from .host_backend import traffic as t
    from .staging import stats

    return dict(t, staging_made=stats["made"], staging_reused=stats["reused"])


def reset_traffic():
    from .host_backend import traffic as t
    from .staging import stats

    t.update(collectives=0, bytes=0)
    stats.update(made=0, reused=0)
