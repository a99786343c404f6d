"""The dtype sweep's cases: each OpInfo op in each dtype CPU supports for it, forward, tpu against CPU.

A case id is "<op variant>/<dtype>" (e.g. "add/bfloat16"). A case runs the op's first samples for that dtype
in strict mode and passes when every sample that CPU accepts gives, on tpu, the same values (within the
OpInfo's CPU tolerance for the dtype, or assert_close's default), the same result dtypes and, for results that
are not views, the same strides (of the dimensions longer than one, as PyTorch's own stride checks do).
Samples whose CPU values depend on the seed (random ops, dropout_p > 0, also where the OpInfo reseeds
before each call) compare dtypes, shapes and strides only. Where PyTorch leaves the order of equal elements
unspecified (sort and argsort without stable=True, topk, kthvalue), an index that differs from CPU's passes
when it selects an element equal to the one CPU's selects (`ties_agree`). float32 is left to the OpInfo sweep
(tests/conformance/run.py), which runs it forward and backward.
"""

import argparse
import warnings

import torch

from . import cases, harness

# Every dtype the sweep knows, by name.
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float16, torch.bfloat16, torch.float64, torch.complex32, torch.complex64, torch.complex128,
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
    torch.uint64)}

_state = {}


def case_ids(op_db, names=None):
    """Every case of the ops named (all of op_db when names is None), in op_db order."""
    out = []
    for op in op_db:
        name = harness.variant_name(op)
        if names is not None and name not in names:
            continue
        supported = op.supported_dtypes("cpu")
        out += [f"{name}/{dn}" for dn, d in DTYPES.items() if d in supported]
    return out


def significant_strides_differ(got, want):
    """None when got's strides match want's on every dimension longer than one, else a description."""
    if want.layout != torch.strided or got.layout != torch.strided or want.numel() <= 1:
        return None
    for k, n in enumerate(want.shape):
        if n > 1 and got.stride(k) != want.stride(k):
            return f"strides {tuple(got.stride())} != CPU's {tuple(want.stride())} for shape {tuple(want.shape)}"
    return None


def check_strides(got, want):
    gots, wants = harness.tree_tensors(got), harness.tree_tensors(want)
    if len(gots) != len(wants):
        return f"{len(gots)} result tensors, CPU gives {len(wants)}"
    for k, (g, w) in enumerate(zip(gots, wants)):
        if w._is_view() or g.shape != w.shape:
            continue  # a view's strides follow its base; a shape difference shows in the value check
        d = significant_strides_differ(g, w)
        if d:
            return f"result {k}: {d}"
    return None


def op_tolerance(op, dtype):
    """The loosest tolerance the OpInfo declares for dtype on CPU, on any device, or against CPU from an
    accelerator (its CUDA overrides: another device's accumulation order against CPU's, as here), or
    assert_close's default."""
    rtol, atol = harness.default_tol(dtype)
    for info in getattr(op, "decorators", ()) or ():
        if getattr(info, "device_type", None) not in (None, "cpu", "cuda") or getattr(info, "active_if", True) is False:
            continue
        for dec in getattr(info, "decorators", ()):
            d = getattr(dec, "d", None)
            v = d.get(dtype) if isinstance(d, dict) else None
            if hasattr(v, "atol"):
                atol, rtol = max(atol, v.atol), max(rtol, v.rtol)
            elif isinstance(v, (int, float)):
                atol = max(atol, float(v))
    return rtol, atol


def seeded(op):
    """Whether the OpInfo seeds the generator inside each call (wrapper_set_seed): its random samples then
    repeat on CPU, though tpu's generator draws other numbers for the same seed."""
    code = getattr(op.op, "__code__", None)
    return code is not None and "wrapper_set_seed" in code.co_names


def compare(got, want, rtol, atol):
    """harness.compare, with the mismatch counts and greatest differences in the message."""
    frtol, fatol = harness.result_tol(want)
    try:
        torch.testing.assert_close(got, want, rtol=max(rtol, frtol), atol=max(atol, fatol), equal_nan=True)
        return None
    except Exception as e:  # noqa: BLE001
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
        return " ".join(lines[:5])[:500] or type(e).__name__


