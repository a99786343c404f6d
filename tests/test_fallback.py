"""Ops without a rule run on CPU: counted, warned once, or refused with TORCHTPU_FALLBACK=error."""
import os
import subprocess
import sys
import warnings

import torch

# An op the table does not cover; if it ever gains a rule, pick another.
UNCOVERED = "aten::histogram.bin_ct"


def test_fallback_gives_cpu_result_counts_and_warns_once():
    x = torch.randn(5)
    t = x.to("tpu")
    torch.tpu.reset_metrics()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = torch.histogram(t, 3).hist
        got2 = torch.histogram(t, 3).hist
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), torch.histogram(x, 3).hist)
    torch.testing.assert_close(got2.cpu(), torch.histogram(x, 3).hist)
    counts = torch.tpu.metrics()["cpu_fallbacks"]
    name = [k for k in counts if "histogram" in k]
    assert name and counts[name[0]] == 2, counts
    msgs = [str(m.message) for m in w if "histogram" in str(m.message)]
    assert len(msgs) <= 1


def test_fallback_error_mode():
    code = ("import torch\nx=torch.arange(5.0).to('tpu')\n"
            "try:\n    torch.histogram(x, 3)\nexcept RuntimeError as e:\n    print('ERR', e)\n")
    env = dict(os.environ, TORCHTPU_FALLBACK="error")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "histogram" in r.stdout
