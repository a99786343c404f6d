"""Machinery of the op_db case sweeps over error inputs and out= (test_sweep_errors.py, test_sweep_out.py).

A case sweep walks op_db entries in worker processes (tests/conformance/sweep_worker.py); each op yields
cases with stable ids, and each case ends as "pass", "fail" (with why), or "excluded" (CPU itself does not
behave as the OpInfo says, or the case does not apply, with why). A worker writes one JSON line per event
and flushes it, so that when it dies or stops making progress, the case it was running is recorded as a
"crash" or "timeout" failure and a fresh worker carries on with the cases after it.

Which ops run: by default a fixed, named sample per sweep (fast enough for `make test`);
TORCHTPU_CONFORMANCE=full runs every op. TORCHTPU_CONFORMANCE_OPS=a,b,'nn.functional.*' narrows the run
to some ops (for iterating on fixes). With TORCHTPU_CONFORMANCE_REPORT=DIR a sweep writes DIR/NAME.json.
"""

import concurrent.futures
import fnmatch
import json
import os
import sys
import tempfile
import time

from tests import fork_server

from . import harness, run

ROOT = run.ROOT
FAILED = ("fail", "crash", "timeout")
STARTUP_TIMEOUT = 300  # seconds a fresh worker may take before its first event


def full():
    """Whether TORCHTPU_CONFORMANCE=full asks for every case."""
    return os.environ.get("TORCHTPU_CONFORMANCE", "") == "full"


def op_filter():
    """The comma-separated names or globs of TORCHTPU_CONFORMANCE_OPS, or None."""
    return os.environ.get("TORCHTPU_CONFORMANCE_OPS") or None


def select(names, wanted, sample):
    """Indices of the op variants to run: those matching TORCHTPU_CONFORMANCE_OPS if set, else every
    variant for which wanted(index) holds in full mode, else those named in sample."""
    pats = op_filter()
    if pats:
        chosen = run.select(names, pats)
        return [i for i in chosen if wanted(i)]
    if full():
        return [i for i in range(len(names)) if wanted(i)]
    missing = sorted(set(sample) - set(names))
    if missing:
        raise SystemExit(f"sample names not in op_db: {missing}")
    return [i for i, n in enumerate(names) if n in sample and wanted(i)]


def read_events(path):
    return run.read_events(path)


def _run_chunk(sweep_name, indices, names, workdir, tag, timeout):
    """Runs ops `indices` in workers until every case is done, recording crashes and hangs; returns the
    result records."""
    out = os.path.join(workdir, f"{tag}.jsonl")
    pending = list(indices)
    attempt = 0
    while pending:
        attempt += 1
        log = os.path.join(workdir, f"{tag}-{attempt}.log")
        cmd = [sys.executable, "-m", "tests.conformance.sweep_worker", "--sweep", sweep_name,
               "--indices", ",".join(map(str, pending)), "--out", out]
        before = len(read_events(out))
        timed_out = False
        proc = fork_server.spawn(module=cmd[2], args=cmd[3:], cwd=ROOT, env=run.worker_env(), out=log,
                                 preload=run.PRELOAD)
        first_size = os.path.getsize(out) if os.path.exists(out) else 0
        last_size, last_change = first_size, time.time()
        try:
            while proc.poll() is None:
                time.sleep(0.2)
                size = os.path.getsize(out) if os.path.exists(out) else 0
                # Starting a worker (importing torch and op_db) is not a case: it gets its own allowance.
                limit = timeout if size > first_size else max(timeout, STARTUP_TIMEOUT)
                if size != last_size:
                    last_size, last_change = size, time.time()
                elif time.time() - last_change > limit:
                    timed_out = True
                    proc.kill()
                    proc.wait()
        finally:
            if proc.poll() is None:  # the runner itself is being stopped: take the worker with it
                proc.kill()
                proc.wait()
        events = read_events(out)
        if any(e.get("ev") == "chunk_done" for e in events[before:]):
            break
        rc = proc.returncode
        with open(log, errors="replace") as lf:
            tail = [ln.rstrip() for ln in lf.readlines() if ln.strip()][-6:]
        how = f"no progress for {timeout:.0f} s" if timed_out else (
            f"signal {-rc}" if rc < 0 else f"exit code {rc}")
        status = "timeout" if timed_out else "crash"
        done = {e["case"] for e in events if e.get("ev") == "result"}
        started = [e for e in events[before:] if e.get("ev") == "start" and e["case"] not in done]
        new_ops = [e for e in events[before:] if e.get("ev") == "op_start"]
        if started:
            bad = started[-1]
            rec = dict(ev="result", case=bad["case"], op=bad["op"], status=status, detail=how, log_tail=tail)
            op_index = bad["index"]
        else:
            # Died outside a case (building an op's inputs, or between ops): blame the op it was in.
            op_index = new_ops[-1]["index"] if new_ops else pending[0]
            rec = dict(ev="result", case=f"{names[op_index]}/(worker)", op=names[op_index], status=status,
                       detail=how, log_tail=tail)
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        # A fresh worker resumes at the same op (it skips the cases already recorded) unless the death
        # fell outside any case, in which case the op is given up.
        k = pending.index(op_index)
        pending = pending[k:] if started else pending[k + 1:]
    results = {}
    for e in read_events(out):
        if e.get("ev") == "result":
            results.setdefault(e["case"], e)
    return list(results.values())


