"""train_ddp: data-parallel training with DistributedDataParallel on tpu.

    torchrun --nproc_per_node=2 examples/train_ddp.py            # tpu ranks, tpu_gloo backend
    torchrun --nproc_per_node=2 examples/train_ddp.py --device cpu   # the same on CPU with gloo
"""
import time

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from dist_common import batches, make_model, parse_args, report, setup, sync, traffic


def main():
    args = parse_args(__doc__)
    rank, world, dev = setup(args.device)
    model = DDP(make_model(args.hidden).to(dev), device_ids=[dev.index] if dev.type == "tpu" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times = [], []
    start_bytes = None
    for step, (x, y) in enumerate(batches(args.steps, args.batch, rank, world)):
        if step == 1:
            start_bytes = traffic(dev)  # after DDP's setup broadcasts
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
    report("DDP", rank, dev, losses, times, moved, args.steps - 1)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
