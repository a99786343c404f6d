"""torchtpu: PyTorch's tpu device (the PrivateUse1 backend), executed through a PJRT plugin."""

import os

import torch

from . import _lib, _runtime, conflict

_loaded = False


def _register_with_torch():
    from . import device_module, printing, step

    if torch._C._get_privateuse1_backend_name() != "tpu":
        torch.utils.rename_privateuse1_backend("tpu")
    if getattr(torch, "tpu", None) is not device_module:
        torch._register_device_module("tpu", device_module)
    if not hasattr(torch.Tensor, "is_tpu"):
        torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    printing.install()
    step.install()
    from . import distributed

    distributed.register()
    from . import compile as _compile

    _compile.install()
    # Autocast on tpu computes in bfloat16 unless told otherwise (the setting is per thread;
    # this sets it for the thread that imports torchtpu).
    torch.set_autocast_dtype("tpu", torch.bfloat16)
    _backward_on_caller()


def _backward_on_caller():
    """backward() runs its tpu nodes on the thread that calls it, as it runs CPU nodes, instead of
    handing them to the autograd engine's thread for tpu:N and waiting: tpu ops only record or enqueue
    work, so the device thread brought no overlap, and the two hand-offs cost about 50 µs a backward
    (bench/results/floors.md). The setting is per thread (this sets it for the thread that imports
    torchtpu; torch.autograd.set_multithreading_enabled(True) restores the engine's threads). Where a
    CUDA or ROCm device is present, its backward keeps its device threads, and so does tpu's then;
    TORCHTPU_AUTOGRAD_THREADS=1 keeps them always."""
    if os.environ.get("TORCHTPU_AUTOGRAD_THREADS") == "1":
        return
    if torch.cuda.is_available():
        return
    torch._C._set_multithreading_enabled(False)


def _load():
    """Load the library, register the tpu device with torch and initialize the plugin (idempotent)."""
    global _loaded
    if _loaded:
        return
    conflict.check()
    _lib.load()
    torch.ops.torchtpu.register_rule_kernels()
    _register_with_torch()
    _loaded = True
    _runtime.init()


def _autoload():
    """Entry point of the torch.backends group: `import torch` alone makes the tpu device usable."""
    _load()


def is_available():
    from .devices import is_available as available

    return available()


def init_error():
    """Why the plugin failed to initialize, or None."""
    return _runtime.init_error()


_load()
