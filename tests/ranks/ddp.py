"""Rank program: DistributedDataParallel on tpu. Each rank trains on its half of every batch; the
parameters must be bit-identical across ranks after 10 steps and match (1e-5) one process
training on the whole batch. Variants, all in one process group: "plain"; "unused" adds a branch
that gets no gradient and sets find_unused_parameters=True; "nosync" accumulates over two
micro-batches, the first under no_sync()."""
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH = 10, 16


class Net(nn.Module):
    def __init__(self, unused):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
        self.spare = nn.Linear(8, 4) if unused else None  # never used in forward

    def forward(self, x):
        return self.body(x)


def batches():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)) for _ in range(STEPS)]


def train(model, data, dev, nosync=False, ddp=False):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in data:
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad()
        if nosync:
            half = x.shape[0] // 2
            ctx = model.no_sync() if ddp else torch.enable_grad()
            with ctx:
                loss0 = nn.functional.mse_loss(model(x[:half]), y[:half]) / 2
                loss0.backward()
            loss1 = nn.functional.mse_loss(model(x[half:]), y[half:]) / 2
            loss1.backward()
            loss = loss0 + loss1
        else:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def check(variant):
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("tpu", 0)
    unused, nosync = variant == "unused", variant == "nosync"
    torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
    model = Net(unused).to(dev)
    ddp = DDP(model, device_ids=[0], find_unused_parameters=unused)
    data = batches()
    per = BATCH // world
    mine = [(x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]) for x, y in data]
    train(ddp, mine, dev, nosync=nosync, ddp=True)

    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(every, flat)
    for r in range(world):
        assert torch.equal(every[r].cpu(), flat.cpu()), f"rank {r}'s parameters differ from rank {rank}'s"

    torch.manual_seed(0)
    ref = Net(unused).to(dev)
    train(ref, data, dev, nosync=nosync)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach().cpu(), rtol=0, atol=1e-5, msg=lambda m: f"{name}: {m}")
    print(f"rank {rank}: ddp {variant} ok", flush=True)


def main(variants):
    dist.init_process_group()
    for v in variants:
        check(v)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:] or ["plain", "unused", "nosync"])
