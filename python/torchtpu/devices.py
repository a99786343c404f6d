"""Devices: availability, count, the current device, synchronization."""

import torch

from . import _lib, _runtime
from .profiler import record


def is_available():
    """True when the plugin initialized and exposes at least one device (never raises)."""
    if _runtime.init_error() is not None or not _runtime.initialized() or _runtime.in_bad_fork():
        return False
    return device_count() > 0


def is_initialized():
    return _runtime.initialized()


def _is_in_bad_fork():
    return _runtime.in_bad_fork()


def device_count():
    if _runtime.in_bad_fork():
        return 0
    return int(_lib.lib().ttpu_device_count())


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "tpu":
            raise ValueError(f"torchtpu: expected a tpu device, got {device}")
        return current_device() if device.index is None else device.index
    raise TypeError(f"torchtpu: cannot interpret {device!r} as a tpu device")


def current_device():
    """This thread's current tpu device index."""
    return int(torch.ops.torchtpu.current_device())


def set_device(device):
    idx = _index(device)
    if idx >= 0:
        torch.ops.torchtpu.set_device(idx)


def synchronize(device=None):
    """Flush pending work and wait for the device to finish it."""
    _runtime.require()
    with record("torchtpu::synchronize"):
        _lib.call("ttpu_synchronize")


class device:
    """Context manager that makes a tpu device current: `with torch.tpu.device(0): ...`."""

    def __init__(self, device):
        self.idx = _index(device) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.prev_idx)
        return False


def get_amp_supported_dtype():
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation=True):
    return True
