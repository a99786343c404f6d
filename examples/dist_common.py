"""Shared pieces of the distributed examples: process group setup, the model, data and a report."""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--device", default="tpu", help="tpu (tpu_gloo backend) or cpu (gloo)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64, help="global batch, split across ranks")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--bf16", action="store_true", help="FSDP2: bfloat16 parameters in compute")
    return ap.parse_args()


def setup(device_type):
    """Join the process group and pick this rank's device (tpu:LOCAL_RANK modulo the device count)."""
    if device_type == "tpu":
        dist.init_process_group()  # tpu_gloo is the default backend for tpu tensors
        dev = torch.device("tpu", int(os.environ.get("LOCAL_RANK", "0")) % torch.tpu.device_count())
        torch.tpu.set_device(dev)
    else:
        dist.init_process_group("gloo")
        dev = torch.device("cpu")
    return dist.get_rank(), dist.get_world_size(), dev


def make_model(hidden):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Sequential(nn.Linear(64, hidden), nn.GELU()),
        nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()),
        nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()),
        nn.Linear(hidden, 10),
    )


def batches(steps, batch, rank, world):
    """The same global batches on every rank; each rank keeps its slice."""
    g = torch.Generator().manual_seed(1)
    w = torch.randn(64, 10, generator=g)
    per = batch // world
    for _ in range(steps):
        x = torch.randn(batch, 64, generator=g)
        y = (x @ w).argmax(1)
        yield x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]


def sync(dev):
    if dev.type != "cpu":
        torch.accelerator.synchronize()


def traffic(dev):
    if dev.type == "tpu":
        import torchtpu.distributed as td

        return td.traffic()["bytes"]
    return None


def report(name, rank, dev, losses, times, moved_bytes, steps):
    if rank != 0:
        return
    ts = sorted(times[3:] or times)
    per_step = "n/a" if moved_bytes is None else f"{moved_bytes / steps / 1e6:.2f} MB"
    print(f"{name} on {dev.type}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, median step {ts[len(ts) // 2] * 1e3:.1f} ms, "
          f"collective input per step per rank {per_step}")


def train(model, opt, dev, args, rank, world, count_from=0):
    """Runs args.steps training steps; returns the losses, step times and the collective bytes moved
    from step count_from on (earlier steps may carry one-time setup traffic)."""
    losses, times = [], []
    start_bytes = None
    for step, (x, y) in enumerate(batches(args.steps, args.batch, rank, world)):
        if step == count_from:
            start_bytes = traffic(dev)
        sync(dev)
        t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        sync(dev)
        times.append(time.perf_counter() - t0)
    moved = None if start_bytes is None else traffic(dev) - start_bytes
    return losses, times, moved
