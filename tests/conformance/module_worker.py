"""The module sweep's cases: each ModuleInfo sample of module_db, trained one step on CPU and on tpu.

A case id is "<module>/<sample index>/<mode>" (e.g. "nn.Conv2d/3/strict"), with "/channels_last" added for the
same sample with its 4-D inputs in channels_last (5-D: channels_last_3d). A case builds the module on CPU (in
training mode, float32), copies it to tpu, runs forward on both, then backward of a fixed random projection of
every differentiable output, and passes when the outputs (values, dtypes, and the strides of the dimensions
longer than one), the buffers after the forward (running statistics), the parameter gradients and the input
gradients all match CPU's. A module whose forward is random (dropout) compares dtypes, shapes and strides only.
"""

import argparse
import copy
import warnings

import torch

from . import cases, dtype_worker, harness

MODES = ("strict", "fused", "debug")
# Cross-device tolerance for float32 modules: reductions over many elements (convolutions, norms,
# attention) may sum in another order, and backward compounds it (attention's weight gradients near
# zero differ by a few 1e-5 from cancellation).
RTOL, ATOL = 1e-4, 5e-5

_state = {}


def module_infos():
    from torch.testing._internal.common_modules import module_db
    return {m.name: m for m in module_db}


def module_inputs(info):
    """The ModuleInfo's training samples, float32, the same every call."""
    torch.manual_seed(0)
    return info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=True, training=True)


def constructor_args(sample):
    """The sample's constructor arguments with floating tensors in float32, the sweep's dtype (some
    samples build them as float64 whatever dtype is asked for: FractionalMaxPool's _random_samples)."""
    cast = lambda t: t.to(torch.float32) if t.is_floating_point() else t  # noqa: E731
    ci = sample.constructor_input
    return harness.tree_map(cast, tuple(ci.args)), harness.tree_map(cast, dict(ci.kwargs))


def layout_of(sample):
    """"channels_last" or "channels_last_3d" when a forward input is 4-D or 5-D floating, else None."""
    if sample.forward_input is None:
        return None
    for t in harness.tree_tensors((sample.forward_input.args, sample.forward_input.kwargs)):
        if t.is_floating_point() and t.dim() in (4, 5):
            return "channels_last" if t.dim() == 4 else "channels_last_3d"
    return None


def case_ids(infos, modes=MODES, names=None):
    out = []
    for name, info in infos.items():
        if names is not None and name not in names:
            continue
        for i, s in enumerate(module_inputs(info)):
            if s.forward_input is None:
                continue
            lay = layout_of(s)
            for m in modes:
                out.append(f"{name}/{i}/{m}")
                if lay:
                    out.append(f"{name}/{i}/{m}/{lay}")
    return out


def _leaf(t, device, fmt):
    c = t.detach().to(device)
    if fmt is not None and c.is_floating_point() and c.dim() == (4 if fmt == torch.channels_last else 5):
        c = c.clone(memory_format=fmt)
    return c.requires_grad_(t.requires_grad) if (c.is_floating_point() or c.is_complex()) else c


def forward_backward(module, inputs):
    """Runs module on inputs (args, kwargs); returns (outputs, buffers, grads of params and inputs)."""
    args, kwargs = inputs
    out = module(*args, **kwargs)
    outs = [t for t in harness.tree_tensors(out) if t.requires_grad and t.is_floating_point()]
    leaves = [p for p in module.parameters() if p.requires_grad]
    leaves += [t for t in harness.tree_tensors(inputs) if t.requires_grad]
    grads = []
    if outs and leaves:
        loss = None
        for k, o in enumerate(outs):
            g = torch.Generator().manual_seed(1000 + k)
            term = (o * torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.dtype).to(o.device)).sum()
            loss = term if loss is None else loss + term
        grads = list(torch.autograd.grad(loss, leaves, allow_unused=True))
    return out, [b.detach() for b in module.buffers()], grads


