"""Shared command line and timing helpers of the training examples."""
import argparse
import time

import torch


def parse_args(description, steps=100):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--device", default="tpu", help="tpu or cpu")
    ap.add_argument("--mode", default=None, help="tpu mode: debug, strict or fused")
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dropout", type=float, default=None, help="override the model's dropout")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--compile", action="store_true", help="on tpu: torch.compile the model with backend=\"tpu\"")
    return ap.parse_args()


def set_mode(device, mode):
    if mode and torch.device(device).type == "tpu":
        torch.tpu.set_mode(mode)


def maybe_compile(model, device, compile):
    """The model itself, or on tpu with compile set, torch.compile(model, backend="tpu"): its forward
    and backward each run as one program."""
    if compile and torch.device(device).type == "tpu":
        return torch.compile(model, backend="tpu")
    return model


def sync(device):
    if torch.device(device).type != "cpu":
        torch.accelerator.synchronize()


class StepTimer:
    """StepTimer records the wall time of each training step, synchronizing the device."""

    def __init__(self, device):
        self.device = device
        self.times = []
        self.t0 = None

    def start(self):
        sync(self.device)
        self.t0 = time.perf_counter()

    def stop(self):
        sync(self.device)
        self.times.append(time.perf_counter() - self.t0)
        return self.times[-1]

    def median(self, skip=3):
        ts = sorted(self.times[skip:] or self.times)
        return ts[len(ts) // 2] if ts else float("nan")
