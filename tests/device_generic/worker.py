"""Runs one test file's instantiated classes in pytest subprocesses and gathers one record per test.

A worker is `python -m pytest FILE -p tests.device_generic.plugin`, writing its events line by line. The watcher
kills a worker whose events stop for longer than the per-test limit plus a grace period (a hang where no Python
runs, so SIGALRM cannot interrupt it) or that outlives the file's budget. When a worker dies or is killed, the
test it was running is recorded as "crash" or "timeout" and a new worker continues with the tests not yet run.
"""
import json
import os
import signal
import sys
import time

from tests import fork_server

BUDGET = "file budget spent"
STARTUP = 300  # seconds a worker may take to import and collect, on top of the stall limit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What every worker imports besides torch, held by the fork server the workers start from
# (tests/fork_server.py). Not torch's testing modules: they decide which device types get test classes when
# they are imported, and the server has not loaded the tpu backend.
PRELOAD = ("pytest",)


def read_events(path):
    """Returns the JSON events of a file, leaving out a last line cut short by a crash."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except FileNotFoundError:
        pass
    return out


def worker_env(device, extra=None):
    """Returns the environment of a worker: the clone's packages first, the device under test chosen for
    instantiate_device_type_tests, and for the CPU reruns no tpu backend at all."""
    env = dict(os.environ)
    paths = [os.path.join(ROOT, "python"), ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = ":".join(paths)
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = device
    env.setdefault("OMP_NUM_THREADS", "1")
    if device == "cpu":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    env.update(extra or {})
    return env


def tail_of(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return [ln.rstrip() for ln in f.readlines() if ln.strip()][-n:]
    except FileNotFoundError:
        return []


def run_file(testdir, name, device, workdir, test_timeout, file_timeout, only=None, keyword=None, no_opinfo=False,
             per_worker=0, grace=60, extra_env=None, log=print):
    """Runs the device's tests of testdir/name; returns (collected ids in order, {id: record}, file errors).

    A record has outcome (passed, failed, skipped, xfailed, timeout, crash, notrun), msg (the first line of the
    error or skip reason), site, text and dur. only restricts the run to those node ids, keyword is pytest's -k,
    no_opinfo leaves out the tests @ops makes, and per_worker (when not 0) is the number of tests after which a
    worker exits and a fresh one goes on."""
    os.makedirs(workdir, exist_ok=True)
    tag = f"{os.path.splitext(name)[0]}-{device}"
    collected, records, errors = None, {}, []
    deadline = time.time() + file_timeout
    attempt = 0
    only_path = None
    if only is not None:
        only_path = os.path.join(workdir, f"{tag}.only")
        with open(only_path, "w") as f:
            f.write("\n".join(only) + "\n")
    while True:
        attempt += 1
        events_path = os.path.join(workdir, f"{tag}-{attempt}.jsonl")
        log_path = os.path.join(workdir, f"{tag}-{attempt}.log")
        skip_path = os.path.join(workdir, f"{tag}-{attempt}.skip")
        if os.path.exists(events_path):
            os.remove(events_path)
        with open(skip_path, "w") as f:
            f.write("\n".join(records) + "\n")
        cmd = [sys.executable, "-m", "pytest", name, "-q", "-p", "no:cacheprovider", "-p",
               "tests.device_generic.plugin", "--rootdir", testdir, "--dg-events", events_path, "--dg-device",
               device, "--dg-skip", skip_path, "--dg-test-timeout", str(test_timeout)]
        if only_path:
            cmd += ["--dg-only", only_path]
        if keyword:
            cmd += ["-k", keyword]
        if no_opinfo:
            cmd.append("--dg-no-opinfo")
        if per_worker:
            cmd += ["--dg-max-tests", str(per_worker)]
        status = watch(cmd, testdir, worker_env(device, extra_env), events_path, log_path, test_timeout + grace,
                       deadline)
        events = read_events(events_path)
        for e in events:
            if e["ev"] == "collected" and collected is None:
                collected = e["ids"]
            elif e["ev"] == "collect_error" and attempt == 1:
                errors.append(e["msg"])
            elif e["ev"] == "result":
                records[e["id"]] = {k: e.get(k) for k in ("outcome", "msg", "site", "text", "dur", "engine")}
        if collected is None:
            if not errors:
                errors.append(f"the worker collected nothing ({status}); log: " + " | ".join(tail_of(log_path)))
            break
        if any(e["ev"] == "done" for e in events):
            if all(tid in records for tid in collected):
                break
            continue  # the worker ran its share (per_worker): a fresh one takes the rest
        # The worker stopped before the end: blame the test it had started and not finished.
        started = [e["id"] for e in events if e["ev"] == "start"]
        running = started[-1] if started and started[-1] not in records else None
        stalled = status.startswith("no progress") or status == BUDGET
        if running is not None:
            outcome = "timeout" if stalled else "crash"
            records[running] = dict(outcome=outcome, msg=f"{outcome}: {status}", site="",
                                    text="\n".join(tail_of(log_path, 30)), dur=None)
            log(f"  {outcome}: {running}: {status}")
        if status == BUDGET or running is None:
            stop = "the file's time budget was spent" if status == BUDGET else f"the worker stopped ({status})"
            errors.append(f"{len(set(collected) - set(records))} tests not run: {stop}")
            break
    collected = collected or []
    for tid in collected:
        if tid not in records:
            records[tid] = dict(outcome="notrun", msg="not run", site="", text="", dur=None)
    return collected, records, errors


def watch(cmd, cwd, env, events_path, log_path, stall_limit, deadline):
    """Runs cmd until it exits, its events stall past stall_limit seconds, or the deadline passes; returns how it
    ended: "exited 0", "died: signal 11 (SIGSEGV)", "no progress for 180 s" or "file budget spent"."""
    proc = fork_server.spawn(module=cmd[2], args=cmd[3:], cwd=cwd, env=env, out=log_path, preload=PRELOAD)
    last_size, last_change, why = 0, time.time(), None
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            size = os.path.getsize(events_path) if os.path.exists(events_path) else 0
            now = time.time()
            # Until its first event the worker is importing torch and the test file.
            limit = stall_limit if size else stall_limit + STARTUP
            if size != last_size:
                last_size, last_change = size, now
            elif now - last_change > limit:
                why = f"no progress for {stall_limit:.0f} s"
            elif now > deadline:
                why = BUDGET
            if why:
                fork_server.kill_group(proc)
                break
    finally:
        if proc.poll() is None:
            fork_server.kill_group(proc)
    if why:
        return why
    rc = proc.returncode
    if rc < 0:
        return f"died: signal {-rc} ({signal.Signals(-rc).name})"
    return f"exited {rc}" if rc in (0, 1, 2, 5) else f"died: exit code {rc}"


