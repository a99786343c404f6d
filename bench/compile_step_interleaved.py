"""The interleaved mode of bench/compile_step.py: tpu fused, tpu compiled and tpu compiled whole step of
a peer workload's train step, timed in alternating blocks in one process. CPU eager is left to
bench/peers.py, which runs it in a process of its own: in one process with the plugin, PyTorch's CPU
threads and the plugin's contend, and CPU eager's step came out tens of times slower."""
import json
import os
import statistics
import tempfile
import time

import torch

import peer_workloads_torch as workloads
from device_time import program_spans

KINDS = [("fused", "tpu fused", "fused"), ("compiled", "tpu compiled", "strict"),
         ("compiled-step", "tpu compiled whole step", "fused")]


def block(step, read, mode, steps, trace=None):
    """Times steps calls of step (each read); returns the median (s), launches per step and device busy (s/step)."""
    if mode:
        torch.tpu.set_mode(mode)
    for _ in range(3):
        read(step())
    m0 = torch.tpu.metrics()["executions"]
    times = []
    ctx = torch.tpu.trace(trace) if trace else None
    if ctx:
        ctx.__enter__()
    for _ in range(steps):
        t0 = time.perf_counter()
        read(step())
        times.append(time.perf_counter() - t0)
    if ctx:
        ctx.__exit__(None, None, None)
    busy = sum(program_spans(trace)) / 1e6 / steps if trace else 0.0
    return statistics.median(times), (torch.tpu.metrics()["executions"] - m0) / steps, busy


def run(names, steps, rounds):
    torch.set_num_threads(2)
    print(f"| workload | {' | '.join(label for _, label, _ in KINDS)} |")
    print("|---|" + "---:|" * len(KINDS))
    notes = []
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            workloads.dump(name, os.path.join(folder, f"{name}.init.npz"))
            built = {}
            for kind, _, mode in KINDS:
                backend = workloads.Backend(kind)  # sets the mode; each block sets its own again
                built[kind] = workloads.build(backend, name, folder)[1:]
                built[kind][1](built[kind][0]())  # the first call: capture and compile
            res = {kind: [] for kind, _, _ in KINDS}
            for r in range(rounds):
                for kind, _, mode in KINDS:
                    trace = os.path.join(folder, f"{name}.{kind}.json") if r == rounds - 1 and mode else None
                    res[kind].append(block(*built[kind], mode, steps, trace))
            cells = []
            for kind, label, mode in KINDS:
                med = statistics.median(x[0] for x in res[kind]) * 1e3
                cells.append(f"{med:.3f}" if med < 10 else f"{med:.1f}")
                if mode:
                    last = res[kind][-1]
                    notes.append(f"{name} {label}: {last[1]:.1f} launches/step, device busy {last[2] * 1e3:.3f} ms/step, "
                                 f"host {1e3 * (last[0] - last[2]):.3f} ms/step (last block)")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nms; median over {rounds} alternating blocks of each block's median of {steps} steps.")
    for n in notes:
        print("- " + n)
    print(json.dumps({"load": os.getloadavg()}))
