"""complex32 (torch.chalf) tensors against CPU torch, in debug, strict and fused mode.

A complex32 element is two float16s, as on CPU: copies to and from the host, float16 views and storage bytes
equal CPU's; the ops CPU implements for complex32 compute as complex64 and round each part to float16 when
stored, which is what CPU's kernels give; the others raise CPU's NotImplementedError.
"""
import warnings

import pytest
import torch

from conftest import Draws, no_fallbacks, on_both

randn = Draws(32).randn

pytestmark = [pytest.mark.usefixtures("mode"), pytest.mark.filterwarnings("ignore:ComplexHalf support")]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def chalf(*shape):
    return randn(*shape, dtype=torch.complex64).to(torch.chalf)


def parts(t):
    """The tensor's values on CPU, a complex tensor's as (real, imaginary) pairs (CPU implements few ops for
    complex32, so comparisons go through its float16 parts)."""
    t = t.detach().cpu().resolve_conj().resolve_neg()
    return torch.view_as_real(t) if t.is_complex() else t


def assert_same(got, want, strides=True):
    """got (tpu) equals want (CPU) exactly (NaNs agreeing, zeros of either sign equal, as assert_close has
    it), with its dtype, shape and (unless told) strides."""
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, strides)
        return
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != CPU's {want.dtype}"
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != CPU's {tuple(want.shape)}"
    if strides:
        assert got.stride() == want.stride(), f"strides {got.stride()} != CPU's {want.stride()}"
    torch.testing.assert_close(parts(got), parts(want), rtol=0, atol=0, equal_nan=True)


def check(fn, *args, strides=True, fallback=False):
    assert_same(*on_both(fn, *args, fallback=fallback), strides=strides)


def test_creation():
    t = torch.device("tpu")
    assert_same(torch.zeros(2, 3, dtype=torch.chalf, device=t), torch.zeros(2, 3, dtype=torch.chalf))
    assert_same(torch.ones(4, dtype=torch.chalf, device=t), torch.ones(4, dtype=torch.chalf))
    assert_same(torch.full((2, 2), 1.5 - 2j, dtype=torch.chalf, device=t), torch.full((2, 2), 1.5 - 2j, dtype=torch.chalf))
    assert_same(torch.tensor([1 + 2j, -0.1j], dtype=torch.chalf, device=t), torch.tensor([1 + 2j, -0.1j], dtype=torch.chalf))
    x = chalf(3, 4)
    for fn in (torch.zeros_like, torch.ones_like, lambda a: torch.full_like(a, 3 + 0.5j), lambda a: a.new_full((2,), -1j),
               lambda a: a.new_zeros(5), lambda a: torch.zeros_like(a.real, dtype=torch.chalf)):
        check(fn, x)
    e = torch.empty(3, 5, dtype=torch.chalf, device=t)
    assert e.dtype == torch.chalf and e.shape == (3, 5) and e.untyped_storage().nbytes() == 3 * 5 * 4
    r = torch.randn(1000, dtype=torch.chalf, device=t).cpu()
    assert r.dtype == torch.chalf
    parts = torch.view_as_real(r).float()
    assert parts.isfinite().all() and 0.6 < parts.std() < 0.8  # each part has variance 1/2
    u = torch.view_as_real(torch.rand(1000, dtype=torch.chalf, device=t).cpu()).float()
    assert 0 <= u.min() and u.max() < 1 and 0.4 < u.mean() < 0.6


def test_host_round_trip_bytes():
    x = chalf(3, 4)
    t = x.to("tpu")
    assert t.dtype == torch.chalf
    assert_same(t, x)
    assert bytes(t.untyped_storage().cpu()) == bytes(x.untyped_storage())
    assert t[1, 2].item() == x[1, 2].item()
    assert t[0].tolist() == x[0].tolist()
    # Host data into views of a tpu storage: a transposed slice, then a strided row.
    y = chalf(4, 2)
    t.t()[:, 1:3] = y.to("tpu")
    x.t()[:, 1:3] = y
    assert_same(t, x)
    t[:, ::2] = x[:, 1::2].clone()
    x[:, ::2] = x[:, 1::2].clone()
    assert_same(t, x)


