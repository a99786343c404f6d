"""torch.tpu.make_graphed_callables: a module or function whose forward and backward each replay one
captured program (CUDA's torch.cuda.make_graphed_callables, on torch.tpu.TPUGraph)."""

import torch

from .graphs import TPUGraph, graph


def _flat_tensors(args, what):
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"make_graphed_callables: {what} argument {i} is a {type(a).__name__}, only tensors are supported")
    return tuple(args)


def _graph_one(fn, sample_args, num_warmup_iters, allow_unused_input):
    module = fn if isinstance(fn, torch.nn.Module) else None
    params = tuple(p for p in module.parameters() if p.requires_grad) if module is not None else ()
    static_in = _flat_tensors(sample_args, "sample")
    diff_in = tuple(t for t in static_in + params if t.requires_grad)

    def grads_of(outs, grad_outs):
        pairs = [(o, g) for o, g in zip(outs, grad_outs) if o.requires_grad]
        return torch.autograd.grad(
            [o for o, _ in pairs], diff_in, [g for _, g in pairs], only_inputs=True, allow_unused=allow_unused_input
        )

    def as_tuple(out):
        return tuple(out) if isinstance(out, tuple | list) else (out,)

    # Warm-up runs eagerly, so that lazily made state (and the engine's caches) exists before capture.
    for _ in range(num_warmup_iters):
        outs = as_tuple(fn(*static_in))
        if any(o.requires_grad for o in outs):
            grads_of(outs, [torch.ones_like(o) for o in outs])
        del outs
    torch.tpu.synchronize()

    fwd, bwd = TPUGraph(), TPUGraph()
    with graph(fwd):
        static_out = as_tuple(fn(*static_in))
    static_grad_out = tuple(torch.zeros_like(o) if o.requires_grad else None for o in static_out)
    with graph(bwd):
        static_grad_in = grads_of(static_out, static_grad_out)
    n_in = len(static_in)
    in_grad_pos = [i for i, t in enumerate(static_in + params) if t.requires_grad]

    class Graphed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for s, t in zip(static_in, inputs[:n_in]):
                if s.data_ptr() != t.data_ptr():
                    s.copy_(t)
            fwd.replay()
            return tuple(o.detach() for o in static_out)

        @staticmethod
        def backward(ctx, *grads):
            for s, g in zip(static_grad_out, grads):
                if s is not None and g is not None and s.data_ptr() != g.data_ptr():
                    s.copy_(g)
            bwd.replay()
            out = [None] * (n_in + len(params))
            # Copies, not the static buffers: autograd keeps a first gradient as the parameter's .grad, which the
            # next replay would overwrite (accumulating a second backward would then double the second gradient).
            for pos, g in zip(in_grad_pos, static_grad_in):
                out[pos] = g.detach().clone() if g is not None else None
            return tuple(out)

    def run(*args):
        _flat_tensors(args, "call")
        outs = Graphed.apply(*args, *params)
        return outs[0] if len(outs) == 1 else outs

    run._graphs = (fwd, bwd)  # keeps the programs (and the storages they bind) alive
    return run


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graph each callable (a module or function of tensors) with its sample arguments: the returned
    callable copies its arguments into the static inputs and replays the forward program; its backward
    replays the backward program. A module keeps its class; its forward is replaced while training."""
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    out = []
    for fn, args in zip(callables, sample_args):
        run = _graph_one(fn, args, num_warmup_iters, allow_unused_input)
        if isinstance(fn, torch.nn.Module):
            plain = fn.forward

            def forward(*a, _run=run, _plain=plain, _mod=fn):
                return _run(*a) if _mod.training else _plain(*a)

            fn.forward = forward
            out.append(fn)
        else:
            out.append(run)
    return out[0] if single else tuple(out)
