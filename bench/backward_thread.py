"""backward_thread: a training step's time with backward on the calling thread (the default) against
backward handed to the autograd engine's device thread (TORCHTPU_AUTOGRAD_THREADS=1), in processes that
take turns, so that load on the machine falls on both alike.

The step is the MLP peer workload's (batch 32, AdamW; bench/peer_workloads_torch.py's model), eager or
under torch.compile(backend="tpu"), in the mode given. A cell is the median over rounds of each process's
median block (a block: --steps steps, then a read of the loss).

    python bench/backward_thread.py --rounds 5
    python bench/backward_thread.py --rounds 5 --kinds compiled:strict,eager:fused --steps 100
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import os, sys, time, statistics
sys.path.insert(0, {examples!r})
import torch, torch.nn.functional as F
import train_mlp
kind, mode, steps = {kind!r}, {mode!r}, {steps}
torch.tpu.set_mode(mode)
torch.manual_seed(0)
model = train_mlp.MLP(dropout=0.0).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
x, y = torch.randn(32, 32).to("tpu"), torch.randint(0, 8, (32,)).to("tpu")
def step(xb, yb):
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()
fn = torch.compile(step, backend="tpu") if kind == "compiled" else step
for _ in range(10):
    fn(x, y)
fn(x, y).item()
blocks = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = fn(x, y)
    loss.item()
    blocks.append((time.perf_counter() - t0) / steps * 1e3)
print("RESULT", statistics.median(blocks), torch._C._is_multithreading_enabled())
"""

VARIANTS = [("device thread", {"TORCHTPU_AUTOGRAD_THREADS": "1"}), ("caller", {"TORCHTPU_AUTOGRAD_THREADS": ""})]


def one(kind, mode, steps, env):
    code = CHILD.format(examples=os.path.join(HERE, "..", "examples"), kind=kind, mode=mode, steps=steps)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **env))
    if r.returncode != 0:
        raise SystemExit(r.stderr[-3000:])
    _, ms, threaded = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1].split()
    if (threaded == "True") != (env["TORCHTPU_AUTOGRAD_THREADS"] == "1"):
        raise SystemExit(f"the variant did not take: multithreading enabled is {threaded}")
    return float(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--kinds", default="compiled:strict,eager:fused,eager:strict")
    a = ap.parse_args()
    kinds = [k.split(":") for k in a.kinds.split(",")]
    res = {(k, m, v): [] for k, m in kinds for v, _ in VARIANTS}
    for r in range(a.rounds):
        for k, m in kinds:
            order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
            for v, env in order:
                res[(k, m, v)].append(one(k, m, a.steps, env))
    print(f"MLP step (batch 32, AdamW), ms, median of {a.rounds} rounds (load average {os.getloadavg()[0]:.1f} at end)")
    print("| step | device thread | caller | caller / device thread | runs (device thread; caller) |")
    print("|---|---:|---:|---:|---|")
    for k, m in kinds:
        d, c = (res[(k, m, v)] for v, _ in VARIANTS)
        md, mc = statistics.median(d), statistics.median(c)
        runs = " ".join(f"{x:.3f}" for x in d) + "; " + " ".join(f"{x:.3f}" for x in c)
        print(f"| {k}, {m} | {md:.3f} | {mc:.3f} | {mc / md:.2f}× | {runs} |")


if __name__ == "__main__":
    main()
