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
    with pytest.raises(IndexError, match=r"^index out of range in self \(aten::index_select on tpu"):  # as CPU, op after
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


ERROR_CASES = {
    "dim out of range": lambda d: torch.randn(2, 3, device=d).sum(5),
    "softmax dim": lambda d: torch.softmax(torch.randn(3, device=d), 2),
    "cat dim": lambda d: torch.cat([torch.randn(3, device=d)], 4),
    "index_select": lambda d: torch.index_select(torch.randn(3, device=d), 0, torch.tensor([5], device=d)),
    "advanced index": lambda d: torch.randn(3, device=d)[torch.tensor([7], device=d)],
    "take": lambda d: torch.take(torch.randn(3, device=d), torch.tensor([9], device=d)),
    "nll_loss target": lambda d: torch.nn.functional.nll_loss(torch.randn(2, 3, device=d), torch.tensor([0, 5], device=d)),
    "embedding": lambda d: torch.nn.functional.embedding(torch.tensor([9], device=d), torch.randn(3, 2, device=d)),
    "gather": lambda d: torch.gather(torch.randn(3, device=d), 0, torch.tensor([4], device=d)),
    "not implemented for dtype": lambda d: torch.erfinv(torch.ones(2, dtype=torch.complex64, device=d)),
    "topk": lambda d: torch.topk(torch.randn(3, device=d), 5),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_error_class_and_message_start_as_on_cpu(mode, case):
    """Bad input raises the exception class CPU raises (IndexError, NotImplementedError, ...), and the message
    starts as CPU's does where the wording is the same; the op is named after it."""
    f = ERROR_CASES[case]
    with pytest.raises(Exception) as want:
        f("cpu")
    with pytest.raises(Exception) as got:
        f("tpu")
    assert got.type is want.type, (got.value, want.value)
    assert "on tpu" in str(got.value)
    if case != "not implemented for dtype":  # CPU names its vectorized kernel there
        assert str(got.value).startswith(str(want.value).splitlines()[0]), (str(got.value), str(want.value))
