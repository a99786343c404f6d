"""The conformance slice's forward ops through torch.compile(backend="tpu"), against CPU eager."""
import json
import os
import subprocess
import sys

from tests.conformance.slice import SLICE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Ops whose compiled graph falls back to eager tpu execution today (their values are still checked).
EAGER = {"linalg.solve", "linalg.cholesky"}


def test_slice_forward_through_compiled_wrapper():
    r = subprocess.run([sys.executable, "-m", "tests.conformance.compiled_slice"], cwd=ROOT, timeout=900,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert [row["op"] for row in rows] == SLICE
    bad = [row for row in rows if row["status"] in ("mismatch", "error")]
    assert not bad, bad
    eager = {row["op"] for row in rows if row["status"] == "eager"}
    assert eager <= EAGER, f"newly eager under torch.compile: {sorted(eager - EAGER)}"
    assert all(row["detail"] for row in rows if row["status"] == "eager")
    passed = [row["op"] for row in rows if row["status"] == "pass"]
    assert len(passed) >= len(SLICE) - len(EAGER) - 2, rows
