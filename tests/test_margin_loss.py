"""multi_margin_loss and multilabel_margin_loss against CPU torch, values and gradients, in the three modes."""
import pytest
import torch
import torch.nn.functional as F

from conftest import Draws, check_grad

randn = Draws(0).randn


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_multi_margin_loss(mode):
    x, y, w = randn(4, 5), torch.tensor([0, 3, 4, 1]), randn(5).abs()
    check_grad(lambda a: F.multi_margin_loss(a, y.to(a.device)), x)
    check_grad(lambda a: F.multi_margin_loss(a, y.to(a.device), p=2, margin=0.5, weight=w.to(a.device),
                                             reduction="sum"), x)
    check_grad(lambda a: F.multi_margin_loss(a, y.to(a.device), reduction="none"), x)


def test_multilabel_margin_loss(mode):
    x = randn(3, 4)
    y = torch.tensor([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]])
    check_grad(lambda a: F.multilabel_margin_loss(a, y.to(a.device)), x)
    check_grad(lambda a: F.multilabel_margin_loss(a, y.to(a.device), reduction="none"), x)
    check_grad(lambda a: F.multilabel_margin_loss(a, torch.tensor([2, -1, 0, 1], device=a.device)), randn(4))
