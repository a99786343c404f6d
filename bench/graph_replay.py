"""Host time per training step of a small MLP (batch 32, AdamW): eager in fused mode, a TPUGraph replay
and torch.compile(backend="tpu"). Each step's host time is the time to issue it (the batch copied into
the device, the step launched); the device is synchronized after each step outside the timed part, so
work never queues up. Medians over the steps after warm-up, then the median over rounds. Before timing,
each variant's losses are checked against CPU eager.

    python bench/graph_replay.py --steps 50 --rounds 3
"""
import argparse
import copy
import statistics
import time

import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    )


def step(m, opt, x, y):
    opt.zero_grad(set_to_none=False)
    loss = F.mse_loss(m(x), y)
    loss.backward()
    opt.step()
    return loss


def data(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(32, 64, generator=g), torch.randn(32, 10, generator=g)) for _ in range(n)]


def run(kind, batches, warm=3):
    m = model().to("tpu")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, capturable=True)
    sx, sy = torch.zeros(32, 64, device="tpu"), torch.zeros(32, 10, device="tpu")
    if kind == "graph":
        for x, y in batches[:warm]:
            sx.copy_(x), sy.copy_(y)
            loss = step(m, opt, sx, sy)
        g = torch.tpu.TPUGraph()
        with torch.tpu.graph(g):
            static_loss = step(m, opt, sx, sy)

        def issue(x, y):
            sx.copy_(x), sy.copy_(y)
            g.replay()
            return static_loss
        rest = batches[warm:]
        losses = []
    else:
        fn = torch.compile(step, backend="tpu") if kind == "compiled" else step

        def issue(x, y):
            sx.copy_(x), sy.copy_(y)
            return fn(m, opt, sx, sy)
        rest = batches
        losses = []
    times = []
    ctx = torch.tpu.mode("fused") if kind == "eager_fused" else torch.tpu.mode(torch.tpu.get_mode())
    with ctx:
        for x, y in rest:
            t0 = time.perf_counter()
            loss = issue(x, y)
            times.append(time.perf_counter() - t0)
            torch.tpu.synchronize()
            losses.append(loss.item())
    if kind == "graph":
        g.reset()
    return times, losses


def cpu_losses(batches):
    m = model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    return [step(m, opt, x, y).item() for x, y in batches]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    batches = data(a.steps)
    ref = cpu_losses(batches)
    kinds = ["eager_fused", "graph", "compiled"]
    med = {k: [] for k in kinds}
    for _ in range(a.rounds):
        for k in kinds:
            times, losses = run(k, copy.copy(batches))
            want = ref[len(ref) - len(losses):]
            worst = max(abs(p - q) / max(1.0, abs(q)) for p, q in zip(losses, want))
            assert worst < 1e-4, f"{k}: losses differ from CPU eager by {worst}"
            med[k].append(statistics.median(times[5:]))
    res = {k: statistics.median(v) for k, v in med.items()}
    print(f"MLP 64-256-256-10, batch 32, AdamW(capturable); host time per step, median of {a.rounds} rounds")
    print("| variant | host us/step | vs graph replay |")
    print("|---|---|---|")
    for k in kinds:
        print(f"| {k} | {res[k] * 1e6:.0f} | {res[k] / res['graph']:.1f}x |")


if __name__ == "__main__":
    main()