def test_float16_views():
    x = chalf(3, 4)
    t = x.to("tpu")
    assert_same(torch.view_as_real(t), torch.view_as_real(x))
    assert_same(t.view(torch.float16), x.view(torch.float16))
    assert_same(t.view(torch.int16), x.view(torch.int16))
    assert_same(t.view(torch.float32), x.view(torch.float32))
    assert_same(t.real, x.real)
    assert_same(t.imag, x.imag)
    r = randn(2, 5, 2, dtype=torch.float16)
    check(torch.view_as_complex, r)
    c = randn(2, 3, dtype=torch.complex64)
    check(lambda a: a.view(torch.chalf), c)
    # Writes through float16 views reach the complex32 storage.
    t.real.mul_(2)
    t.imag[0].fill_(-1.5)
    torch.view_as_real(t)[1, 2, 0] = 7.0
    x.real.mul_(2)
    x.imag[0].fill_(-1.5)
    torch.view_as_real(x)[1, 2, 0] = 7.0
    assert_same(t, x)


def test_views_and_copies():
    x = chalf(4, 6)
    for fn in (lambda a: a[1:3, ::2], lambda a: a.t(), lambda a: a.t().contiguous(), lambda a: a.as_strided((2, 3), (5, 2), 1),
               lambda a: a.as_strided((2, 3), (5, 2), 1).clone(), lambda a: a.reshape(3, 8), lambda a: a.t().reshape(24),
               lambda a: a.unfold(1, 2, 2).clone(), lambda a: a.conj(), lambda a: a.conj().resolve_conj(), lambda a: a.H.contiguous(),
               lambda a: a.diagonal().clone(), lambda a: torch.roll(a, 2, 1), lambda a: torch.roll(a, (1, -2), (0, 1)),
               lambda a: a.repeat(2, 1), lambda a: a[None, None].clone(memory_format=torch.channels_last),
               lambda a: torch.tril(a), lambda a: torch.triu(a, 1), lambda a: torch.nn.functional.pad(a, (1, 2))):
        check(fn, x)
    y = chalf(2, 6)
    check(lambda a, b: torch.cat([a, b]), x, y)
    check(lambda a, b: torch.stack([a[:2], b], 1), x, y)
    check(lambda a, b: torch.cat([a, b.to(torch.complex64)]), x, y)


def test_conversions():
    # Values that float16 parts cannot hold: ties, an overflow, subnormals, a NaN.
    c = torch.tensor([1 + 2 ** -11 + 1j, (1 + 3 * 2 ** -11) - 7e4j, 1e-6 + 0.1j, complex(float("nan"), 65519)],
                     dtype=torch.complex64)
    check(lambda a: a.to(torch.chalf), c)
    check(lambda a: a.to(torch.complex128).to(torch.chalf), c)
    for src in (randn(3, 4, dtype=torch.float16), randn(3, 4), randn(3, 4, dtype=torch.float64),
                torch.arange(-3, 9).reshape(3, 4), torch.tensor([True, False])):
        check(lambda a: a.to(torch.chalf), src)
    x = chalf(3, 4)
    for d in (torch.complex64, torch.complex128, torch.float16, torch.float32, torch.int64, torch.bool):
        check(lambda a: a.to(d), x)
    # copy_ into complex32 views from another dtype rounds like CPU.
    dst = chalf(4, 3)
    check(lambda a, b: a.t().copy_(b), dst, c.repeat(3).reshape(3, 4))


