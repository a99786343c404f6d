"""grid_sample (2-D and 3-D, every mode) and ctc_loss vs CPU, values and gradients, with no fallbacks."""
import itertools

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import no_fallbacks


def _grads(fn, *args):
    """fn's output and the gradients of (output * fixed weights).sum() for the float args."""
    out = fn(*args)
    w = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape).to(out.device)
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return [out] + list(torch.autograd.grad((out * w).sum(), leaves))


def _compare(fn, *args, atol=None, rtol=None):
    cpu = [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]
    tpu = [a.detach().to("tpu").requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]
    want = _grads(fn, *cpu)
    torch.tpu.reset_metrics()
    got = _grads(fn, *tpu)
    got = [g.cpu() for g in got]
    assert not no_fallbacks()
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, equal_nan=True, atol=atol, rtol=rtol)


@pytest.mark.parametrize("mode_name", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(mode, mode_name):
    torch.manual_seed(0)
    combos = {"bilinear": [("zeros", False), ("border", True), ("reflection", True)],
              "nearest": [("zeros", True), ("reflection", False)], "bicubic": [("reflection", False)]}[mode_name]
    for pad, ac in combos:
        inp = torch.randn(2, 3, 5, 6, dtype=torch.float64, requires_grad=True)
        grid = (torch.rand(2, 4, 7, 2, dtype=torch.float64) * 2.6 - 1.3).requires_grad_()
        _compare(lambda i, g: F.grid_sample(i, g, mode=mode_name, padding_mode=pad, align_corners=ac), inp, grid)


@pytest.mark.parametrize("mode_name", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, mode_name):
    torch.manual_seed(1)
    pads = [("reflection", False)] if mode_name == "bilinear" else [("border", True)]
    for pad, ac in pads:
        inp = torch.randn(2, 2, 3, 4, 5, requires_grad=True)
        grid = (torch.rand(2, 3, 2, 4, 3) * 2.6 - 1.3).requires_grad_()
        _compare(lambda i, g: F.grid_sample(i, g, mode=mode_name, padding_mode=pad, align_corners=ac), inp, grid)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ctc_loss(mode, dtype):
    torch.manual_seed(2)
    T, B, C, S = 12, 3, 6, 4
    lp = torch.randn(T, B, C, dtype=dtype).log_softmax(2).requires_grad_()
    il, tl = torch.tensor([12, 9, 2]), torch.tensor([4, 0, 3])  # the last one is impossible: infinite loss
    padded = torch.randint(1, C, (B, S))
    concat = torch.cat([padded[i, : tl[i]] for i in range(B)])
    cases = [(padded, "mean", True), (concat, "none", False)] if dtype == torch.float32 else [(concat, "sum", True)]
    for targets, red, zi in cases:
        _compare(lambda lp, t, i, l: F.ctc_loss(lp, t, i, l, reduction=red, zero_infinity=zi), lp, targets, il, tl)
    if dtype == torch.float32:
        _compare(lambda lp, t: F.ctc_loss(lp, t, il.tolist(), tl.tolist(), blank=5, zero_infinity=True),
                 lp, torch.randint(0, 5, (B, S)))
