"""Step time of the GPT example: CPU eager, tpu fused, tpu compiled (backend="tpu"), with the
first-call (capture + compile) time of the compiled model. Medians over the steps after warm-up.

With --interleaved, the peer workloads' train steps (bench/peer_workloads_torch.py, e.g. mlp,gpt) run
in one process per workload as tpu fused, tpu compiled (strict mode, a program per graph) and tpu
compiled whole step (fused mode, one program per step), in blocks that alternate, so that load on the
machine falls on all three alike (CPU eager: bench/peers.py); a cell is the median over blocks of each block's
median step, with the launches per step and the host time left after the device's busy time
(torch.tpu.trace) of the last block.

    python bench/compile_step.py --steps 40 --rounds 3
    python bench/compile_step.py --interleaved mlp,gpt --steps 20 --rounds 5
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import sys, time, json
sys.path.insert(0, {examples!r})
import torch
import train_gpt
kind, steps = {kind!r}, {steps}
device = "cpu" if kind == "cpu" else "tpu"
t0 = time.perf_counter()
first = []
def on_step(s):
    if s == 0:
        first.append(time.perf_counter() - t0)
losses, timer, model, chars = train_gpt.train(device=device, mode="fused" if kind == "fused" else None, steps=steps,
                                              seed=0, dropout=0.0, log=None, on_step=on_step,
                                              compile=kind == "compiled")
print("RESULT", json.dumps({{"median": timer.median(skip=5), "first_step": timer.times[0]}}))
"""


def one(kind, steps):
    code = CHILD.format(examples=os.path.join(HERE, "..", "examples"), kind=kind, steps=steps)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise SystemExit(r.stderr[-3000:])
    import json
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[7:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--interleaved", help="peer workloads to time in alternating blocks, e.g. mlp,gpt")
    a = ap.parse_args()
    if a.interleaved:
        from compile_step_interleaved import run

        return run(a.interleaved.split(","), a.steps, a.rounds)
    kinds = ["cpu", "fused", "compiled"]
    res = {k: [] for k in kinds}
    for _ in range(a.rounds):  # interleaved rounds
        for k in kinds:
            res[k].append(one(k, a.steps))
    print(f"GPT example step (batch 16, ctx 32, dim 64, 2 layers, AdamW), medians of {a.rounds} rounds:")
    for k in kinds:
        med = statistics.median(r["median"] for r in res[k]) * 1e3
        first = statistics.median(r["first_step"] for r in res[k])
        print(f"  {k:9s} step {med:8.2f} ms   first step {first:7.2f} s")


if __name__ == "__main__":
    main()
