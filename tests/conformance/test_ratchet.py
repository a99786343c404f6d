"""Ratchet over a representative slice of PyTorch's OpInfo database (see slice.py).

Runs the slice in strict mode, float32 forward and backward, 4 samples per op, in worker processes, and
fails when an (op, dtype) that passed natively in baseline.json now fails, errors, crashes or falls back.
Newly passing entries are reported so the baseline can be raised with
`python -m tests.conformance.run --update-baseline`.
"""

import json
import os

import pytest

from . import run
from .slice import SLICE


@pytest.fixture(scope="module")
def slice_results():
    return run.run_slice()


def test_slice_names_exist():
    names = set(run.op_names())
    assert [n for n in SLICE if n not in names] == []


def test_ratchet(slice_results, capsys):
    results, entries = slice_results
    with open(run.BASELINE) as f:
        baseline = json.load(f)["ops"]
    regressed, improved = [], []
    for op, dtypes in baseline.items():
        for key, passed in dtypes.items():
            now = entries.get(op, {}).get(key, False)
            if passed and not now:
                why = [r for r in results if r["op"] == op and r["status"] != "pass"
                       and (r.get("dtype") is None or r["dtype"] + ("/backward" if r.get("dir") == "bwd" else "") == key)]
                detail = why[0] if why else {}
                regressed.append(f"{op} [{key}]: {detail.get('status')} {detail.get('detail', '')} "
                                 f"{detail.get('fallbacks', '')}".rstrip())
            elif now and not passed:
                improved.append(f"{op} [{key}]")
    fwd = [v.get("float32") for v in entries.values() if "float32" in v]
    bwd = [v.get("float32/backward") for v in entries.values() if "float32/backward" in v]
    with capsys.disabled():
        print(f"\nconformance slice: float32 forward {sum(fwd)}/{len(fwd)} op variants pass natively, "
              f"backward {sum(bwd)}/{len(bwd)}; baseline "
              f"{sum(v for d in baseline.values() for v in d.values())} entries")
        if improved:
            print("newly passing (raise the baseline with --update-baseline): " + ", ".join(improved))
    assert not regressed, "regressed against tests/conformance/baseline.json:\n" + "\n".join(regressed)


def test_crash_is_recorded_and_sweep_continues(tmp_path):
    """A worker that aborts in the middle of an op is recorded as a crash for that op; later ops still run."""
    names = run.op_names()
    indices = run.select(names, "abs,neg,sin")
    os.environ["CONFORMANCE_CRASH_OP"] = "neg"
    try:
        results = run.sweep(indices, names, run.ratchet_opts(limit_samples=1, no_backward=True,
                                                              workdir=str(tmp_path), jobs=1))
    finally:
        del os.environ["CONFORMANCE_CRASH_OP"]
    crashes = [r for r in results if r["status"] == "crash"]
    assert [(r["op"], r["dtype"], r["sample"], r["mode"]) for r in crashes] == [("neg", "float32", 0, "strict")]
    assert "SIGABRT" in crashes[0]["detail"]
    ops = {r["op"] for r in results if r["status"] != "crash"}
    assert {"abs", "sin"} <= ops
