"""Counters of the compiled path, merged into torch.tpu.metrics(), and the TORCHTPU_LOG=recompiles lines."""

import sys
import threading

from .. import logs

_lock = threading.Lock()
_counts = {}
_reasons = {}
_fallback_reasons = {}
# The key parts of the last program of each compiled graph slot: (frame, piece, role) -> parts.
_last = {}


def _zero():
    global _counts, _reasons, _fallback_reasons
    _counts = {"compiled_programs": 0, "compiled_replays": 0, "compiled_fallbacks": 0, "compiled_fallback_calls": 0,
               "compiled_scalar_inputs": 0, "compiled_cpu_inputs": 0, "compiled_recorded_calls": 0}
    _reasons = {}
    _fallback_reasons = {}


_zero()


def bump(name, n=1):
    with _lock:
        _counts[name] = _counts.get(name, 0) + n


def note_fallback(reason):
    """One graph that runs eagerly from now on, and why."""
    with _lock:
        _counts["compiled_fallbacks"] += 1
        _fallback_reasons[reason] = _fallback_reasons.get(reason, 0) + 1
    if "recompiles" in _log_topics() or "fallbacks" in _log_topics():
        print(f"torchtpu: compiled graph runs eagerly: {reason}", file=sys.stderr)


def note_recorded(slot, n):
    """A dynamic graph that has captured n shapes' programs: its new shapes are recorded from now on."""
    if "recompiles" in _log_topics():
        frame, piece, role = slot
        print(f"torchtpu: compiled frame {frame} graph {piece} {role} is dynamic and has programs for {n} shapes: "
              "new shapes are recorded in fused mode (growing tensors padded, a program per capacity)",
              file=sys.stderr)


def snapshot():
    with _lock:
        out = dict(_counts)
        out["compiled_programs_by_reason"] = dict(_reasons)
        out["compiled_fallback_reasons"] = dict(_fallback_reasons)
        return out


def reset():
    with _lock:
        _zero()


def _log_topics():
    return logs.topics()


def _describe(parts):
    shapes = ", ".join(f"{d}{list(s)}" for s, d in zip(parts["shapes"], parts["dtypes"]))
    return shapes


def note_program(slot, parts, layout_reason=None):
    """Count one new program of a compiled graph slot and explain, against the slot's previous
    program, which key part changed. parts: shapes, dtypes (per tensor input), graph (a digest),
    ints (the integer inputs), device (the inputs' tpu device index)."""
    prev = _last.get(slot)
    if layout_reason is not None:
        reason, detail = "layout", layout_reason
    elif prev is None:
        reason, detail = "new", "first program: " + _describe(parts)
    elif prev.get("device") != parts.get("device"):
        reason, detail = "device", f"inputs on tpu:{parts.get('device')}, the previous program's on tpu:{prev.get('device')}"
    elif prev["graph"] != parts["graph"]:
        reason, detail = "graph", "the graph's op sequence changed"
    elif len(prev["shapes"]) != len(parts["shapes"]):
        reason, detail = "graph", f"{len(prev['shapes'])} -> {len(parts['shapes'])} tensor inputs"
    elif prev["dtypes"] != parts["dtypes"]:
        i = next(k for k, (a, b) in enumerate(zip(prev["dtypes"], parts["dtypes"])) if a != b)
        reason, detail = "dtypes", f"input {i} dtype {prev['dtypes'][i]} -> {parts['dtypes'][i]}"
    elif prev["shapes"] != parts["shapes"]:
        i = next(k for k, (a, b) in enumerate(zip(prev["shapes"], parts["shapes"])) if a != b)
        reason, detail = "shapes", f"input {i} shape {list(prev['shapes'][i])} -> {list(parts['shapes'][i])}"
    elif prev["ints"] != parts["ints"]:
        reason, detail = "shapes", f"integer inputs {list(prev['ints'])} -> {list(parts['ints'])}"
    else:
        reason, detail = "guards", "Dynamo recompiled the same graph for the same inputs (a guard on Python state failed)"
    _last[slot] = parts
    with _lock:
        _counts["compiled_programs"] += 1
        _reasons[reason] = _reasons.get(reason, 0) + 1
    if "recompiles" in _log_topics():
        frame, piece, role = slot
        print(f"torchtpu: new program for compiled frame {frame} graph {piece} {role} ({reason}): {detail}",
              file=sys.stderr)
    return reason