def test_arithmetic():
    x, y = chalf(3, 4), chalf(3, 4)
    for fn in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: torch.add(a, b, alpha=2),
               lambda a, b: a * 3, lambda a, b: a + 0.25, lambda a, b: a * (1 - 2j), lambda a, b: 1 - a,
               lambda a, b: -a, lambda a, b: a.abs(), lambda a, b: a.sgn(), lambda a, b: torch.conj_physical(a),
               lambda a, b: a.clone().add_(b), lambda a, b: a.clone().mul_(b), lambda a, b: a == b, lambda a, b: a != a,
               lambda a, b: torch.sub(a, b, alpha=2),
               lambda a, b: torch.neg(a, out=torch.empty_like(a)), lambda a, b: a * (b.real > 0)):
        check(fn, x, y)
    for ord in (2, 1, 0, 3, 0.5, -1, float("inf"), float("-inf")):
        check(lambda a: torch.linalg.vector_norm(a, ord), x)
        check(lambda a: torch.linalg.vector_norm(a, ord, dim=1, keepdim=True), x)
    # 0-dim CPU tensors next to tpu ones.
    check(lambda a: a * torch.tensor(0.5 - 1.25j, dtype=torch.chalf), x)
    check(lambda a: a + torch.tensor(3.0), x)
    # Promotion: a float16 tensor keeps complex32, a float32 tensor widens it to complex64.
    check(lambda a, b: a + b.real, x, y)
    check(lambda a, b: a * b.real.float(), x, y)
    check(lambda a, b: a + b.to(torch.complex64), x, y)
    # Results cast into out= tensors of other dtypes are rounded to complex32 (float16) first.
    check(lambda a, b: torch.add(a, b, out=torch.empty(3, 4, dtype=torch.complex64, device=a.device)), x, y)
    check(lambda a, b: torch.abs(a, out=torch.empty(3, 4, dtype=torch.float32, device=a.device)), x, y)
    # Inputs with non-finite parts.
    z = torch.tensor([complex(float("inf"), 1), complex(0, float("nan")), 2 - 1j], dtype=torch.chalf)
    for fn in (torch.isinf, torch.isnan, torch.isfinite, torch.isreal, lambda a: a * 2, lambda a: a.abs()[::2]):
        check(fn, z)


def test_repeated_steps_round_each_op():
    # A loop replays each op's plan (strict mode launches the cached program, fused mode pastes the recorded
    # fragment), and every op's result is rounded to complex32 as CPU rounds it, fused or not.
    def steps(a, b):
        for _ in range(4):
            a = a * b + a
            a[1:] = a[1:] - b[:-1]
            b = torch.cat([b[1:], -b[:1]])
        return a, b
    check(steps, chalf(3, 4), chalf(3, 4))


def test_complex_from_float16_parts():
    re, im = randn(3, 4, dtype=torch.float16), randn(3, 4, dtype=torch.float16)
    check(torch.complex, re, im)
    check(lambda a, b: torch.polar(a.abs(), b), re, im)


def test_indexing():
    x, y = chalf(5, 4), chalf(3, 4)
    i = torch.tensor([0, 3, 1])
    mask = randn(5, 4) > 0
    for fn in (lambda a, b, i, m: a[i], lambda a, b, i, m: a[m], lambda a, b, i, m: a.index_select(0, i),
               lambda a, b, i, m: a.index_put((i,), b), lambda a, b, i, m: a.index_put((i,), b, accumulate=True),
               lambda a, b, i, m: a.index_add(0, i, b), lambda a, b, i, m: a.index_copy(0, i, b),
               lambda a, b, i, m: a.index_fill(0, i, 1.5), lambda a, b, i, m: a.masked_fill(m, -2j),
               lambda a, b, i, m: torch.where(m, a, 0.5), lambda a, b, i, m: torch.masked_select(a, m),
               lambda a, b, i, m: torch.nonzero(a.masked_fill(m, 0)), lambda a, b, i, m: a.clone().fill_(2 + 1j),
               lambda a, b, i, m: a.clone().zero_()):
        check(fn, x, y, i, mask)
    # index_fill's rule takes no complex number (for any complex dtype): that call runs on CPU.
    check(lambda a, i: a.index_fill(0, i, 1.5 - 1j), x, i, fallback=True)


CPU_LACKS = {
    "exp": torch.exp, "sum": torch.sum, "div": lambda a: a / a, "matmul": lambda a: a @ a.t(), "fft": torch.fft.fft,
    "pow": lambda a: a.pow(2), "flip_last_dim": lambda a: torch.flip(a, [1]), "equal": lambda a: torch.equal(a, a + 1),
    "index_reduce_amax": lambda a: a.index_reduce(0, torch.tensor([1], device=a.device), a[:1], "amax"),
    "sum_to_complex32": lambda a: torch.sum(a.real, dtype=torch.chalf),
}


