"""Rank program: FSDP2 (fully_shard per block and the root) on tpu against DDP, bf16 mixed
precision, and a sharded torch.distributed.checkpoint save. argv[1] is the checkpoint folder."""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH = 10, 16


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Sequential(nn.Linear(8, 32), nn.Tanh()),
        nn.Sequential(nn.Linear(32, 32), nn.Tanh()),
        nn.Linear(32, 4),
    )


def shard(model, mp=None):
    kw = {"mp_policy": mp} if mp is not None else {}
    for block in model:
        fully_shard(block, **kw)
    fully_shard(model, **kw)
    return model


def data(rank, world):
    g = torch.Generator().manual_seed(1)
    per = BATCH // world
    out = []
    for _ in range(STEPS):
        x, y = torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)
        out.append((x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]))
    return out


def train(model, batches, dev):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main(ckpt):
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("tpu", 0)
    batches = data(rank, world)

    ddp_losses = train(DDP(make_model().to(dev), device_ids=[0]), batches, dev)
    model = shard(make_model().to(dev))
    fsdp_losses = train(model, batches, dev)
    for step, (a, b) in enumerate(zip(fsdp_losses, ddp_losses)):
        assert abs(a - b) <= 1e-5, f"step {step}: FSDP2 loss {a} vs DDP loss {b}"
    print(f"rank {rank}: fsdp2 matches ddp {fsdp_losses[-1]:.6f}", flush=True)

    # The sharded parameters are DTensors; their full values agree with an unsharded copy.
    w = model[0][0].weight
    assert type(w).__name__ == "DTensor" and w.to_local().shape[0] == 32 // world
    full = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    dcp.save(model.state_dict(), checkpoint_id=ckpt)
    if rank == 0:
        torch.save(full, os.path.join(ckpt, "full_reference.pt"))
    print(f"rank {rank}: checkpoint saved", flush=True)

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    bf = shard(make_model().to(dev), mp)
    bf_losses = train(bf, batches, dev)
    assert bf[0][0].weight.dtype == torch.float32
    assert bf_losses[-1] < 0.8 * bf_losses[0], bf_losses
    for a, b in zip(bf_losses, fsdp_losses):
        assert abs(a - b) <= 0.05 * max(1.0, abs(b)), (bf_losses, fsdp_losses)
    print(f"rank {rank}: fsdp2 bf16 trains {bf_losses[0]:.4f} -> {bf_losses[-1]:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
