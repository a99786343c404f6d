"""Printing a tpu tensor formats a host copy (one transfer instead of a dozen device ops)."""

import functools

import torch
import torch._tensor_str as _tensor_str_module

_installed = False


def install():
    """Wrap torch._tensor_str._tensor_str so tpu tensors are formatted from a CPU copy."""
    global _installed
    if _installed:
        return
    original = _tensor_str_module._tensor_str

    @functools.wraps(original)
    def _tensor_str(self, indent):
        if self.device.type == "tpu":
            with torch.no_grad():
                self = self.to("cpu")
        return original(self, indent)

    _tensor_str_module._tensor_str = _tensor_str
    _installed = True
