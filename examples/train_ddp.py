"""train_ddp: data-parallel training with DistributedDataParallel on tpu.

    torchrun --nproc_per_node=2 examples/train_ddp.py            # tpu ranks, tpu_gloo backend
    torchrun --nproc_per_node=2 examples/train_ddp.py --device cpu   # the same on CPU with gloo
"""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from dist_common import make_model, parse_args, report, setup, train


def main():
    args = parse_args(__doc__)
    rank, world, dev = setup(args.device)
    model = DDP(make_model(args.hidden).to(dev), device_ids=[dev.index] if dev.type == "tpu" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times, moved = train(model, opt, dev, args, rank, world, count_from=1)
    report("DDP", rank, dev, losses, times, moved, args.steps - 1)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
