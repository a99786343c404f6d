"""Rank program for the fault checks: what each rank sees when a collective cannot complete.

    faults.py BACKEND CHECK[,CHECK...]

BACKEND is "tpu" (tpu_gloo on tpu tensors) or "cpu" (gloo on CPU tensors, the reference).
The checks run in order in one process group (10 s timeout):
  kinds   rank 0 all_reduces while rank 1 broadcasts
  roots   both broadcast, each rank naming itself the root
  shapes  rank r all_reduces 4 + r elements
  after   a correct all_reduce (the group still works after the mismatches)
  kill    rank 1 is SIGKILLed right after it issued its all_reduce of 8M elements (0.5 s after
          rank 0 started its own); rank 0 waits on the future, then on the Work, then tries a
          second all_reduce
  unread  rank 1's input cannot be copied to the host (tpu only: its copy raises, injected at the
          staging pool's host copy); both ranks all_reduce
  raise   rank 1 raises before the all_reduce (an uncaught exception ends it)
  stall   rank 1 raises before the all_reduce, catches it and sleeps past the timeout
For each check a rank prints one line:
  rank R: CHECK: raised after S.SSs: Type: message | holds WHAT
  rank R: CHECK: returned after S.SSs | holds WHAT
where WHAT says what the tensor holds afterwards: "its input", "the result" or how many elements
are neither. Each rank ends with "rank R: done". torchrun's SIGTERM (sent when a rank dies) is
ignored so that the survivor can report; an alarm ends a rank that hangs.
"""
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def say(line):
    """Writes one line of the report in a single write: torchrun's workers run unbuffered, and two ranks
    share the pipe, so a print's text and its newline could land on either side of the other rank's line."""
    os.write(1, (line + "\n").encode())


TIMEOUT = 10


def pattern(n, rank):
    """Rank r's input: (r + 1) * [1, 2, ..., 1000, 1, 2, ...]; every element exact in float32."""
    return (torch.arange(n, dtype=torch.float32) % 1000 + 1) * (rank + 1)


def holds(t, given, result):
    """What t holds after a collective: "its input", "the result", or a count of each."""
    t = t.cpu()
    if torch.equal(t, given):
        return "its input"
    if result is not None and t.shape == result.shape and torch.equal(t, result):
        return "the result"
    same_in = (t == given).sum().item() if t.shape == given.shape else 0
    same_out = (t == result).sum().item() if result is not None and t.shape == result.shape else 0
    return f"a mix: {same_in} input, {same_out} result, {t.numel() - same_in - same_out} other of {t.numel()}"


def attempt(rank, check, run, t, given, result):
    """Run a collective that is expected to fail and print what happened; returns the error or None."""
    start = time.monotonic()
    try:
        run()
        err = None
    except Exception as e:  # the check reports whatever was raised
        err = e
    took = time.monotonic() - start
    what = holds(t, given, result)
    if err is None:
        say(f"rank {rank}: {check}: returned after {took:.2f}s | holds {what}")
    else:
        msg = " ".join(str(err).split())[:300]
        say(f"rank {rank}: {check}: raised after {took:.2f}s: {type(err).__name__}: {msg} | holds {what}")
    return err


def sync(dev):
    if dev.type == "tpu":
        torch.tpu.synchronize()


def run_check(check, rank, dev):
    world = 2
    if check == "kinds":
        given = pattern(8, rank)
        t = given.to(dev)
        if rank == 0:
            attempt(rank, check, lambda: (dist.all_reduce(t), sync(dev)), t, given, pattern(8, 0) + pattern(8, 1))
        else:
            attempt(rank, check, lambda: (dist.broadcast(t, src=0), sync(dev)), t, given, pattern(8, 0))
    elif check == "roots":
        given = pattern(8, rank)
        t = given.to(dev)
        attempt(rank, check, lambda: (dist.broadcast(t, src=rank), sync(dev)), t, given, None)
    elif check == "shapes":
        given = pattern(4 + rank, rank)
        t = given.to(dev)
        attempt(rank, check, lambda: (dist.all_reduce(t), sync(dev)), t, given, None)
    elif check == "after":
        t = pattern(8, rank).to(dev)
        dist.all_reduce(t)
        want = sum(pattern(8, r) for r in range(world))
        assert torch.equal(t.cpu(), want), t.cpu()
        say(f"rank {rank}: after: all_reduce ok")
    elif check == "kill":
        n = 8 << 20
        given = pattern(n, rank)
        t = given.to(dev)
        want = pattern(n, 0) + pattern(n, 1)
        sync(dev)
        dist.barrier()
        if rank == 1:
            time.sleep(0.5)  # rank 0 is inside its all_reduce by now
            dist.all_reduce(t, async_op=True)
            os.kill(os.getpid(), signal.SIGKILL)
        future = []

        def run():
            work = dist.all_reduce(t, async_op=True)
            try:
                work.get_future().wait()
                future.append("returned")
            except Exception as e:  # reported below
                future.append(f"raised {type(e).__name__}: {' '.join(str(e).split())[:200]}")
            work.wait()
            sync(dev)

        attempt(rank, check, run, t, given, want)
        say(f"rank {rank}: kill-future: {future[0]}")
        again = pattern(4, rank).to(dev)
        attempt(rank, "kill-next", lambda: (dist.all_reduce(again), sync(dev)), again, pattern(4, rank), None)
    elif check == "unread":
        from torchtpu.distributed.staging import StagingPool

        given = pattern(8, rank)
        t = given.to(dev)
        if rank == 1:
            real = StagingPool.copy_of

            def failing(pool, x, held):
                StagingPool.copy_of = real  # once
                raise RuntimeError("injected: the device could not copy this tensor to the host")

            StagingPool.copy_of = failing
        attempt(rank, check, lambda: (dist.all_reduce(t), sync(dev)), t, given, pattern(8, 0) + pattern(8, 1))
    elif check in ("raise", "stall"):
        given = pattern(8, rank)
        t = given.to(dev)
        dist.barrier()
        if rank == 1:
            if check == "raise":
                raise ValueError("rank 1 fails before the all_reduce")
            try:
                raise ValueError("rank 1 fails before the all_reduce")
            except ValueError:
                time.sleep(TIMEOUT + 5)
                os._exit(5)
        attempt(rank, check, lambda: (dist.all_reduce(t), sync(dev)), t, given, pattern(8, 0) + pattern(8, 1))
    else:
        raise SystemExit(f"unknown check {check!r}")


def main(backend, checks):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.alarm(120)
    if backend == "tpu":
        dist.init_process_group(timeout=datetime.timedelta(seconds=TIMEOUT))
        dev = torch.device("tpu", 0)
    else:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
        dev = torch.device("cpu")
    rank = dist.get_rank()
    dist.barrier()
    for check in checks.split(","):
        run_check(check, rank, dev)
    say(f"rank {rank}: done")
    # A failed group cannot be torn down cleanly (its peers are gone): leave without the teardown.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
