"""Runs OpInfo samples on CPU and on tpu and classifies each tpu result.

The worker half of the conformance sweep: `python -m tests.conformance.harness --ops A:B --out FILE`
walks op_db entries A..B-1 and writes one JSON line per event to FILE (a "start" line before each tpu
run and a "result" line after it), flushing each line, so that a parent process can tell which sample
was running when the process died.
"""

import argparse
import itertools
import json
import math
import os
import sys
import warnings

import torch

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int64": torch.int64,
    "bool": torch.bool,
}
MODES = ("strict", "fused")

# Ops whose values are random or uninitialized: only shapes and dtypes can be compared, so their
# samples are counted as skipped (fallbacks are still recorded).
NONDETERMINISTIC = {
    "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted",
    "bernoulli", "normal", "uniform", "randn", "rand", "randint", "randn_like", "rand_like",
    "randint_like", "multinomial", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "cauchy", "exponential", "geometric", "log_normal",
    "torch.ops.aten._efficientzerotensor", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "nn.functional.multi_head_attention_forward",
    # Random projections drawn from the device's generator.
    "svd_lowrank", "pca_lowrank",
}


def random_values(op, sample):
    """Whether a sample's values are random: a nondeterministic op, or attention with dropout (dropout_p > 0)."""
    p = sample.tree[2].get("dropout_p", 0)
    return op.name in NONDETERMINISTIC or isinstance(p, (int, float)) and p > 0


