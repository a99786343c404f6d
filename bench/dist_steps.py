"""dist_steps: DDP and FSDP2 step times on 2 torchrun ranks, tpu (strict and fused) against the same script on CPU gloo.

Runs examples/train_ddp.py and examples/train_fsdp.py --bf16 under `torchrun --nproc_per_node=2` for each
variant, the variants taking turns each round, and prints the median over rounds of each run's median step
(the examples skip their first steps) with its ratio to CPU gloo. Then, per variant, one rank's model run
alone in one process: its step time and the CPU time it takes per step (two ranks share the machine's
cores). A variant is label:NAME=VALUE pairs (mode=strict|fused|cpu picks the device and mode; other names
are environment settings), e.g. the CPU plugin's thread pools at one thread per core:

    python bench/dist_steps.py --rounds 3
    python bench/dist_steps.py --rounds 5 --workloads DDP --variants "strict:mode=strict;pool2:mode=strict PJRT_NPROC=2;cpu:mode=cpu"
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPTS = {"DDP": ["examples/train_ddp.py"], "FSDP2 bf16": ["examples/train_fsdp.py", "--bf16"]}
STEP = re.compile(r"median step ([\d.]+) ms")


def parse_variants(spec):
    out = []
    for part in spec.split(";"):
        label, _, rest = part.partition(":")
        env = dict(kv.split("=", 1) for kv in rest.split())
        out.append((label.strip(), env))
    return out


def run(script, env_extra, timeout):
    env = dict(os.environ)
    mode = env_extra.get("mode", "strict")
    env.update({k: v for k, v in env_extra.items() if k != "mode"})
    device = "cpu" if mode == "cpu" else "tpu"
    if device == "tpu":
        env["TORCHTPU_MODE"] = mode
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    r = subprocess.run([torchrun, "--nproc_per_node=2", *script, "--device", device], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=timeout)
    m = STEP.search(r.stdout)
    if r.returncode or not m:
        raise RuntimeError(f"{' '.join(script)} ({env_extra}) failed: {(r.stdout + r.stderr)[-800:]}")
    return float(m.group(1))


ONE = r"""
import resource, sys, time, torch, torch.nn.functional as F
sys.path.insert(0, "examples")
from dist_common import batches, make_model
dev = sys.argv[1]
if dev == "tpu":
    torch.tpu.set_mode(sys.argv[2])
model = make_model(512).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
walls = []
for i, (x, y) in enumerate(batches(205, 64, 0, 2)):
    if i == 5:
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    t0 = time.perf_counter()
    loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    loss.item()
    walls.append(time.perf_counter() - t0)
r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / 200
print("ONE", sorted(walls[5:])[100] * 1e3, cpu * 1e3)
"""


def one_rank(env_extra, timeout):
    """One process running a DDP rank's model and half batch without DDP: its median step and the CPU time
    (user and system, all threads) it used per step, ms."""
    env = dict(os.environ, OMP_NUM_THREADS="1")  # as torchrun sets it for each rank
    mode = env_extra.get("mode", "strict")
    env.update({k: v for k, v in env_extra.items() if k != "mode"})
    args = ["cpu"] if mode == "cpu" else ["tpu", mode]
    r = subprocess.run([sys.executable, "-c", ONE, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=timeout)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("ONE ")]
    if r.returncode or not line:
        raise RuntimeError(f"one rank ({env_extra}) failed: {r.stderr[-800:]}")
    return tuple(float(v) for v in line[0].split()[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default="strict:mode=strict;fused:mode=fused;cpu:mode=cpu")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--workloads", default=",".join(SCRIPTS), help="of: " + ", ".join(SCRIPTS))
    a = ap.parse_args()
    for w in [w for w in SCRIPTS if w not in a.workloads.split(",")]:
        del SCRIPTS[w]
    variants = parse_variants(a.variants)
    times = {(w, v[0]): [] for w in SCRIPTS for v in variants}
    load0 = os.getloadavg()[0]
    for r in range(a.rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        for w, script in SCRIPTS.items():
            for label, env in order:
                times[(w, label)].append(run(script, env, a.timeout))
    ref = next((label for label, env in variants if env.get("mode") == "cpu"), None)
    print(f"2 torchrun ranks, {os.cpu_count()} cores, {a.rounds} rounds; load average {load0:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end; ms, median over rounds of each run's median step")
    print("| workload | " + " | ".join(label for label, _ in variants) + (" | " + " | ".join(
        f"{label} / {ref}" for label, _ in variants if label != ref) if ref else "") + " |")
    print("|---|" + "---:|" * (len(variants) + (len(variants) - 1 if ref else 0)))
    for w in SCRIPTS:
        med = {label: statistics.median(times[(w, label)]) for label, _ in variants}
        cells = [f"{med[label]:.1f}" for label, _ in variants]
        if ref:
            cells += [f"{med[label] / med[ref]:.2f}×" for label, _ in variants if label != ref]
        print(f"| {w} | " + " | ".join(cells) + " |")
    for w in SCRIPTS:
        print(f"{w} runs: " + "; ".join(f"{label} " + " ".join(f"{t:.1f}" for t in times[(w, label)])
                                        for label, _ in variants))
    print("\nOne rank's model alone, one process, OMP_NUM_THREADS=1 (median of rounds): step wall ms, CPU ms per step")
    for label, env in variants:
        runs = [one_rank(env, a.timeout) for _ in range(a.rounds)]
        print(f"- {label}: wall {statistics.median(w for w, _ in runs):.2f}, CPU {statistics.median(c for _, c in runs):.2f}")


if __name__ == "__main__":
    main()
