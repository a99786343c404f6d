"""Prints, per zoo model and step, how far CPU float32 training lies from CPU float64 training from the same
initial state and batches: the gaps that numerical noise alone gives, against which the zoo's tolerances are set.

    HF_HUB_OFFLINE=1 PYTHONPATH=python $(make -s env)/bin/python tests/models/noise.py [model ...]
"""
import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from models.harness import FULL_STEPS, compare_dtypes  # noqa: E402

CASES = {"gpt2": ("gpt2", "GPT2"), "bert": ("bert", "BERT"), "t5": ("t5", "T5"), "llama": ("llama", "LLAMA"),
         "resnet18": ("resnet", "RESNET"), "vit": ("vit", "VIT"), "convnext": ("convnext", "CONVNEXT")}


def main(names):
    for name in names or CASES:
        module, attr = CASES[name]
        case = getattr(importlib.import_module("models.test_" + module), attr)
        for step, (loss_gap, worst, where) in enumerate(compare_dtypes(case, FULL_STEPS)):
            print(f"{name:9s} step {step}: loss gap {loss_gap:.2e}, worst gradient {worst:.2e} ({where})", flush=True)


if __name__ == "__main__":
    torch.set_num_threads(max(1, torch.get_num_threads()))
    main(sys.argv[1:])
