"""op_latency: per-op time from Python for `x + 1` on a 1000-element tensor.

Prints the median of N calls (default 1000) on CPU eager and on tpu in strict
and fused mode, and each one's ratio to CPU, as a markdown table and JSON.
Strict times include the asynchronous launch of one cached executable; fused
times are the recording cost per op, with one sync at the end of each sample
block counted separately.
"""
import argparse
import json
import statistics
import time

import torch


def median_us(fn, n, sync=lambda: None):
    for _ in range(50):
        fn()
    sync()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    sync()
    return statistics.median(samples) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    rows = {}
    x = torch.randn(1000)
    rows["cpu eager"] = median_us(lambda: x + 1, args.n)

    t = x.to("tpu")
    torch.tpu.set_mode("strict")
    rows["tpu strict"] = median_us(lambda: t + 1, args.n, torch.tpu.synchronize)
    rows["tpu strict + sync"] = median_us(lambda: (t + 1, torch.tpu.synchronize()), args.n)

    torch.tpu.set_mode("fused")
    rows["tpu fused (record)"] = median_us(lambda: t + 1, args.n, torch.tpu.synchronize)
    torch.tpu.set_mode("strict")

    base = rows["cpu eager"]
    print(f"x + 1, 1000 float32 elements, median of {args.n} calls, torch {torch.__version__}")
    print("| path | median us/op | ratio to CPU eager |")
    print("|---|---:|---:|")
    for k, v in rows.items():
        print(f"| {k} | {v:.1f} | {v / base:.1f}x |")
    if args.json:
        print(json.dumps({k: round(v, 2) for k, v in rows.items()}))


if __name__ == "__main__":
    main()
