"""Rank program: every collective of the tpu_gloo backend on tpu tensors, values checked against
hand-derived results, for float32, bfloat16 and int64. Run with torchrun (2 ranks or more)."""
import sys

import torch
import torch.distributed as dist

R = dist.ReduceOp


def same(got, want):
    assert got.device.type == "tpu", got.device
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


def values(rank, dtype, n=4):
    """rank r holds [r*10+1, r*10+2, ...]: small integers, exact in bfloat16."""
    return torch.arange(1, n + 1, dtype=torch.int64).to(dtype) + rank * 10


def check_reductions(rank, world, dev, dtype):
    every = [values(r, dtype).to(torch.float64) for r in range(world)]
    want = {
        R.SUM: sum(every),
        R.PRODUCT: torch.stack(every).prod(0),
        R.MIN: torch.stack(every).min(0).values,
        R.MAX: torch.stack(every).max(0).values,
    }
    if dtype.is_floating_point:
        want[R.AVG] = sum(every) / world
    for op, w in want.items():
        t = values(rank, dtype).to(dev)
        work = dist.all_reduce(t, op=op, async_op=True)
        work.wait()
        same(t, w.to(dtype))
        assert work.get_future().value()[0] is t or torch.equal(work.get_future().value()[0].cpu(), t.cpu())
    if dtype.is_floating_point:
        t = values(rank, dtype).to(dev)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        same(t, (sum(every) * 0.5).to(dtype))
    # reduce to rank 1
    t = values(rank, dtype).to(dev)
    dist.reduce(t, dst=1, op=R.SUM)
    if rank == 1:
        same(t, want[R.SUM].to(dtype))
    # reduce_scatter: list and tensor forms; rank r receives the sum of everyone's chunk r
    chunks = lambda r: [values(r, dtype) + 100 * j for j in range(world)]  # noqa: E731
    out = torch.zeros(4, dtype=dtype, device=dev)
    dist.reduce_scatter(out, [c.to(dev) for c in chunks(rank)], op=R.SUM)
    same(out, sum(chunks(r)[rank].to(torch.float64) for r in range(world)).to(dtype))
    out = torch.zeros(4, dtype=dtype, device=dev)
    dist.reduce_scatter_tensor(out, torch.cat(chunks(rank)).to(dev), op=R.SUM)
    same(out, sum(chunks(r)[rank].to(torch.float64) for r in range(world)).to(dtype))
    # coalesced: two all_reduces and two reduce_scatter_tensors, each batch issued as one call
    a, b = values(rank, dtype, 2).to(dev), values(rank, dtype, 3).to(dev)
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    same(a, sum(values(r, dtype, 2).to(torch.float64) for r in range(world)).to(dtype))
    same(b, sum(values(r, dtype, 3).to(torch.float64) for r in range(world)).to(dtype))
    o1, o2 = torch.zeros(4, dtype=dtype, device=dev), torch.zeros(4, dtype=dtype, device=dev)
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.reduce_scatter_tensor(o1, torch.cat(chunks(rank)).to(dev))
        dist.reduce_scatter_tensor(o2, torch.cat(chunks(rank)).to(dev) * 2)
    cm.wait()
    want_rs = sum(chunks(r)[rank].to(torch.float64) for r in range(world))
    same(o1, want_rs.to(dtype))
    same(o2, (want_rs * 2).to(dtype))
    if dtype.is_floating_point:
        out = torch.zeros(4, dtype=dtype, device=dev)
        dist.reduce_scatter_tensor(out, torch.cat(chunks(rank)).to(dev), op=R.AVG)
        same(out, (sum(chunks(r)[rank].to(torch.float64) for r in range(world)) / world).to(dtype))


