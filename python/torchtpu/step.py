"""Step boundaries: every optimizer step over tpu parameters marks one, so that in fused mode a
training loop launches one graph per step rather than one at the first read of a value."""

import weakref

import torch

from . import _lib, _runtime, profiler

# Optimizers whose parameters are all off tpu, keyed by optimizer, with the group sizes checked:
# a CPU-only training loop pays one scan per optimizer (again only when its groups change).
_not_tpu = weakref.WeakKeyDictionary()
_handle = None


def mark_step():
    """Mark a step boundary: in fused mode the pending graph is launched (without waiting for it)."""
    _runtime.require()
    with profiler.record("torchtpu::mark_step"):
        _lib.call("ttpu_mark_step")


def _on_tpu(optimizer):
    groups = optimizer.param_groups
    shape = tuple(len(g["params"]) for g in groups)
    try:
        if _not_tpu.get(optimizer) == shape:
            return False
    except TypeError:  # not weak-referenceable
        pass
    for g in groups:
        for p in g["params"]:
            if p.device.type == "tpu":
                return True
    try:
        _not_tpu[optimizer] = shape
    except TypeError:
        pass
    return False


def _step_post_hook(optimizer, args, kwargs):
    if torch.compiler.is_compiling():
        # Dynamo calls the step end at run time rather than tracing it: in fused mode the compiled
        # graphs of the step were recorded into the pending graph, which the mark launches.
        if _compiled_step_end is not None:
            _compiled_step_end(optimizer)
        return
    if not _runtime.initialized() or _runtime.in_bad_fork():
        return
    if _on_tpu(optimizer):
        mark_step()


def _step_end(optimizer):
    """The step boundary of an optimizer step inside a compiled function."""
    if _runtime.initialized() and not _runtime.in_bad_fork() and _on_tpu(optimizer):
        mark_step()


# _step_end behind torch._dynamo.disable, set when Dynamo is imported (use_dynamo): Dynamo then
# breaks the graph at the call and runs it eagerly each time.
_compiled_step_end = None


def use_dynamo(dynamo):
    """Make the step hook mark steps inside compiled functions (called once Dynamo is imported)."""
    global _compiled_step_end
    if _compiled_step_end is None:
        _compiled_step_end = dynamo.disable(_step_end)


def install():
    """Register the global optimizer step post-hook (idempotent)."""
    global _handle
    if _handle is None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        _handle = register_optimizer_step_post_hook(_step_post_hook)
