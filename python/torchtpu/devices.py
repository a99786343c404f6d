"""Devices: availability, count, the current device, synchronization."""

import ctypes
import json
from collections import namedtuple

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


# TPUDeviceProperties is what get_device_properties returns: the device's name (the kind its plugin
# gives it), the plugin's platform and version, the memory limit in bytes, and the device index.
TPUDeviceProperties = namedtuple("TPUDeviceProperties", "name platform platform_version total_memory index")


def get_device_properties(device=None):
    """The properties of a tpu device (the current one by default), as torch.cuda's: `.name`,
    `.total_memory`, and the plugin's `.platform` and `.platform_version`."""
    _runtime.require()
    idx = _index(device)
    count = device_count()
    if not 0 <= idx < count:
        raise ValueError(f"torchtpu: invalid device index {idx}: there are {count} tpu devices")
    buf = ctypes.create_string_buffer(4096)
    _lib.call("ttpu_device_info", idx, buf, len(buf))
    info = json.loads(buf.value.decode("utf-8", "replace"))
    from .memory import memory_limit

    return TPUDeviceProperties(info["kind"], info["platform"], info["platform_version"], memory_limit(idx), idx)


def get_device_name(device=None):
    """The name of a tpu device (the current one by default): the device kind its plugin reports,
    e.g. "TPU v4" on libtpu, "cpu" on the XLA CPU plugin."""
    return get_device_properties(device).name
