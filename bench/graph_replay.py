"""Host time per training step of a small MLP (batch 32, AdamW): eager in fused mode, a TPUGraph replay
and torch.compile(backend="tpu"). Each step's host time is the time to issue it (the batch copied into
the device, the step launched); the device is synchronized after each step outside the timed part, so
work never queues up. Medians over the steps after warm-up, then the median over rounds. Before timing,
each variant's losses are checked against CPU eager.

    python bench/graph_replay.py --steps 50 --rounds 3

It also times replay() alone and prints how much of it the plugin's launch took (the launch floor) and
how much lies above it.
"""
import argparse
import copy
import os
import sys
import statistics
import time

import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


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
    alone = None
    if kind == "graph":
        alone = replay_host(g)
        g.reset()
    return times, losses, alone


def replay_host(g, n=200):
    """Host time of g.replay() alone (static inputs unchanged) and the plugin's launch time inside it
    (execute_launch_seconds per execution), medians of n replays, each synchronized outside the timed part."""
    times, launches = [], []
    for _ in range(n):
        m0 = torch.tpu.metrics()
        t0 = time.perf_counter()
        g.replay()
        times.append(time.perf_counter() - t0)
        m1 = torch.tpu.metrics()
        assert m1["executions"] - m0["executions"] == 1
        launches.append(m1["execute_launch_seconds"] - m0["execute_launch_seconds"])
        torch.tpu.synchronize()
    return statistics.median(times), statistics.median(launches)


def gpt_replay_host():
    """replay_host of the GPT peer step (bench/peer_workloads_torch.py: 4 layers, C=128, T=64, B=12, AdamW)."""
    import peer_workloads_torch as w
    m = w.make_model("gpt").to("tpu")
    opt = w.make_optimizer("gpt", m.parameters(), capturable=True)
    g = torch.Generator().manual_seed(0)
    vocab = m.head.out_features
    x = torch.randint(0, vocab, (w.GPT["batch"], w.GPT["ctx"]), generator=g).to("tpu")
    y = torch.randint(0, vocab, (w.GPT["batch"], w.GPT["ctx"]), generator=g).to("tpu")

    def gpt_step():
        logits = m(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()
    gpt_step().item()
    graph = torch.tpu.TPUGraph()
    with torch.tpu.graph(graph):
        gpt_step()
    out = replay_host(graph, n=50)
    graph.reset()
    return out


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
    replay_only = []
    for _ in range(a.rounds):
        for k in kinds:
            times, losses, alone = run(k, copy.copy(batches))
            if alone:
                replay_only.append(alone)
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
    with torch.tpu.mode("fused"):
        gpt = [gpt_replay_host() for _ in range(a.rounds)]
    host = statistics.median(h for h, _ in replay_only)
    launch = statistics.median(l for _, l in replay_only)
    print(f"\nreplay() alone, static inputs unchanged: host {host * 1e6:.1f} us, of which the plugin's launch "
          f"{launch * 1e6:.1f} us; above the launch: {(host - launch) * 1e6:.1f} us (medians of 200 replays, of {a.rounds} rounds)")
    host = statistics.median(h for h, _ in gpt)
    launch = statistics.median(l for _, l in gpt)
    print(f"the GPT peer step's replay() alone: host {host * 1e6:.1f} us, of which the plugin's launch "
          f"{launch * 1e6:.1f} us; above the launch: {(host - launch) * 1e6:.1f} us (medians of 50 replays, of {a.rounds} rounds)")


if __name__ == "__main__":
    main()
