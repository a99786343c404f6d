"""torch.tpu: the device module registered with torch._register_device_module."""

from .devices import (  # noqa: F401
    _is_in_bad_fork,
    current_device,
    device,
    device_count,
    get_amp_supported_dtype,
    is_available,
    is_bf16_supported,
    is_initialized,
    live_storages,
    memory_allocated,
    set_device,
    synchronize,
)
from .metrics import metrics, reset_metrics  # noqa: F401
from .modes import get_mode, mode, set_mode  # noqa: F401
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


def init():
    """Initialize the plugin now (it is initialized on import; this raises its error if it failed)."""
    from . import _runtime

    _runtime.require()
