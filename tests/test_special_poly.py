"""Orthogonal polynomials of torch.special and igamma/igammac vs CPU, with no fallbacks."""
import pytest
import torch

from tests.conftest import check, no_fallbacks

POLYS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


def _grid(dtype):
    # Boundaries (|x| == 1, 0), the closed-form range (|x| < 1, n > 6), growth
    # outside it, negative, fractional and non-finite degrees.
    x = torch.cat([torch.linspace(-1.5, 1.5, 13), torch.tensor([1.0, -1.0, 0.0, 0.5, float("nan")])])
    n = torch.tensor([-2.0, 0, 1, 2, 3, 7, 9, 12, 2.7, float("nan"), float("inf")])
    xs, ns = torch.meshgrid(x, n, indexing="ij")
    return xs.to(dtype), ns.to(dtype)


@pytest.mark.parametrize("name", POLYS)
def test_polynomial_values(mode, name):
    f = getattr(torch.special, name)
    torch.tpu.reset_metrics()
    x, n = _grid(torch.float32)
    check(f, x, n)
    if name in ("chebyshev_polynomial_t", "hermite_polynomial_h"):
        x, n = _grid(torch.float64)
        check(f, x, n)
    assert not no_fallbacks()


def test_polynomial_scalar_and_int_overloads(mode):
    torch.tpu.reset_metrics()
    x = torch.linspace(-1.2, 1.2, 9)
    check(lambda x: torch.special.chebyshev_polynomial_t(x, 5), x)
    check(lambda n: torch.special.legendre_polynomial_p(0.3, n), torch.arange(-1, 8))
    check(torch.special.hermite_polynomial_h, torch.arange(-3, 4), torch.arange(0, 7))
    out = torch.empty(9)
    check(lambda x, o: torch.special.laguerre_polynomial_l(x, 4, out=o), x, out)
    assert not no_fallbacks()


def test_igamma_igammac(mode):
    a = torch.tensor([0.0, 1e-3, 0.5, 1, 2.5, 10, 25, 50, 150, 250, 1000, float("inf"), -1, float("nan")])
    x = torch.tensor([0.0, 1e-4, 0.3, 0.7, 1.05, 3, 24, 60, 140, 260, 1010, float("inf"), -1, float("nan")])
    aa, xx = torch.meshgrid(a, x, indexing="ij")
    torch.tpu.reset_metrics()
    check(torch.igamma, aa.double(), xx.double())
    check(torch.special.gammaincc, aa, xx)
    assert not no_fallbacks()
