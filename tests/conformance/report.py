"""Markdown summary of conformance results."""

import collections

STATUSES = ["pass", "mismatch", "fallback", "error", "fused_mismatch", "crash", "timeout", "skipped"]


def category(r):
    if r.get("dtype") == "float32":
        return "float32 backward" if r.get("dir") == "bwd" else "float32 forward"
    if r.get("dtype") is None:
        return "unattributed"
    return "other dtypes forward"


def _row(label, counter):
    ran = sum(v for k, v in counter.items() if k != "skipped")
    rate = f"{100.0 * counter['pass'] / ran:.1f}%" if ran else "-"
    return f"| {label} | " + " | ".join(str(counter[s]) for s in STATUSES) + f" | {ran} | {rate} |"


def op_level(results):
    """Per (category, mode): op variants whose every run sample passed, out of those with a run sample."""
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in results:
        by[(category(r), r.get("mode"))][r["op"]].append(r["status"])
    out = {}
    for key, ops in by.items():
        ran = {op: [s for s in sts if s != "skipped"] for op, sts in ops.items()}
        ran = {op: sts for op, sts in ran.items() if sts}
        out[key] = (sum(all(s == "pass" for s in sts) for sts in ran.values()), len(ran))
    return out


def markdown(results, meta, top=40):
    lines = ["# Conformance against PyTorch's OpInfo database", ""]
    lines.append(f"{meta['ops']} op variants; dtypes {', '.join(meta['dtypes'])}; modes {', '.join(meta['modes'])}; "
                 f"up to {meta['limit_samples']} samples per op and dtype; backward (float32) "
                 f"{'on' if meta['backward'] else 'off'}; torch {meta.get('torch')}; {meta['seconds']} s.")
    lines += ["", "A sample passes only when its tpu result matched CPU with no op falling back to CPU. "
              "`fallback` counts samples in which some ATen op ran on CPU (whatever the values); "
              "`fused_mismatch` is a fused-mode result that differs from strict mode; `skipped` samples "
              "raised on CPU, have no differentiable output, or have random/uninitialized values.", ""]
    lines.append("## Samples per status")
    lines.append("")
    lines.append("| category / mode | " + " | ".join(STATUSES) + " | run | pass rate |")
    lines.append("|---" * (len(STATUSES) + 3) + "|")
    counts = collections.defaultdict(collections.Counter)
    for r in results:
        counts[(category(r), r.get("mode"))][r["status"]] += 1
    order = ["float32 forward", "float32 backward", "other dtypes forward", "unattributed"]
    for cat in order:
        for mode in sorted({m for c, m in counts if c == cat}, key=str):
            lines.append(_row(f"{cat} / {mode}", counts[(cat, mode)]))
    lines += ["", "## Op variants passing every sample", "",
              "| category / mode | variants passing | variants run | rate |", "|---|---|---|---|"]
    for (cat, mode), (ok, n) in sorted(op_level(results).items(), key=lambda kv: (order.index(kv[0][0]), str(kv[0][1]))):
        rate = f"{100.0 * ok / n:.1f}%" if n else "-"
        lines.append(f"| {cat} / {mode} | {ok} | {n} | {rate} |")
    # Per-dtype breakdown of the other dtypes.
    per_dtype = collections.defaultdict(collections.Counter)
    for r in results:
        if r.get("dtype") not in (None, "float32"):
            per_dtype[r["dtype"]][r["status"]] += 1
    if per_dtype:
        lines += ["", "## Other dtypes, both modes", "",
                  "| dtype | " + " | ".join(STATUSES) + " | run | pass rate |", "|---" * (len(STATUSES) + 3) + "|"]
        for dt, c in sorted(per_dtype.items()):
            lines.append(_row(dt, c))
    # Fallbacks.
    fb_variants = collections.defaultdict(set)
    fb_calls = collections.Counter()
    for r in results:
        for aten, n in (r.get("fallbacks") or {}).items():
            fb_variants[aten].add(r["op"])
            fb_calls[aten] += n
    ranked = sorted(fb_variants, key=lambda a: (-len(fb_variants[a]), -fb_calls[a], a))
    lines += ["", f"## ATen ops falling back to CPU ({len(ranked)} in all; top {min(top, len(ranked))} by "
              "op variants affected)", "", "| ATen op | op variants | fallback calls | example variants |",
              "|---|---|---|---|"]
    for a in ranked[:top]:
        ex = ", ".join(sorted(fb_variants[a])[:5]) + (", ..." if len(fb_variants[a]) > 5 else "")
        lines.append(f"| `{a}` | {len(fb_variants[a])} | {fb_calls[a]} | {ex} |")
    if len(ranked) > top:
        lines += ["", "Others: " + ", ".join(f"`{a}` ({len(fb_variants[a])})" for a in ranked[top:])]
    # Crashes and timeouts.
    bad = [r for r in results if r["status"] in ("crash", "timeout")]
    lines += ["", f"## Crashes and timeouts ({len(bad)})", ""]
    for r in bad:
        lines.append(f"- `{r['op']}` {r.get('dtype')} sample {r.get('sample')} {r.get('dir')} {r.get('mode')}: "
                     f"{r['status']}, {r.get('detail')}")
        for t in (r.get("log_tail") or [])[-3:]:
            lines.append(f"    - `{t[:200]}`")
    if not bad:
        lines.append("None.")
    # Most frequent errors.
    errs = collections.defaultdict(set)
    for r in results:
        if r["status"] in ("error", "mismatch", "fused_mismatch") and r.get("detail"):
            errs[(r["status"], r["detail"][:160])].add(r["op"])
    lines += ["", "## Most common error and mismatch messages (by op variants)", "",
              "| status | message | op variants |", "|---|---|---|"]
    for (st, msg), ops in sorted(errs.items(), key=lambda kv: -len(kv[1]))[:25]:
        ex = ", ".join(sorted(ops)[:4]) + (", ..." if len(ops) > 4 else "")
        lines.append(f"| {st} | {msg.replace('|', '/')} | {len(ops)}: {ex} |")
    return "\n".join(lines) + "\n"
