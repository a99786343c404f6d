"""RaisingWork: the c10d Work of a tpu_gloo collective, which raises when the collective failed.

c10d's wrapper of a plain future (`_create_work_from_future`) returns from `wait()` even when the
future holds an error, so a collective that gloo failed (a peer died, the group timed out) looked
finished and left its outputs as they were. This Work waits on the future and raises its error,
from `wait()` and from `get_future().wait()` alike.
"""

import datetime
import time

import torch.distributed as dist


def _seconds(timeout):
    """timeout as seconds, or None for c10d's "no timeout" (a zero or absent duration)."""
    if timeout is None:
        return None
    s = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    return s if s > 0 else None


class RaisingWork(dist.Work):
    """A Work done when its future is: wait() returns True once the future holds a value and
    raises the future's error when it holds one."""

    def __init__(self, fut, what, outcome=None):
        super().__init__()
        self._fut = fut
        self._what = what
        self._outcome = outcome  # (ok, value) when known: the error without the callback's wrapping

    def wait(self, timeout=None):
        limit = _seconds(timeout)
        if limit is not None:
            # A future has no timed wait: poll it, without a callback (a callback would run on the
            # thread completing the future, after the waiter here was released).
            deadline = time.monotonic() + limit
            while not self._fut.done():
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"tpu_gloo {self._what}: not finished after {limit:g}s")
                time.sleep(0.001)
        try:
            self._fut.wait()
        except Exception as e:
            if self._outcome is not None and self._outcome.done():
                ok, error = self._outcome.value()
                if not ok:
                    raise error from None
            raise e
        return True

    def get_future(self):
        return self._fut

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        if not self._fut.done():
            return False
        try:
            self._fut.value()
        except Exception:
            return False
        return True

    def exception(self):
        if not self._fut.done():
            return None
        try:
            self._fut.value()
        except Exception as e:
            return e
        return None

    def result(self):
        return self._fut.wait()
