"""Device memory figures: bytes held by live storages, their peak, and the device limit.

The engine owns every storage and keeps no cache, so reserved memory is allocated memory. The same
figures reach torch.accelerator.memory_allocated() and friends through the shim's device allocator.
"""

import collections

from . import _lib, _runtime


def _usable():
    return _runtime.initialized() and not _runtime.in_bad_fork()


def memory_allocated(device=None):
    """Bytes held by live tpu storages."""
    if not _usable():
        return 0
    return int(_lib.lib().ttpu_memory_allocated())


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the process started or the last reset_peak_memory_stats()."""
    if not _usable():
        return 0
    return max(int(_lib.lib().ttpu_max_memory_allocated()), memory_allocated(device))


def reset_peak_memory_stats(device=None):
    """Start the peak of memory_allocated() afresh from its current value."""
    if _usable():
        _lib.lib().ttpu_reset_peak_memory()


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def memory_reserved(device=None):
    """Bytes reserved on the device: the same as memory_allocated() (nothing is cached)."""
    return memory_allocated(device)


def max_memory_reserved(device=None):
    return max_memory_allocated(device)


def empty_cache():
    """Returns to the system the freed host blocks the CPU plugin keeps for reuse (its
    buffers and temporaries; TORCHTPU_HOST_CACHE). Storages themselves are never cached."""
    if _usable():
        _lib.lib().ttpu_empty_cache()


def memory_limit(device=None):
    """The device memory limit in bytes (TORCHTPU_MEMORY_LIMIT)."""
    if not _usable():
        return 0
    return int(_lib.lib().ttpu_memory_limit())


def mem_get_info(device=None):
    """(free, total) bytes under the device memory limit."""
    total = memory_limit(device)
    return max(0, total - memory_allocated(device)), total


def live_storages():
    """Number of live tpu storages."""
    if not _usable():
        return 0
    return int(_lib.lib().ttpu_live_storages())


def memory_stats(device=None):
    """A flat dict in the layout of torch.cuda.memory_stats() (the figures the engine keeps)."""
    cur, peak, count = memory_allocated(device), max_memory_allocated(device), live_storages()
    stats = collections.OrderedDict()
    for name, (c, p) in (
        ("active", (count, count)),
        ("active_bytes", (cur, peak)),
        ("allocated_bytes", (cur, peak)),
        ("allocation", (count, count)),
        ("reserved_bytes", (cur, peak)),
        ("segment", (count, count)),
    ):
        for pool in ("all", "large_pool"):
            stats[f"{name}.{pool}.current"] = c
            stats[f"{name}.{pool}.peak"] = p
    stats["live_storages"] = count
    stats["memory_limit"] = memory_limit(device)
    return collections.OrderedDict(sorted(stats.items()))
