"""Tables, failure groups and the markdown summary of a device-generic run (tests/device_generic/run.py)."""
import collections
import re

COLUMNS = ("file", "collected", "skipped", "passed", "tpu fail", "drift", "not run", "pass rate", "minutes")


def file_counts(entry):
    """Returns one file's row: counts by verdict, the pass rate and the minutes it took (tpu and CPU rerun)."""
    verdicts = collections.Counter(r["verdict"] for r in entry["records"].values())
    return dict(file=entry["file"], collected=len(entry["collected"]),
                skipped=verdicts["skipped"] + verdicts["xfailed"], passed=verdicts["passed"],
                tpu=verdicts["tpu"], drift=verdicts["drift"], notrun=verdicts["notrun"],
                minutes=(entry["tpu_seconds"] + entry["cpu_seconds"]) / 60)


def total_counts(entries):
    rows = [file_counts(e) for e in entries]
    total = dict(file="total")
    for key in ("collected", "skipped", "passed", "tpu", "drift", "notrun", "minutes"):
        total[key] = sum(r[key] for r in rows)
    return total


def rate(row):
    judged = row["passed"] + row["tpu"]
    return row["passed"] / judged if judged else float("nan")


def table_header():
    return "  ".join(f"{c:>9}" if i else f"{c:<28}" for i, c in enumerate(COLUMNS))


def table_row(row):
    cells = [row["collected"], row["skipped"], row["passed"], row["tpu"], row["drift"], row["notrun"],
             f"{100 * rate(row):.1f}%", f"{row['minutes']:.1f}"]
    return f"{row['file']:<28}  " + "  ".join(f"{c:>9}" for c in cells)


def base_name(test_id):
    """Returns the generic test a node id was instantiated from: the method name without device and dtype."""
    name = test_id.split("::")[-1]
    return re.sub(r"_(tpu|cpu)(_.*)?$", "", name)


def normalize(msg):
    """Returns an error line with what varies between instances of one cause (numbers, shapes, dtypes, object
    addresses) replaced by placeholders."""
    msg = re.sub(r"0x[0-9a-fA-F]+", "0x?", msg)
    msg = re.sub(r"torch\.(float|int|uint|bfloat|complex|bool|cfloat|half|double|long|short)\w*", "torch.<dtype>", msg)
    msg = re.sub(r"\b(float|int|uint|bfloat|complex)(8|16|32|64|128)\b", "<dtype>", msg)
    msg = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w])", "N", msg)
    return re.sub(r"([\[(])N(, N)*,?([\])])", r"\1N...\3", msg)


def group_key(test_id, rec):
    """Returns the cause a failure is grouped under: a wrong value (AssertionError) is its own test's cause; an
    exception raised by an op is its normalized first line, whichever test raised it; hangs and crashes group by
    kind."""
    msg = rec["msg"] or "(no message)"
    if rec["outcome"] in ("timeout", "crash"):
        return rec["outcome"]
    if msg.startswith("AssertionError") or msg.startswith("unexpected success"):
        return f"{base_name(test_id)}: {normalize(msg)}"
    return normalize(msg)


def groups(entries, verdict="tpu"):
    """Returns [(key, [(test id, record), ...])] for the records with the verdict, largest group first."""
    by = collections.defaultdict(list)
    for e in entries:
        for tid in e["collected"]:
            rec = e["records"][tid]
            if rec["verdict"] == verdict:
                by[group_key(tid, rec)].append((tid, rec))
    return sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def short_id(test_id):
    path, cls, name = test_id.split("::")
    return f"{path.removesuffix('.py')}::{name}"


def md_cell(text, limit=220):
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def group_lines(entries, verdict):
    lines = ["| count | examples | first line of the error |", "|---:|---|---|"]
    for key, items in groups(entries, verdict):
        examples = ", ".join(f"`{short_id(t)}`" for t, _ in items[:3])
        lines.append(f"| {len(items)} | {examples} | {md_cell(items[0][1]['msg'] or key)} |")
    return lines


def slowest(entries, n=15):
    """Returns the n slowest tpu tests as (seconds, id, engine counters)."""
    rows = [(r["dur"] or 0, tid, r.get("engine") or {}) for e in entries for tid, r in e["records"].items()]
    return sorted(rows, key=lambda x: -x[0])[:n]


def markdown(results):
    entries, env = results["files"], results["env"]
    rows = [file_counts(e) for e in entries]
    total = total_counts(entries)
    out = ["# PyTorch's device-generic tests on tpu", "",
           f"    {results['command']}", "",
           f"Test files of {env['tests']}, run with torch {env['torch']} at commit {env['commit']}"
           f"{' (with local changes)' if env['dirty'] else ''}, mode {env['mode']}, Python {env['python']}, "
           f"{env['cpus']} CPUs; {results['seconds'] / 60:.0f} minutes in all. What runs and why, and the "
           "stand-ins, are in the docstring of `tests/device_generic/run.py`.", "",
           f"**{total['passed']} of {total['passed'] + total['tpu']} judged tests pass ({100 * rate(total):.1f}%)**: "
           f"{total['collected']} collected, {total['skipped']} skipped, {total['drift']} failures that fail on "
           f"CPU too (drift, not counted), {total['notrun']} not run.", "",
           "| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * (len(COLUMNS) - 1)]
    for row in rows + [total]:
        cells = [row["collected"], row["skipped"], row["passed"], row["tpu"], row["drift"], row["notrun"],
                 f"{100 * rate(row):.1f}%", f"{row['minutes']:.1f}"]
        name = f"**{row['file']}**" if row is total else row["file"]
        out.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    errors = [(e["file"], msg) for e in entries for msg in e["errors"]]
    if errors:
        out += ["", "Files that did not run cleanly:", ""] + [f"- {f}: {md_cell(m, 400)}" for f, m in errors]
    crashes = [(tid, r) for e in entries for tid, r in e["records"].items() if r["outcome"] in ("crash", "timeout")]
    if crashes:
        out += ["", "## Crashes and hangs", ""]
        out += [f"- **{r['outcome']}** `{tid}`: {md_cell(r['msg'], 300)}" for tid, r in crashes]
    out += ["", "## tpu failures by cause", "",
            "A wrong value (AssertionError) is grouped by its test; an error raised by an op by its message with "
            "numbers, shapes and dtypes taken out.", ""]
    out += group_lines(entries, "tpu")
    out += ["", "## Drift: failing on CPU as well", ""]
    out += group_lines(entries, "drift")
    out += ["", "## Slowest tests", "", "| seconds | test | programs compiled (by reason) | compile s |",
            "|---:|---|---|---:|"]
    for dur, tid, eng in slowest(entries):
        reasons = ", ".join(f"{k} {v}" for k, v in sorted((eng.get("reasons") or {}).items(), key=lambda kv: -kv[1]))
        out.append(f"| {dur:.0f} | `{short_id(tid)}` | {eng.get('compiles', '')} ({reasons}) | "
                   f"{eng.get('compile_s', '')} |")
    return "\n".join(out) + "\n"


def failure_list(entries):
    """Returns every tpu failure, one a line: the node id, a tab and the first line of its error."""
    lines = []
    for e in entries:
        for tid in e["collected"]:
            rec = e["records"][tid]
            if rec["verdict"] == "tpu":
                lines.append(f"{tid}\t{rec['outcome']}\t{(rec['msg'] or '').strip()}")
    return "\n".join(lines) + ("\n" if lines else "")
