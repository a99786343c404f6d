"""peers: the same workloads on CPU eager, Inductor, tpu (strict, fused, compiled, compiled whole step),
torch_xla and JAX.

Each backend runs as a subprocess with a hard timeout: the project's environment
for CPU eager, Inductor and tpu; peer environments made on first use under the
cache folder for torch_xla 2.9 and JAX (bench/peer_envs.py). Before any timing,
each workload's first two losses (training) or its output (forward) must agree
with CPU eager; a backend that disagrees is reported as MISMATCH and not timed.
Rounds are interleaved (the backend order rotates each round); a cell is the
median over rounds of each round's median step time. The first call of each
round (tracing and compiling, no warm caches) is reported on its own.

    python bench/peers.py                        # everything, 3 rounds
    python bench/peers.py --workloads gpt,norm --backends fused,jax --rounds 1
    python bench/peers.py --plot peers.png
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import peer_envs
from peer_timing import MARK, WORKLOADS

HERE = os.path.dirname(os.path.abspath(__file__))
# name, column label, environment, worker script
BACKENDS = [
    ("cpu", "CPU eager", "project", "peer_workloads_torch.py"),
    ("inductor", "Inductor (CPU)", "project", "peer_workloads_torch.py"),
    ("strict", "tpu strict", "project", "peer_workloads_torch.py"),
    ("fused", "tpu fused", "project", "peer_workloads_torch.py"),
    ("compiled", "tpu compiled", "project", "peer_workloads_torch.py"),
    ("compiled-step", "tpu compiled whole step", "project", "peer_workloads_torch.py"),
    ("graph", "tpu graph replay", "project", "peer_workloads_torch.py"),
    ("xla-lazy", "torch_xla lazy", "xla", "peer_workloads_torch.py"),
    ("xla-openxla", "torch_xla openxla", "xla", "peer_workloads_torch.py"),
    ("jax", "JAX jit", "jax", "peer_workloads_jax.py"),
]
LABEL = {b[0]: b[1] for b in BACKENDS}
TITLES = {"gpt": "GPT train step (4 layers, C=128, T=64, B=12, AdamW)", "cnn": "CNN train step (B=64, SGD)",
          "mlp": "MLP train step (B=32, AdamW)", "norm": "pointwise + norm forward (256, 1024)"}
for _t in (64, 256, 512):
    TITLES[f"attn{_t}"] = f"causal attention forward, T={_t} (B=4, H=4, D=32)"


def worker_env(backend, env_name, scratch):
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHTPU_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")}
    env["TORCHTPU_CACHE_DIR"] = ""  # no warm programs: the persistent compile cache is on by default
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-", dir=scratch)  # cold every process
    if backend in ("cpu", "inductor") or env_name != "project":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # plain PyTorch, no tpu extension loaded
    if env_name != "project":
        env.pop("PYTHONPATH", None)
        env["PJRT_DEVICE"] = "CPU"
        env["JAX_PLATFORMS"] = "cpu"
    return env


def run_worker(backend, env_name, script, workloads, folder, args, extra=()):
    """Runs one worker; returns {workload: record}, with "timeout"/"error" for those it did not report."""
    py = sys.executable if env_name == "project" else peer_envs.python(env_name)
    cmd = [py, os.path.join(HERE, script), "--backend", backend, "--workloads", ",".join(workloads),
           "--dir", folder, "--steps", str(args.steps), "--warmup", str(args.warmup), *extra]
    status, out, err = "error", "", ""
    try:
        r = subprocess.run(cmd, env=worker_env(backend, env_name, folder), capture_output=True, text=True,
                           timeout=args.timeout)
        out, err = r.stdout, r.stderr
        status = "crashed" if r.returncode else "error"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        status = "timeout"
    got = {}
    for line in out.splitlines():
        if line.startswith(MARK):
            rec = json.loads(line[len(MARK):])
            got[rec.pop("workload")] = rec
    for w in workloads:
        if w not in got:
            got[w] = {"status": status, "detail": err.strip().splitlines()[-1][:300] if err.strip() else ""}
    if args.verbose and err.strip():
        print(f"--- {backend} stderr (tail)\n" + "\n".join(err.strip().splitlines()[-15:]), file=sys.stderr)
    return got


def summarize(rounds, workloads, backends):
    """Per (workload, backend): median of round medians, median first call, or the status that stopped it."""
    table = {}
    for w in workloads:
        for b in backends:
            recs = [r[b][w] for r in rounds if b in r and w in r[b]]
            ok = [x for x in recs if x["status"] == "ok"]
            if ok and len(ok) == len(recs):
                table[(w, b)] = {"status": "ok", "ms": statistics.median(x["median_ms"] for x in ok),
                                 "cold_ms": statistics.median(x["cold_ms"] for x in ok),
                                 "best_ms": statistics.median(min(x["times_ms"]) for x in ok),
                                 "rounds_ms": [x["median_ms"] for x in ok]}
            else:
                bad = next((x for x in recs if x["status"] != "ok"), {"status": "missing"})
                table[(w, b)] = {"status": bad["status"], "detail": bad.get("detail", "")}
    return table


def cell(entry, key="ms"):
    if entry["status"] != "ok":
        return {"n/a": "n/a", "MISMATCH": "MISMATCH"}.get(entry["status"], entry["status"])
    v = entry[key]
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def ratio(table, w, a, b):
    x, y = table[(w, a)], table.get((w, b))
    if x["status"] != "ok" or not y or y["status"] != "ok":
        return "–"
    return f"{x['ms'] / y['ms']:.2f}×"


def print_tables(table, workloads, backends, args):
    head = "| workload | " + " | ".join(LABEL[b] for b in backends) + " |"
    rule = "|---|" + "---:|" * len(backends)
    print(f"\n### Step time, ms (median over {args.rounds} interleaved rounds of the median of {args.steps} steps)\n")
    print(head + "\n" + rule)
    for w in workloads:
        print(f"| {TITLES[w]} | " + " | ".join(cell(table[(w, b)]) for b in backends) + " |")
    print("\n### Fastest step, ms (median over rounds of each round's fastest timed step; "
          "less sensitive to other load on the machine)\n")
    print(head + "\n" + rule)
    for w in workloads:
        print(f"| {TITLES[w]} | " + " | ".join(cell(table[(w, b)], "best_ms") for b in backends) + " |")
    print("\n### First call, ms (trace + compile + first run; fresh process, no warm caches; median over rounds)\n")
    print(head + "\n" + rule)
    for w in workloads:
        print(f"| {TITLES[w]} | " + " | ".join(cell(table[(w, b)], "cold_ms") for b in backends) + " |")
    others = [b for b in backends if b != "jax"]
    cols = ([f"{LABEL[b]} / JAX jit" for b in others] if "jax" in backends else [])
    cols += ["tpu fused / tpu strict"] if {"fused", "strict"} <= set(backends) else []
    if cols:
        print("\n### Ratios (step time; below 1× is faster than the reference)\n")
        print("| workload | " + " | ".join(cols) + " |\n|---|" + "---:|" * len(cols))
        for w in workloads:
            cells = [ratio(table, w, b, "jax") for b in others] if "jax" in backends else []
            cells += [ratio(table, w, "fused", "strict")] if {"fused", "strict"} <= set(backends) else []
            print(f"| {TITLES[w]} | " + " | ".join(cells) + " |")
    notes = [(w, b, e) for (w, b), e in table.items() if e["status"] not in ("ok", "n/a") and e.get("detail")]
    if notes:
        print("\nNot timed:")
        for w, b, e in notes:
            print(f"- {w} on {LABEL[b]}: {e['status']}: {e['detail']}")


def main():
    ap = argparse.ArgumentParser(description="peer benchmark")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--backends", default=",".join(b[0] for b in BACKENDS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per round")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls, the first included (at least 2)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per worker process")
    ap.add_argument("--plot", help="write a grouped bar chart to this PNG")
    ap.add_argument("--json", help="write all per-round records to this file")
    ap.add_argument("--replay", help="print the tables (and --plot) from a --json file instead of running")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.replay:
        return replay(args)
    workloads = [w for w in args.workloads.split(",") if w]
    backends = [b for b in args.backends.split(",") if b]
    for name, allowed in (("workload", WORKLOADS), ("backend", list(LABEL))):
        bad = [x for x in (workloads if name == "workload" else backends) if x not in allowed]
        if bad:
            sys.exit(f"peers: unknown {name} {bad}; choose from {allowed}")
    spec = {b[0]: b for b in BACKENDS}
    for env_name in sorted({spec[b][2] for b in backends} - {"project"}):
        peer_envs.python(env_name)  # create before timing anything
    load0 = os.getloadavg()
    rounds = []
    with tempfile.TemporaryDirectory(prefix="torchtpu-peers-") as folder:
        ref = run_worker("cpu", "project", "peer_workloads_torch.py", workloads, folder, args, ["--dump"])
        ref = run_worker("cpu", "project", "peer_workloads_torch.py", workloads, folder, args, ["--reference"])
        for w, rec in ref.items():
            if rec["status"] != "ok":
                sys.exit(f"peers: the CPU eager reference of {w} failed: {rec}")
        for r in range(args.rounds):
            order = backends[r % len(backends):] + backends[:r % len(backends)]
            results = {}
            for b in order:
                t0 = time.time()
                results[b] = run_worker(b, spec[b][2], spec[b][3], workloads, folder, args)
                print(f"round {r + 1}/{args.rounds}: {LABEL[b]} done in {time.time() - t0:.0f} s", file=sys.stderr)
            rounds.append(results)
    table = summarize(rounds, workloads, backends)
    load1 = os.getloadavg()
    print(f"peers: {os.cpu_count()} cores, {platform.machine()}, {args.rounds} rounds × {args.steps} steps "
          f"(+{args.warmup} warm-up), load average {load0[0]:.1f} at start, {load1[0]:.1f} at end")
    print_tables(table, workloads, backends, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rounds": rounds}, f, indent=1)
    if args.plot:
        plot(table, workloads, backends, args.plot)


def replay(args):
    saved = json.load(open(args.replay))
    rounds, old = saved["rounds"], saved["args"]
    for k in ("rounds", "steps", "warmup"):
        setattr(args, k, old[k])
    workloads, backends = old["workloads"].split(","), old["backends"].split(",")
    print(f"peers: replay of {args.replay}, {args.rounds} rounds × {args.steps} steps (+{args.warmup} warm-up)")
    table = summarize(rounds, workloads, backends)
    print_tables(table, workloads, backends, args)
    if args.plot:
        plot(table, workloads, backends, args.plot)


def plot(table, workloads, backends, path):
    data = {"workloads": workloads, "titles": [TITLES[w] for w in workloads],
            "backends": [LABEL[b] for b in backends],
            "ms": [[table[(w, b)]["ms"] if table[(w, b)]["status"] == "ok" else None for b in backends]
                   for w in workloads]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    try:
        subprocess.run([peer_envs.python("jax"), os.path.join(HERE, "peer_plot.py"), f.name, os.path.abspath(path)],
                       check=True, timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    finally:
        os.unlink(f.name)
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
