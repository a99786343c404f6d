"""frexp, isin, nonzero_static and combinations against CPU torch, in the three modes."""
import pytest
import torch

from conftest import Draws, check

randn = Draws(0).randn


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_frexp(mode):
    specials = [0.0, -0.0, 1.0, -3.5, 1e-40, -2e-45, float("inf"), float("-inf"), float("nan"), 1e30]
    x = torch.cat([randn(6) * 100, torch.tensor(specials)])
    check(torch.frexp, x)
    check(torch.frexp, torch.tensor([1e-310, -4e-320, 1e300, 0.0, -2.5], dtype=torch.float64))
    check(torch.frexp, torch.tensor([0.0, 1.0, -6.5, 1e-6, 300.0, float("inf")], dtype=torch.bfloat16))


def test_isin(mode):
    a = torch.tensor([[1, 2, 3], [4, 5, 6]])
    t = torch.tensor([2, 6, 9])
    check(torch.isin, a, t)
    check(lambda x, y: torch.isin(x, y, invert=True, assume_unique=True), a, t)
    check(lambda x: torch.isin(x, 5), a)
    check(lambda y: torch.isin(6, y), t)
    check(torch.isin, torch.tensor([0.5, 1.0, float("nan")]), torch.tensor([1, 2]))


def test_nonzero_static(mode):
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    check(lambda t: torch.nonzero_static(t, size=5), x)
    check(lambda t: torch.nonzero_static(t, size=2, fill_value=7), x)
    check(lambda t: torch.nonzero_static(t, size=3), torch.tensor([0.0, 1.5, 0.0, -2.0]))
    check(lambda t: torch.combinations(t, 2), torch.tensor([1.0, 2.0, 3.0, 4.0]))
