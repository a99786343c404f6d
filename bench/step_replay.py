"""step_replay: host time per fused training step with step replay off and on.

For each training workload of the peer benchmark (bench/peer_workloads_torch.py), a fused step is
timed in two processes that differ only in TORCHTPU_STEP_REPLAY (0: every step records its ops,
pasting each op's plan; 1: a step that matches the previous one's tape records nothing). Columns:

- host: the time to issue one step (forward, backward and optimizer step, each program launched),
  with the device synchronized before the step outside the timed part, so that no earlier work
  overlaps it; the median over the steps;
- in the engine: the engine's share of it (the op_seconds metric: rules, recording, replays, per
  step; launches at step boundaries are outside it);
- step: the whole step, the read of its loss included (median);
- replays/step: segments launched from a tape per step (step_replays).

Both variants start from the same weights and data; their losses must agree bit for bit before any
figure is printed. The variants alternate, one process each, for --rounds rounds; the table shows
each round and the median of the rounds.

    python bench/step_replay.py [--workloads mlp,cnn,gpt] [--steps 60] [--rounds 3] [--cut 1]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(names, folder, steps):
    """Times the fused step of each workload in this process; prints one JSON line per workload."""
    import torch

    sys.path.insert(0, HERE)
    import peer_workloads_torch as workloads

    torch.set_num_threads(2)
    for name in names:
        _, step, read = workloads.build(workloads.Backend("fused"), name, folder)
        losses = [read(step()) for _ in range(5)]
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        host, whole = [], []
        for _ in range(steps):
            torch.tpu.synchronize()
            t0 = time.perf_counter()
            out = step()
            t1 = time.perf_counter()
            losses.append(read(out))
            whole.append(time.perf_counter() - t0)
            host.append(t1 - t0)
        m = torch.tpu.metrics()
        print(json.dumps({"name": name, "host_us": 1e6 * statistics.median(host),
                          "engine_us": 1e6 * m["op_seconds"] / steps, "step_ms": 1e3 * statistics.median(whole),
                          "replays": m["step_replays"] / steps, "losses": [repr(v) for v in losses]}), flush=True)


def run(flag, names, folder, args):
    env = dict(os.environ, TORCHTPU_STEP_REPLAY=flag, TORCHTPU_BACKWARD_CUT=args.cut, TORCHTPU_CACHE_DIR="")
    r = subprocess.run([sys.executable, __file__, "--worker", "--workloads", ",".join(names), "--dir", folder,
                        "--steps", str(args.steps)], env=env, capture_output=True, text=True, timeout=args.timeout)
    if r.returncode:
        sys.exit(f"step_replay: the worker failed:\n{r.stderr[-3000:]}")
    return {rec["name"]: rec for rec in map(json.loads, r.stdout.splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="mlp,cnn,gpt")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cut", default="1", help="TORCHTPU_BACKWARD_CUT: 1, three programs a step; 0, one")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = [w for w in args.workloads.split(",") if w]
    if args.worker:
        worker(names, args.dir, args.steps)
        return
    sys.path.insert(0, HERE)
    import peer_workloads_torch as workloads

    folder = tempfile.mkdtemp(prefix="torchtpu-step-replay-")
    for n in names:
        workloads.dump(n, os.path.join(folder, f"{n}.init.npz"))
    rounds = []
    for _ in range(args.rounds):
        off, on = run("0", names, folder, args), run("1", names, folder, args)
        for n in names:
            if off[n]["losses"] != on[n]["losses"]:
                sys.exit(f"step_replay: {n}: the losses differ with and without replay:\n{off[n]['losses']}\n{on[n]['losses']}")
        rounds.append((off, on))
    print(f"TORCHTPU_BACKWARD_CUT={args.cut}, {args.steps} steps, {args.rounds} rounds")
    print("| workload | round | host, off (µs) | host, on (µs) | in the engine, off (µs) | in the engine, on (µs) | "
          "step, off (ms) | step, on (ms) | replays/step |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in names:
        rows = [(str(i + 1), off[n], on[n]) for i, (off, on) in enumerate(rounds)]
        med = {k: (statistics.median(r[1][k] for r in rows), statistics.median(r[2][k] for r in rows))
               for k in ("host_us", "engine_us", "step_ms")}
        rows.append(("median", {k: v[0] for k, v in med.items()}, {k: v[1] for k, v in med.items()} | {
            "replays": statistics.median(r[2]["replays"] for r in rows)}))
        for label, a, b in rows:
            print(f"| {n} | {label} | {a['host_us']:.0f} | {b['host_us']:.0f} | {a['engine_us']:.0f} | {b['engine_us']:.0f} | "
                  f"{a['step_ms']:.3f} | {b['step_ms']:.3f} | {b['replays']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
