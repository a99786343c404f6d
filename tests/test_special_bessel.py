"""Bessel functions and other special functions, against CPU in all modes."""
import pytest
import torch

from conftest import check, no_fallbacks

S = torch.special

UNARY = {
    "i0": torch.i0, "i0e": S.i0e, "i1": S.i1, "i1e": S.i1e,
    "bessel_j0": S.bessel_j0, "bessel_j1": S.bessel_j1,
    "bessel_y0": S.bessel_y0, "bessel_y1": S.bessel_y1,
    "modified_bessel_i0": S.modified_bessel_i0, "modified_bessel_i1": S.modified_bessel_i1,
    "modified_bessel_k0": S.modified_bessel_k0, "modified_bessel_k1": S.modified_bessel_k1,
    "scaled_modified_bessel_k0": S.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": S.scaled_modified_bessel_k1,
    "spherical_bessel_j0": S.spherical_bessel_j0, "airy_ai": S.airy_ai, "erfcx": S.erfcx, "log_ndtr": S.log_ndtr,
}


def _inputs(dtype):
    x = torch.cat([torch.linspace(-30, 30, 61), torch.tensor([0.0, 1e-6, -1e-6, 0.3, 1.9, 2.1, 4.9, 5.1,
                                                              7.9, 8.1, 60.0, -60.0, float("inf"),
                                                              float("-inf"), float("nan")])])
    return x.to(dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_forward_float(mode, name):
    torch.tpu.reset_metrics()
    for dtype in (torch.float32, torch.float64):
        check(UNARY[name], _inputs(dtype))
    assert no_fallbacks() == {}


@pytest.mark.parametrize("name", ["i0", "i1e", "bessel_j0", "modified_bessel_k1", "erfcx", "log_ndtr"])
def test_forward_int_half(mode, name):
    torch.tpu.reset_metrics()
    check(UNARY[name], torch.arange(-5, 6))
    check(UNARY[name], torch.tensor([True, False]))
    half = torch.linspace(-4, 4, 17).to(torch.bfloat16)
    if name in ("i0", "i1e"):
        check(UNARY[name], half)
    else:
        with pytest.raises(NotImplementedError):
            UNARY[name](half)
        with pytest.raises((NotImplementedError, RuntimeError), match="not implemented for 'BFloat16'"):
            UNARY[name](half.to("tpu"))
    assert no_fallbacks() == {}


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "erfcx", "log_ndtr"])
def test_backward(mode, name):
    x = torch.linspace(-9, 9, 25, dtype=torch.float64)
    xc = x.clone().requires_grad_()
    UNARY[name](xc).sum().backward()
    torch.tpu.reset_metrics()
    xt = x.to("tpu").requires_grad_()
    UNARY[name](xt).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad)
    assert no_fallbacks() == {}


def test_out_and_inplace(mode):
    torch.tpu.reset_metrics()
    x = torch.linspace(-3, 3, 7)
    out = torch.empty(7)
    check(lambda x, o: S.i1e(x, out=o), x, out)
    check(lambda x: x.clone().i0_(), x)
    assert no_fallbacks() == {}
