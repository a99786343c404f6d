"""Complex dtypes and the FFT family against CPU torch, in debug, strict and fused mode."""
import warnings

import pytest
import torch

from conftest import Draws, check

randn = Draws(0).randn


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_round_trips_and_views(mode, dtype):
    x = randn(3, 4, dtype=dtype)
    t = x.to("tpu")
    assert t.dtype == dtype
    assert torch.equal(t.cpu(), x)
    assert torch.equal(torch.view_as_real(t).cpu(), torch.view_as_real(x))
    assert torch.equal(t.real.cpu(), x.real) and torch.equal(t.imag.cpu(), x.imag)
    assert torch.equal(t[:, 1:3].cpu(), x[:, 1:3])
    r = randn(2, 5, 2, dtype=x.real.dtype)
    assert torch.equal(torch.view_as_complex(r.to("tpu")).cpu(), torch.view_as_complex(r))
    # Writes through the real and imaginary views reach the complex storage.
    t.real.mul_(2)
    t.imag[0].fill_(-1.0)
    x.real.mul_(2)
    x.imag[0].fill_(-1.0)
    assert torch.equal(t.cpu(), x)
    torch.view_as_real(t)[1, 2, 0] = 7.0
    torch.view_as_real(x)[1, 2, 0] = 7.0
    assert torch.equal(t.cpu(), x)
    assert "j" in repr(t)