def sweep(sweep_name, indices, jobs=2, chunk=25, timeout=120, workdir=None):
    """Runs the given op_db indices through a sweep's worker in chunks, jobs at a time; returns the
    result records in op order."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix=f"sweep-{sweep_name}-") as d:
            return sweep(sweep_name, indices, jobs, chunk, timeout, d)
    names = run.op_names()
    os.makedirs(workdir, exist_ok=True)
    # Interleaved chunks balance slow and fast families across the workers.
    n = max(1, min(len(indices), (len(indices) + chunk - 1) // chunk))
    chunks = [indices[k::n] for k in range(n)]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(_run_chunk, sweep_name, c, names, workdir, f"chunk{k:03d}", timeout)
                for k, c in enumerate(chunks) if c]
        for fut in futs:
            results.extend(fut.result())
    order = {names[i]: k for k, i in enumerate(indices)}
    results.sort(key=lambda r: (order.get(r["op"], -1), r["case"]))
    return results


def judge(results, expected, ran_ops, complete=None):
    """Splits results against the expected-failure list: (unlisted failures, listed cases that passed,
    listed ids of an op that ran that name no case, or an excluded one). The last is only known when
    every case of the ops ran (complete; by default in full mode): the default sample runs fewer."""
    complete = full() if complete is None else complete
    by_case = {r["case"]: r for r in results}
    unlisted = [r for r in results if r["status"] in FAILED and r["case"] not in expected]
    fixed = [c for c, r in by_case.items() if c in expected and r["status"] == "pass"]
    unknown = [c for c in expected if c.split("/")[0] in ran_ops and
               ((complete and c not in by_case) or (c in by_case and by_case[c]["status"] == "excluded"))]
    return unlisted, sorted(fixed), sorted(unknown)


def summary(name, results, expected, meta=None):
    """The report document of one sweep: counts and the cases by outcome."""
    failed = [r for r in results if r["status"] in FAILED]
    doc = {
        "sweep": name,
        "meta": dict(meta or {}, full=full(), ops_filter=op_filter()),
        "cases": sum(r["status"] != "excluded" for r in results),
        "passed": sum(r["status"] == "pass" for r in results),
        "failed": {
            "listed": {r["case"]: {"reason": expected[r["case"]], "detail": r.get("detail", ""),
                                   "status": r["status"]} for r in failed if r["case"] in expected},
            "unlisted": {r["case"]: {"detail": r.get("detail", ""), "status": r["status"]}
                         for r in failed if r["case"] not in expected},
        },
        "excluded": {r["case"]: r.get("detail", "") for r in results if r["status"] == "excluded"},
        "seconds": {r["op"]: 0.0 for r in results},
    }
    for r in results:
        doc["seconds"][r["op"]] = round(doc["seconds"][r["op"]] + r.get("seconds", 0.0), 2)
    return doc


def write_report(name, results, expected, meta=None):
    """Writes TORCHTPU_CONFORMANCE_REPORT/NAME.json when that variable is set."""
    d = os.environ.get("TORCHTPU_CONFORMANCE_REPORT")
    if not d:
        return None
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{name}.json")
    with open(path, "w") as f:
        json.dump(summary(name, results, expected, meta), f, indent=1, sort_keys=True)
        f.write("\n")
    return path


def failure_message(unlisted, fixed, unknown, expected_file):
    """The assertion text for a sweep that does not match its expected-failure list."""
    lines = []
    if unlisted:
        lines.append(f"{len(unlisted)} failing cases not in {expected_file}:")
        lines += [f"  {r['case']}: {r['status']}: {r.get('detail', '')}"[:400] for r in unlisted]
    if fixed:
        lines.append(f"{len(fixed)} cases in {expected_file} now pass; remove them from the list:")
        lines += [f"  {c}" for c in fixed]
    if unknown:
        lines.append(f"{len(unknown)} ids in {expected_file} name no case (or an excluded one); remove them:")
        lines += [f"  {c}" for c in unknown]
    return "\n".join(lines)


def matches(name, patterns):
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


def has(op_index, attr):
    """Whether op_db[op_index] has a truthy attr (without loading op_db twice)."""
    return bool(getattr(harness.load_op_db()[op_index], attr, None))


def run_sample(name, wanted, sample, expected):
    """Runs sweep name over the op variants wanted(op_info) selects (the named sample unless full), writes its
    report, and returns the results and the names of the ops that ran."""
    names = run.op_names()
    op_db = harness.load_op_db()
    indices = select(names, lambda i: wanted(op_db[i]), sample)
    results = sweep(name, indices)
    write_report(name, results, expected, {"ops": len(indices)})
    return results, {names[i] for i in indices}


def verdict(label, name, results, ran, expected):
    """The summary line of a sweep's results, and the failure message when they do not match the expected list
    (None when they do)."""
    unlisted, fixed, unknown = judge(results, expected, ran)
    cases = [r for r in results if r["status"] != "excluded"]
    line = (f"{label}: {len(ran)} ops, {sum(r['status'] == 'pass' for r in cases)}/{len(cases)} cases pass, "
            f"{sum(r['case'] in expected for r in cases if r['status'] != 'pass')} listed, "
            f"{len(results) - len(cases)} excluded")
    if unlisted or fixed or unknown:
        return line, failure_message(unlisted, fixed, unknown, f"tests/conformance/expected_{name}.py")
    return line, None
