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

    def put(self, what, work, plan, fut):
        """Queue gloo's work for a collective whose future fut completes with plan.finish()."""
        self._queue.put((what, work, plan, fut))

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
            what, work, plan, fut = item
            del item
            try:
                work.wait()
            except Exception as e:  # a peer died, the group timed out or disagreed
                fut.set_exception(RuntimeError(f"tpu_gloo {what} failed: {e}"))
                continue
            finally:
                del work
            try:
                result = plan.finish()
            except Exception as e:
                fut.set_exception(RuntimeError(f"tpu_gloo {what}: copying the result to the device failed: {e}"))
                continue
            fut.set_result(result)
