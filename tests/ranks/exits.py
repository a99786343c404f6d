"""Rank program for the clean-exit check: a 2-rank job that does one tpu all_reduce, calls
destroy_process_group() and exits must exit 0, every time.

    exits.py N      (under torchrun) run the job N times, each time in fresh processes: both ranks
                    start a child "exits.py once" on a port they agree on, wait for it and report
                    "rank R: exits: N runs, A aborted, F failed" plus the output of any bad run
                    (a run fails when it exits non-zero or leaves a tpu_gloo thread running)
    exits.py once   one run of the job (a child; RANK, WORLD_SIZE and MASTER_PORT come from its parent)
"""
import os
import subprocess
import sys
import threading
import time

import torch
import torch.distributed as dist


def once():
    dist.init_process_group()
    rank = dist.get_rank()
    t = torch.full((4,), float(rank + 1), device="tpu:0")
    dist.all_reduce(t)
    assert t.cpu().tolist() == [3.0] * 4, t.cpu()
    dist.destroy_process_group()
    # The group's waiter thread must be gone: one still running when the interpreter finalizes
    # can terminate the process.
    left = [th.name for th in threading.enumerate() if th.name.startswith("tpu_gloo")]
    print(f"rank {rank}: destroyed, tpu_gloo threads left: {left}", flush=True)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def repeat(n):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    aborted = failed = 0
    start = time.monotonic()
    for i in range(n):
        port = [free_port() if rank == 0 else None]
        dist.broadcast_object_list(port, src=0)
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port[0]))
        for k in [k for k in env if k.startswith("TORCHELASTIC_")]:
            env.pop(k)
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "once"], env=env, capture_output=True,
                           text=True, timeout=120)
        out = p.stdout + p.stderr
        if "terminate called" in out or p.returncode == -6:
            aborted += 1
        elif p.returncode != 0 or f"rank {rank}: destroyed, tpu_gloo threads left: []" not in out:
            failed += 1
        if p.returncode != 0 or "threads left: []" not in out:
            print(f"rank {rank}: run {i} exited with {p.returncode}:\n{out[-2000:]}", flush=True)
        dist.barrier()
    print(f"rank {rank}: exits: {n} runs, {aborted} aborted, {failed} failed "
          f"in {time.monotonic() - start:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] == "once":
        once()
    else:
        repeat(int(sys.argv[1]))
