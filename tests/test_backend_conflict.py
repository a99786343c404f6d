"""Another package that already claimed PrivateUse1 (as Google's torch_tpu does) gets one clear error."""
import os
import subprocess
import sys
import textwrap

FAKE_TORCH_TPU = """
import types
import torch
torch.utils.rename_privateuse1_backend({name!r})
module = types.ModuleType("torch_tpu.device")
torch._register_device_module({name!r}, module)
"""

SCRIPT = """
import torch
import torch_tpu
try:
    import torchtpu
except ImportError as e:
    print("ERROR", type(e).__name__, e)
else:
    print("LOADED")
print("ALIVE", torch.ones(2).sum().item())
"""


def run_with_fake(tmp_path, name):
    pkg = tmp_path / "torch_tpu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(FAKE_TORCH_TPU.format(name=name)))
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_other_tpu_backend_is_refused_with_both_names(tmp_path):
    out = run_with_fake(tmp_path, "tpu")
    assert "LOADED" not in out
    line = next(l for l in out.splitlines() if l.startswith("ERROR"))
    assert "BackendConflictError" in line
    assert "torchtpu" in line and "torch_tpu" in line and "PrivateUse1" in line and "'tpu'" in line
    assert "ALIVE 2.0" in out


def test_other_privateuse1_backend_under_another_name_is_refused(tmp_path):
    out = run_with_fake(tmp_path, "npu")
    line = next(l for l in out.splitlines() if l.startswith("ERROR"))
    assert "'npu'" in line and "torch_tpu" in line
    assert "ALIVE 2.0" in out


def test_no_conflict_alone():
    r = subprocess.run([sys.executable, "-c", "import torch, torchtpu; print((torch.ones(2, device='tpu') * 3).cpu().tolist())"],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert r.returncode == 0, r.stderr
    assert "[3.0, 3.0]" in r.stdout
