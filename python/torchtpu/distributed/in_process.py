"""Collectives across the tpu devices of one process (TORCHTPU_CPU_DEVICE_COUNT=N).

all_reduce_devices runs one XLA program compiled for N replicas and launched once on all of them,
so the reduction happens inside XLA (its all_reduce), not on the host.
"""
import ctypes

import torch

from .. import _lib, _runtime

_OPS = {"sum": "sum", "avg": "sum", "product": "product", "min": "min", "max": "max"}


def all_reduce_devices(tensors, op="sum"):
    """Reduce tensors[i] (on tpu:i, one per device from 0) across the devices, in place.

    op is "sum", "avg", "product", "min" or "max". Every tensor must have the same shape and dtype.
    """
    _runtime.require()
    if op not in _OPS:
        raise ValueError(f"all_reduce_devices: unknown op {op!r} (expected one of {sorted(_OPS)})")
    tensors = list(tensors)
    if not tensors:
        return tensors
    for i, t in enumerate(tensors):
        if t.device != torch.device("tpu", i):
            raise ValueError(f"all_reduce_devices: tensor {i} is on {t.device}, expected tpu:{i}")
        if t.shape != tensors[0].shape or t.dtype != tensors[0].dtype:
            raise ValueError(f"all_reduce_devices: tensor {i} is {list(t.shape)} {t.dtype}, "
                             f"tensor 0 is {list(tensors[0].shape)} {tensors[0].dtype}")
    # The program replaces whole storages: a tensor that is not one is reduced in a copy.
    work = [t.detach() if _whole(t) else t.detach().clone(memory_format=torch.contiguous_format) for t in tensors]
    addrs = (ctypes.c_uint64 * len(work))(*[w.untyped_storage().data_ptr() for w in work])
    _lib.call("ttpu_all_reduce_devices", addrs, len(work), _OPS[op].encode())
    for t, w in zip(tensors, work):
        if op == "avg":
            if w.is_floating_point():
                w.div_(len(tensors))
            else:
                w.copy_(torch.div(w, len(tensors), rounding_mode="trunc"))
        if w is not t and w.untyped_storage().data_ptr() != t.untyped_storage().data_ptr():
            t.copy_(w)
    return tensors


def _whole(t):
    """Whether t is exactly its storage: contiguous, at offset 0, covering every byte."""
    return (t.is_contiguous() and t.storage_offset() == 0
            and t.untyped_storage().nbytes() == t.numel() * t.element_size())