def test_casts(mode):
    x, f = randn(3, 4, dtype=torch.complex64), randn(3, 4)
    check(lambda a: a.to(torch.complex128), x)
    check(lambda a: a.to(torch.complex64), f)
    check(lambda a: a.to(torch.complex128), f.double())
    check(lambda a: a.to(torch.complex64), torch.arange(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # discarding the imaginary part warns once
        check(lambda a: a.to(torch.float32), x)
    check(torch.complex, f, randn(3, 4))
    check(torch.complex, f.double(), randn(4, dtype=torch.float64))
    check(torch.polar, f.abs(), randn(3, 4))


def test_complex_pointwise(mode):
    a, b = randn(3, 4, dtype=torch.complex64), randn(3, 4, dtype=torch.complex64)
    f = randn(3, 4)
    for op in (torch.add, torch.sub, torch.mul, torch.div):
        check(op, a, b, atol=1e-5, rtol=1e-5)
        check(op, a, f, atol=1e-5, rtol=1e-5)
    check(lambda x: x * 1j + 2, a)
    check(lambda x, y: x * y.to(torch.complex128), a, b)
    for op in (torch.neg, torch.exp, torch.log, torch.sqrt, torch.sin, torch.cos, torch.tanh, torch.reciprocal,
               torch.abs, torch.angle, torch.sgn, torch.conj_physical, torch.square, torch.exp2, torch.sinc,
               torch.asinh, torch.log10, torch.sigmoid):
        check(op, a, atol=1e-5, rtol=1e-5)
    check(lambda x: x.conj() * 1, a)
    check(lambda x: torch.imag(x.conj()) + 0, a)
    check(lambda x: x.conj().resolve_conj(), a)
    check(lambda x, y: torch.vdot(x[0], y[0]), a, b, atol=1e-5, rtol=1e-5)
    check(lambda x, y: x @ y.T, a, b, atol=1e-5, rtol=1e-5)
    check(lambda x, y: x == y, a, a.clone())
    check(lambda x: x.sum(), a, atol=1e-5, rtol=1e-5)
    check(lambda x: x.mean(1), a, atol=1e-5, rtol=1e-5)
    check(lambda x: x.sum(0, dtype=torch.complex128), a)


def test_writes_through_conjugate_and_negative_views(mode):
    def conj_copy(x, y):
        x.conj().copy_(y)
        return x

    def neg_imag_mul(x, y):
        x.conj().imag.mul_(2)
        return x

    def conj_add(x, y):
        x.conj().add_(y)
        return x

    for fn in (conj_copy, neg_imag_mul, conj_add):
        check(fn, randn(3, 3, dtype=torch.complex64), randn(3, 3, dtype=torch.complex64))
    check(lambda x, y: x.conj() @ y, randn(3, 3, dtype=torch.complex64), randn(3, 3, dtype=torch.complex64),
          atol=1e-5, rtol=1e-5)
    check(lambda x: torch.linalg.vector_norm(x, dim=1), randn(3, 4, dtype=torch.complex64))


def test_complex_python_numbers(mode):
    a, f = randn(3, 4, dtype=torch.complex64), randn(3, 4)
    check(lambda x: torch.ops.aten.mul.Scalar(x, 1 + 2j), a)
    check(lambda x: torch.ops.aten.mul.Scalar(x, 1 + 2j), f)
    check(lambda x: torch.ops.aten.add.Scalar(x, 2j), a)
    check(lambda x: torch.ops.aten.div.Scalar(x, 3 - 1j), f)
    check(lambda x: x.clone().fill_(3j), a)
    check(lambda x, y: x.masked_fill(y > 0, 1j), a, f)
    check(lambda x: torch.full((2, 3), 1 + 2j, device=x.device), a)


def test_complex_intermediate_gradients(mode):
    fns = [
        lambda x, y: torch.complex(x, y).abs().sum(),
        lambda x, y: torch.complex(x, y).angle().sum(),
        lambda x, y: torch.view_as_real(torch.polar(x.abs() + 0.1, y)).sum(),
        lambda x, y: (torch.complex(x, y) / torch.complex(y, x)).imag.sum(),
        lambda x, y: (torch.complex(x, y) @ torch.complex(y, x)).abs().sum(),
        lambda x, y: torch.view_as_complex(torch.stack([x, y], -1)).sgn().real.sum(),
    ]
    for fn in fns:
        x, y = randn(4, 4), randn(4, 4)
        xs, ys = x.clone().requires_grad_(), y.clone().requires_grad_()
        fn(xs, ys).backward()
        xt, yt = x.to("tpu").requires_grad_(), y.to("tpu").requires_grad_()
        fn(xt, yt).backward()
        torch.testing.assert_close(xt.grad.cpu(), xs.grad, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(yt.grad.cpu(), ys.grad, atol=1e-4, rtol=1e-4)


def test_special_values_and_refusals(mode):
    x = torch.tensor([0 + 1j, 0j, 2 - 1j, complex(float("nan"), 0), complex(float("inf"), 1)])
    for op in (torch.isnan, torch.isinf, torch.isfinite, torch.nonzero, torch.log2, lambda v: v.bool()):
        check(op, x)
    for op in (lambda v: v < v, torch.relu, lambda v: v.max(), torch.floor):
        with pytest.raises(RuntimeError):
            op(x.to("tpu"))


FFTS = {
    "fft": lambda x, c: torch.fft.fft(x),
    "fft_n_ortho": lambda x, c: torch.fft.fft(x, n=8, dim=1, norm="ortho"),
    "ifft": lambda x, c: torch.fft.ifft(c, norm="forward"),
    "fft2": lambda x, c: torch.fft.fft2(c),
    "fftn": lambda x, c: torch.fft.fftn(x),
    "ifftn": lambda x, c: torch.fft.ifftn(c, dim=(0, 2)),
    "fftn_4d": lambda x, c: torch.fft.fftn(c.reshape(2, 2, 6, 5)),
    "rfft": lambda x, c: torch.fft.rfft(x),
    "rfft2": lambda x, c: torch.fft.rfft2(x, norm="ortho"),
    "rfftn_4d": lambda x, c: torch.fft.rfftn(x.reshape(2, 2, 6, 5)),
    "irfft": lambda x, c: torch.fft.irfft(c),
    "irfft_n": lambda x, c: torch.fft.irfft(c, n=7),
    "irfftn": lambda x, c: torch.fft.irfftn(c, s=(4, 3, 9), norm="ortho"),
    "hfft": lambda x, c: torch.fft.hfft(c),
    "ihfft2": lambda x, c: torch.fft.ihfft2(x),
    "stft": lambda x, c: torch.stft(x.reshape(-1), 16, window=torch.hann_window(16, device=x.device),
                                    return_complex=True),
}


@pytest.mark.parametrize("name", sorted(FFTS))
def test_fft_forward_and_grad(mode, name):
    fn = FFTS[name]
    x, c = randn(4, 6, 5), randn(4, 6, 5, dtype=torch.complex64)

    def loss(out):
        return (out.abs() ** 2).sum() if out.is_complex() else (out**2).sum()

    xs, cs = x.clone().requires_grad_(), c.clone().requires_grad_()
    want = fn(xs, cs)
    loss(want).backward()
    xt, ct = x.to("tpu").requires_grad_(), c.to("tpu").requires_grad_()
    got = fn(xt, ct)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want.detach(), atol=1e-4, rtol=1e-4)
    loss(got).backward()
    for t, s in ((xt, xs), (ct, cs)):
        assert (t.grad is None) == (s.grad is None)
        if s.grad is not None:
            torch.testing.assert_close(t.grad.cpu(), s.grad, atol=1e-3, rtol=1e-4)


def test_fft_float64_and_istft(mode):
    x = randn(3, 10, dtype=torch.float64)
    check(lambda a: torch.fft.rfft(a, norm="forward"), x)
    check(lambda a: torch.fft.irfft(torch.fft.rfft(a), n=10), x)
    check(lambda a: torch.fft.fft(a.to(torch.complex128), dim=0), x)
    w = torch.hann_window(8)
    sig = randn(64)
    check(lambda s, w: torch.istft(torch.stft(s, 8, window=w, return_complex=True), 8, window=w), sig, w,
          atol=1e-5, rtol=1e-5)


def test_complex_exp_of_infinities(mode):
    """exp of an infinite real part with a non-finite imaginary part follows C99 as CPU does (inf+nanj, 0)."""
    inf, nan = float("inf"), float("nan")
    vals = [0.0, 1.0, -2.0, inf, -inf, nan]
    for dtype in (torch.complex64, torch.complex128):
        z = torch.tensor([complex(a, b) for a in vals for b in vals], dtype=dtype)
        torch.testing.assert_close(torch.exp(z.to("tpu")).cpu(), torch.exp(z), equal_nan=True)


def test_complex_abs_of_special_values(mode):
    """abs of a complex value follows hypot as CPU does: inf when a part is infinite, else NaN when a part is
    NaN (0+nan·j gave 0), and the same through ops built on it (angle-free norms, sgn)."""
    inf, nan = float("inf"), float("nan")
    vals = [0.0, -1.5, 3.0, inf, -inf, nan]
    for dtype in (torch.complex64, torch.complex128):
        z = torch.tensor([complex(a, b) for a in vals for b in vals], dtype=dtype)
        torch.testing.assert_close(torch.abs(z.to("tpu")).cpu(), torch.abs(z), equal_nan=True)
        torch.testing.assert_close(torch.linalg.vector_norm(z[:6].to("tpu"), ord=1).cpu(),
                                   torch.linalg.vector_norm(z[:6], ord=1), equal_nan=True)
        for row in range(0, len(z), 6):
            torch.testing.assert_close(torch.linalg.vector_norm(z[row:row + 6].to("tpu"), ord=float("inf")).cpu(),
                                       torch.linalg.vector_norm(z[row:row + 6], ord=float("inf")), equal_nan=True)
