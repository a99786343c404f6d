"""Cases of the out= sweep (test_sweep_out.py): for the first samples of each OpInfo with supports_out,
the op is called with an `out` that is

- `strided`: non-contiguous (every other element of a wider tensor) and of the right size and dtype;
- `resize`: non-empty and of the wrong size, which CPU resizes with a UserWarning ("An output with one or
  more elements was resized");
- `dtype_int` / `dtype_wide`: of another dtype (int64, or bool for integer results; and a wider dtype),
  which CPU either rejects or fills with its result cast;

once on CPU and once on tpu. tpu must do what CPU does: raise the same exception class, or return the
`out` tensors holding CPU's values with CPU's shape, strides, storage offset and dtype, warn about a resize
as CPU does, and leave the elements of a strided out's base outside the view untouched. Case ids are
`OP/KIND/SAMPLE`. A sample whose functional call or contiguous out= call CPU rejects is excluded.
"""

import warnings

import torch

from . import op_sweep as sweep
from .harness import NONDETERMINISTIC, Sample, clone_leaf, compare, first_line, op_tolerance, to_tpu_leaf

KINDS = ("strided", "resize", "dtype_int", "dtype_wide")
RESIZE_WARNING = "An output with one or more elements was resized"
PREFERRED = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.complex64, torch.bfloat16]
WIDER = {torch.float32: torch.float64, torch.float16: torch.float32, torch.bfloat16: torch.float32,
         torch.float64: torch.complex128, torch.complex64: torch.complex128, torch.complex128: torch.complex128,
         torch.int64: torch.float64, torch.int32: torch.int64, torch.int16: torch.int64, torch.int8: torch.int64,
         torch.uint8: torch.int64, torch.bool: torch.int64}


def wanted(op):
    return bool(op.supports_out)


def sample_dtype(op):
    supported = op.supported_dtypes("cpu")
    return next((d for d in PREFERRED if d in supported), None)


def _outs(result):
    """The result's tensors as a tuple, and whether the op returns a tuple; None when it is neither."""
    if isinstance(result, torch.Tensor):
        return (result,), False
    if isinstance(result, (tuple, list)) and result and all(isinstance(t, torch.Tensor) for t in result):
        return tuple(result), True
    return None, False


def _fill(shape, dtype, device):
    return torch.full(shape, 3, dtype=dtype, device=device) if dtype != torch.bool else torch.ones(
        shape, dtype=dtype, device=device)


def make_out(kind, want, device):
    """The out tensors of a case, built alike on any device: (outs, bases) where bases are the tensors
    whose untouched elements are checked too (a strided out's base)."""
    outs, bases = [], []
    for k, t in enumerate(want):
        shape, dtype = tuple(t.shape), t.dtype
        if kind == "strided":
            if t.dim() == 0 or t.numel() < 2:
                outs.append(_fill(shape, dtype, device))
                continue
            base = _fill(shape[:-1] + (2 * shape[-1],), dtype, device)
            outs.append(base[..., ::2])
            bases.append(base)
        elif kind == "resize":
            outs.append(_fill((2,) if shape == (1,) else (1,), dtype, device))
        else:
            if k == 0:
                if kind == "dtype_int":
                    dtype = torch.bool if not (dtype.is_floating_point or dtype.is_complex) else torch.int64
                else:
                    dtype = WIDER.get(dtype, torch.float64)
            outs.append(_fill(shape, dtype, device))
    return outs, bases


def _call(op, tree, outs, is_tuple, sync):
    inp, args, kwargs = tree
    out = tuple(outs) if is_tuple else outs[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ret = op(inp, *args, out=out, **kwargs)
            if sync:
                torch.tpu.synchronize()
            err = None
        except Exception as e:  # noqa: BLE001
            ret, err = None, e
    resized = any(RESIZE_WARNING in str(w.message) and issubclass(w.category, UserWarning) for w in caught)
    ret_is_out = ret is not None and (ret is out or (is_tuple and isinstance(ret, (tuple, list)) and len(ret) == len(outs)
                                                     and all(a is b for a, b in zip(ret, outs))))
    return err, resized, ret_is_out


def _layout(t):
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)