def check_movement(rank, world, dev, dtype):
    t = values(rank, dtype).to(dev)
    dist.broadcast(t, src=1)
    same(t, values(1, dtype))
    # all_gather: list, into-tensor, coalesced
    outs = [torch.zeros(4, dtype=dtype, device=dev) for _ in range(world)]
    dist.all_gather(outs, values(rank, dtype).to(dev))
    for r in range(world):
        same(outs[r], values(r, dtype))
    big = torch.zeros(4 * world, dtype=dtype, device=dev)
    dist.all_gather_into_tensor(big, values(rank, dtype).to(dev))
    same(big, torch.cat([values(r, dtype) for r in range(world)]))
    a = torch.zeros(2 * world, dtype=dtype, device=dev)
    b = torch.zeros(3 * world, dtype=dtype, device=dev)
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_gather_into_tensor(a, values(rank, dtype, 2).to(dev))
        dist.all_gather_into_tensor(b, values(rank, dtype, 3).to(dev))
    cm.wait()
    same(a, torch.cat([values(r, dtype, 2) for r in range(world)]))
    same(b, torch.cat([values(r, dtype, 3) for r in range(world)]))
    # gather / scatter with root 0
    g = [torch.zeros(4, dtype=dtype, device=dev) for _ in range(world)] if rank == 0 else None
    dist.gather(values(rank, dtype).to(dev), g, dst=0)
    if rank == 0:
        for r in range(world):
            same(g[r], values(r, dtype))
    s = torch.zeros(4, dtype=dtype, device=dev)
    dist.scatter(s, [values(r, dtype).to(dev) * 2 for r in range(world)] if rank == 0 else None, src=0)
    same(s, values(rank, dtype) * 2)
    # all_to_all_single (even and uneven splits) and all_to_all (list)
    inp = torch.cat([values(rank, dtype, 2) + 1000 * j for j in range(world)]).to(dev)
    out = torch.zeros(2 * world, dtype=dtype, device=dev)
    dist.all_to_all_single(out, inp)
    same(out, torch.cat([values(r, dtype, 2) + 1000 * rank for r in range(world)]))
    in_splits = [j + 1 for j in range(world)]  # rank r sends j+1 elements to rank j
    inp = torch.cat([torch.full((j + 1,), rank * 10 + j, dtype=dtype) for j in range(world)]).to(dev)
    out = torch.zeros((rank + 1) * world, dtype=dtype, device=dev)
    dist.all_to_all_single(out, inp, output_split_sizes=[rank + 1] * world, input_split_sizes=in_splits)
    same(out, torch.cat([torch.full((rank + 1,), r * 10 + rank, dtype=dtype) for r in range(world)]))
    outs = [torch.zeros(3, dtype=dtype, device=dev) for _ in range(world)]
    dist.all_to_all(outs, [values(rank, dtype, 3).to(dev) + 100 * j for j in range(world)])
    for r in range(world):
        same(outs[r], values(r, dtype, 3) + 100 * rank)
    # send / recv around a ring, posted both ways before waiting
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = torch.zeros(4, dtype=dtype, device=dev)
    ops = [dist.P2POp(dist.irecv, got, prv), dist.P2POp(dist.isend, values(rank, dtype).to(dev), nxt)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    same(got, values(prv, dtype))
    if rank == 0:
        dist.send(values(7, dtype).to(dev), dst=1)
    elif rank == 1:
        got = torch.zeros(4, dtype=dtype, device=dev)
        dist.recv(got, src=0)
        same(got, values(7, dtype))


def check_staging_reused(rank, world, dev):
    """Collectives of one size reuse their host buffers, and a result stays intact after later
    collectives have reused the buffer it came through (non-contiguous inputs included)."""
    import torchtpu.distributed as td

    td.reset_traffic()
    got, want = [], []
    for i in range(6):
        base = torch.arange(64 * 32, dtype=torch.float32).reshape(64, 32) * (i + 1)
        x = (base + rank).to(dev)
        if i % 2:
            x = x.t()  # a transposed view: copied to the host in its logical order
        dist.all_reduce(x)
        got.append(x)
        w = sum(base + r for r in range(world))
        want.append(w.t() if i % 2 else w)
    for g, w in zip(got, want):
        same(g, w)
    t = td.traffic()
    assert t["staging_reused"] >= 5 and t["staging_made"] <= 1, t


def check_call_does_not_wait_for_peers(rank, world, dev):
    """An async all_reduce returns at once on a rank whose peers call it later (the agreement and the
    gloo collective wait on the group's issuer thread), and its wait() gives the reduced values."""
    import time

    late = 2.0
    x = values(rank, torch.float32).to(dev)
    x.cpu()  # on the device, so the call copies nothing that is still being computed
    if rank != 0:
        time.sleep(late)
    t0 = time.perf_counter()
    work = dist.all_reduce(x, async_op=True)
    called = time.perf_counter() - t0
    work.wait()
    waited = time.perf_counter() - t0
    same(x, sum(values(r, torch.float32) for r in range(world)))
    if rank == 0:
        assert called < late / 2, f"the call waited {called:.2f}s for the late rank"
        assert waited > late / 2, f"wait() returned after {waited:.2f}s, before the late rank called"
    print(f"rank {rank}: the call returned after {called:.3f}s, wait() after {waited:.3f}s", flush=True)


def main():
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("tpu", 0)
    assert dist.get_backend_config() == "tpu:tpu_gloo", dist.get_backend_config()
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        check_reductions(rank, world, dev, dtype)
        check_movement(rank, world, dev, dtype)
        print(f"rank {rank}: collectives ok for {dtype}", flush=True)
    check_staging_reused(rank, world, dev)
    print(f"rank {rank}: staging buffers reused", flush=True)
    check_call_does_not_wait_for_peers(rank, world, dev)
    print(f"rank {rank}: calls do not wait for peers", flush=True)
    dist.barrier()
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": r} for r in range(world)]
    dist.destroy_process_group()
    print(f"rank {rank}: done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
