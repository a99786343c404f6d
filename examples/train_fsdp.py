"""train_fsdp: fully sharded data parallel (FSDP2, fully_shard per block and the root) on tpu.

    torchrun --nproc_per_node=2 examples/train_fsdp.py            # tpu ranks, tpu_gloo backend
    torchrun --nproc_per_node=2 examples/train_fsdp.py --bf16     # bfloat16 compute, fp32 master weights
    torchrun --nproc_per_node=2 examples/train_fsdp.py --device cpu   # the same on CPU with gloo
"""
import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from dist_common import make_model, parse_args, report, setup, train


def main():
    args = parse_args(__doc__)
    rank, world, dev = setup(args.device)
    model = make_model(args.hidden).to(dev)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if args.bf16 else None
    # The default mesh is on the current accelerator (tpu); a CPU run names its own.
    mesh = init_device_mesh(dev.type, (world,))
    kw = {"mp_policy": mp, "mesh": mesh} if mp else {"mesh": mesh}
    for block in model:
        fully_shard(block, **kw)
    fully_shard(model, **kw)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times, moved = train(model, opt, dev, args, rank, world, count_from=0)
    report("FSDP2" + (" bf16" if args.bf16 else ""), rank, dev, losses, times, moved, args.steps)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