def load_op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def variant_name(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def default_tol(dtype):
    """assert_close's default (rtol, atol) for a dtype (complex as its real parts); exact for integers and bool."""
    return {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
        torch.complex64: (1.3e-6, 1e-5),
        torch.complex128: (1e-7, 1e-7),
    }.get(dtype, (0.0, 0.0))


def op_tolerance(op, dtype):
    """The loosest CPU (or any-device) tolerance override the OpInfo declares for dtype, or the default."""
    rtol, atol = default_tol(dtype)
    for info in getattr(op, "decorators", ()) or ():
        if getattr(info, "device_type", None) not in (None, "cpu"):
            continue
        if getattr(info, "active_if", True) is False:
            continue
        for dec in getattr(info, "decorators", ()):
            d = getattr(dec, "d", None)
            if not isinstance(d, dict) or dtype not in d:
                continue
            v = d[dtype]
            if hasattr(v, "atol"):
                atol, rtol = max(atol, v.atol), max(rtol, v.rtol)
            elif isinstance(v, (int, float)):
                atol = max(atol, float(v))
    return rtol, atol


def tree_map(fn, x):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(tree_map(fn, v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(tree_map(fn, v) for v in x)
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return x


def tree_tensors(x, out=None):
    out = [] if out is None else out
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            tree_tensors(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            tree_tensors(v, out)
    return out


def clone_leaf(t):
    c = t.detach().clone()
    return c.requires_grad_(t.requires_grad) if (c.is_floating_point() or c.is_complex()) else c


def to_tpu_leaf(t):
    c = t.detach().to("tpu")
    return c.requires_grad_(t.requires_grad) if (c.is_floating_point() or c.is_complex()) else c


def to_cpu(x):
    return tree_map(lambda t: t.detach().cpu(), x)


def first_line(e):
    s = f"{type(e).__name__}: {e}".strip()
    return s.splitlines()[0][:400] if s else type(e).__name__


def fallbacks():
    return {k: v for k, v in torch.tpu.metrics()["cpu_fallbacks"].items() if v}


def result_tol(want):
    """The default (rtol, atol) of the least precise floating result in want, as PyTorch's assertEqual picks
    when no tolerance is given: integer and bool inputs can have floating results (cos of an int64 tensor)."""
    floats = [t.dtype for t in tree_tensors(want) if t.is_floating_point() or t.is_complex()]
    if not floats and not tree_tensors(want) and isinstance(want, float):
        floats = [torch.float64]
    tols = [default_tol(d) for d in floats]
    return (max(t[0] for t in tols), max(t[1] for t in tols)) if tols else (0.0, 0.0)


def compare(got, want, rtol, atol):
    """None when got matches want (dtypes, shapes, values within tolerance), else the first line of why.
    A floating result is held at least to its own dtype's default tolerance, whatever the input dtype."""
    frtol, fatol = result_tol(want)
    rtol, atol = max(rtol, frtol), max(atol, fatol)
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
        return None
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()
        return (msg[0] if msg else type(e).__name__)[:400]


# Ops whose tensor arguments after the input stay on the host on any device.
HOST_ARGS = {"tensor_split"}


class Sample:
    """A sample's call arguments as one tree: (input, args, kwargs)."""

    def __init__(self, s):
        self.tree = (s.input, tuple(s.args), dict(s.kwargs))
        self.output_process_fn_grad = s.output_process_fn_grad

    def fresh(self, leaf, op_name=None):
        inp, args, kwargs = self.tree
        if op_name in HOST_ARGS:
            # The op takes these arguments as host tensors on every device (as on CUDA).
            return (tree_map(leaf, inp), tuple(clone_leaf(a) if isinstance(a, torch.Tensor) else a for a in args),
                    tree_map(leaf, kwargs))
        return tree_map(leaf, self.tree)


def call(op, tree):
    inp, args, kwargs = tree
    return op(inp, *args, **kwargs)


def diff_outputs(out):
    return [t for t in tree_tensors(out) if t.requires_grad and (t.is_floating_point() or t.is_complex())]


def run_backward(op, sample, tree, device):
    """Forward, then grads of sum(out * cotangent) (both parts of a complex out) w.r.t. the tensors that require grad."""
    out = call(op, tree)
    out = sample.output_process_fn_grad(out)
    outs = diff_outputs(out)
    leaves = [t for t in tree_tensors(tree) if t.requires_grad]
    if not outs or not leaves:
        return None, 0
    loss = None
    for k, o in enumerate(outs):
        g = torch.Generator().manual_seed(1000 + k)
        if o.is_complex():
            # A real loss over both parts, so that backward runs through the complex ops.
            real_dtype = o.real.dtype
            c_re = torch.randn(o.shape, generator=g, dtype=torch.float64).to(real_dtype).to(o.device)
            c_im = torch.randn(o.shape, generator=g, dtype=torch.float64).to(real_dtype).to(o.device)
            term = (o.real * c_re).sum() + (o.imag * c_im).sum()
        else:
            cot = torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.dtype).to(o.device)
            term = (o * cot).sum()
        loss = term if loss is None else loss + term
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [None if g is None else g.detach().cpu() for g in grads], len(outs)


class Emitter:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, **rec):
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def classify(err, mismatch, fb):
    if err is not None:
        return "error"
    if fb:
        return "fallback"
    if mismatch is not None:
        return "mismatch"
    return "pass"


def run_sample(op, name, dtype_name, idx, direction, sample, emit, modes):
    """Runs one sample on CPU and in each mode on tpu, emitting one result per mode."""
    dtype = DTYPES[dtype_name]
    rtol, atol = op_tolerance(op, dtype)
    base = dict(op=name, dtype=dtype_name, sample=idx, dir=direction)
    try:
        if direction == "fwd":
            # Outputs go through the sample's output_process_fn_grad, as in PyTorch's own CPU comparison:
            # it makes results that are only defined up to sign or phase (eigenvectors) comparable.
            want = to_cpu(sample.output_process_fn_grad(call(op, sample.fresh(clone_leaf))))
        else:
            want, nouts = run_backward(op, sample, sample.fresh(clone_leaf), "cpu")
            if want is None:
                for m in modes:
                    emit(ev="result", mode=m, status="skipped", detail="no differentiable output or input", **base)
                return
    except Exception as e:  # noqa: BLE001
        for m in modes:
            emit(ev="result", mode=m, status="skipped", detail="cpu: " + first_line(e), **base)
        return
    nondet = random_values(op, sample)
    strict_got = None
    for m in modes:
        emit(ev="start", mode=m, **base)
        if os.environ.get("CONFORMANCE_CRASH_OP") == name:  # lets the runner's crash handling be tested
            os.abort()
        torch.tpu.set_mode(m)
        torch.tpu.reset_metrics()
        err = got = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if direction == "fwd":
                    got = to_cpu(sample.output_process_fn_grad(call(op, sample.fresh(to_tpu_leaf, op.name))))
                else:
                    got, _ = run_backward(op, sample, sample.fresh(to_tpu_leaf, op.name), "tpu")
                    if got is None:
                        raise RuntimeError("tpu output does not require grad")
                torch.tpu.synchronize()
        except Exception as e:  # noqa: BLE001
            err = first_line(e)
        try:
            fb = fallbacks()
        except Exception:  # noqa: BLE001
            fb = {}
        mismatch = None if err is not None else compare(got, want, rtol, atol)
        if nondet and err is None:
            status, detail = "skipped", "nondeterministic values"
        else:
            status = classify(err, mismatch, fb)
            detail = err if err is not None else mismatch
        if m == "fused" and status in ("pass", "mismatch", "fallback") and strict_got is not None:
            d = compare(got, strict_got, rtol, atol)
            if d is not None and not nondet:
                status, detail = "fused_mismatch", "fused != strict: " + d
        if m == "strict" and err is None:
            strict_got = got
        rec = dict(ev="result", mode=m, status=status, **base)
        if detail:
            rec["detail"] = detail
        if fb:
            rec["fallbacks"] = fb
            rec["value_ok"] = err is None and mismatch is None
        emit(**rec)
    torch.tpu.set_mode("strict")


def samples_for(op, dtype, requires_grad, limit):
    torch.manual_seed(0)
    it = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
    return [Sample(s) for s in itertools.islice(it, limit)]


def run_op(op, emit, dtype_names, limit, modes, backward=True):
    name = variant_name(op)
    supported = op.supported_dtypes("cpu")
    for dn in dtype_names:
        if DTYPES[dn] not in supported:
            continue
        dirs = ["fwd"]
        if backward and dn == "float32" and op.supports_autograd:
            dirs.append("bwd")
        for direction in dirs:
            try:
                samples = samples_for(op, DTYPES[dn], direction == "bwd", limit)
            except Exception as e:  # noqa: BLE001
                for m in modes:
                    emit(ev="result", op=name, dtype=dn, sample=-1, dir=direction, mode=m, status="skipped",
                         detail="sample_inputs: " + first_line(e))
                continue
            for i, s in enumerate(samples):
                run_sample(op, name, dn, i, direction, s, emit, modes)
    emit(ev="op_done", op=name)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--indices", required=True, help="comma-separated op_db indices")
    p.add_argument("--out", required=True)
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--limit-samples", type=int, default=4)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--no-backward", action="store_true")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import torchtpu  # noqa: F401
    op_db = load_op_db()
    emit = Emitter(a.out)
    modes = a.modes.split(",")
    for i in (int(x) for x in a.indices.split(",") if x):
        op = op_db[i]
        emit(ev="op_start", op=variant_name(op), index=i)
        run_op(op, emit, a.dtypes.split(","), a.limit_samples, modes, not a.no_backward)
    emit(ev="chunk_done")


if __name__ == "__main__":
    main()
