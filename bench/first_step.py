"""first_step: the cold and warm-cache first training step of the GPT example.

Runs examples/train_gpt.py's training loop in fresh processes, each with the
same new TORCHTPU_CACHE_DIR: the first process compiles every program (cold),
the later ones load them from the directory (warm). Prints the first step's
wall time, the programs compiled and loaded from disk, and the steady step
time, as a markdown table and JSON. Medians over --rounds warm processes.

    python bench/first_step.py --mode fused --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "examples"))
import torch, train_gpt
times = []
def on_step(step):
    times.append(time.perf_counter())
t0 = time.perf_counter()
torch.tpu.reset_metrics()
losses, timer, _, _ = train_gpt.train(device="tpu", mode=sys.argv[2], steps=int(sys.argv[3]), log=None, on_step=on_step)
m = torch.tpu.metrics()
print(json.dumps({"first_step_s": timer.times[0], "steady_ms": timer.median(skip=3) * 1e3,
                  "compiled": m["graphs_compiled"], "disk_hits": m["disk_cache_hits"],
                  "compile_s": m["compile_seconds"], "loss0": losses[0]}))
"""


def run(root, cache, mode, steps):
    env = dict(os.environ, TORCHTPU_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, root, mode, str(steps)], env=env, check=True,
                         capture_output=True, text=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="fused")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    colds, warms = [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as cache:
            colds.append(run(root, cache, args.mode, args.steps))
            warms.append(run(root, cache, args.mode, args.steps))
    cold = statistics.median(r["first_step_s"] for r in colds)
    warm = statistics.median(r["first_step_s"] for r in warms)
    print(f"GPT example, {args.mode} mode, first step (median of {args.rounds} cold/warm process pairs)")
    print("| cache | first step (s) | programs compiled | loaded from disk | steady step (ms) |")
    print("|---|---:|---:|---:|---:|")
    for name, rs, first in (("cold", colds, cold), ("warm", warms, warm)):
        print(f"| {name} | {first:.2f} | {rs[0]['compiled']} | {rs[0]['disk_hits']} | "
              f"{statistics.median(r['steady_ms'] for r in rs):.1f} |")
    print(f"warm / cold first step: {warm / cold:.1%}")
    print(json.dumps({"cold_first_s": cold, "warm_first_s": warm, "cold": colds, "warm": warms}))


if __name__ == "__main__":
    main()