def compare(what, got, want):
    if isinstance(want, list) and isinstance(got, list):
        gone = [k for k, (g, w) in enumerate(zip(got, want)) if (g is None) != (w is None)]
        if len(got) != len(want) or gone:
            return f"{what}: {len(got)} values, CPU {len(want)}; defined on one device only at {gone}"
        got, want = [g for g in got if g is not None], [w for w in want if w is not None]
    try:
        torch.testing.assert_close(harness.to_cpu(got), harness.to_cpu(want), rtol=RTOL, atol=ATOL, equal_nan=True)
        return None
    except Exception as e:  # noqa: BLE001
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
        return what + ": " + " ".join(lines[:5])[:500]


def is_random(info, sample, fmt):
    """Whether two CPU forwards of the module under different seeds differ (dropout, random pooling)."""
    outs = []
    for seed in (1, 2):
        torch.manual_seed(7)
        cargs, ckwargs = constructor_args(sample)
        m = info.module_cls(*cargs, **ckwargs)
        torch.manual_seed(seed)
        with torch.no_grad():
            a, k = harness.tree_map(lambda t: _leaf(t, "cpu", fmt), (sample.forward_input.args,
                                                                   sample.forward_input.kwargs))
            outs.append(harness.to_cpu(m(*a, **k)))
    return compare("", outs[0], outs[1]) is not None


def run_case(cid):
    name, idx, mode, *lay = cid.split("/")
    info = _state["infos"][name]
    if name not in _state["inputs"]:
        _state["inputs"] = {name: module_inputs(info)}
    sample = _state["inputs"][name][int(idx)]
    fmt = getattr(torch, lay[0]) if lay else None
    fi = sample.forward_input
    cargs, ckwargs = constructor_args(sample)
    torch.manual_seed(3)
    module = info.module_cls(*cargs, **ckwargs)
    module.train(True)
    cpu_in = harness.tree_map(lambda t: _leaf(t, "cpu", fmt), (fi.args, fi.kwargs))
    if info.is_lazy:  # materialize the parameters on CPU, so that both devices start from the same ones
        with torch.no_grad():
            module(*harness.tree_map(lambda t: t.detach(), cpu_in[0]), **cpu_in[1])
    tpu_module = copy.deepcopy(module)
    try:
        want_out, want_buf, want_grads = forward_backward(module, cpu_in)
        random = is_random(info, sample, fmt)
    except Exception as e:  # noqa: BLE001 - CPU rejects the sample: nothing to compare
        return "skip", "cpu: " + harness.first_line(e)
    torch.tpu.set_mode(mode)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tpu_module.to("tpu")
            tpu_in = harness.tree_map(lambda t: _leaf(t, "tpu", fmt), (fi.args, fi.kwargs))
            got_out, got_buf, got_grads = forward_backward(tpu_module, tpu_in)
            torch.tpu.synchronize()
    except Exception as e:  # noqa: BLE001
        return "fail", harness.first_line(e)
    finally:
        torch.tpu.set_mode("strict")
    if random:
        if dtype_worker.meta(harness.to_cpu(got_out)) != dtype_worker.meta(harness.to_cpu(want_out)):
            return "fail", "output dtypes/shapes differ from CPU's"
    else:
        for what, g, w in (("output", got_out, want_out), ("buffers", got_buf, want_buf),
                           ("gradients", got_grads, want_grads)):
            d = compare(what, g, w)
            if d:
                return "fail", d
    d = dtype_worker.check_strides(got_out, want_out)
    if d:
        return "fail", "output " + d
    return "pass", "random: metadata only" if random else ""


def setup(rest):
    argparse.ArgumentParser().parse_args(rest)
    warnings.simplefilter("ignore")
    import torchtpu  # noqa: F401
    _state["infos"] = module_infos()
    _state["inputs"] = {}


if __name__ == "__main__":
    cases.worker_main(run_case, setup)
