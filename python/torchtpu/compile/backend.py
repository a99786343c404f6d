"""The "tpu" Dynamo backend: AOTAutograd splits each Dynamo graph into functional ATen graphs
(forward and backward, or one inference graph), and each becomes a CompiledGraph."""

import itertools
import warnings

import torch
from torch._dynamo.backends.common import aot_autograd

from .graph import CompiledGraph

_pieces = {}


def _frame_and_piece():
    """The Dynamo frame being compiled ("0/1": frame 0, its second compile) and the index of this
    graph within that compile (graph breaks give several)."""
    cid = torch._guards.CompileContext.current_compile_id()
    if cid is None:
        return "?", next(_pieces.setdefault("?", itertools.count()))
    frame = str(cid.frame_id)
    key = str(cid)
    return frame, next(_pieces.setdefault(key, itertools.count()))


_warned_modes = set()


def _compiler(frame, piece, role, step):
    def compile_graph(gm, example_inputs):
        return CompiledGraph(gm, (frame, piece, role), step=step)

    return compile_graph


def tpu_backend(gm, example_inputs, mode=None, **kwargs):
    """torch.compile(..., backend="tpu"). mode="reduce-overhead" makes a compiled step one program in
    strict mode too: its replays are recorded as in fused mode until the step ends (in fused mode every
    compiled step is so). Inductor's other modes mean nothing here and are ignored with a warning."""
    if mode not in (None, "default", "reduce-overhead") and mode not in _warned_modes:
        _warned_modes.add(mode)
        warnings.warn(f'torch.compile(backend="tpu") ignores mode={mode!r} (it knows "default" and '
                      '"reduce-overhead")', stacklevel=2)
    step = mode == "reduce-overhead"
    frame, piece = _frame_and_piece()
    backend = aot_autograd(
        fw_compiler=_compiler(frame, piece, "forward", step),
        bw_compiler=_compiler(frame, piece, "backward", step),
        inference_compiler=_compiler(frame, piece, "inference", step),
        keep_inference_input_mutations=True,
    )
    return backend(gm, example_inputs, **kwargs)


def _has_tpu_tensor(gm, example_inputs):
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and x.device.type == "tpu":
            return True
    for node in gm.graph.nodes:
        v = node.meta.get("example_value")
        if isinstance(v, torch.Tensor) and v.device.type == "tpu":
            return True
    return False
