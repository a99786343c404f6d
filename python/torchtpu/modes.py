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
    so that torch.tpu.metrics() counts them."""
    _runtime.require()
    _lib.call("ttpu_await_compiles")


def set_cold_runs(on):
    """Turn strict mode's cold runs on or off (they start on unless TORCHTPU_COLD_RUNS=0); returns whether
    they were on. Off, every new op compiles its own program before it runs, as debug mode does."""
    _runtime.require()
    was = _lib.ctypes.c_int32(0)
    _lib.call("ttpu_set_cold_runs", 1 if on else 0, _lib.ctypes.byref(was))
    return bool(was.value)


@contextlib.contextmanager
def mode(name):
    """Run a block in a mode: `with torch.tpu.mode("fused"): ...`; the previous mode comes back after."""
    previous = get_mode()
    set_mode(name)
    try:
        yield
    finally:
        set_mode(previous)
