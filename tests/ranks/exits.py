"""Rank program for the clean-exit check: a 2-rank job that does one tpu all_reduce, calls
destroy_process_group() and exits must exit 0, every time.

    exits.py N DIR [exec]
                     (under torchrun) run the job N times, each time in fresh processes, and report
                     "rank R: exits: N runs, A aborted, F failed in S s" plus the output of any bad
                     run. A run fails when it exits non-zero or leaves a tpu_gloo thread running
                     after destroy_process_group; it aborted when it died of SIGABRT.

Starting Python and importing torch is most of a run's cost, so each rank imports torch once
(without the tpu device) and forks a child per run; the child imports torchtpu, which
initializes the device, runs the job on a port the ranks agreed on (through files in DIR)
and leaves by finalizing the interpreter as any script does. With "exec", each run starts a
new interpreter instead (`exits.py once`), as torchrun would: slower, the same exit path.
"""
import os
import sys

if sys.argv[1:2] != ["once"]:
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the device is initialized in each child only

import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def once(rank):
    import torchtpu  # noqa: F401

    dist.init_process_group()
    t = torch.full((4,), float(rank + 1), device="tpu:0")
    dist.all_reduce(t)
    assert t.cpu().tolist() == [3.0] * 4, t.cpu()
    dist.destroy_process_group()
    # The group's waiter thread must be gone: one still running when the interpreter finalizes
    # can terminate the process.
    left = [th.name for th in threading.enumerate() if th.name.startswith("tpu_gloo")]
    print(f"rank {rank}: destroyed, tpu_gloo threads left: {left}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(port):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHELASTIC_")}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    return env


def run_child(rank, port, log, fresh):
    """Start the child of a run, writing to log; returns its pid. A forked child never returns
    from here: it raises SystemExit after the job, so that the interpreter finalizes as at the end
    of a script."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    if fresh:
        pid = subprocess.Popen([sys.executable, os.path.abspath(__file__), "once", str(rank)], env=child_env(port),
                               stdout=fd, stderr=fd).pid
        os.close(fd)
        return pid
    pid = os.fork()
    if pid:
        os.close(fd)
        return pid
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    env = child_env(port)
    os.environ.clear()
    os.environ.update(env)
    once(rank)
    raise SystemExit(0)


def wait_child(pid, timeout=120):
    """The child's exit status as subprocess reports it (negative: the signal), killing it on a hang."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hung"
        time.sleep(0.02)


def publish(folder, name, value):
    tmp = os.path.join(folder, f".{name}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(value)
    os.rename(tmp, os.path.join(folder, name))


def read(folder, name, timeout=120):
    """The value another rank published under name, waiting for it."""
    path, deadline = os.path.join(folder, name), time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {name} in {folder} after {timeout}s")
        time.sleep(0.02)
    with open(path) as f:
        return f.read()


def repeat(n, folder, fresh):
    # The ranks agree through files in folder: a store object would be copied into each child.
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    aborted = failed = 0
    start = time.monotonic()
    for i in range(n):
        if rank == 0:
            publish(folder, f"port{i}", str(free_port()))
        port = int(read(folder, f"port{i}"))
        log = os.path.join(folder, f"run{i}-rank{rank}.log")
        code = wait_child(run_child(rank, port, log, fresh))
        with open(log) as f:
            out = f.read()
        if "terminate called" in out or code == -signal.SIGABRT:
            aborted += 1
        elif code != 0 or f"rank {rank}: destroyed, tpu_gloo threads left: []" not in out:
            failed += 1
        if code != 0 or "threads left: []" not in out:
            print(f"rank {rank}: run {i} exited with {code}:\n{out[-2000:]}", flush=True)
        publish(folder, f"done{i}-{rank}", "")
        for r in range(world):  # every child has finished before the next run
            read(folder, f"done{i}-{r}")
    print(f"rank {rank}: exits: {n} runs, {aborted} aborted, {failed} failed "
          f"in {time.monotonic() - start:.1f}s", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "once":
        once(int(sys.argv[2]))
    else:
        repeat(int(sys.argv[1]), sys.argv[2], fresh=sys.argv[3:] == ["exec"])
