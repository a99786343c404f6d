"""Rank program for the failure checks. argv[1]:
  mismatch  ranks pass all_reduce tensors of different sizes: every rank gets a RuntimeError
  die       rank 1 exits before the collective: rank 0 gets a RuntimeError within the timeout
Each rank prints "rank R: error: ..." for the error it caught and exits 0; a hang is a failure."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main(what):
    dist.init_process_group("cpu:gloo,tpu:tpu_gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    dev = torch.device("tpu", 0)
    dist.barrier(device_ids=[0])
    if what == "mismatch":
        t = torch.ones(4 + rank, device=dev)
    else:
        t = torch.ones(4, device=dev)
        if rank == 1:
            os._exit(3)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        torch.tpu.synchronize()
    except RuntimeError as e:
        msg = str(e).splitlines()[0][:200]
        print(f"rank {rank}: error after {time.monotonic() - start:.1f}s: {msg}", flush=True)
        os._exit(0)
    print(f"rank {rank}: no error, got {t.cpu().tolist()}", flush=True)
    os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
