"""Device memory: torch.OutOfMemoryError past the limit, and the memory figures of torch.tpu and
torch.accelerator."""
import os
import subprocess
import sys

import torch


def run_python(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=300)


OOM_SCRIPT = r"""
import torch
import torchtpu
assert torch.tpu.memory_limit() == 64 << 20, torch.tpu.memory_limit()
try:
    torch.empty(100_000_000, device="tpu")
except torch.OutOfMemoryError as e:
    assert isinstance(e, RuntimeError)
    print("OOM:", e)
else:
    raise SystemExit("no error")
x = torch.arange(6, dtype=torch.float32, device="tpu").reshape(2, 3)
print("after:", (x * 2 + 1).sum().item())
keep = torch.ones(6_000_000, device="tpu")  # 24 MB
try:
    keep + keep + keep  # each result is another 24 MB
except torch.OutOfMemoryError as e:
    print("op OOM:", e)
else:
    raise SystemExit("no error from an op")
del keep
print("after op:", (torch.ones(3, device="tpu") + 1).sum().item())
print("num_ooms:", torch.accelerator.memory_stats()["num_ooms"])
"""


def test_out_of_memory_is_torch_out_of_memory_error():
    r = run_python(OOM_SCRIPT, TORCHTPU_MEMORY_LIMIT="64M")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OOM: torchtpu: out of memory on tpu" in r.stdout
    assert "TORCHTPU_MEMORY_LIMIT" in r.stdout
    assert "after: 36.0" in r.stdout
    assert "op OOM: " in r.stdout and "out of memory" in r.stdout
    assert "after op: 6.0" in r.stdout
    assert "num_ooms: 1" in r.stdout or "num_ooms: 2" in r.stdout


def test_memory_allocated_rises_and_drops():
    torch.tpu.synchronize()
    base = torch.tpu.memory_allocated()
    assert torch.accelerator.memory_allocated() == base
    t = torch.empty(1 << 20, device="tpu")  # 4 MiB
    nbytes = t.numel() * t.element_size()
    assert torch.tpu.memory_allocated() >= base + nbytes
    assert torch.accelerator.memory_allocated() >= base + nbytes
    assert torch.accelerator.memory_reserved() >= base + nbytes
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] >= base + nbytes
    assert torch.tpu.memory_stats()["allocated_bytes.all.current"] >= base + nbytes
    del t
    assert torch.tpu.memory_allocated() == base
    assert torch.accelerator.memory_allocated() == base


def test_peak_and_reset():
    torch.tpu.synchronize()
    torch.accelerator.reset_peak_memory_stats()
    base = torch.accelerator.memory_allocated()
    assert torch.accelerator.max_memory_allocated() == base
    t = torch.empty(1 << 20, device="tpu")
    nbytes = t.numel() * t.element_size()
    del t
    assert torch.accelerator.memory_allocated() == base
    assert torch.accelerator.max_memory_allocated() >= base + nbytes
    assert torch.tpu.max_memory_allocated() >= base + nbytes
    assert torch.accelerator.memory_stats()["allocated_bytes.all.peak"] >= base + nbytes
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == base
    assert torch.accelerator.max_memory_allocated() == base


def test_mem_get_info_and_empty_cache():
    free, total = torch.tpu.mem_get_info()
    assert total == torch.tpu.memory_limit() > 0
    assert free == total - torch.tpu.memory_allocated()
    assert torch.accelerator.get_memory_info() == (free, total)
    torch.accelerator.empty_cache()
    torch.tpu.empty_cache()


HOST_CACHE_SCRIPT = r"""
import json, time, torch, torchtpu
from torchtpu import metrics
torch.tpu.set_mode("fused")
g = torch.Generator().manual_seed(0)
outs = []
for step in range(4):
    x = torch.randn(5000, 2000, generator=g).to("tpu")
    y = torch.tanh(x) * x + step     # 40 MB inputs and outputs, above the cache's 32 MiB floor
    outs.append(float(y.double().sum().item()))
    del x, y
torch.tpu.synchronize()
# The plugin frees a buffer's block once the work using it has finished, on its own threads: on a loaded
# machine that can come a little after the read above returned.
for _ in range(100):
    m = metrics.metrics()
    if m["host_cache_free_bytes"] >= 40_000_000:
        break
    time.sleep(0.02)
free_before = m["host_cache_free_bytes"]
torch.tpu.empty_cache()
print(json.dumps({"outs": outs, "hits": m["host_cache_hits"], "free_before": free_before,
                  "free_after": metrics.metrics()["host_cache_free_bytes"]}))
"""


def test_host_cache_reuses_plugin_blocks_and_empty_cache_releases_them():
    # On the CPU plugin the plugin's large host blocks are reused across steps; off, the
    # values are the same and nothing is served from the cache.
    import json
    on = run_python(HOST_CACHE_SCRIPT)
    off = run_python(HOST_CACHE_SCRIPT, TORCHTPU_HOST_CACHE="0")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    a, b = json.loads(on.stdout.splitlines()[-1]), json.loads(off.stdout.splitlines()[-1])
    assert a["outs"] == b["outs"]
    assert a["hits"] >= 3 and a["free_before"] >= 40_000_000 and a["free_after"] == 0, a
    assert b["hits"] == 0 and b["free_before"] == 0, b


HEAP_SCRIPT = r"""
import resource
import torch
import torchtpu
x = torch.ones(1 << 20, device="tpu")  # 4 MiB
faults = []
for i in range(30):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    y = (x * i).cpu()  # the plugin copies into a fresh 4 MiB CPU tensor
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    assert y[0].item() == i and y[-1].item() == i
    del y
print(sum(faults[-12:]))  # the first uses grow the heap of each thread that allocates
"""


def test_host_heap_reuses_blocks_of_a_few_mib_unless_the_user_tuned_malloc():
    # Once warm, each product's 4 MiB buffer and each copy's 4 MiB destination (1024 pages
    # each, 2048 a step) reuse the heap memory the previous ones freed, instead of being mapped and faulted
    # in again. A user's own malloc tunables are kept: a zero
    # trim threshold maps every such block fresh.
    held = run_python(HEAP_SCRIPT)
    user = run_python(HEAP_SCRIPT, GLIBC_TUNABLES="glibc.malloc.trim_threshold=0")
    assert held.returncode == 0 and user.returncode == 0, held.stderr + user.stderr
    held_faults, user_faults = int(held.stdout.split()[-1]), int(user.stdout.split()[-1])
    assert held_faults < 12 * 2048 // 2, held_faults  # a late thread may still grow its heap
    assert user_faults > 12 * 2048 * 3 // 4, user_faults
