"""The conformance sweep: every op_db variant on tpu against CPU, in chunks of subprocesses.

    python -m tests.conformance.run                       # full sweep -> build/conformance/
    python -m tests.conformance.run --ops add,mm --limit-samples 2
    python -m tests.conformance.run --update-baseline     # regenerates tests/conformance/baseline.json

Each chunk of ops runs in a worker process (tests/conformance/harness.py) that writes its progress line
by line; when a worker dies (segfault, abort, Go panic) or stops making progress, the sample it was
running is recorded as "crash" or "timeout" and the sweep continues with the next op.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import signal
import sys
import tempfile
import time

from tests import fork_server

from . import harness, report
from .slice import SLICE

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BASELINE = os.path.join(HERE, "baseline.json")
EXIT_OP = "(worker exit)"


def op_names():
    return [harness.variant_name(op) for op in harness.load_op_db()]


def select(names, patterns):
    """Indices of names matching any comma-separated pattern (exact name, or fnmatch glob)."""
    if not patterns:
        return list(range(len(names)))
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    return [i for i, n in enumerate(names) if any(n == p or fnmatch.fnmatchcase(n, p) for p in pats)]


def read_events(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut short by a crash
    except FileNotFoundError:
        pass
    return out


# What every worker imports first, held by the fork server the workers start from (tests/fork_server.py).
PRELOAD = ("torch.testing._internal.common_methods_invocations",)


def worker_env():
    env = dict(os.environ)
    py = os.path.join(ROOT, "python")
    env["PYTHONPATH"] = py + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_chunk(indices, names, opts, workdir, tag):
    """Runs ops `indices` in workers until all are done, restarting after crashes; returns result records."""
    results = []
    pending = list(indices)
    attempt = 0
    while pending:
        attempt += 1
        out = os.path.join(workdir, f"{tag}-{attempt}.jsonl")
        log = os.path.join(workdir, f"{tag}-{attempt}.log")
        cmd = [sys.executable, "-m", "tests.conformance.harness", "--indices", ",".join(map(str, pending)),
               "--out", out, "--dtypes", ",".join(opts.dtypes), "--limit-samples", str(opts.limit_samples),
               "--modes", ",".join(opts.modes)]
        if opts.no_backward:
            cmd.append("--no-backward")
        proc = fork_server.spawn(module=cmd[2], args=cmd[3:], cwd=ROOT, env=worker_env(), out=log,
                                 preload=PRELOAD)
        last_size, last_change, timed_out = -1, time.time(), False
        try:
            while proc.poll() is None:
                time.sleep(0.5)
                size = os.path.getsize(out) if os.path.exists(out) else 0
                if size != last_size:
                    last_size, last_change = size, time.time()
                elif time.time() - last_change > opts.sample_timeout:
                    timed_out = True
                    proc.kill()
                    proc.wait()
        finally:
            if proc.poll() is None:  # the runner itself is being stopped: take the worker with it
                proc.kill()
                proc.wait()
        rc = proc.returncode
        events = read_events(out)
        results.extend(e for e in events if e.get("ev") == "result")
        with open(log, errors="replace") as lf:
            tail = [ln.rstrip() for ln in lf.readlines() if ln.strip()][-6:]
        how = f"signal {-rc} ({signal.Signals(-rc).name})" if rc < 0 else f"exit code {rc}"
        if any(e.get("ev") == "chunk_done" for e in events):
            if rc != 0:
                # Every op finished; the process died while exiting. Recorded against no op.
                ran = [names[i] for i in pending]
                results.append(dict(ev="result", op=EXIT_OP, dtype=None, sample=None, dir=None, mode=None,
                                    status="crash", detail=f"{how} at process exit after ops {ran[0]}..{ran[-1]}",
                                    log_tail=tail))
                print(f"  crash at worker exit ({how}) after ops {ran[0]}..{ran[-1]}", flush=True)
            break
        # The worker died: find the op and the sample it was running.
        started = [e for e in events if e.get("ev") == "op_start"]
        done = {e["op"] for e in events if e.get("ev") == "op_done"}
        if not started or started[-1]["op"] in done:
            # Died before the first op started (or between ops): blame the next pending op.
            crashed_index = next((i for i in pending if names[i] not in done), pending[0])
        else:
            crashed_index = started[-1]["index"]
        key = ("op", "dtype", "sample", "dir", "mode")
        finished = {tuple(e.get(k) for k in key) for e in events if e.get("ev") == "result"}
        last_start = next((e for e in reversed(events) if e.get("ev") == "start"
                           and tuple(e.get(k) for k in key) not in finished
                           and e["op"] == names[crashed_index]), None)
        if timed_out:
            status, detail = "timeout", f"no progress for {opts.sample_timeout:.0f} s"
        else:
            status, detail = "crash", how
        rec = dict(ev="result", op=names[crashed_index], status=status, detail=detail, log_tail=tail)
        if last_start:
            rec.update({k: last_start[k] for k in key})
        else:
            rec.update(dtype=None, sample=None, dir=None, mode=None)
        results.append(rec)
        print(f"  {status}: {names[crashed_index]} {rec.get('dtype')} sample {rec.get('sample')} "
              f"{rec.get('dir')} {rec.get('mode')}: {detail}", flush=True)
        pending = pending[pending.index(crashed_index) + 1:]
    return results


def sweep(indices, names, opts):
    """Runs the selected ops in chunks (opts.jobs at a time) and returns all result records."""
    chunks = [indices[i:i + opts.chunk] for i in range(0, len(indices), opts.chunk)]
    workdir = opts.workdir or tempfile.mkdtemp(prefix="conformance-")
    os.makedirs(workdir, exist_ok=True)
    results = []
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as ex:
        futs = {ex.submit(run_chunk, c, names, opts, workdir, f"chunk{k:03d}"): k for k, c in enumerate(chunks)}
        for n, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            results.extend(fut.result())
            if not opts.quiet:
                print(f"chunk {n}/{len(chunks)} done ({time.time() - t0:.0f} s)", flush=True)
    order = {names[i]: k for k, i in enumerate(indices)}
    results.sort(key=lambda r: (order.get(r["op"], 0), str(r.get("dtype")), str(r.get("dir")),
                                r.get("sample") if isinstance(r.get("sample"), int) else -2, str(r.get("mode"))))
    return results


def baseline_entries(results):
    """Per op and dtype key ("float32", "float32/backward"): True when every run sample passed natively."""
    by = {}
    for r in results:
        if r.get("dtype") is None:
            key = None
        else:
            key = r["dtype"] + ("/backward" if r.get("dir") == "bwd" else "")
        by.setdefault(r["op"], {}).setdefault(key, []).append(r["status"])
    out = {}
    for op, d in by.items():
        crashed = any(s in ("crash", "timeout") for s in d.get(None, []))
        for key, sts in d.items():
            if key is None:
                continue
            ran = [s for s in sts if s != "skipped"]
            out.setdefault(op, {})[key] = bool(ran) and all(s == "pass" for s in ran) and not crashed
    return out


def ratchet_opts(**kw):
    ns = argparse.Namespace(dtypes=["float32"], modes=["strict"], limit_samples=4, no_backward=False,
                            chunk=40, jobs=2, sample_timeout=120, workdir=None, quiet=True)
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def run_slice(opts=None):
    """Runs the ratchet slice (strict, float32 forward and backward); returns (results, entries)."""
    names = op_names()
    indices = select(names, ",".join(SLICE))
    missing = sorted(set(SLICE) - {names[i] for i in indices})
    if missing:
        raise SystemExit(f"slice names not in op_db: {missing}")
    results = sweep(indices, names, opts or ratchet_opts())
    return results, baseline_entries(results)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", help="comma-separated variant names or globs (e.g. 'add,nn.functional.*')")
    p.add_argument("--dtypes", default=",".join(harness.DTYPES))
    p.add_argument("--modes", default=",".join(harness.MODES))
    p.add_argument("--limit-samples", type=int, default=4, help="samples per op and dtype (default 4)")
    p.add_argument("--no-backward", action="store_true")
    p.add_argument("--chunk", type=int, default=40, help="ops per worker process")
    p.add_argument("--jobs", type=int, default=2, help="worker processes at once")
    p.add_argument("--sample-timeout", type=float, default=120, help="seconds without progress before a kill")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "conformance"))
    p.add_argument("--workdir", help="where worker progress files and logs go (default: OUT/work)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--update-baseline", action="store_true",
                   help="run the ratchet slice and rewrite tests/conformance/baseline.json")
    a = p.parse_args(argv)
    a.dtypes = a.dtypes.split(",")
    a.modes = a.modes.split(",")
    if a.update_baseline:
        results, entries = run_slice(ratchet_opts(jobs=a.jobs, quiet=a.quiet))
        doc = {"about": "Ratchet for tests/conformance/test_ratchet.py: per op variant and dtype, whether "
                        "every sample passed natively (strict mode, float32 forward and backward, "
                        "4 samples). Regenerate with `python -m tests.conformance.run --update-baseline`.",
               "ops": entries}
        with open(BASELINE, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        n = sum(v for d in entries.values() for v in d.values())
        print(f"baseline: {n} of {sum(len(d) for d in entries.values())} (op, dtype) entries pass natively")
        return 0
    names = op_names()
    indices = select(names, a.ops)
    if not indices:
        raise SystemExit("no op matches --ops")
    os.makedirs(a.out, exist_ok=True)
    a.workdir = a.workdir or os.path.join(a.out, "work")
    if os.path.isdir(a.workdir):
        for f in os.listdir(a.workdir):
            os.remove(os.path.join(a.workdir, f))
    t0 = time.time()
    print(f"conformance: {len(indices)} op variants, dtypes {a.dtypes}, modes {a.modes}, "
          f"{a.limit_samples} samples, {a.jobs} jobs", flush=True)
    results = sweep(indices, names, a)
    meta = {"ops": len(indices), "dtypes": a.dtypes, "modes": a.modes, "limit_samples": a.limit_samples,
            "backward": not a.no_backward, "seconds": round(time.time() - t0), "torch": _torch_version()}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=0)
    md = report.markdown(results, meta)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(md)
    print(md)
    print(f"wrote {os.path.join(a.out, 'results.json')} and summary.md")
    return 0


def _torch_version():
    import torch
    return torch.__version__


if __name__ == "__main__":
    sys.exit(main())
