"""Launching rank programs for the distributed tests: torchrun (or plain processes) with a hard
timeout, so that a hang fails the test instead of stalling the run."""
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(script, *args, nproc=2, timeout=240, env=None):
    """Run script on nproc ranks under torchrun; returns its combined output, asserting exit code 0."""
    rc, out, _ = torchrun_outcome(script, *args, nproc=nproc, timeout=timeout, env=env)
    assert rc == 0, f"{script} {args} failed with {rc}:\n{out[-6000:]}"
    return out


def processes(script, *args, nproc=2, timeout=120):
    """Start nproc ranks as plain processes (no launcher that kills the survivors when one dies);
    returns [(returncode, output)] per rank, failing on a hang."""
    port = free_port()
    procs = []
    for r in range(nproc):
        env = _env({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(r),
                    "WORLD_SIZE": str(nproc), "LOCAL_RANK": str(r)})
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, script), *args], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            results.append((p.returncode, out))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.communicate()
        raise AssertionError(f"{script} {args} hung for {timeout}s") from None
    return results


def torchrun_outcome(script, *args, nproc=2, timeout=120, env=None):
    """Run script on nproc ranks under torchrun, whatever its exit code: returns (returncode,
    output, seconds). On a hang the whole job (torchrun, its ranks and their children) is killed and
    the test fails."""
    import signal
    import time

    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
           f"--master_port={free_port()}", os.path.join(HERE, script), *args]
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # torchrun starts each rank in a session of its own: kill the whole tree, ranks first.
        for pid in _descendants(p.pid) + [p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, _ = p.communicate(timeout=30)
        raise AssertionError(f"{script} {args} hung for {timeout}s:\n{out[-6000:]}") from None
    return p.returncode, out, time.monotonic() - start


def _descendants(pid):
    """The pids of every process below pid (read from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
