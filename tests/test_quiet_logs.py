"""The plugin's own logging is silent by default and comes back on request."""
import os
import subprocess
import sys

SCRIPT = """
import torch
torch.manual_seed(0)
w = torch.randn(4, 3, device='tpu', requires_grad=True)
x = torch.randn(8, 4, device='tpu')
loss = (x @ w).relu().sum()
loss.backward()
torch.tpu.synchronize()
print('OK', round(float(loss.detach().cpu()), 3) == round(float((x.cpu() @ w.detach().cpu()).relu().sum()), 3), w.grad.shape)
"""


def run(**env):
    e = {k: v for k, v in os.environ.items() if k not in ("TORCHTPU_LOG", "TF_CPP_MIN_LOG_LEVEL")}
    e.update(env)
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=e, timeout=300)


def test_stderr_is_empty_by_default():
    r = run()
    assert r.returncode == 0, r.stderr
    assert "OK True torch.Size([4, 3])" in r.stdout
    assert r.stderr == ""


def test_plugin_logging_comes_back_with_torchtpu_log():
    r = run(TORCHTPU_LOG="plugin")
    assert r.returncode == 0, r.stderr
    # The CPU plugin logs its device count at INFO when it creates a client.
    assert "cpu_device_count" in r.stderr
