"""floors: for each peer workload, the fused step next to the programs under it, in one run.

A fused step is the host (PyTorch's dispatch and autograd, recording, launch,
the copy of the result) plus the device running one program. Whether that
program is as good as JAX's for the same math, and how much of JAX's time is
its newer XLA rather than its program, shows by timing both programs alone on
the same XLA CPU plugin:

- tpu fused: the step as one program (TORCHTPU_BACKWARD_CUT=0, so that it
  compares with JAX's one program for the whole step, and its host and device
  times add up; peers.py times the default, where the forward and backward
  launch as soon as they are recorded), the device busy time of its
  programs (torch.tpu.trace), and the host time: the rest of the step, of
  which "in the engine" is the time inside the engine's op entry (the
  op_seconds metric: rules, recording, replays) and the remainder is
  PyTorch, Python, the shim, the launch and the copy of the result;
- our program on the plugin: the program the fused step runs (dumped with
  TORCHTPU_DUMP_DIR), launched and awaited from Go with no PyTorch around it
  (pjrt BenchmarkDumpedProgram);
- JAX's program on the plugin: the StableHLO jax.jit lowers for the JAX twin
  (bench/peer_workloads_jax.py), timed the same way;
- JAX jit: the JAX twin's whole call, in JAX's own runtime (jaxlib's XLA);
- PyTorch alone: the workload's tiny twin (the same modules, ops and optimizer
  on batch 1 and the smallest sizes they take) in CPU eager: PyTorch's Python,
  dispatch and autograd for the step with almost no arithmetic, which any
  eager device pays before its own work. Where it exceeds JAX jit's step, no
  eager mode can match JAX on that workload.

A second table counts what XLA made of both programs (bench/hlo_stats.py:
kernels by kind, dots, copies, gathers, f64 values), each compiled once more
by the plugin with xla_dump_to.

    python bench/floors.py [--workloads norm,mlp] [--steps 20] [--benchtime 1s] [--count 3]
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types

# Every program compiles afresh in this process, so the dump holds the one a step runs. The engine
# sees the environment the process started with, so the script starts itself again with both set.
if "TORCHTPU_FLOORS_SCRATCH" not in os.environ:
    _s = tempfile.mkdtemp(prefix="torchtpu-floors-")
    os.execve(sys.executable, [sys.executable, *sys.argv],
              dict(os.environ, TORCHTPU_FLOORS_SCRATCH=_s, TORCHTPU_CACHE_DIR=os.path.join(_s, "cache"),
                   TORCHTPU_BACKWARD_CUT="0",
                   TORCHTPU_DUMP_DIR=os.path.join(_s, "programs")))
SCRATCH, DUMP = os.environ["TORCHTPU_FLOORS_SCRATCH"], os.environ["TORCHTPU_DUMP_DIR"]

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import hlo_stats  # noqa: E402
import peer_workloads_torch as workloads  # noqa: E402
import peers  # noqa: E402
from device_time import program_spans  # noqa: E402
from peer_timing import WORKLOADS  # noqa: E402



def fused_step(name, folder, steps):
    """Times the fused step of name.

    Returns the median step (ms), the device busy time and the engine's op time per step (ms) and the
    module of the program the step runs.
    """
    earlier = set(glob.glob(os.path.join(DUMP, "*.mlir")))
    _, step, read = workloads.build(workloads.Backend("fused"), name, folder)
    for _ in range(5):
        read(step())
    before = set(glob.glob(os.path.join(DUMP, "*.mlir")))
    times, path = [], os.path.join(folder, f"{name}.trace.json")
    torch.tpu.reset_metrics()
    with torch.tpu.trace(path):
        for _ in range(steps):
            t0 = time.perf_counter()
            read(step())
            times.append(time.perf_counter() - t0)
    busy = program_spans(path)
    if set(glob.glob(os.path.join(DUMP, "*.mlir"))) != before or len(busy) != steps or before == earlier:
        raise RuntimeError(f"{name}: a warm fused step should run one program it compiled before; "
                           f"{len(busy)} programs ran in {steps} steps")
    module = max(before - earlier, key=os.path.getmtime)  # the last compiled: the steady step's
    op = 1e3 * torch.tpu.metrics()["op_seconds"] / steps
    return 1e3 * statistics.median(times), sum(busy) / 1e3 / steps, op, module


def pytorch_alone(name, folder, steps):
    """Median ms of the tiny twin of workload name in CPU eager (peer_workloads_torch.dump_tiny)."""
    workloads.dump_tiny(name, os.path.join(folder, f"{name}.init.npz"))
    _, step, read = workloads.build(workloads.Backend("cpu"), name, folder, tiny=True)
    for _ in range(10):
        read(step())
    times = []
    for _ in range(max(steps, 50)):
        t0 = time.perf_counter()
        read(step())
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def program_alone(module, args, benchtime=None, count=None, **env_extra):
    """Median ms of module launched and awaited from Go (pjrt BenchmarkDumpedProgram)."""
    env = dict(os.environ, TORCHTPU_BENCH_MODULE=module,
               CGO_CFLAGS=f"-I{os.path.join(ROOT, 'build', 'include')} -O2", **env_extra)
    r = subprocess.run(["go", "test", "./pjrt", "-run", "^$", "-bench", "^BenchmarkDumpedProgram$",
                        "-benchtime", benchtime or args.benchtime, "-count", str(count or args.count)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
    ns = [float(m) for m in re.findall(r"BenchmarkDumpedProgram\S*\s+\d+\s+([\d.]+) ns/op", r.stdout)]
    if r.returncode or not ns:
        tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
        raise RuntimeError(f"timing {os.path.basename(module)} failed: {' | '.join(tail)}")
    return statistics.median(ns) / 1e6


def hlo_counts(module, folder, args):
    """Counts (hlo_stats) of the optimized HLO the plugin makes of module, compiled once into folder."""
    program_alone(module, args, benchtime="1x", count=1, TORCHTPU_XLA_OPTIONS=f"xla_dump_to={folder}")
    return hlo_stats.stats(folder)


def print_hlo_table(modules, args):
    """Prints, per workload, hlo_stats' counts of our program and JAX's on the plugin."""
    print()
    print("| workload | " + " | ".join(hlo_stats.COLUMNS) + " |")
    print("|---|" + "---:|" * len(hlo_stats.COLUMNS))
    for n, (ours, theirs) in modules.items():
        try:
            a = hlo_counts(ours, os.path.join(SCRATCH, "hlo", n, "ours"), args)
            b = hlo_counts(theirs, os.path.join(SCRATCH, "hlo", n, "jax"), args)
        except Exception as e:  # reported, the next workload still runs
            print(f"| {n} | {type(e).__name__}: {e} |", flush=True)
            continue
        print(f"| {n} | " + " | ".join(f"{a[k]} / {b[k]}" for k in hlo_stats.COLUMNS) + " |", flush=True)
    print("Counts in the optimized HLO of our program / JAX's, both compiled by the plugin (bench/hlo_stats.py says what each "
          "column counts).")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--steps", type=int, default=20, help="timed steps of the fused and JAX steps")
    ap.add_argument("--benchtime", default="1s", help="go test -benchtime for each program alone")
    ap.add_argument("--count", type=int, default=3, help="go test -count: the median of this many")
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args()
    names = [w for w in args.workloads.split(",") if w]
    torch.set_num_threads(2)
    folder = os.path.join(SCRATCH, "work")
    os.makedirs(folder)
    for n in names:
        workloads.dump(n, os.path.join(folder, f"{n}.init.npz"))
    jax_py = peers.peer_envs.python("jax")
    env = peers.worker_env("jax", "jax", folder)
    r = subprocess.run([jax_py, os.path.join(HERE, "peer_workloads_jax.py"), "--backend", "jax", "--export",
                        "--workloads", ",".join(names), "--dir", folder, "--steps", "1"],
                       env=env, capture_output=True, text=True, timeout=args.timeout)
    if r.returncode:
        sys.exit(f"floors: lowering the JAX twins failed:\n{r.stderr[-2000:]}")
    opts = types.SimpleNamespace(steps=args.steps, warmup=5, timeout=args.timeout, verbose=False)
    jax = peers.run_worker("jax", "jax", "peer_workloads_jax.py", names, folder, opts)
    tiny = os.path.join(SCRATCH, "tiny")
    os.makedirs(tiny)
    modules = {}
    print("| workload | tpu fused step | device busy | host | host in the engine | PyTorch alone | our program alone | "
          "JAX's program alone | JAX jit | ours / JAX's program | JAX jit / JAX's program |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in names:
        try:
            step, busy, op, module = fused_step(n, folder, args.steps)
            ours = program_alone(module, args)
            theirs = program_alone(os.path.join(folder, f"{n}.jax.mlir"), args)
            floor = pytorch_alone(n, tiny, args.steps)
            modules[n] = (module, os.path.join(folder, f"{n}.jax.mlir"))
        except Exception as e:  # reported, the next workload still runs
            print(f"| {n} | {type(e).__name__}: {e} |", flush=True)
            continue
        rec = jax.get(n, {})
        jit = rec.get("median_ms") if rec.get("status") == "ok" else None
        jit_s = f"{jit:.3f}" if jit else rec.get("status", "?")
        ratio = f"{jit / theirs:.2f}" if jit else ""
        print(f"| {n} | {step:.3f} | {busy:.3f} | {step - busy:.3f} | {op:.3f} | {floor:.3f} | {ours:.3f} | {theirs:.3f} | {jit_s} | "
              f"{ours / theirs:.2f} | {ratio} |", flush=True)
    print("ms; medians (device busy and engine time: means per step). Programs alone: inputs hold 0.5 (integers 0); a donating program gets fresh inputs "
          "each launch, outside the timed part.")
    print_hlo_table(modules, args)


if __name__ == "__main__":
    main()
