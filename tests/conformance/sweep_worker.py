"""The worker half of a case sweep (see op_sweep.py).

    python -m tests.conformance.sweep_worker --sweep errors --indices 3,17 --out FILE

walks the given op_db entries with the sweep's case module (cases_<sweep>.py) and appends one JSON line
per event to FILE, flushed: "op_start", then for each case a "start" line before it runs on tpu and a
"result" line after it, then "op_done", and "chunk_done" at the end. Cases that FILE already records
are skipped, so a fresh worker resumes after one that died.
"""

import argparse
import importlib
import json
import os
import time
import warnings

from . import harness, run


class Context:
    """Runs one op's cases, skipping those already recorded, and writes their events."""

    def __init__(self, path, op_name, index):
        self.done = {e["case"] for e in run.read_events(path) if e.get("ev") == "result"}
        self.f = open(path, "a", buffering=1)
        self.op = op_name
        self.index = index

    def emit(self, **rec):
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def case(self, case_id, fn):
        """Runs fn() for case_id unless it is recorded; fn returns (status, detail). An exception out of
        fn is a failure of the case."""
        if case_id in self.done:
            return
        self.emit(ev="start", case=case_id, op=self.op, index=self.index)
        # Let the runner's crash and hang handling be tested.
        if os.environ.get("CONFORMANCE_CRASH_CASE") == case_id:
            os.abort()
        if os.environ.get("CONFORMANCE_HANG_CASE") == case_id:
            time.sleep(3600)
        t0 = time.time()
        try:
            status, detail = fn()
        except Exception as e:  # noqa: BLE001
            status, detail = "fail", "harness: " + harness.first_line(e)
        rec = dict(ev="result", case=case_id, op=self.op, status=status, seconds=round(time.time() - t0, 2))
        if detail:
            rec["detail"] = str(detail)[:600]
        self.emit(**rec)
        self.done.add(case_id)

    def record(self, case_id, status, detail):
        """Records a case decided without running anything on tpu (an exclusion)."""
        self.case(case_id, lambda: (status, detail))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--sweep", required=True)
    p.add_argument("--indices", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import torchtpu  # noqa: F401
    cases = importlib.import_module(f"tests.conformance.cases_{a.sweep}")
    op_db = harness.load_op_db()
    for i in (int(x) for x in a.indices.split(",") if x):
        op = op_db[i]
        name = harness.variant_name(op)
        ctx = Context(a.out, name, i)
        ctx.emit(ev="op_start", op=name, index=i)
        cases.run_op(op, name, ctx)
        ctx.emit(ev="op_done", op=name)
        ctx.f.close()
    with open(a.out, "a") as f:
        f.write(json.dumps({"ev": "chunk_done"}) + "\n")


if __name__ == "__main__":
    main()
