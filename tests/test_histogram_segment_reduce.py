"""histogram, histogramdd and segment_reduce against CPU torch, values and gradients, in the three modes."""
import pytest
import torch

from conftest import Draws, check, check_grad

randn = Draws(0).randn


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_histogram(mode):
    x = randn(20)
    w = randn(20).abs()
    check(lambda t: torch.histogram(t, 5), x)
    check(lambda t, u: torch.histogram(t, 4, range=(-1.0, 1.0), weight=u, density=True), x, w)
    check(lambda t, e: torch.histogram(t, e), x, torch.tensor([-1.0, 0.0, 0.5, 2.0]))
    check(lambda t: torch.histogram(t, 4), torch.tensor([0.0, 1.0, 2.0, 4.0, 4.0]))  # last bin includes its right edge
    check(lambda t: torch.histogram(t, 3), torch.full((4,), 2.0, dtype=torch.float64))
    pts = randn(15, 2)
    check(lambda t, u: torch.histogramdd(t, [2, 3], weight=u, density=True), pts, w[:15])
    check(lambda t, e, f: torch.histogramdd(t, [e, f]), pts, torch.tensor([-2.0, 0.0, 2.0]), torch.tensor([-1.0, 1.0]))


def test_segment_reduce(mode):
    data = randn(7, 3)
    data[2, 1] = 0.0
    lengths = torch.tensor([2, 0, 4, 1])
    offsets = torch.tensor([0, 3, 3, 7])
    cases = [("sum", {"lengths": lengths}), ("max", {"offsets": offsets}), ("min", {"lengths": lengths}),
             ("prod", {"lengths": lengths, "initial": 0.5}), ("mean", {"offsets": offsets, "initial": 1.0})]
    for reduce, kw in cases:
        def seg(a, reduce=reduce, kw=kw):
            kw2 = {n: (t.to(a.device) if isinstance(t, torch.Tensor) else t) for n, t in kw.items()}
            return torch.segment_reduce(a, reduce, axis=0, unsafe=True, **kw2)
        check_grad(seg, data)
    check(lambda a, l: torch.segment_reduce(a, "mean", lengths=l), data, lengths)  # empty segments are NaN
