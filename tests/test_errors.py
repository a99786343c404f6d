"""Bad input raises a RuntimeError at the call site, naming the op and shapes, in every mode."""
import pytest
import torch


def assert_unchanged(t, ref):
    assert torch.equal(t.cpu(), ref)


def test_add_shape_mismatch(mode):
    a, b = torch.randn(2, 3), torch.randn(4)
    ta, tb = a.to("tpu"), b.to("tpu")
    with pytest.raises(RuntimeError, match=r"(?s)add.*\[2, 3\].*\[4\]"):
        ta + tb
    with pytest.raises(RuntimeError, match=r"add"):
        ta.add_(tb)
    assert_unchanged(ta, a)
    assert_unchanged(tb, b)


def test_mm_shape_mismatch(mode):
    a, b = torch.randn(2, 3), torch.randn(4, 5)
    ta, tb = a.to("tpu"), b.to("tpu")
    with pytest.raises(RuntimeError, match=r"2x3 and 4x5"):
        torch.mm(ta, tb)
    assert_unchanged(ta, a)
    assert_unchanged(tb, b)


def test_dtype_that_cannot_be_promoted(mode):
    a = torch.arange(4)
    ta = a.to("tpu")
    with pytest.raises(RuntimeError, match=r"(?s)result type Float can't be cast to the desired output type Long|float32.*int64"):
        ta.add_(torch.ones(4, device="tpu") * 0.5)
    assert_unchanged(ta, a)
    with pytest.raises(RuntimeError, match=r"(?i)bool"):
        torch.tensor([True], device="tpu") - torch.tensor([False], device="tpu")


def test_index_select_out_of_range(mode):
    a = torch.randn(3, 2)
    ta = a.to("tpu")
    with pytest.raises(RuntimeError, match=r"(?s)index_select.*out of"):
        torch.index_select(ta, 0, torch.tensor([0, 5], device="tpu"))
    assert_unchanged(ta, a)


def test_device_mix(mode):
    a = torch.randn(3)
    ta = a.to("tpu")
    with pytest.raises(RuntimeError, match=r"(?s)(Expected all tensors to be on the same device|tpu.*cpu|cpu.*tpu)"):
        ta + torch.randn(3)
    # A zero-dimensional CPU tensor mixes, as on CUDA.
    torch.testing.assert_close((ta + torch.tensor(2.0)).cpu(), a + 2)
    assert_unchanged(ta, a)


def test_errors_keep_the_interpreter_and_device_usable(mode):
    for _ in range(3):
        with pytest.raises(RuntimeError):
            torch.ones(2, device="tpu") @ torch.ones(3, device="tpu")
    assert torch.equal((torch.ones(2, device="tpu") * 3).cpu(), torch.full((2,), 3.0))


def test_check_nans_names_the_op():
    import os
    import subprocess
    import sys
    code = ("import torch\ntorch.tpu.set_mode('debug')\nx = torch.tensor([1.0, -1.0]).to('tpu')\n"
            "y = x * 2\n"
            "try:\n    torch.sqrt(x)\nexcept RuntimeError as e:\n    print('ERR', e)\n"
            "print('ok', (y + 1).cpu().tolist())\n")
    env = dict(os.environ, TORCHTPU_CHECK_NANS="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "sqrt" in r.stdout and "NaN" in r.stdout, r.stdout
    assert "ok [3.0, -1.0]" in r.stdout
