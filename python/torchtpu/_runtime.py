"""Runtime state: plugin initialization, its error, and the fork check for Python-side calls."""

import atexit
import os

import torch

from . import _lib, _plugin

_initialized = False
_init_error = None
_plugin_path = None


def init():
    """Initialize the PJRT plugin once. A failure is remembered, not raised: `import torch` keeps
    working, is_available() is False and every device use raises the error."""
    global _initialized, _init_error, _plugin_path
    if _initialized or _init_error is not None:
        return
    try:
        path = _plugin.resolve()
        count = _plugin.cpu_device_count()
    except _plugin.PluginError as e:
        _fail(str(e))
        return
    _plugin_path = path
    _plugin.limit_cpu_threads(path)
    buf = _lib.errbuf()
    status = _lib.lib().ttpu_init(path.encode(), count, buf, len(buf))
    if status != 0:
        reason = buf.value.decode("utf-8", "replace")
        _fail(f"torchtpu: cannot initialize the PJRT plugin {path} ({_plugin.ENV}={_plugin.choice()!r}): {reason}")
        return
    _initialized = True
    atexit.register(_drain)


def _drain():
    """Wait for device work still in flight before the interpreter tears down, so no
    plugin thread is running a program or compiling one while static destructors run, and
    for the autograd engine's tpu threads to let go of the last backward pass."""
    if _initialized and not in_bad_fork():
        _lib.lib().ttpu_stop_compiles()
        buf = _lib.errbuf()
        _lib.lib().ttpu_synchronize(buf, len(buf))
        try:
            _autograd_barrier()
        except Exception:  # at exit nothing is left to report to
            pass


def _autograd_threads():
    """Whether the autograd engine started its device threads (named pt_autograd_<device>)."""
    import glob

    for path in glob.glob("/proc/self/task/*/comm"):
        try:
            with open(path) as f:
                if f.read().startswith("pt_autograd_"):
                    return True
        except OSError:
            pass
    return False


# The tensors of the exit barrier, kept for the rest of the process: nothing the barrier's pass
# holds may be freed by the device thread, where dropping a tensor's Python object takes the GIL.
_barrier_keep = []


def _autograd_barrier():
    """Runs an empty backward pass on each tpu device's autograd thread.

    A device thread drops its reference to a finished backward pass only after waking the
    caller, and that pass holds the Python context PyTorch stashes for it: when the last
    reference goes while the interpreter finalizes, the thread's decref takes the GIL, is told
    to exit, and unwinding a destructor terminates the process ("terminate called without an
    active exception"). A thread serves its queue in order, so once an empty pass returned
    from each device, the earlier ones are gone; the caller waits without the GIL, so their
    decrefs run meanwhile. The empty pass stashes no context, captures nothing, makes no
    device op (an empty tensor and a view) and keeps its tensors alive, so dropping it takes
    no GIL.
    """
    if not _autograd_threads():
        return
    engine = torch.autograd.Variable._execution_engine
    # The exiting thread runs its own backward passes itself (torchtpu._backward_on_caller); the
    # barrier's passes must reach the device threads, which other threads' passes may have used.
    with torch.autograd.set_multithreading_enabled(True):
        for i in range(int(_lib.lib().ttpu_device_count())):
            x = torch.empty(1, device=f"tpu:{i}", requires_grad=True)
            y, g = x.view(1), torch.empty(1, device=f"tpu:{i}")
            _barrier_keep.extend((x, y, g))
            engine.run_backward((y,), (g,), False, False, (), False, True)


def _fail(message):
    global _init_error
    _init_error = message
    torch.ops.torchtpu.set_init_error(message)


def initialized():
    return _initialized


def init_error():
    """Why initialization failed, or None."""
    return _init_error


def plugin_path():
    return _plugin_path


# The process that loaded torchtpu. The shim's own flag (csrc/fork.cpp, set by pthread_atfork in
# every forked child) guards each path into Go; a forked child always has another pid, so comparing
# pids gives Python callers the same answer without a dispatcher call (a few µs) on every step.
_pid = os.getpid()


def in_bad_fork():
    return os.getpid() != _pid


def require():
    """Raise unless the device can be used from this process (call before any Go-side ctypes call)."""
    if in_bad_fork():
        raise RuntimeError(
            "torchtpu: the tpu device cannot be used in a forked child process "
            "(DataLoader workers must not touch tpu tensors)"
        )
    if _init_error is not None:
        raise RuntimeError(_init_error)
    if not _initialized:
        init()
        if _init_error is not None:
            raise RuntimeError(_init_error)
