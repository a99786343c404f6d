"""first_step: the cold and warm-cache first training step of the GPT example, ResNet-18 or MobileNetV3-small.

Runs examples/train_gpt.py's training loop (--model gpt) or a torchvision
ResNet-18 or MobileNetV3-small SGD loop on 4x3x64x64 batches (--model resnet18,
--model mobilenet_v3_small) in fresh
processes, each with the same new TORCHTPU_CACHE_DIR: the first process
compiles every program (cold), the later ones load them from the directory
(warm). Prints the first step's wall time, the programs compiled and loaded
from disk, and the steady step time, as a markdown table and JSON. Medians
over --rounds process pairs.

--variants compares environments in one run, the variants taking turns each
round (in reverse order every other round), e.g. --variants "fast:;off:TORCHTPU_FAST_COMPILE=0" (label:NAME=VALUE
pairs separated by spaces; the name mode sets that variant's mode, e.g. "fused:mode=fused", and "cpu:mode=cpu" runs
the torchvision models in CPU eager for reference); --cold-only skips the warm processes.

    python bench/first_step.py --mode fused --rounds 3
    python bench/first_step.py --model resnet18 --mode strict --cold-only --variants "fast:;off:TORCHTPU_FAST_COMPILE=0"
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
print(json.dumps({"first_step_s": timer.times[0], "second_step_s": timer.times[1], "third_step_s": timer.times[2],
                  "steady_ms": timer.median(skip=3) * 1e3,
                  "compiled": m["graphs_compiled"], "disk_hits": m["disk_cache_hits"],
                  "compile_s": m["compile_seconds"], "loss0": losses[0], "losses": losses,
                  "cold_runs": m.get("strict_cold_runs", 0), "background": m.get("background_compiles", 0),
                  "waits": m.get("compile_waits", 0)}))
"""

VISION_CHILD = r"""
import json, sys, time
import torch, torch.nn.functional as F, torchvision
dev = "cpu" if sys.argv[2] == "cpu" else "tpu"
if dev == "tpu":
    torch.tpu.set_mode(sys.argv[2])
torch.manual_seed(0)
model = getattr(torchvision.models, sys.argv[4])(num_classes=10).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
g = torch.Generator().manual_seed(0)
x, y = torch.randn(4, 3, 64, 64, generator=g).to(dev), torch.randint(0, 10, (4,), generator=g).to(dev)
if dev == "tpu":
    torch.tpu.reset_metrics()
times, losses = [], []
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    times.append(time.perf_counter() - t0)
m = torch.tpu.metrics() if dev == "tpu" else {"graphs_compiled": 0, "disk_cache_hits": 0, "compile_seconds": 0.0}
steady = sorted(times[3:] or times)[len(times[3:] or times) // 2]
print(json.dumps({"first_step_s": times[0], "second_step_s": times[1], "third_step_s": times[2], "steady_ms": steady * 1e3,
                  "compiled": m["graphs_compiled"], "disk_hits": m["disk_cache_hits"], "compile_s": m["compile_seconds"],
                  "loss0": losses[0], "losses": losses, "cold_runs": m.get("strict_cold_runs", 0),
                  "background": m.get("background_compiles", 0), "waits": m.get("compile_waits", 0)}))
"""


def run(root, cache, mode, steps, model="gpt", extra=None):
    extra = dict(extra or {})
    mode = extra.pop("mode", mode)  # a variant may name its own mode ("fused:mode=fused")
    env = dict(os.environ, TORCHTPU_CACHE_DIR=cache, **extra)
    child = CHILD if model == "gpt" else VISION_CHILD
    out = subprocess.run([sys.executable, "-c", child, root, mode, str(steps), model], env=env, check=True,
                         capture_output=True, text=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse_variants(spec):
    """Returns [(label, env)] from "label:NAME=VALUE ...;label:..."."""
    out = []
    for item in spec.split(";"):
        label, _, pairs = item.strip().partition(":")
        out.append((label, dict(p.split("=", 1) for p in pairs.split())))
    return out


def compare(args, root):
    variants = parse_variants(args.variants)
    res = {label: {"cold": [], "warm": []} for label, _ in variants}
    for r in range(args.rounds):
        # The order flips each round: a run's first process tends to be slower.
        for label, extra in (variants if r % 2 == 0 else variants[::-1]):
            with tempfile.TemporaryDirectory() as cache:
                res[label]["cold"].append(run(root, cache, args.mode, args.steps, args.model, extra))
                if not args.cold_only:
                    res[label]["warm"].append(run(root, cache, args.mode, args.steps, args.model, extra))
    print(f"{args.model}, {args.mode} mode, first step, median of {args.rounds} rounds (variants take turns, order flipped each round)")
    print("| variant | cache | first step (s) | all rounds (s) | second step (s) | third step (s) | programs compiled | "
          "compile s | cold runs | background compiles | steady step (ms) |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, _ in variants:
        for cache in ("cold", "warm"):
            rs = res[label][cache]
            if not rs:
                continue
            firsts = [r["first_step_s"] for r in rs]
            print(f"| {label} | {cache} | {statistics.median(firsts):.2f} | {' '.join(f'{f:.2f}' for f in firsts)} | "
                  f"{statistics.median(r.get('second_step_s', 0) for r in rs):.2f} | "
                  f"{statistics.median(r.get('third_step_s', 0) for r in rs):.2f} | "
                  f"{rs[0]['compiled']} | {statistics.median(r['compile_s'] for r in rs):.2f} | "
                  f"{rs[0].get('cold_runs', 0)} | {rs[0].get('background', 0)} | "
                  f"{statistics.median(r['steady_ms'] for r in rs):.1f} |")
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="fused")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="gpt", choices=["gpt", "resnet18", "mobilenet_v3_small"])
    ap.add_argument("--variants", help="environments to compare, e.g. \"fast:;off:TORCHTPU_FAST_COMPILE=0\"")
    ap.add_argument("--cold-only", action="store_true")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.variants or args.model != "gpt" or args.cold_only:
        args.variants = args.variants or "default:"
        compare(args, root)
        return
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
