"""Runtime state: plugin initialization, its error, and the fork check for Python-side calls."""

import atexit

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
    plugin thread is running a program while static destructors run."""
    if _initialized and not in_bad_fork():
        buf = _lib.errbuf()
        _lib.lib().ttpu_synchronize(buf, len(buf))


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


def in_bad_fork():
    return bool(torch.ops.torchtpu.in_bad_fork())


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
