"""peer_timing: the measuring loop and the correctness gate shared by the peer workers.

Framework-neutral (only numpy): a worker hands over a step function and a read
function, and gets back one JSON-ready record per workload.
"""
import json
import sys
import time

import numpy as np

LOSS_RTOL = 1e-3   # first-step and second-step loss, relative
OUT_RTOL, OUT_ATOL = 1e-3, 1e-4  # forward outputs, elementwise
MARK = "@@peer "   # prefix of the lines the driver parses
# The workloads, by name (defined in peer_workloads_torch.py and twinned in peer_workloads_jax.py).
WORKLOADS = ["gpt", "cnn", "mlp", "norm", "attn64", "attn256", "attn512"]


def check(kind, values, ref):
    """Returns None when values agree with the CPU eager reference, else a short reason."""
    if kind == "train":
        got, want = np.asarray(values[:2], dtype=np.float64), np.asarray(ref["losses"], dtype=np.float64)
        rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-12)
        if not np.all(np.isfinite(got)) or rel.max() > LOSS_RTOL:
            return f"losses {got.tolist()} vs reference {want.tolist()} (max rel {rel.max():.2e})"
        return None
    got, want = np.asarray(values[0], dtype=np.float32), ref["out"]
    if got.shape != want.shape:
        return f"output shape {got.shape} vs reference {want.shape}"
    if not np.allclose(got, want, rtol=OUT_RTOL, atol=OUT_ATOL):
        err = np.abs(got.astype(np.float64) - want)
        return f"output max abs err {err.max():.2e} (rtol {OUT_RTOL}, atol {OUT_ATOL})"
    return None


def measure(kind, step, read, ref, steps, warmup):
    """Times step(): the first call alone (cold), warm-up calls, then steps calls one by one.

    kind is "train" (read returns the loss as a float; the first two losses are
    checked) or "forward" (read returns the output as a numpy array). Every timed
    call includes its read, which is what synchronizes a lazy or asynchronous backend.
    """
    t0 = time.perf_counter()
    values = [read(step())]
    cold = time.perf_counter() - t0
    for _ in range(max(warmup, 2) - 1):
        values.append(read(step()))
    reason = check(kind, values, ref) if ref is not None else None
    if reason:
        return {"status": "MISMATCH", "detail": reason}
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        read(step())
        times.append(time.perf_counter() - t0)
    rec = {"status": "ok", "cold_ms": cold * 1e3, "median_ms": float(np.median(times)) * 1e3,
           "times_ms": [t * 1e3 for t in times]}
    if ref is None:  # reference run: hand back the check values
        rec["check"] = {"losses": [float(v) for v in values[:2]]} if kind == "train" else {"out": values[0]}
    return rec


def emit(workload, rec):
    """Prints one result line for the driver."""
    rec = {k: v for k, v in rec.items() if k != "check"}
    print(MARK + json.dumps({"workload": workload, **rec}), flush=True)


def load_ref(path):
    try:
        z = np.load(path)
    except FileNotFoundError:
        return None
    return {k: z[k] for k in z.files}


def run_all(workloads, build, args):
    """Builds and measures each workload, printing one record per workload; errors do not stop the rest."""
    import os
    for name in workloads:
        try:
            kind, step, read = build(name)
            ref = None if args.reference else load_ref(os.path.join(args.dir, f"{name}.ref.npz"))
            rec = measure(kind, step, read, ref, args.steps, args.warmup)
            if args.reference and rec["status"] == "ok":
                np.savez(os.path.join(args.dir, f"{name}.ref.npz"), **rec["check"])
        except Exception as e:  # reported, the next workload still runs
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            print(f"[{name}] {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            rec = {"status": "error", "detail": msg}
        emit(name, rec)


def worker_args(description):
    import argparse
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--dir", required=True, help="folder with <workload>.init.npz and <workload>.ref.npz")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reference", action="store_true", help="write <workload>.ref.npz instead of checking")
    ap.add_argument("--dump", action="store_true", help="write <workload>.init.npz (weights and data) and exit")
    ap.add_argument("--export", action="store_true", help="write <workload>.jax.mlir, the lowered module (JAX)")
    return ap.parse_args()
