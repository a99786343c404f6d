"""DLRM training step at batch 2048 (examples/train_dlrm.py: MLPerf DLRM-DCNv2 inputs, tables capped
at --rows, Adagrad) on CPU eager with dense and sparse gradients, and on tpu with dense gradients,
sparse gradients and the fused embedding path, and on CPU and tpu without tables (fixed pooled
embeddings: the floor under every embedding path, and CPU eager's speed on the same dense part).
Prints samples/s (median of rounds) and, on tpu, peak device memory next to tables + optimizer
state. Each configuration runs in its own process.

    python bench/dlrm.py [--batch 2048] [--rows 100000] [--rounds 3] [--steps 3] [--only tpu-fused] [--chunk N]
"""
import argparse
import json
import os
import subprocess
import sys
import time

CONFIGS = ["cpu-dense", "cpu-sparse", "tpu-dense", "tpu-sparse", "tpu-fused", "cpu-mlp", "tpu-mlp"]


def without_tables(train_dlrm, torch, model, batch, dim, device):
    """The "mlp" configuration: the same step with every pooled embedding a fixed tensor, so
    only the MLPs, the interaction and the dense optimizer run. It is the floor under any
    embedding path: no way of handling the tables makes a step faster than this."""
    gen = torch.Generator().manual_seed(2)
    pooled = {f: torch.randn(batch, dim, generator=gen).to(device) for f in model.features}

    class Fixed(torch.nn.Module):
        def forward(self, kjt):
            return pooled

    model.emb, model.kind = Fixed(), "fused"  # "fused": no table optimizer
    return model


def one(a):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    import train_dlrm

    device, kind = a.one.split("-")
    if device == "tpu":
        torch.tpu.set_mode(a.mode)
    torch.manual_seed(0)
    rows = [min(r, a.rows) for r in train_dlrm.MLPERF_ROWS]
    if kind == "mlp":
        model = without_tables(train_dlrm, torch, train_dlrm.DLRM([1] * len(rows), a.dim, "dense", "adagrad", 0.01,
                                                                   device), a.batch, a.dim, device)
    else:
        model = train_dlrm.DLRM(rows, a.dim, kind, "adagrad", 0.01, device, chunk=a.chunk)
        model.init_tables(0)
    opts = model.make_optimizers()
    gen = torch.Generator().manual_seed(1)
    batches = [train_dlrm.synthetic_batch(gen, rows, a.batch) for _ in range(a.steps)]

    def sync():
        if device == "tpu":
            torch.tpu.synchronize()

    def step(b):
        dense, kjt, labels = b
        return train_dlrm.train_step(model, opts, dense.to(device), kjt, labels.to(device))

    sync()
    if device == "tpu":
        torch.tpu.reset_peak_memory_stats()
    for b in batches[:2]:  # warm-up: compiles, optimizer state
        step(b)
    sync()
    rates = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for b in batches:
            loss = step(b)
        loss.item()
        sync()
        rates.append(len(batches) * a.batch / (time.perf_counter() - t0))
    table_bytes = sum(rows) * a.dim * 4
    out = {"config": a.one, "samples_per_s": sorted(rates)[len(rates) // 2], "rates": rates,
           "tables_and_state_bytes": 2 * table_bytes, "loss": loss.item()}
    if device == "tpu":
        out["peak_bytes"] = torch.tpu.max_memory_allocated()
    print("RESULT " + json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3, help="steps per round")
    ap.add_argument("--mode", default="fused", help="tpu mode")
    ap.add_argument("--chunk", type=int, default=None, help="ids per chunk of the fused path (default: its own)")
    ap.add_argument("--only", action="append", choices=CONFIGS)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per configuration")
    a = ap.parse_args()
    if a.one:
        return one(a)
    results = {}
    for c in a.only or CONFIGS:
        cmd = [sys.executable, __file__, "--one", c, "--batch", str(a.batch), "--rows", str(a.rows), "--dim", str(a.dim),
               "--rounds", str(a.rounds), "--steps", str(a.steps), "--mode", a.mode] + (
                   ["--chunk", str(a.chunk)] if a.chunk else [])
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
            results[c] = json.loads(line[-1][7:]) if line else {"error": p.stderr.strip().splitlines()[-1:]}
        except subprocess.TimeoutExpired:
            results[c] = {"error": f"timed out after {a.timeout}s"}
        r = results[c]
        if "error" in r:
            print(f"{c:11s} error: {r['error']}", flush=True)
            continue
        mem = f"peak {r['peak_bytes'] / 2**20:7.1f} MiB" if "peak_bytes" in r else "peak       -    "
        print(f"{c:11s} {r['samples_per_s']:9.1f} samples/s   {mem}   tables+state {r['tables_and_state_bytes'] / 2**20:.1f} MiB"
              f"   loss {r['loss']:.4f}", flush=True)
    fused, dense, cpu_sparse = (results.get(k, {}).get("samples_per_s") for k in ("tpu-fused", "tpu-dense", "cpu-sparse"))
    if fused and dense:
        print(f"fused / tpu dense: {fused / dense:.2f}x")
    if fused and cpu_sparse:
        print(f"fused / cpu sparse: {fused / cpu_sparse:.2f}x")
    floor = results.get("tpu-mlp", {}).get("samples_per_s")
    if floor and dense:
        print(f"tpu without tables / tpu dense: {floor / dense:.2f}x (the most any embedding path could gain over dense)")
    cpu_floor = results.get("cpu-mlp", {}).get("samples_per_s")
    if floor and cpu_floor:
        print(f"tpu without tables / cpu without tables: {floor / cpu_floor:.2f}x (the dense part against CPU eager's)")


if __name__ == "__main__":
    main()
