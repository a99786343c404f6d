"""Cases of the error-input sweep (test_sweep_errors.py): each ErrorInput an OpInfo builds for device
"tpu" must raise on tpu what the OpInfo says CPU raises (the class, or a subclass, of error_type, with a
message that error_regex finds), as PyTorch's own test_errors checks it.

The same error inputs are built for CPU and run in the same process; a case whose CPU input does not
raise as the OpInfo says (the installed torch drifted from its OpInfo) is excluded. An error input built
only for other devices than CPU (mixing devices) runs unconfirmed. Case ids are
`OP/N` for the N-th error input and `OP/LAYOUT/N` for sparse ones.
"""

import re
import warnings

import torch

from .harness import first_line

DEVICE = "tpu"

# Sparse layouts whose error inputs run: those tpu stores. The others are skipped for every op.
SPARSE_LAYOUTS = [torch.sparse_coo]
UNSUPPORTED_SPARSE_LAYOUTS = {
    "sparse_csr": "tpu stores only COO sparse tensors (csrc/sparse.cpp)",
    "sparse_csc": "tpu stores only COO sparse tensors (csrc/sparse.cpp)",
    "sparse_bsr": "tpu stores only COO sparse tensors (csrc/sparse.cpp)",
    "sparse_bsc": "tpu stores only COO sparse tensors (csrc/sparse.cpp)",
}


def has_sparse_errors(op):
    f = getattr(op, "error_inputs_sparse_func", None)
    return f is not None and "default" not in getattr(f, "__name__", "")


def wanted(op):
    """Whether the op has error inputs this sweep runs."""
    return op.error_inputs_func is not None or (
        has_sparse_errors(op) and any(op.supports_sparse_layout(lay) for lay in SPARSE_LAYOUTS))


def _collect(make):
    """The error inputs make() yields, and the first line of the exception that stopped it early, if any."""
    got = []
    try:
        for ei in make():
            got.append(ei)
    except Exception as e:  # noqa: BLE001
        return got, first_line(e)
    return got, None


def _key(ei):
    return (ei.error_type, ei.error_regex)


def _pair(tpu_inputs, cpu_inputs):
    """Each tpu error input's CPU counterpart: the one with the same error type and regex and the same
    rank among those (None when CPU's list has no such one)."""
    pool = {}
    for ei in cpu_inputs:
        pool.setdefault(_key(ei), []).append(ei)
    seen = {}
    out = []
    for ei in tpu_inputs:
        k = _key(ei)
        n = seen.get(k, 0)
        seen[k] = n + 1
        cands = pool.get(k, [])
        out.append(cands[n] if n < len(cands) else None)
    return out


def _want(ei):
    return f"{ei.error_type.__name__} matching {ei.error_regex!r}"


def check(op, ei, sync):
    """None when calling op on ei's sample raises as ei says, else why not."""
    si = ei.sample_input
    with warnings.catch_warnings():
        if isinstance(ei.error_type, type) and issubclass(ei.error_type, Warning):
            warnings.simplefilter("error", ei.error_type)
        else:
            warnings.simplefilter("ignore")
        try:
            op(si.input, *si.args, **si.kwargs)
            if sync:
                torch.tpu.synchronize()
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, ei.error_type):
                return f"raised {first_line(e)} (want {_want(ei)})"
            if not re.search(ei.error_regex, str(e)):
                return f"message {first_line(e)!r} (want {_want(ei)})"
            return None
    return f"did not raise (want {_want(ei)})"


def _cases(op, name, ctx, prefix, make_tpu, make_cpu):
    tpu_inputs, tpu_stop = _collect(make_tpu)
    cpu_inputs, _ = _collect(make_cpu)
    for i, (ei, cpu_ei) in enumerate(zip(tpu_inputs, _pair(tpu_inputs, cpu_inputs))):
        cid = f"{prefix}/{i}"
        # An error input only built for devices other than CPU (tensors on two devices) has no CPU
        # counterpart to confirm it: it runs as the OpInfo states it.
        cpu_why = None if cpu_ei is None else check(op, cpu_ei, sync=False)
        if cpu_why is not None:
            ctx.record(cid, "excluded", "cpu " + cpu_why)
            continue
        ctx.case(cid, lambda ei=ei: ("fail", why) if (why := check(op, ei, sync=True)) else ("pass", None))
    if tpu_stop is not None:
        # Building the inputs on tpu failed: a tpu failure (a factory or an op the builder calls).
        ctx.case(f"{prefix}/build", lambda: ("fail", f"building error inputs on tpu: {tpu_stop}"))


def run_op(op, name, ctx):
    if op.error_inputs_func is not None:
        _cases(op, name, ctx, name, lambda: op.error_inputs(DEVICE), lambda: op.error_inputs("cpu"))
    if has_sparse_errors(op):
        for layout in SPARSE_LAYOUTS:
            if not op.supports_sparse_layout(layout):
                continue
            lay = str(layout).replace("torch.", "")
            _cases(op, name, ctx, f"{name}/{lay}", lambda: op.error_inputs_sparse(DEVICE, layout),
                   lambda: op.error_inputs_sparse("cpu", layout))