def on_tpu(sample, op):
    """The sample's arguments on tpu; a factory's device argument names tpu too."""
    inp, args, kwargs = sample.fresh(to_tpu_leaf, op.name)
    if "device" in kwargs:
        kwargs = dict(kwargs, device="tpu")
    return inp, args, kwargs


def run_case(op, kind, sample, want, is_tuple, rtol, atol, nondet):
    cpu_outs, cpu_bases = make_out(kind, want, "cpu")
    cpu_err, cpu_warn, cpu_ret = _call(op, sample.fresh(clone_leaf), cpu_outs, is_tuple, False)
    tpu_outs, tpu_bases = make_out(kind, want, "tpu")
    tpu_err, tpu_warn, tpu_ret = _call(op, on_tpu(sample, op), tpu_outs, is_tuple, True)
    if cpu_err is not None:
        if tpu_err is None:
            return "fail", f"did not raise (CPU raises {first_line(cpu_err)})"
        if type(tpu_err) is not type(cpu_err) and not isinstance(tpu_err, type(cpu_err)):
            return "fail", f"raised {first_line(tpu_err)} (CPU raises {first_line(cpu_err)})"
        return "pass", None
    if tpu_err is not None:
        return "fail", f"raised {first_line(tpu_err)} (CPU accepts)"
    if cpu_warn != tpu_warn:
        return "fail", ("no resize warning" if cpu_warn else "a resize warning CPU does not give")
    if cpu_ret != tpu_ret:
        return "fail", "the returned tensors are not the out tensors" if cpu_ret else "returns the out tensors"
    for k, (c, t) in enumerate(zip(cpu_outs, tpu_outs)):
        if _layout(c) != _layout(t):
            return "fail", f"out[{k}] (shape, strides, offset, dtype) {_layout(t)}, CPU {_layout(c)}"
        if not nondet:
            d = compare(t.cpu(), c, rtol, atol)
            if d is not None:
                return "fail", f"out[{k}] values: {d}"
    for k, (c, t) in enumerate(zip(cpu_bases, tpu_bases)):
        if not nondet and not torch.equal(t.cpu()[..., 1::2], c[..., 1::2]):
            return "fail", f"out[{k}]: elements outside the strided view changed"
    return "pass", None


def samples(op, dtype, limit):
    torch.manual_seed(0)
    out = []
    for s in op.sample_inputs("cpu", dtype, requires_grad=False):
        out.append(Sample(s))
        if len(out) == limit:
            break
    return out


def run_op(op, name, ctx):
    dtype = sample_dtype(op)
    if dtype is None:
        ctx.record(f"{name}/all/0", "excluded", "no sample dtype")
        return
    limit = 2 if sweep.full() else 1
    try:
        todo = samples(op, dtype, limit)
    except Exception as e:  # noqa: BLE001
        ctx.record(f"{name}/all/0", "excluded", "sample_inputs: " + first_line(e))
        return
    rtol, atol = op_tolerance(op, dtype)
    nondet = op.name in NONDETERMINISTIC
    for i, sample in enumerate(todo):
        ids = [f"{name}/{kind}/{i}" for kind in KINDS]
        why = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inp, args, kwargs = sample.fresh(clone_leaf)
                want, is_tuple = _outs(op(inp, *args, **kwargs))
                if want is None:
                    why = "the result is not a tensor or a tuple of tensors"
                else:
                    inp, args, kwargs = sample.fresh(clone_leaf)
                    op(inp, *args, out=tuple(torch.empty_like(t) for t in want) if is_tuple
                       else torch.empty_like(want[0]), **kwargs)
        except Exception as e:  # noqa: BLE001
            why = "cpu: " + first_line(e)
        for kind, cid in zip(KINDS, ids):
            if why is not None:
                ctx.record(cid, "excluded", why)
            elif kind == "strided" and all(t.dim() == 0 or t.numel() < 2 for t in want):
                ctx.record(cid, "excluded", "no output with two or more elements to stride")
            else:
                ctx.case(cid, lambda kind=kind: run_case(op, kind, sample, want, is_tuple, rtol, atol, nondet))
