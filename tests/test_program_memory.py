"""A long process keeps its memory mappings bounded: programs leave memory.

The XLA CPU plugin's compiled code takes several memory mappings per
program, and a process may hold only vm.max_map_count of them. These tests
run a process under a small limit (TORCHTPU_MAP_LIMIT) and check that the
in-memory program cache drops programs and the engine frees them, that a
dropped program loads again from the disk cache with the same values, and
that compiled graphs holding more programs than the limit allows get a clear
error rather than a crash, and recover once freed.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(r'''
    import gc, json, sys
    import torch, torchtpu
    torch._dynamo.config.recompile_limit = 10000
    torch._dynamo.config.accumulated_recompile_limit = 100000

    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    torch.ones(2, device="tpu").cpu()
    out = {"base": maps()}
    if sys.argv[1] == "base":
        print(json.dumps(out)); sys.exit()

    def program(k):
        x = torch.linspace(-1, 1, k)
        y = (x.to("tpu") * (0.01 * k) + 1).exp().sum()
        return abs(y.item() - (x * (0.01 * k) + 1).exp().sum().item()) <= 1e-5 * abs(y.item())

    peak, ok = 0, True
    for k in range(1, 81):
        ok &= program(k)
        peak = max(peak, maps())
    for k in range(1, 11):  # dropped long ago: loaded from disk again
        ok &= program(k)
    out.update(eager_ok=ok, eager_peak=peak, eager=torchtpu.metrics.metrics())

    fns, err = [], None
    try:
        for k in range(1, 1000):
            f = torch.compile(lambda x, k=k: (x * k - 1).tanh(), backend="tpu", dynamic=False)
            x = torch.linspace(-1, 1, k + 2)
            ok &= torch.allclose(f(x.to("tpu")).cpu(), (x * k - 1).tanh(), atol=1e-5)
            fns.append(f)
    except RuntimeError as e:
        err = str(e)
    out.update(graphs=len(fns), error=err, graphs_peak=maps())
    fns.clear(); torch._dynamo.reset(); gc.collect()
    for k in range(1, 11):
        f = torch.compile(lambda x, k=k: (x * k + 2).cos(), backend="tpu", dynamic=False)
        x = torch.linspace(-1, 1, 2000 + k)
        ok &= torch.allclose(f(x.to("tpu")).cpu(), (x * k + 2).cos(), atol=1e-5)
    out.update(after_ok=ok, after=torchtpu.metrics.metrics())
    print(json.dumps(out))
''')


def _run(arg, env, timeout):
    p = subprocess.run([sys.executable, "-c", SCRIPT, arg], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_programs_leave_memory_under_a_mapping_limit(tmp_path):
    env = dict(os.environ, TORCHTPU_MODE="fused", TORCHTPU_CACHE_DIR=str(tmp_path / "programs"))
    env.pop("TORCHTPU_MAP_LIMIT", None)
    base = _run("base", env, 120)[0]["base"]
    limit = base + 400
    env["TORCHTPU_MAP_LIMIT"] = str(limit)
    out, stderr = _run("all", env, 600)

    # Eager programs: 80 distinct ones stay under the limit, values right,
    # dropped programs load again from disk.
    m = out["eager"]
    assert out["eager_ok"]
    assert m["memory_mapping_limit"] == limit
    assert out["eager_peak"] < limit
    assert m["programs_evicted"] > 0
    assert m["programs_in_memory"] < 80
    assert m["disk_cache_hits"] >= 1, m
    assert "memory mappings" in stderr  # the one warning when the cache starts dropping

    # Compiled graphs hold their programs: past nine tenths of the limit the
    # next compile is refused with an error that names the cause.
    assert out["error"] is not None, f"{out['graphs']} compiled graphs held and no error"
    assert "memory mappings" in out["error"] and str(limit) in out["error"]
    assert "torch._dynamo.reset()" in out["error"]
    assert out["graphs"] >= 10
    assert out["graphs_peak"] < limit

    # Freed, they make room again.
    a = out["after"]
    assert out["after_ok"]
    assert a["memory_mappings"] < limit * 0.9
    assert a["live_executables"] < out["graphs"]
