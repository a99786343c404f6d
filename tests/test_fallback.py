"""Ops without a rule run on CPU: counted, warned once, or refused with TORCHTPU_FALLBACK=error."""
import os
import subprocess
import sys
import warnings

import torch

# The tests use aten::linalg_eig, an op the table does not cover; if it ever gains a rule, pick another.


def test_fallback_gives_cpu_result_counts_and_warns_once():
    # linalg_eig (general eigenvalues, complex results) has no rule: it runs on CPU.
    x = torch.randn(4, 4)
    t = x.to("tpu")
    want = torch.linalg.eigvals(x)
    torch.tpu.reset_metrics()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = torch.linalg.eigvals(t)
        got2 = torch.linalg.eigvals(t)
    assert got.device.type == "tpu" and got.dtype == torch.complex64
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(got2.cpu(), want)
    counts = torch.tpu.metrics()["cpu_fallbacks"]
    name = [k for k in counts if "linalg_eig" in k]
    assert name and counts[name[0]] == 2, counts
    msgs = [str(m.message) for m in w if "linalg_eig" in str(m.message)]
    assert len(msgs) <= 1


def test_fallback_error_mode():
    code = ("import torch\nx=torch.arange(5.0).to('tpu')\n"
            "try:\n    torch.linalg.eigvals(x.view(5, 1).expand(5, 5) + 0)\nexcept RuntimeError as e:\n    print('ERR', e)\n")
    env = dict(os.environ, TORCHTPU_FALLBACK="error")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "linalg_eig" in r.stdout


def test_complex_linalg_runs_on_cpu_and_counts():
    # The linalg rules lower real matrices only; complex ones take the counted CPU path with CPU's result.
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 4, dtype=torch.complex64, generator=g)
    b = torch.randn(4, 2, dtype=torch.complex64, generator=g)
    torch.tpu.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = torch.linalg.solve(a.to("tpu"), b.to("tpu"))
        s = torch.linalg.svdvals(a.to("tpu"))
    assert x.device.type == "tpu" and x.dtype == torch.complex64
    torch.testing.assert_close(x.cpu(), torch.linalg.solve(a, b))
    torch.testing.assert_close(s.cpu(), torch.linalg.svdvals(a))
    counts = torch.tpu.metrics()["cpu_fallbacks"]
    assert counts.get("aten::_linalg_solve_ex", 0) == 1 and counts.get("aten::_linalg_svd", 0) == 1, counts