# Ops whose order among equal elements PyTorch leaves unspecified (sort and argsort unless stable=True, topk,
# kthvalue): with ties, tpu's indices may differ from CPU's and still be right. (argument index of dim, default)
TIE_OPS = {"sort": 0, "argsort": 0, "topk": 1, "kthvalue": 1}


def ties_agree(op, tree, got, want):
    """Whether got differs from want only in which of several equal elements an index names: the values are
    CPU's exactly and every index selects, along the op's dim, the element CPU's index selects."""
    name = op.name
    inp, args, kwargs = tree
    if name not in TIE_OPS or not isinstance(inp, torch.Tensor) or kwargs.get("stable") or \
            (name == "argsort" and len(args) > 2 and args[2]):
        return False
    k = TIE_OPS[name]
    dim = args[k] if len(args) > k else kwargs.get("dim", -1)
    gots = got if isinstance(got, (tuple, list)) else (got,)
    wants = want if isinstance(want, (tuple, list)) else (want,)
    if len(gots) != len(wants):
        return False
    indices = 0 if name == "argsort" else 1
    src = inp.detach().cpu()
    for i, (g, w) in enumerate(zip(gots, wants)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return False
        if i != indices:
            ok = compare(g, w, 0, 0) is None
        elif src.dim() == 0:
            ok = torch.equal(g, w)
        else:
            if g.dim() < src.dim():  # kthvalue without keepdim
                g, w = g.unsqueeze(dim), w.unsqueeze(dim)
            ok = torch.equal(src.gather(dim, g), src.gather(dim, w))
        if not ok:
            return False
    return True


def meta(x):
    return harness.tree_map(lambda t: (t.dtype, tuple(t.shape)), x)


def run_case(cid):
    name, dn = cid.rsplit("/", 1)
    op, dtype = _state["ops"][name], DTYPES[dn]
    try:
        samples = harness.samples_for(op, dtype, False, _state["limit"])
    except Exception as e:  # noqa: BLE001
        return "skip", "sample_inputs: " + harness.first_line(e)
    rtol, atol = op_tolerance(op, dtype)
    compared, fb_all = 0, {}
    for i, s in enumerate(samples):
        try:
            torch.manual_seed(0)
            want_raw = harness.call(op, s.fresh(harness.clone_leaf))
            want = harness.to_cpu(s.output_process_fn_grad(want_raw))
            # A sample whose CPU values change with the seed (dropout_p > 0) is random: metadata only.
            torch.manual_seed(1)
            again = harness.to_cpu(s.output_process_fn_grad(harness.call(op, s.fresh(harness.clone_leaf))))
            random = (op.name in harness.NONDETERMINISTIC or compare(again, want, 0, 0) is not None
                      or (seeded(op) and float(s.tree[2].get("dropout_p", 0) or 0) > 0))
        except Exception:  # noqa: BLE001 - CPU rejects the sample: nothing to compare
            continue
        torch.tpu.reset_metrics()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got_raw = harness.call(op, s.fresh(harness.to_tpu_leaf, op.name))
                got = harness.to_cpu(s.output_process_fn_grad(got_raw))
                torch.tpu.synchronize()
        except Exception as e:  # noqa: BLE001
            return "fail", f"sample {i}: {harness.first_line(e)}"
        fb_all.update(harness.fallbacks())
        if random:
            mismatch = None if meta(got) == meta(want) else f"dtypes/shapes {meta(got)} != CPU's {meta(want)}"
        else:
            mismatch = compare(got, want, rtol, atol)
            if mismatch and ties_agree(op, s.tree, got, want):
                mismatch = None
        if mismatch:
            return "fail", f"sample {i}: {mismatch}"
        d = check_strides(got_raw, want_raw)
        if d:
            return "fail", f"sample {i}: {d}"
        compared += 1
    if not compared:
        return "skip", "CPU rejects every sample" if samples else "no samples"
    return "pass", ("fallback: " + ",".join(sorted(fb_all))) if fb_all else ""


def setup(rest):
    p = argparse.ArgumentParser()
    p.add_argument("--limit-samples", type=int, default=3)
    a = p.parse_args(rest)
    warnings.simplefilter("ignore")
    import torchtpu  # noqa: F401
    torch.tpu.set_mode("strict")
    _state["limit"] = a.limit_samples
    _state["ops"] = {harness.variant_name(op): op for op in harness.load_op_db()}


if __name__ == "__main__":
    cases.worker_main(run_case, setup)
