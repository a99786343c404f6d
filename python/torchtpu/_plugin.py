"""Which PJRT plugin to load: TORCHTPU_PLUGIN = "cpu" (default), "tpu", or a path."""

import glob
import importlib.util
import os

ENV = "TORCHTPU_PLUGIN"


class PluginError(RuntimeError):
    """The plugin could not be found or cannot work on this host."""


def _package_dir(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return os.path.dirname(spec.origin) if spec.origin else None


def _cpu_plugin():
    d = _package_dir("xla_plugins.xla_cpu_pjrt")
    if d is None:
        raise PluginError(
            f"torchtpu: {ENV}=cpu needs the XLA CPU PJRT plugin (the xla-cpu-pjrt package), "
            "which is not installed"
        )
    return os.path.join(d, "xla_cpu_pjrt.so")


def host_has_tpu():
    """Whether this host exposes TPU chips (/dev/accel* or /dev/vfio)."""
    return bool(glob.glob("/dev/accel*")) or os.path.exists("/dev/vfio")


def _tpu_plugin():
    d = _package_dir("libtpu")
    if d is None:
        raise PluginError(f"torchtpu: {ENV}=tpu needs the libtpu package, which is not installed")
    path = os.path.join(d, "libtpu.so")
    if not os.path.exists(path):
        raise PluginError(f"torchtpu: {ENV}=tpu: the libtpu package has no libtpu.so ({path})")
    if not host_has_tpu():
        raise PluginError(
            f"torchtpu: {ENV}=tpu but this host has no TPU (no /dev/accel* and no /dev/vfio); "
            f"unset {ENV} to use the CPU plugin"
        )
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    return path


def choice():
    """The raw TORCHTPU_PLUGIN setting ("cpu" when unset)."""
    return os.environ.get(ENV, "").strip() or "cpu"


def resolve():
    """The plugin path for the current setting; raises PluginError when it cannot be used."""
    value = choice()
    if value == "cpu":
        return _cpu_plugin()
    if value == "tpu":
        return _tpu_plugin()
    path = os.path.abspath(os.path.expanduser(value))
    if not os.path.exists(path):
        raise PluginError(f"torchtpu: {ENV}={value!r}: no such plugin file {path}")
    return path


def cpu_device_count():
    """TORCHTPU_CPU_DEVICE_COUNT (default 1): devices the CPU plugin exposes."""
    raw = os.environ.get("TORCHTPU_CPU_DEVICE_COUNT", "1")
    try:
        n = int(raw)
    except ValueError:
        raise PluginError(f"torchtpu: TORCHTPU_CPU_DEVICE_COUNT={raw!r} is not an integer") from None
    if n < 1:
        raise PluginError(f"torchtpu: TORCHTPU_CPU_DEVICE_COUNT={raw!r} must be at least 1")
    return n


def limit_cpu_threads(path):
    """Size the XLA CPU plugin's thread pools as PyTorch's own CPU threads are sized.

    The plugin sizes its pools to the cores it may run on, unless PJRT_NPROC says otherwise. When
    PyTorch's intra-op threads are fewer when the plugin starts (OMP_NUM_THREADS, which torchrun sets
    to 1 for several processes on one host), the plugin gets as many, so that rank processes sharing
    the cores do not each run a pool over all of them. A PJRT_NPROC already set is left alone (an
    empty one counts as unset), and so is every plugin but the CPU one."""
    if os.environ.get("PJRT_NPROC", "").strip() or os.path.basename(path) != "xla_cpu_pjrt.so":
        return
    import torch

    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    threads = torch.get_num_threads()
    if 0 < threads < cores:
        os.environ["PJRT_NPROC"] = str(threads)
