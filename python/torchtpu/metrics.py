"""Engine metrics (op counts, fallbacks, compiles, cache hits) as a dict."""

import ctypes
import json

from . import _lib, _runtime
from .compile import stats as compile_stats


def metrics():
    """The engine's counters, decoded from its JSON."""
    _runtime.require()
    fn = _lib.lib().ttpu_metrics_json
    size = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(size)
        needed = int(fn(buf, size))
        if needed < size:
            out = json.loads(buf.value.decode("utf-8", "replace") or "{}")
            out.update(compile_stats.snapshot())
            return out
        size = needed + 1


def reset_metrics():
    _runtime.require()
    _lib.lib().ttpu_reset_metrics()
    compile_stats.reset()
