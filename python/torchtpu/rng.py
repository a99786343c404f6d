"""Random number generation: the default generator of each tpu device."""

import torch

from . import devices

_MASK = (1 << 64) - 1


def _signed(seed):
    seed = int(seed) & _MASK
    return seed - (1 << 64) if seed >= (1 << 63) else seed


def _unsigned(value):
    return int(value) & _MASK


def manual_seed(seed):
    """Seed the current device's generator."""
    torch.ops.torchtpu.manual_seed(devices.current_device(), _signed(seed))


def manual_seed_all(seed):
    """Seed every device's generator."""
    torch.ops.torchtpu.manual_seed(-1, _signed(seed))


def seed():
    """Seed the current device's generator non-deterministically."""
    torch.ops.torchtpu.seed(devices.current_device())


def seed_all():
    s = _unsigned(torch.ops.torchtpu.seed(0))
    manual_seed_all(s)


def initial_seed():
    return _unsigned(torch.ops.torchtpu.initial_seed(devices.current_device()))


def get_rng_state(device="tpu"):
    """The generator state of a device as a CPU uint8 tensor."""
    return torch.ops.torchtpu.get_rng_state(devices._index(device))


def set_rng_state(new_state, device="tpu"):
    torch.ops.torchtpu.set_rng_state(devices._index(device), new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(max(1, devices.device_count()))]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
