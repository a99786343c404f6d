"""The device as a user meets it: module, printing, item, save/load, modes, metrics, autoload."""
import io
import os
import subprocess
import sys
import time

import pytest
import torch


def test_device_module():
    assert torch.tpu.is_available()
    assert torch.tpu.device_count() >= 1
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(0)
    torch.tpu.synchronize()
    assert torch.accelerator.current_accelerator().type == "tpu"
    assert torch.accelerator.device_count() >= 1
    x = torch.ones(2).tpu()
    assert x.is_tpu and x.device == torch.device("tpu", 0)
    m = torch.nn.Linear(2, 2).tpu()
    assert m.weight.device.type == "tpu"


def test_device_name_and_properties():
    """As torch.cuda's: the name is the kind the plugin gives the device (the CPU plugin's is "cpu")."""
    props = torch.tpu.get_device_properties(0)
    assert props.name == torch.tpu.get_device_name() == torch.tpu.get_device_name("tpu:0") == "cpu"
    assert props.platform == "cpu" and props.index == 0
    assert props.total_memory == torch.tpu.mem_get_info()[1] > 0
    with pytest.raises(ValueError, match="invalid device index 7"):
        torch.tpu.get_device_properties(7)


def test_printing_and_item():
    x = torch.tensor([1.5, -2.0, 3.25])
    t = x.to("tpu")
    s = repr(t)
    assert "device='tpu:0'" in s and "1.5000" in s and "-2.0000" in s
    assert str(torch.tensor([[1, 2], [3, 4]], device="tpu")).startswith("tensor([[1, 2],")
    assert t[2].item() == 3.25
    assert t.sum().item() == pytest.approx(2.75)
    assert repr(torch.zeros(0, device="tpu")).startswith("tensor([]")


def test_save_and_load(tmp_path):
    x = torch.randn(3, 4)
    t = x.to("tpu")
    path = tmp_path / "t.pt"
    torch.save({"w": t, "n": 3}, path)
    back = torch.load(path)
    assert back["w"].device.type == "tpu"
    assert torch.equal(back["w"].cpu(), x)
    on_cpu = torch.load(path, map_location="cpu")
    assert torch.equal(on_cpu["w"], x)
    buf = io.BytesIO()
    torch.save(t[1:], buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf).cpu(), x[1:])


def test_modes_api():
    assert torch.tpu.get_mode() == "strict"
    with torch.tpu.mode("fused"):
        assert torch.tpu.get_mode() == "fused"
        y = torch.ones(3, device="tpu") * 2 + 1
        assert torch.equal(y.cpu(), torch.full((3,), 3.0))
    assert torch.tpu.get_mode() == "strict"
    torch.tpu.set_mode("debug")
    assert torch.tpu.get_mode() == "debug"
    torch.tpu.set_mode("strict")
    with pytest.raises((ValueError, RuntimeError), match="mode"):
        torch.tpu.set_mode("turbo")


def test_metrics_count_real_work(op_by_op):
    torch.tpu.reset_metrics()
    x = torch.randn(64, 64).to("tpu")
    for _ in range(3):
        y = (x * 3.0 + 1.0).sum()
    y.item()
    m = torch.tpu.metrics()
    assert m["ops_recorded"] >= 9
    assert m["host_to_device_bytes"] >= 64 * 64 * 4
    assert m["device_to_host_bytes"] >= 4
    assert m["executions"] >= 1
    assert m["cache_hits"] >= 4  # strict mode compiles each op signature once
    for k in ("graphs_compiled", "compile_seconds", "cache_misses", "cpu_fallbacks"):
        assert k in m


def test_fused_mode_fuses():
    x = torch.randn(32).to("tpu")
    torch.tpu.synchronize()
    torch.tpu.reset_metrics()
    t0 = time.perf_counter()
    with torch.tpu.mode("fused"):
        y = x
        for _ in range(10):
            y = y * 1.01 + 0.5
        recording = time.perf_counter() - t0
        out = y.cpu()
    m = torch.tpu.metrics()
    assert m["ops_recorded"] == 20
    assert m["executions"] == 1
    # The engine's share of recording the 20 ops: some time, and less than the loop took.
    assert 0 < m["op_seconds"] < recording
    ref = x.cpu()
    for _ in range(10):
        ref = ref * 1.01 + 0.5
    torch.testing.assert_close(out, ref)


def run_python(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=300)


def test_autoload_without_import():
    r = run_python('import torch; print(torch.ones(2, device="tpu") + 1)')
    assert r.returncode == 0, r.stderr
    assert "tensor([2., 2.], device='tpu:0')" in r.stdout


def test_autoload_can_be_turned_off():
    r = run_python('import torch\ntry:\n    torch.ones(2, device="tpu")\nexcept RuntimeError as e:\n    print("refused", e)',
                   TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert r.returncode == 0, r.stderr
    assert "refused" in r.stdout


def test_missing_plugin_path_is_a_clear_error():
    code = ("import torch\n"
            "try:\n    torch.ones(2, device='tpu')\nexcept RuntimeError as e:\n    print('ERR', e)\n"
            "print('alive', torch.tpu.is_available())\n")
    r = run_python(code, TORCHTPU_PLUGIN="/nonexistent/libplugin.so")
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "/nonexistent/libplugin.so" in r.stdout and "TORCHTPU_PLUGIN" in r.stdout
    assert "alive False" in r.stdout


def test_tpu_plugin_without_tpu_fails_fast():
    code = ("import torch, time\nt=time.time()\n"
            "try:\n    torch.ones(2, device='tpu')\nexcept RuntimeError as e:\n    print('ERR', e)\n"
            "print('secs', time.time()-t)\n")
    r = run_python(code, TORCHTPU_PLUGIN="tpu")
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "TORCHTPU_PLUGIN" in r.stdout
    secs = float(r.stdout.split("secs")[1])
    assert secs < 30


def test_disk_compile_cache_across_processes(tmp_path):
    code = ("import torch, json\nx = torch.arange(6.0).to('tpu').view(2, 3)\n"
            "y = (x * 2 + 1).sum(dim=1)\nprint('VAL', y.cpu().tolist())\n"
            "m = torch.tpu.metrics()\nprint('M', json.dumps({k: m[k] for k in ('graphs_compiled', 'disk_cache_hits')}))\n")
    env = {"TORCHTPU_CACHE_DIR": str(tmp_path)}
    import json
    first = run_python(code, **env)
    assert first.returncode == 0, first.stderr
    m1 = json.loads(first.stdout.split("M ")[1])
    assert m1["graphs_compiled"] > 0 and list(tmp_path.glob("*.exe"))
    second = run_python(code, **env)
    m2 = json.loads(second.stdout.split("M ")[1])
    assert m2["graphs_compiled"] == 0 and m2["disk_cache_hits"] == m1["graphs_compiled"]
    assert "VAL [9.0, 27.0]" in second.stdout
    for f in tmp_path.glob("*.exe"):  # damage every entry: a miss and a warning, never a crash
        f.write_bytes(f.read_bytes()[:-3] + b"xyz")
    third = run_python(code, **env)
    assert third.returncode == 0 and "VAL [9.0, 27.0]" in third.stdout
    assert "unusable" in third.stderr
