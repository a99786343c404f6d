"""Refuses to load next to another PrivateUse1 backend (Google's torch_tpu also names PrivateUse1 `tpu`)."""

import sys

import torch

# Packages known to claim PrivateUse1 as `tpu`.
_KNOWN_TPU_PACKAGES = ("torch_tpu",)


class BackendConflictError(ImportError):
    """Another PrivateUse1 backend is already loaded in this process."""


def _owner(name):
    """The top-level package that registered torch.<name>, if any."""
    mod = getattr(torch, name, None)
    owner = getattr(mod, "__name__", None) if mod is not None else None
    return owner.split(".")[0] if owner else None


def check():
    """Raise BackendConflictError when PrivateUse1 or torch.tpu already belongs to another package.
    Called before libtorchtpu.so registers any kernel for PrivateUse1."""
    name = torch._C._get_privateuse1_backend_name()
    known = [p for p in _KNOWN_TPU_PACKAGES if p in sys.modules]
    tpu_owner = _owner("tpu")
    other = None
    if name != "privateuseone":
        other = _owner(name) or (known[0] if known else None) or "an unknown package"
        what = f"PrivateUse1 is already renamed to {name!r} by {other}"
    elif tpu_owner not in (None, "torchtpu"):
        other = tpu_owner
        what = f"torch.tpu is already registered by {other}"
    elif known:
        other = known[0]
        what = f"{other} is already imported"
    if other is None:
        return
    raise BackendConflictError(
        f"torchtpu: another PrivateUse1 backend is loaded in this process ({what}). "
        f"torchtpu and {other} both provide a device through PyTorch's single PrivateUse1 key and cannot "
        f"run in one process. Use one of them: uninstall the other, or set TORCH_DEVICE_BACKEND_AUTOLOAD=0 "
        f"and import only the one you want."
    )
