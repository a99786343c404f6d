"""ctypes view of libtorchtpu.so: the C ABI functions (bridge/torchtpu.h) Python calls."""

import ctypes
import os

_ERRLEN = 4096
_LIB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libtorchtpu.so")

_c_char_p = ctypes.c_char_p
_i32, _i64 = ctypes.c_int32, ctypes.c_int64

# name: (restype, argtypes)
_SIGNATURES = {
    "ttpu_init": (_i32, [_c_char_p, _i32, _c_char_p, _i64]),
    "ttpu_device_count": (_i32, []),
    "ttpu_synchronize": (_i32, [_c_char_p, _i64]),
    "ttpu_stop_compiles": (None, []),
    "ttpu_await_compiles": (_i32, [_c_char_p, _i64]),
    "ttpu_set_cold_runs": (_i32, [_i32, ctypes.POINTER(_i32), _c_char_p, _i64]),
    "ttpu_set_mode": (_i32, [_c_char_p, _c_char_p, _i64]),
    "ttpu_get_mode": (None, [_c_char_p, _i64]),
    "ttpu_metrics_json": (_i64, [_c_char_p, _i64]),
    "ttpu_device_info": (_i32, [_i32, _c_char_p, _i64, _c_char_p, _i64]),
    "ttpu_reset_metrics": (None, []),
    "ttpu_trace_start": (_i32, [_i64, _c_char_p, _i64]),
    "ttpu_trace_stop": (_i64, [_c_char_p, _i64]),
    "ttpu_live_storages": (_i64, []),
    "ttpu_memory_allocated": (_i64, []),
    "ttpu_max_memory_allocated": (_i64, []),
    "ttpu_reset_peak_memory": (None, []),
    "ttpu_memory_limit": (_i64, []),
    "ttpu_empty_cache": (None, []),
    "ttpu_mark_step": (_i32, [_c_char_p, _i64]),
    "ttpu_fallback_is_error": (_i32, []),
    "ttpu_has_rule": (_i32, [_c_char_p]),
    "ttpu_all_reduce_devices": (_i32, [ctypes.POINTER(ctypes.c_uint64), _i32, _c_char_p, _c_char_p, _i64]),
    "ttpu_program_free": (None, [_i64]),
    "ttpu_program_step": (None, [_i64]),
    "ttpu_program_seeds": (_i32, [_i64]),
}

_lib = None


def lib_path():
    """The path of the shared library the package loads."""
    return _LIB_PATH


def load():
    """dlopen libtorchtpu.so with RTLD_GLOBAL (its static registrations run then) and declare the ABI."""
    global _lib
    if _lib is not None:
        return _lib
    if not os.path.exists(_LIB_PATH):
        raise ImportError(f"torchtpu: {_LIB_PATH} is missing; build it with `make build`")
    lib = ctypes.CDLL(_LIB_PATH, mode=ctypes.RTLD_GLOBAL)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


def lib():
    """The loaded library (loading it on first use)."""
    return load()


def errbuf():
    """A fresh message buffer for a fallible call."""
    return ctypes.create_string_buffer(_ERRLEN)


def check(status, buf, what):
    """Raise RuntimeError with the engine's message when status is not TTPU_OK (0)."""
    if status != 0:
        msg = buf.value.decode("utf-8", "replace") or f"{what} failed with status {status}"
        raise RuntimeError(msg)


def call(name, *args):
    """Call a fallible ABI function (err, errlen appended) and raise on failure."""
    buf = errbuf()
    check(getattr(lib(), name)(*args, buf, _ERRLEN), buf, name)


def read_string(fn, size=256):
    """Read a string an ABI function writes into (buf, len)."""
    buf = ctypes.create_string_buffer(size)
    fn(buf, size)
    return buf.value.decode("utf-8", "replace")
