"""Execution modes: "debug", "strict" (default) and "fused"."""

import contextlib

from . import _lib, _runtime

MODES = ("debug", "strict", "fused")


def set_mode(name):
    """Select the flush policy of the engine."""
    _runtime.require()
    _lib.call("ttpu_set_mode", str(name).encode())


def get_mode():
    _runtime.require()
    return _lib.read_string(_lib.lib().ttpu_get_mode)


def await_compiles():
    """Wait until strict mode's background compiles have finished (the one-op programs of cold runs),
    so that later steps run op by op and torch.tpu.metrics() counts them."""
    _runtime.require()
    _lib.call("ttpu_await_compiles")


@contextlib.contextmanager
def mode(name):
    """Run a block in a mode: `with torch.tpu.mode("fused"): ...`; the previous mode comes back after."""
    previous = get_mode()
    set_mode(name)
    try:
        yield
    finally:
        set_mode(previous)
