"""Fake convolutions on tpu with the memory format tpu's real convolutions give.

Tracing (Dynamo, AOTAutograd, export) runs ops on fake tensors, whose strides decide what the traced
graph does: a decomposition keeps a layout by cloning into it only where its fake input has that
layout (upsample's ends with `contiguous(memory_format=suggest_memory_format(input))`). PyTorch's fake
convolution asks the backend selector for a result's memory format, and a PrivateUse1 device gets
ConvBackend.Overrideable, whose answer is always contiguous. A real tpu convolution, forward and
backward, gives the format CPU's gives (`csrc/layout.cpp`, convolution_layouts): channels_last when the
input or the weight suggests it (channels_last_3d likewise for 5-D non-double inputs). So a compiled
channels_last conv and upsample returned a contiguous result where eager returns channels_last. The
fake convolutions of tpu tensors here take tpu's real format.
"""

import torch

aten = torch.ops.aten
_OPS = (aten.convolution.default, aten._convolution.default, aten._convolution.deprecated,
        aten.convolution_backward.default)


def tpu_conv_format(input, weight):
    """The memory format of a tpu convolution's result (and its input and weight gradients), or None
    for contiguous."""
    from torch._prims_common import suggest_memory_format

    n = input.dim()
    fi, fw = suggest_memory_format(input), suggest_memory_format(weight)
    if n == 4 and torch.channels_last in (fi, fw):
        return torch.channels_last
    if n == 5 and input.dtype != torch.float64 and torch.channels_last_3d in (fi, fw):
        return torch.channels_last_3d
    return None


def _wrap(original, normalize):
    def conv(fake_mode, func, *args, **kwargs):
        out = original(fake_mode, func, *args, **kwargs)
        _, named = normalize(func, args=args, kwargs=kwargs, normalize_to_only_use_kwargs=True)
        input, weight = named["input"], named["weight"]
        if getattr(input, "fake_device", None) is None or input.fake_device.type != "tpu":
            return out
        try:
            fmt = tpu_conv_format(input, weight)
        except Exception:  # noqa: BLE001 - unhinted symbolic sizes: keep PyTorch's answer
            return out
        if fmt is None:
            return out
        with fake_mode:
            if isinstance(out, tuple):  # convolution_backward: the input and weight gradients
                return tuple(t.contiguous(memory_format=fmt) if t is not None and i < 2 else t
                             for i, t in enumerate(out))
            return out.contiguous(memory_format=fmt)

    conv._torchtpu = True
    return conv


def install(fake_impls):
    """Wrap fake_impls' convolution implementations (idempotent; a torch without them is left alone)."""
    table = getattr(fake_impls, "op_implementations_dict", None)
    normalize = getattr(fake_impls, "_normalize_function_or_error", None)
    if table is None or normalize is None:
        return
    for op in _OPS:
        impl = table.get(op)
        if impl is not None and not getattr(impl, "_torchtpu", False):
            table[op] = _wrap(impl, normalize)
