"""Prints a pass-rate table of the case sweeps from a report folder.

    python -m tests.conformance.sweep_report DIR

reads every DIR/<name>.json that a sweep wrote (TORCHTPU_CONFORMANCE_REPORT=DIR) and prints, per sweep,
the cases run (exclusions apart), those passed, the pass rate, the listed failures grouped by reason and
the unlisted ones.
"""

import collections
import glob
import json
import os
import sys


def load(folder):
    docs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and {"cases", "passed"} <= set(doc):
            doc.setdefault("sweep", os.path.splitext(os.path.basename(path))[0])
            docs.append(normalize(doc))
    return docs


def normalize(doc):
    """The report of the dtype and module sweeps (sweep.py: listed as {reason: [ids]}, unlisted as [ids],
    excluded as a count) in the shape of the op_db sweeps' (op_sweep.py: failed.listed and failed.unlisted by
    case, excluded by case)."""
    if "failed" in doc:
        return doc
    details = doc.get("details", {})
    listed = {cid: {"reason": reason} for reason, ids in doc.get("listed", {}).items() for cid in ids}
    unlisted = {cid: {"status": "fail", "detail": details.get(cid, "")} for cid in doc.get("unlisted", [])}
    excluded = doc.get("excluded", 0)
    if isinstance(excluded, int):
        excluded = {f"#{i}": None for i in range(excluded)}
    return dict(doc, failed={"listed": listed, "unlisted": unlisted}, excluded=excluded)


def table(docs):
    lines = ["| sweep | cases | passed | pass rate | listed failures | unlisted failures | excluded |",
             "|---|---|---|---|---|---|---|"]
    for d in docs:
        cases, passed = d["cases"], d["passed"]
        rate = f"{100.0 * passed / cases:.1f}%" if cases else "-"
        lines.append(f"| {d['sweep']} | {cases} | {passed} | {rate} | {len(d['failed'].get('listed', {}))} | "
                     f"{len(d['failed'].get('unlisted', {}))} | {len(d.get('excluded', {}))} |")
    for d in docs:
        listed = d["failed"].get("listed", {})
        unlisted = d["failed"].get("unlisted", {})
        if listed:
            lines += ["", f"{d['sweep']}: listed failures by reason"]
            by = collections.Counter(v["reason"] for v in listed.values())
            lines += [f"  {n:4d}  {reason}" for reason, n in by.most_common()]
        if unlisted:
            lines += ["", f"{d['sweep']}: unlisted failures"]
            lines += [f"  {case}: {v.get('status')}: {v.get('detail', '')}"[:300] for case, v in sorted(unlisted.items())]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit(__doc__)
    docs = load(argv[0])
    if not docs:
        print(f"no sweep reports in {argv[0]}")
        return 1
    print(table(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
