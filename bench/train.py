"""train: step-time medians of the three examples on CPU eager and on tpu in strict and fused mode.

Runs every configuration in this one process and prints one markdown table
with ratios to CPU eager, then the same figures as JSON.

    python bench/train.py --steps 30
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import train_cnn  # noqa: E402
import train_gpt  # noqa: E402
import train_mlp  # noqa: E402

EXAMPLES = {"mlp": train_mlp.train, "cnn": train_cnn.train, "gpt": train_gpt.train}
CONFIGS = [("cpu eager", "cpu", None), ("tpu strict", "tpu", "strict"), ("tpu fused", "tpu", "fused")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--examples", default="mlp,cnn,gpt")
    args = ap.parse_args()
    results = {}
    for name in args.examples.split(","):
        for label, device, mode in CONFIGS:
            out = EXAMPLES[name](device=device, mode=mode, steps=args.steps, seed=0, log=None)
            timer = out[1]
            results.setdefault(name, {})[label] = timer.median(skip=5) * 1e3
            if device == "tpu":
                torch.tpu.set_mode("strict")
    print(f"step time medians (ms), {args.steps} steps each, first 5 skipped; "
          f"{os.cpu_count()} cores; torch {torch.__version__}")
    print("| example | " + " | ".join(c[0] for c in CONFIGS) + " | strict / cpu | fused / cpu |")
    print("|---|" + "---:|" * (len(CONFIGS) + 2))
    for name, row in results.items():
        cpu = row["cpu eager"]
        cells = " | ".join(f"{row[c[0]]:.2f}" for c in CONFIGS)
        print(f"| {name} | {cells} | {row['tpu strict'] / cpu:.2f}x | {row['tpu fused'] / cpu:.2f}x |")
    print(json.dumps({"cores": os.cpu_count(), "steps": args.steps, "median_ms": results}))


if __name__ == "__main__":
    main()