@pytest.mark.parametrize("name", sorted(CPU_LACKS))
def test_ops_cpu_lacks_raise_cpus_error(name):
    x = chalf(3, 3)
    with pytest.raises(NotImplementedError) as want:
        CPU_LACKS[name](x)
    with pytest.raises(NotImplementedError) as got:
        CPU_LACKS[name](x.to("tpu"))
    assert str(got.value).startswith(str(want.value).splitlines()[0]), (str(got.value), str(want.value))


def test_ops_cpu_has_in_part_run_as_on_cpu():
    # CPU flips complex32 along the first dimension only: tpu runs such ops on CPU, counted as fallbacks.
    check(lambda a: torch.flip(a, [0]), chalf(3, 4), fallback=True)
    check(lambda a: a.index_reduce(0, torch.tensor([2, 0], device=a.device), a[:2] * 2, "prod"), chalf(3, 4),
          fallback=True)
    # CPU's addcmul rounds to complex32 after each product: tpu runs it on CPU too.
    check(lambda a, b: torch.addcmul(a, a, b, value=0.5), chalf(3, 4), chalf(3, 4), fallback=True)
    assert "aten::addcmul" in no_fallbacks()


def test_no_fallbacks_for_supported_ops():
    torch.tpu.reset_metrics()
    x = chalf(3, 4).to("tpu")
    y = (x * x + x).abs()
    torch.cat([x, -x]).cpu()
    torch.view_as_real(x[1:]).sum().cpu()
    assert y.dtype == torch.float16
    assert no_fallbacks() == {}


def test_compiled():
    x, y = chalf(4, 5), chalf(4, 5)
    f = torch.compile(lambda a, b: torch.cat([a * b + a, -b]), backend="tpu")
    for _ in range(2):
        got, want = f(x.to("tpu"), y.to("tpu")), (lambda a, b: torch.cat([a * b + a, -b]))(x, y)
        assert_same(got, want)


def test_float16_meeting_a_complex_number_computes_complex32_as_cpu():
    """CPU promotes a float16 tensor with a complex number or 0-dim complex tensor to complex32: add, sub and mul give
    complex32 on tpu too, and division and pow raise CPU's NotImplementedError (CPU has no complex32 kernels)."""
    import warnings
    a = torch.tensor([3.0, 1.0, 2.0], dtype=torch.float16)
    for f in [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: torch.add(x, y, alpha=2),
              lambda x, y: x / y, lambda x, y: x ** y]:
        for b in [torch.tensor(2 + 1j), 2j, torch.tensor([1j, 2, 3])]:
            outs = []
            for d in ("cpu", "tpu"):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        r = f(a.to(d), b.to(d) if isinstance(b, torch.Tensor) else b)
                    outs.append((r.dtype, r.cpu()))
                except NotImplementedError as e:
                    outs.append((NotImplementedError, str(e).split(" (aten")[0]))
            (wd, w), (gd, g) = outs
            assert gd == wd
            if isinstance(w, torch.Tensor):
                torch.testing.assert_close(g, w)
            else:
                assert g == w


def test_new_complex32_results_warn_that_the_dtype_is_experimental():
    """CPU allocates every complex32 result with empty, which warns (once, or each time with warn_always); so does
    tpu, for factories and for results of ops (t + 1 did not warn), once per allocation as on CPU (factories warned
    twice)."""
    from torch.testing._internal.common_utils import set_warn_always_context
    t = torch.randn(3, dtype=torch.chalf, device="tpu")
    for f in (lambda: t * t, lambda: torch.zeros_like(t), lambda: torch.ones(2, dtype=torch.chalf, device="tpu"),
              lambda: torch.empty_strided((2,), (1,), dtype=torch.chalf, device="tpu")):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                f()
        assert sum("ComplexHalf support is experimental" in str(w.message) for w in ws) == 1
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        with set_warn_always_context(True):
            t + 1
    assert any("ComplexHalf support is experimental" in str(w.message) for w in ws)
