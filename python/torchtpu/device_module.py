"""torch.tpu: the device module registered with torch._register_device_module."""

from .devices import (  # noqa: F401
    _is_in_bad_fork,
    current_device,
    device,
    device_count,
    get_amp_supported_dtype,
    get_device_name,
    get_device_properties,
    is_available,
    is_bf16_supported,
    is_initialized,
    set_device,
    synchronize,
)
from .memory import (  # noqa: F401
    empty_cache,
    live_storages,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_limit,
    memory_reserved,
    memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from .metrics import metrics, reset_metrics  # noqa: F401
from .report import metrics_report  # noqa: F401
from .trace import trace  # noqa: F401
from .modes import await_compiles, get_mode, mode, set_cold_runs, set_mode  # noqa: F401
from .step import mark_step  # noqa: F401
from .graphs import TPUGraph, graph, graph_pool_handle, is_current_stream_capturing  # noqa: F401
from .graphed_callables import make_graphed_callables  # noqa: F401
from .streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream  # noqa: F401
from .rng import (  # noqa: F401
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)


def __getattr__(name):
    """`torch.tpu._initialized`, read as CUDA's: True once the device runtime is up.

    torch.utils.checkpoint saves and restores a device's RNG state for the recomputed forward only
    where `getattr(device_module, "_initialized", False)` holds; without it, dropout under
    checkpointing drew another mask in the recomputation and the gradients were wrong."""
    if name == "_initialized":
        return is_initialized()
    raise AttributeError(f"module 'torch.tpu' has no attribute '{name}'")


def init():
    """Initialize the plugin now (it is initialized on import; this raises its error if it failed)."""
    from . import _runtime

    _runtime.require()


def _legacy_storage_classes():
    """The legacy typed-storage classes (FloatStorage, ...) as this module's attributes.

    `Tensor.storage_type()` looks a tpu tensor's class up in torch.tpu by name and answered None without them.
    tpu has no device-specific storage classes (CUDA's torch.cuda.FloatStorage allocates on CUDA): a tpu
    tensor's storage type is torch's own, as for CPU and every other device but CUDA.
    """
    import torch

    names = set(torch.storage._dtype_to_storage_type_map().values())
    return {n: getattr(torch, n) for n in names if hasattr(torch, n)}


globals().update(_legacy_storage_classes())
