"""Runs the conformance slice's forward float32 samples through torch.compile(backend="tpu").

Each op's first sample is wrapped in a function compiled with the tpu backend (dynamic=False) and
compared with CPU eager. Prints one JSON line per op: {"op", "status", "detail"}, status one of pass
(one or more compiled programs ran), eager (right values, but the graph fell back to eager tpu
execution, with the reason), mismatch, error or skipped (CPU itself rejects the sample, or the values are nondeterministic).
"""
import json
import sys
import warnings

import torch

from .harness import NONDETERMINISTIC, Sample, call, clone_leaf, compare, first_line, load_op_db, op_tolerance
from .harness import samples_for, to_cpu, to_tpu_leaf, variant_name
from .slice import SLICE


def run_op(op):
    samples = samples_for(op, torch.float32, False, 1)
    if not samples or op.name in NONDETERMINISTIC:
        return "skipped", "no sample" if not samples else "nondeterministic values"
    sample = samples[0]
    rtol, atol = op_tolerance(op, torch.float32)
    try:
        want = to_cpu(sample.output_process_fn_grad(call(op, sample.fresh(clone_leaf))))
    except Exception as e:  # noqa: BLE001
        return "skipped", "cpu: " + first_line(e)
    torch._dynamo.reset()
    torch.tpu.reset_metrics()
    fn = torch.compile(lambda tree: call(op, tree), backend="tpu", dynamic=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = to_cpu(sample.output_process_fn_grad(fn(sample.fresh(to_tpu_leaf, op.name))))
    except Exception as e:  # noqa: BLE001
        return "error", first_line(e)
    mismatch = compare(got, want, rtol, atol)
    if mismatch:
        return "mismatch", mismatch
    m = torch.tpu.metrics()
    if m["compiled_fallbacks"] or not m["compiled_programs"]:
        # Right values, but (part of) the graph ran eagerly rather than as a compiled program.
        return "eager", "; ".join(m["compiled_fallback_reasons"]) or "no program compiled"
    return "pass", ""


def main():
    ops = {variant_name(op): op for op in load_op_db()}
    for name in SLICE:
        status, detail = run_op(ops[name])
        print(json.dumps({"op": name, "status": status, "detail": detail}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
