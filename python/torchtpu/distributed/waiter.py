"""Waiter: the thread that completes a tpu_gloo group's futures, in issue order.

gloo's own futures do not wait for the copy back to the device, so one thread per group waits on
each gloo Work (which raises when the collective failed), runs the plan that copies the host
results into the tpu outputs, and completes the collective's future with the result or the error.

The thread must be gone before the interpreter finalizes. Completing a future releases the GIL,
wakes whoever waits on it and takes the GIL back; if the woken main thread has begun to finalize
meanwhile, taking the GIL ends the thread by unwinding it through a C++ destructor, which
terminates the process ("terminate called without an active exception"). So the thread stops
when its group shuts down (destroy_process_group) or, failing that, at exit, and whoever stops it
waits until it has ended.
"""

import atexit
import queue
import threading

_STOP = None

# How long stopping waits for a collective still in flight (its peers may never answer).
STOP_WAIT_S = 30.0

_running = set()
_lock = threading.Lock()
_hooked = False


def _stop_all():
    with _lock:
        waiters = list(_running)
    for w in waiters:
        w.stop()


class Waiter:
    """One group's waiter thread; put() queues a launched collective, stop() ends the thread."""

    def __init__(self, name):
        global _hooked
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        with _lock:
            if not _hooked:
                # atexit runs before the interpreter starts finalizing; this hook is registered
                # after the engine's drain, so it runs first.
                atexit.register(_stop_all)
                _hooked = True
            _running.add(self)
        self._thread.start()

    def put(self, what, work, plan, outcome):
        """Queue gloo's work for a collective; outcome (see settled) completes with
        (True, plan.finish()) or (False, the error)."""
        self._queue.put((what, work, plan, outcome))

    def stop(self):
        """End the thread once it has completed every queued collective (waiting at most
        STOP_WAIT_S for one still in flight). Idempotent."""
        with _lock:
            if self not in _running:
                return
            _running.discard(self)
        self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(STOP_WAIT_S)

    def _loop(self):
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            what, work, plan, outcome = item
            del item
            try:
                work.wait()
            except Exception as e:  # a peer died, the group timed out or disagreed
                outcome.set_result((False, RuntimeError(f"tpu_gloo {what} failed: {e}")))
                continue
            finally:
                del work
            try:
                result = plan.finish()
            except Exception as e:
                outcome.set_result((False, RuntimeError(f"tpu_gloo {what}: copying the result to the device failed: {e}")))
                continue
            outcome.set_result((True, result))


def _settle(outcome):
    ok, value = outcome.value()
    if not ok:
        raise value
    return value


def settled(outcome):
    """The future of a collective whose outcome future completes with (ok, value): it holds the
    value, or fails with the error. Future.set_exception would not do: it stores the error as a
    value that only the Python object it was called on raises, so c10d and every other wrapper
    of the same future saw a success; an error raised in a callback fails the future itself."""
    return outcome.then(_settle)
