"""Shared fixtures: every op test runs in each of the three modes."""
import os

# Tests count compiles, so the persistent compile cache (on by default) stays off unless a test turns it on
# for a process of its own.
os.environ["TORCHTPU_CACHE_DIR"] = ""
# A rule that reads host values, draws random numbers or uploads without
# declaring it (dispatch.Needs) fails instead of running unplanned.
os.environ["TORCHTPU_CHECK_NEEDS"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import torchtpu  # noqa: F401  (explicit import also works next to autoload)

MODES = ["debug", "strict", "fused"]


@pytest.fixture(params=MODES)
def mode(request):
    """Runs the test in one mode and restores strict afterwards."""
    torch.tpu.set_mode(request.param)
    yield request.param
    torch.tpu.synchronize()
    torch.tpu.set_mode("strict")


def to_tpu(x):
    """Moves tensors (and lists of them) to tpu; leaves other values alone."""
    if isinstance(x, torch.Tensor):
        return x.to("tpu")
    if isinstance(x, (list, tuple)):
        return type(x)(to_tpu(v) for v in x)
    return x


def to_cpu(x):
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def check(fn, *args, atol=None, rtol=None):
    """Asserts fn on tpu copies of args matches fn on the CPU args, dtype and all."""
    on_tpu = to_tpu(args)  # copied first: fn may modify its inputs in place
    want = fn(*args)
    got = to_cpu(fn(*on_tpu))
    if isinstance(want, torch.Tensor):
        assert got.device.type == "cpu"
        assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    kw = {}
    if atol is not None:
        kw = {"atol": atol, "rtol": rtol if rtol is not None else 0}
    torch.testing.assert_close(got, want, equal_nan=True, **kw)
    return got


def grad_pairs(fn, *xs):
    """Backpropagates the scalar fn(*xs) on CPU and on tpu copies; returns (tpu grad, CPU grad) per input."""
    want_in = [x.clone().requires_grad_() for x in xs]
    got_in = [x.to("tpu").requires_grad_() for x in xs]
    fn(*want_in).backward()
    fn(*got_in).backward()
    return [(g.grad.cpu(), w.grad) for g, w in zip(got_in, want_in)]


def no_fallbacks():
    """Returns the ops that fell back to CPU since the last metrics reset."""
    return {k: v for k, v in torch.tpu.metrics()["cpu_fallbacks"].items() if v}


@pytest.fixture
def fresh_metrics():
    """Resets the metrics before a test and asserts that no op fell back to CPU during it; a file
    applies it to every test with `pytestmark = pytest.mark.usefixtures("fresh_metrics")`."""
    torch.tpu.reset_metrics()
    yield
    assert no_fallbacks() == {}, "ops fell back to CPU"
