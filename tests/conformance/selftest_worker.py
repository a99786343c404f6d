"""A worker for testing the sweep runner itself (tests/conformance/test_sweep_runner.py): a case named
"crash..." aborts the process, "hang..." sleeps, "raise..." raises, any other passes. SELFTEST_STARTUP_SECONDS
delays the worker's start."""

import os
import time

from . import cases


def run_case(cid):
    if cid.startswith("crash"):
        os.abort()
    if cid.startswith("hang"):
        time.sleep(3600)
    if cid.startswith("raise"):
        raise ValueError("bad case")
    return "pass", ""


if __name__ == "__main__":
    time.sleep(float(os.environ.get("SELFTEST_STARTUP_SECONDS", "0")))  # a slow start, as on a loaded machine
    cases.worker_main(run_case)
