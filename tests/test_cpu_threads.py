"""The XLA CPU plugin's thread pools follow PyTorch's intra-op thread count (python/torchtpu/_plugin.py
limit_cpu_threads): torchrun's OMP_NUM_THREADS=1 gives each rank process one pool thread instead of one per
core, an explicit PJRT_NPROC wins, and values are unchanged."""
import json
import os
import subprocess
import sys

CHILD = """
import glob, json, os, torch
g = torch.Generator().manual_seed(0)
a, b = torch.randn(96, 80, generator=g), torch.randn(80, 64, generator=g)
got = (a.to("tpu") @ b.to("tpu")).relu().sum(0).cpu()
ok = torch.allclose(got, (a @ b).relu().sum(0), rtol=1e-5, atol=1e-4)
pool = sum(open(p).read().strip() == "tf_XLAEigen" for p in glob.glob("/proc/self/task/*/comm"))
print("R " + json.dumps({"ok": ok, "pool": pool, "nproc": os.environ.get("PJRT_NPROC"), "torch": torch.get_num_threads()}))
"""


def child(**env):
    e = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PJRT_NPROC")}
    e.update(env)
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=e, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.split("R ", 1)[1])


CORES = len(os.sched_getaffinity(0))


def test_pool_follows_torch_threads():
    default = child()
    assert default["ok"] and default["nproc"] is None
    assert default["pool"] == default["torch"] == CORES, default
    one = child(OMP_NUM_THREADS="1")
    assert one["ok"] and one["torch"] == 1 and one["pool"] == 1, one
    # One core already gives a pool of one: nothing to set.
    assert one["nproc"] == ("1" if CORES > 1 else None), one
    empty = child(OMP_NUM_THREADS="1", PJRT_NPROC="")  # unset, as the plugin reads it
    assert empty["ok"] and empty["pool"] == 1, empty
    mine = child(OMP_NUM_THREADS="1", PJRT_NPROC="3")
    assert mine["ok"] and (mine["nproc"], mine["pool"]) == ("3", 3), mine
