"""Rank program: DTensor on a 2-device tpu mesh: distribute_tensor with Shard/Replicate, a sharded
matmul, redistribute, full_tensor, and tensor-parallel parallelize_module on an MLP, each against
the unsharded computation."""
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


def close(got, want, tol=1e-5):
    torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)


def main():
    mesh = init_device_mesh("tpu", (2,))
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(8, 6, generator=g), torch.randn(6, 10, generator=g)

    da = distribute_tensor(a.to("tpu"), mesh, [Shard(0)])
    db = distribute_tensor(b.to("tpu"), mesh, [Replicate()])
    assert da.to_local().shape == (4, 6) and da.to_local().device.type == "tpu"
    close(da.to_local(), a[rank * 4:(rank + 1) * 4])
    prod = da @ db
    assert prod.placements == (Shard(0),)
    close(prod.full_tensor(), a @ b)
    # contraction dimension sharded: the product is a partial sum until redistributed
    ka = distribute_tensor(a.to("tpu"), mesh, [Shard(1)])
    kb = distribute_tensor(b.to("tpu"), mesh, [Shard(0)])
    close((ka @ kb).redistribute(mesh, [Replicate()]).to_local(), a @ b)
    col = da.redistribute(mesh, [Shard(1)])
    assert col.to_local().shape == (8, 3)
    close(col.to_local(), a[:, rank * 3:(rank + 1) * 3])
    close(col.redistribute(mesh, [Replicate()]).to_local(), a)
    print(f"rank {rank}: dtensor ok", flush=True)

    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
    tp = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
    tp.load_state_dict(ref.state_dict())
    tp = parallelize_module(tp.to("tpu"), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(5, 6, generator=g)
    out = tp(x.to("tpu"))
    want = ref(x)
    close(out, want.detach())
    out.sum().backward()
    want.sum().backward()
    close(tp[0].weight.grad.full_tensor(), ref[0].weight.grad)
    close(tp[2].weight.grad.full_tensor(), ref[2].weight.grad)
    print(f"rank {rank}: tensor parallel ok", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
