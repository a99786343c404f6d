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
# Debug mode runs the rules strict mode runs, waiting after each op, so `make test` runs it only on the files
# below (core ops, strides, indexing, numbers, random numbers, errors, training); `make test-all-modes`
# (TORCHTPU_TEST_MODES=all) runs it on every file. Elsewhere its cases are deselected, not skipped.
DEBUG_SLICE = {
    "test_ops.py", "test_math.py", "test_known_values.py", "test_dtype_numerics.py", "test_strides.py",
    "test_indexing.py", "test_plan_index_checks.py", "test_rng.py", "test_random_planned.py",
    "test_checkpoint_rng.py", "test_errors.py", "test_step.py", "test_shim.py", "test_training.py",
}


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TORCHTPU_TEST_MODES") == "all":
        return
    keep, out = [], []
    for it in items:
        spec = getattr(it, "callspec", None)
        debug = spec is not None and spec.params.get("mode") == "debug" and it.path.name not in DEBUG_SLICE
        (out if debug else keep).append(it)
    if out:
        config.hook.pytest_deselected(items=out)
        items[:] = keep


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


class Draws:
    """Draws random CPU tensors from one generator of a fixed seed, so that a test file sees the same values on
    every run whatever other files ran before it. A file makes one and names its methods:
    `randn, randint = Draws(0).pair()`."""

    def __init__(self, seed=0):
        self.gen = torch.Generator().manual_seed(seed)

    def randn(self, *shape, dtype=torch.float32):
        """Returns standard normal values of the given shape, drawn in float32 and cast to dtype (complex
        dtypes draw both parts directly)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if dtype.is_complex:
            return torch.randn(shape, generator=self.gen, dtype=dtype)
        return torch.randn(shape, generator=self.gen).to(dtype)

    def randint(self, lo, hi, *shape, dtype=torch.int64):
        """Returns integers in [lo, hi) of the given shape and dtype."""
        return torch.randint(lo, hi, shape, generator=self.gen, dtype=dtype)

    def pair(self):
        """Returns the bound randn and randint."""
        return self.randn, self.randint


def check_grad(fn, *args, atol=1e-5, rtol=1.3e-6):
    """Compares fn's value and the gradients of its sum w.r.t. the float tensor args on CPU and tpu."""
    cpu = [a.detach().clone().requires_grad_(a.is_floating_point()) if isinstance(a, torch.Tensor) else a for a in args]
    tpu = [a.detach().to("tpu").requires_grad_(a.is_floating_point()) if isinstance(a, torch.Tensor) else a
           for a in args]
    want, got = fn(*cpu), fn(*tpu)
    torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol)
    want.sum().backward()
    got.sum().backward()
    for a, b in zip(cpu, tpu):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            torch.testing.assert_close(b.grad.cpu(), a.grad, atol=atol, rtol=rtol)


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


def on_both(fn, *args, fallback=False):
    """fn on the CPU args and on tpu copies of them: (tpu result, CPU result). Unless fallback is set, no op
    may run on CPU for the tpu call."""
    tpu = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
    torch.tpu.reset_metrics()
    got = fn(*tpu)
    if not fallback:
        assert no_fallbacks() == {}, "ops fell back to CPU"
    return got, fn(*args)


@pytest.fixture
def op_by_op():
    """Strict mode without cold runs, for tests that count programs, launches or events of single ops from an
    op's first call: each new op then compiles its own program at once. Cold runs have their own tests
    (tests/test_strict_compile_pool.py, engine/cold_run_test.go)."""
    was = torch.tpu.set_cold_runs(False)
    yield
    torch.tpu.set_cold_runs(was)


@pytest.fixture
def fresh_metrics():
    """Resets the metrics before a test and asserts that no op fell back to CPU during it; a file
    applies it to every test with `pytestmark = pytest.mark.usefixtures("fresh_metrics")`."""
    torch.tpu.reset_metrics()
    yield
    assert no_fallbacks() == {}, "ops fell back to CPU"
