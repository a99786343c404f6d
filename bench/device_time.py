"""Where a fused step's time goes: for each peer workload (bench/peer_workloads_torch.py), the
median step time next to the time the device was busy with its programs (from torch.tpu.trace),
the programs per step, the page faults per step (memory the process maps and touches afresh)
and the flushes by reason. The rest of a step is the host: PyTorch's dispatch and autograd,
recording, launching and the copy of the result.

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="gpt,cnn,mlp,norm,attn64,attn256,attn512")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--mode", default="fused")
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
                for _ in range(a.steps):
                    t0 = time.perf_counter()
                    read(step())
                    times.append(time.perf_counter() - t0)
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            events = json.load(open(path))["traceEvents"]
            busy = [e["dur"] for e in events if e.get("tid") == DEVICE_TID and e.get("ph") == "X"]
            m = torch.tpu.metrics()
            print(f"| {name} | {1e3 * np.median(times):.3f} | {sum(busy) / 1e3 / a.steps:.3f} | "
                  f"{len(busy) / a.steps:.1f} | {faults / a.steps:.0f} | {m['flushes_by_reason']} |", flush=True)


if __name__ == "__main__":
    main()
