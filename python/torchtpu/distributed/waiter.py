"""Waiter: the threads that issue a tpu_gloo group's collectives and complete their futures, in issue order.

A collective's call copies its inputs to the host and queues it. The issuer thread takes the queue in
order: it settles the call's agreement with the other ranks (agreement.py), which waits for them to
reach the same call, and only then starts the gloo collective, so every rank starts its gloo calls
in one order from one thread and the calling thread goes on meanwhile (DDP's backward records the
next bucket while the last one is agreed). gloo's own futures do not wait for the copy back to the
device, so the waiter thread waits on each started gloo Work (which raises when the collective
failed), runs the plan that copies the host results into the tpu outputs, and completes the
collective's future with the result or the error.

The threads must be gone before the interpreter finalizes. Completing a future releases the GIL,
wakes whoever waits on it and takes the GIL back; if the woken main thread has begun to finalize
meanwhile, taking the GIL ends the thread by unwinding it through a C++ destructor, which
terminates the process ("terminate called without an active exception"). So the threads stop
when their group shuts down (destroy_process_group) or, failing that, at exit, and whoever stops
them waits until they have ended.
"""

import atexit
import queue
import threading
import time

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
    """One group's issuer and waiter threads; put() queues a collective, stop() ends the threads."""

    def __init__(self, name):
        global _hooked
        self._issue = queue.SimpleQueue()
        self._started = queue.SimpleQueue()
        self._issuer = threading.Thread(target=self._issue_loop, name=name + "-issuer", daemon=True)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        with _lock:
            if not _hooked:
                # atexit runs before the interpreter starts finalizing; this hook is registered
                # after the engine's drain, so it runs first.
                atexit.register(_stop_all)
                _hooked = True
            _running.add(self)
        self._issuer.start()
        self._thread.start()

    def put(self, what, agreement, start, plan, outcome):
        """Queue a collective: the issuer settles agreement (None: none to settle), then calls start()
        for its gloo Work; outcome (see settled) completes with (True, plan.finish()) or (False, the
        error). start None queues the agreement alone: one a rank owes its peers for a call it
        could not issue."""
        self._issue.put((what, agreement, start, plan, outcome))

    def stop(self):
        """End the threads once they have completed every queued collective (waiting at most
        STOP_WAIT_S in all for those still in flight). Idempotent."""
        with _lock:
            if self not in _running:
                return
            _running.discard(self)
        self._issue.put(_STOP)
        me = threading.current_thread()
        deadline = time.monotonic() + STOP_WAIT_S
        if me is not self._issuer:
            self._issuer.join(STOP_WAIT_S)
            if self._issuer.is_alive():  # stuck in an agreement: it cannot pass the stop on
                self._started.put(_STOP)
        if me is not self._thread:
            self._thread.join(max(0.0, deadline - time.monotonic()))

    def _issue_loop(self):
        while True:
            item = self._issue.get()
            if item is _STOP:
                self._started.put(_STOP)
                return
            what, agreement, start, plan, outcome = item
            del item
            try:
                if agreement is not None:
                    agreement.settle()
                if start is None:
                    continue
                try:
                    work = start()
                except RuntimeError as e:
                    raise RuntimeError(f"tpu_gloo {what}: {e}") from e
            except Exception as e:  # a peer died or disagreed, or gloo refused the call
                if outcome is not None:  # completed by the waiter, after the collectives before it
                    self._started.put((what, None, e, outcome))
                continue
            self._started.put((what, work, plan, outcome))
            del work

    def _loop(self):
        while True:
            item = self._started.get()
            if item is _STOP:
                return
            what, work, plan, outcome = item
            del item
            if work is None:  # refused by the issuer; plan is the error
                outcome.set_result((False, plan))
                continue
            try:
                work.wait()
            except Exception as e:  # a peer died or the group timed out
                outcome.set_result((False, RuntimeError(f"tpu_gloo {what} failed: {e}")))
                continue
            finally:
                del work
            try:
                result = plan.finish()
            except Exception as e:
                error = RuntimeError(f"tpu_gloo {what}: copying the result to the device failed: {e}")
                outcome.set_result((False, error))
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
