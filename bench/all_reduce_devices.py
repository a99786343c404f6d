"""All-reduce bandwidth across the tpu devices of one process (one XLA program on N replicas).

    TORCHTPU_CPU_DEVICE_COUNT=4 python bench/all_reduce_devices.py

Prints, per message size, the median time of all_reduce_devices over N float32 tensors and the
bus bandwidth 2(N-1)/N * bytes / time, the figure NCCL's tests report.
"""
import os
import time

os.environ.setdefault("TORCHTPU_CPU_DEVICE_COUNT", "4")

import torch  # noqa: E402
from torchtpu.distributed import all_reduce_devices  # noqa: E402


def main():
    n = torch.tpu.device_count()
    print(f"{n} devices")
    for mib in (1, 4, 16, 64):
        numel = mib * (1 << 20) // 4
        ts = [torch.ones(numel, device=f"tpu:{d}") for d in range(n)]
        all_reduce_devices(ts)  # compile
        times = []
        for _ in range(5):
            torch.tpu.synchronize()
            t0 = time.perf_counter()
            all_reduce_devices(ts)
            torch.tpu.synchronize()
            times.append(time.perf_counter() - t0)
        t = sorted(times)[len(times) // 2]
        bus = 2 * (n - 1) / n * numel * 4 / t / 1e9
        print(f"{mib:3d} MiB per device: {t * 1e3:8.2f} ms, bus bandwidth {bus:6.2f} GB/s")


if __name__ == "__main__":
    main()
