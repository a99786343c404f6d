"""Where a fused step's time goes: for each peer workload (bench/peer_workloads_torch.py), the
median step time next to the time the device was busy with its programs (from torch.tpu.trace),
the programs per step, the page faults per step (memory the process maps and touches afresh)
and the flushes by reason. The rest of a step is the host: PyTorch's dispatch and autograd,
recording, launching and the copy of the result. With --read-every K, a step's result is read
only every K steps (as a loop that logs its loss now and then), so the host can record while
the device runs; the step time is then a block's time over K.

    python bench/device_time.py [--workloads gpt,cnn,mlp,norm,attn64,attn256,attn512] [--steps 20]
"""
import argparse
import json
import os
import resource
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_workloads_torch as workloads  # noqa: E402

DEVICE_TID = 2  # the trace's device row (python/torchtpu/trace.py)


def program_spans(path):
    """The durations (µs) of the programs a torch.tpu.trace file shows on the device row."""
    events = json.load(open(path))["traceEvents"]
    return [e["dur"] for e in events if e.get("tid") == DEVICE_TID and e.get("ph") == "X"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="gpt,cnn,mlp,norm,attn64,attn256,attn512")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--mode", default="fused")
    ap.add_argument("--read-every", type=int, default=1, help="read the result every K steps")
    a = ap.parse_args()
    torch.set_num_threads(2)
    backend = workloads.Backend(a.mode)
    print("| workload | step, ms | device busy, ms | programs/step | page faults/step | flushes |")
    print("|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in a.workloads.split(","):
            workloads.dump(name, os.path.join(folder, f"{name}.init.npz"))
            _, step, read = workloads.build(backend, name, folder)
            for _ in range(5):
                read(step())
            torch.tpu.reset_metrics()
            times, path = [], os.path.join(folder, f"{name}.trace.json")
            with torch.tpu.trace(path):
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                k = max(a.read_every, 1)
                for _ in range(max(a.steps // k, 1)):
                    t0 = time.perf_counter()
                    for _ in range(k):
                        out = step()
                    read(out)
                    times.append((time.perf_counter() - t0) / k)
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            busy = program_spans(path)
            m = torch.tpu.metrics()
            n = k * len(times)
            print(f"| {name} | {1e3 * np.median(times):.3f} | {sum(busy) / 1e3 / n:.3f} | "
                  f"{len(busy) / n:.1f} | {faults / n:.0f} | {m['flushes_by_reason']} |", flush=True)


if __name__ == "__main__":
    main()
