"""Runs a sweep's cases in worker subprocesses, so that a crash or a hang costs one case, not the sweep.

The parent side is `run_cases(worker, case_ids, ...)`: it splits the ids into chunks, runs each chunk in
`python -m <worker> --cases FILE --out FILE` (opts.jobs at a time), and reads the worker's progress file, one
JSON line per event: {"ev": "start", "case": id} before a case and {"ev": "result", "case": id, "status": s,
"detail": d} after it. When the worker dies, the case it had started is recorded as "crash" (with the exit
signal and the log's tail) and a new worker takes the rest of the chunk; when the file stops growing for
opts.timeout seconds (a worker that has written nothing yet may take STARTUP_SECONDS) the worker is killed and
the case is recorded as "timeout".

The worker side is `worker_main(run_case, setup)`: it parses those arguments and calls run_case(id) for each
id, which returns (status, detail). Statuses: "pass", "fail" (wrong result or an error), "skip" (nothing to
compare: the CPU reference raised, or the op has no samples for the dtype).
"""

import argparse
import concurrent.futures
import json
import os
import signal
import sys
import tempfile
import time
import traceback

from tests import fork_server

from . import run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def worker_env():
    env = dict(os.environ)
    py = os.path.join(ROOT, "python")
    env["PYTHONPATH"] = py + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


# STARTUP_SECONDS is how long a worker may take to start (import torch) before its first case: on a loaded
# machine that alone can pass a short case timeout.
STARTUP_SECONDS = 60


def _run_chunk(worker, ids, extra, opts, workdir, tag):
    """Runs ids in workers until each has a result; returns {id: (status, detail)}."""
    results = {}
    pending = list(ids)
    attempt = 0
    while pending:
        attempt += 1
        base = os.path.join(workdir, f"{tag}-{attempt}")
        with open(base + ".cases", "w") as f:
            f.write("\n".join(pending) + "\n")
        cmd = [sys.executable, "-m", worker, "--cases", base + ".cases", "--out", base + ".jsonl"] + list(extra)
        timed_out = False
        proc = fork_server.spawn(module=worker, args=cmd[3:], cwd=ROOT, env=run.worker_env(), out=base + ".log",
                                 preload=run.PRELOAD)
        last_size, last_change = -1, time.time()
        try:
            while proc.poll() is None:
                time.sleep(0.2)
                size = os.path.getsize(base + ".jsonl") if os.path.exists(base + ".jsonl") else 0
                if size != last_size:
                    last_size, last_change = size, time.time()
                elif time.time() - last_change > (opts.timeout if size else max(opts.timeout, STARTUP_SECONDS)):
                    timed_out = True
                    proc.kill()
                    proc.wait()
        finally:
            if proc.poll() is None:  # the runner itself is being stopped: take the worker with it
                proc.kill()
                proc.wait()
        events = run.read_events(base + ".jsonl")
        for e in events:
            if e.get("ev") == "result":
                results[e["case"]] = (e["status"], e.get("detail", ""))
        done = any(e.get("ev") == "done" for e in events)
        left = [c for c in pending if c not in results]
        if done and not left:
            break
        rc = proc.returncode
        with open(base + ".log", errors="replace") as lf:
            tail = " | ".join(ln.strip() for ln in lf.readlines() if ln.strip())[-600:]
        started = [e["case"] for e in events if e.get("ev") == "start" and e["case"] not in results]
        victim = started[-1] if started else left[0]
        if timed_out:
            results[victim] = ("fail", f"timeout: no progress for {opts.timeout:.0f} s")
        else:
            how = f"signal {-rc} ({signal.Signals(-rc).name})" if rc < 0 else f"exit code {rc}"
            results[victim] = ("fail", f"crash: worker died with {how}: {tail}")
        pending = [c for c in left if c != victim]
    return results


def run_cases(worker, ids, extra=(), jobs=2, chunk=50, timeout=180, workdir=None):
    """Runs every id through worker (a module name) in chunks; returns {id: (status, detail)}."""
    opts = argparse.Namespace(timeout=timeout)
    if workdir is None:
        os.makedirs(os.path.join(ROOT, "build", "sweeps"), exist_ok=True)
        workdir = tempfile.mkdtemp(prefix=worker.rsplit(".", 1)[-1] + "-", dir=os.path.join(ROOT, "build", "sweeps"))
    os.makedirs(workdir, exist_ok=True)
    chunks = [ids[i:i + chunk] for i in range(0, len(ids), chunk)]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(_run_chunk, worker, c, extra, opts, workdir, f"chunk{k:04d}") for k, c in enumerate(chunks)]
        for fut in concurrent.futures.as_completed(futs):
            results.update(fut.result())
    return results


def balanced_chunks(ids, jobs, chunk):
    """A chunk size no larger than chunk that gives every job work when there are few ids."""
    return max(1, min(chunk, -(-len(ids) // max(1, jobs))))


def worker_main(run_case, setup=None, argv=None):
    """Parses --cases/--out (and whatever setup adds), then runs and records every case."""
    p = argparse.ArgumentParser()
    p.add_argument("--cases", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--crash-case", default=os.environ.get("SWEEP_CRASH_CASE"),
                   help="abort the process when this case starts (tests the runner's crash handling)")
    a, rest = p.parse_known_args(argv)
    if setup:
        setup(rest)
    with open(a.cases) as f:
        ids = [ln.strip() for ln in f if ln.strip()]
    out = open(a.out, "a", buffering=1)

    def emit(**rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    for cid in ids:
        emit(ev="start", case=cid)
        if cid == a.crash_case:
            os.abort()
        try:
            status, detail = run_case(cid)
        except Exception as e:  # noqa: BLE001 - a bug in the case itself is the case's failure
            tb = traceback.format_exc().strip().splitlines()
            status, detail = "fail", f"worker: {type(e).__name__}: {e} ({tb[-3] if len(tb) > 2 else ''})"
        emit(ev="result", case=cid, status=status, detail=str(detail)[:600])
    emit(ev="done")
    out.close()
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: its crashes are not a case's
