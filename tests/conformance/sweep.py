"""What the sweeps (test_sweep_*.py) share: sample or full, the expected-failure check and the report.

Each sweep has an expected-failure list, `{case_id: "reason"}`. A case that fails and is not listed fails
the sweep, and so does a listed case that now passes (it must be taken off the list), so the list stays
exactly the set of known failures. With TORCHTPU_CONFORMANCE=full a sweep runs every case, otherwise its fixed
sample; with TORCHTPU_CONFORMANCE_REPORT=DIR it writes DIR/<name>.json:
{"sweep", "cases", "passed", "listed": {reason: [ids]}, "unlisted": [ids], "excluded", "fixed": [ids]}.
"""

import json
import os


def full():
    """Whether every case runs (TORCHTPU_CONFORMANCE=full) rather than the fixed sample."""
    return os.environ.get("TORCHTPU_CONFORMANCE", "") == "full"


def jobs():
    return int(os.environ.get("TORCHTPU_CONFORMANCE_JOBS", "2"))


def summarize(name, results, expected, all_ids=None):
    """The report of one sweep's results {id: (status, detail)} against its expected list.

    all_ids is every case the full sweep has; when given (a full run), listed ids that are no case at all
    count as fixed, so that the list cannot keep entries for cases that no longer exist."""
    listed, unlisted, fixed, details = {}, [], [], {}
    passed = excluded = 0
    for cid in sorted(results):
        status, detail = results[cid]
        if status == "skip":
            excluded += 1
            continue
        if status == "pass":
            passed += 1
            if cid in expected:
                fixed.append(cid)
            continue
        details[cid] = detail
        if cid in expected:
            listed.setdefault(expected[cid], []).append(cid)
        else:
            unlisted.append(cid)
    if all_ids is not None:
        known = set(all_ids)
        fixed.extend(sorted(c for c in expected if c not in known))
    return {"sweep": name, "cases": len(results), "passed": passed, "listed": listed, "unlisted": unlisted,
            "excluded": excluded, "fixed": fixed, "details": details}


def write_report(rep):
    """Writes rep (less the per-case details) to $TORCHTPU_CONFORMANCE_REPORT/<name>.json when that is set."""
    out = os.environ.get("TORCHTPU_CONFORMANCE_REPORT")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    doc = {k: v for k, v in rep.items() if k != "details"}
    with open(os.path.join(out, rep["sweep"] + ".json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def failure_message(rep, list_file):
    """None when the results agree with the expected list, else what to do about each difference."""
    lines = []
    if rep["unlisted"]:
        lines.append(f"{len(rep['unlisted'])} case(s) fail that are not in {list_file}:")
        lines += [f"  {c}: {rep['details'][c]}" for c in rep["unlisted"]]
    if rep["fixed"]:
        lines.append(f"{len(rep['fixed'])} case(s) in {list_file} now pass (or no longer exist): remove them:")
        lines += [f"  {c}" for c in rep["fixed"]]
    return "\n".join(lines) or None


def summary_line(rep):
    ran = rep["cases"] - rep["excluded"]
    nlisted = sum(len(v) for v in rep["listed"].values())
    pct = 100.0 * rep["passed"] / ran if ran else 100.0
    return (f"{rep['sweep']} sweep: {rep['passed']}/{ran} cases pass ({pct:.1f}%), {nlisted} listed failures, "
            f"{len(rep['unlisted'])} unlisted, {rep['excluded']} excluded")


def select(ids, sample):
    """The ids a run covers: those matching TORCHTPU_CONFORMANCE_CASES (comma-separated fnmatch patterns) when
    set, else every id in a full run, else the sample's (sample(id) says whether an id is in it)."""
    import fnmatch
    pats = [p for p in os.environ.get("TORCHTPU_CONFORMANCE_CASES", "").split(",") if p]
    if pats:
        return [c for c in ids if any(fnmatch.fnmatchcase(c, p) for p in pats)]
    if full():
        return list(ids)
    return [c for c in ids if sample(c)]


def check(name, results, expected, all_ids, list_file):
    """Summarizes, writes the report, prints the summary line; returns the failure message or None.
    The stale-entry check (listed ids that are no case) runs only when every case ran."""
    ran = set(results)
    everything = full() and not os.environ.get("TORCHTPU_CONFORMANCE_CASES")
    exp = dict(expected) if everything else {k: v for k, v in expected.items() if k in ran}
    rep = summarize(name, results, exp, all_ids if everything else None)
    write_report(rep)
    print("\n" + summary_line(rep))
    return failure_message(rep, list_file)
