"""torch.tpu.trace: the engine's events as a Chrome/Perfetto trace (JSON, traceEvents).

While a trace is active the engine records each compile (or load from a cache tier), each program
launch and its completion on the device, host<->device transfers with their bytes, flushes with
their reason and CPU fallbacks. On exit they are written, with the host ranges recorded through
`Trace.range`, to one JSON file that chrome://tracing and ui.perfetto.dev open.
"""

import contextlib
import ctypes
import json
import os
import threading
import time

from . import _lib, _runtime

_HOST_TID, _DEVICE_TID, _USER_TID = 1, 2, 3


def _fetch_events():
    fn = _lib.lib().ttpu_trace_stop
    size = 1 << 20
    while True:
        buf = ctypes.create_string_buffer(size)
        needed = int(fn(buf, size))
        if needed <= size:
            return json.loads(buf.value.decode("utf-8", "replace") or "{}")
        size = needed


def _device_tid(dev):
    """The track of device dev's programs (tpu:0's is always there)."""
    return _DEVICE_TID if dev == 0 else 100 + dev


def _args(ev, *names):
    return {n: ev[n] for n in names if ev.get(n)}


def chrome_events(engine_events, ranges, t0_ns):
    """Chrome trace events of the engine's events and the host ranges, times relative to t0_ns.

    Each device's work is laid out as one queue on its own track ("tpu:N"): an execution starts on
    the device when it was launched or when the one before it on that device finished, whichever
    is later, and ends at its completion event.
    """
    pid = os.getpid()
    us = lambda ns: (ns - t0_ns) / 1000.0  # noqa: E731
    out = [
        {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": "torchtpu"}},
        {"ph": "M", "pid": pid, "tid": _HOST_TID, "name": "thread_name", "args": {"name": "host (engine)"}},
        {"ph": "M", "pid": pid, "tid": _DEVICE_TID, "name": "thread_name", "args": {"name": "tpu:0"}},
        {"ph": "M", "pid": pid, "tid": _USER_TID, "name": "thread_name", "args": {"name": "host (ranges)"}},
    ]
    device_free = {}
    for ev in sorted(engine_events, key=lambda e: e["start_ns"]):
        kind = ev["kind"]
        base = {"pid": pid, "cat": kind}
        if kind == "fallback":
            out.append({**base, "ph": "i", "s": "t", "tid": _HOST_TID, "name": ev["name"], "ts": us(ev["start_ns"])})
            continue
        name = "launch" if kind == "execute" else ev["name"]
        args = _args(ev, "bytes", "ops", "key", "reason", "detail", "device")
        out.append({**base, "ph": "X", "tid": _HOST_TID, "name": name, "ts": us(ev["start_ns"]),
                    "dur": ev["dur_ns"] / 1000.0, "args": args})
        if kind == "execute" and ev.get("done_ns"):
            dev = ev.get("device", 0)
            if dev not in device_free and dev != 0:
                out.append({"ph": "M", "pid": pid, "tid": _device_tid(dev), "name": "thread_name",
                            "args": {"name": f"tpu:{dev}"}})
            start = max(ev["start_ns"], device_free.get(dev, 0))
            device_free[dev] = ev["done_ns"]
            out.append({**base, "ph": "X", "tid": _device_tid(dev), "name": f"program {ev.get('key', '').removeprefix('s:')[:12]}",
                        "ts": us(start), "dur": (ev["done_ns"] - start) / 1000.0,
                        "args": {**args, "device_us": (ev["done_ns"] - start) / 1000.0}})
    for name, start, end in ranges:
        out.append({"pid": pid, "tid": _USER_TID, "ph": "X", "cat": "host", "name": name,
                    "ts": us(start), "dur": (end - start) / 1000.0})
    return out


class Trace:
    """An active trace: `range(name)` records a host range beside the engine's events."""

    def __init__(self, path, limit=0):
        self.path = path
        self.limit = limit
        self.events = []
        self.dropped = 0
        self._ranges = []
        self._lock = threading.Lock()
        self._t0 = 0

    @contextlib.contextmanager
    def range(self, name):
        start = time.time_ns()
        try:
            yield
        finally:
            with self._lock:
                self._ranges.append((name, start, time.time_ns()))

    def __enter__(self):
        _runtime.require()
        self._t0 = time.time_ns()
        _lib.call("ttpu_trace_start", self.limit)
        return self

    def __exit__(self, *exc):
        try:
            from .devices import synchronize

            synchronize()  # the completion times of work still running
        finally:
            got = _fetch_events()
        self.events = got.get("events") or []
        self.dropped = got.get("dropped", 0)
        if self.path is not None:
            doc = {"traceEvents": chrome_events(self.events, self._ranges, self._t0),
                   "displayTimeUnit": "ms",
                   "otherData": {"producer": "torchtpu", "dropped_events": self.dropped}}
            with open(self.path, "w") as f:
                json.dump(doc, f)
        return False


def trace(path, limit=0):
    """`with torch.tpu.trace("trace.json") as t:` records the engine's events and writes them as a
    Chrome/Perfetto trace on exit (path None keeps them in `t.events` only). limit bounds the
    events kept (default about a million); what passes it is counted as dropped."""
    return Trace(path, limit)
