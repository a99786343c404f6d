"""A small timm ConvNeXt (one block per stage) training in every mode."""
import pytest
import torch
import torch.nn.functional as F
from timm.models.convnext import ConvNeXt

from .harness import FULL, MODES, Case, compare_training


def build():
    torch.manual_seed(0)
    return ConvNeXt(depths=(1, 1, 1, 1), dims=(16, 32, 64, 128), num_classes=10)


def batch(i):
    g = torch.Generator().manual_seed(700 + i)
    return torch.randn(4, 3, 64, 64, generator=g), torch.randint(0, 10, (4,), generator=g)


def loss(model, b):
    return F.cross_entropy(model(b[0]), b[1])


CONVNEXT = Case("convnext", build, batch, loss)


# Known defect: under torch.compile the second step's graph is recaptured for a new layout (counted as `layout`),
# and that program's gradients are wrong (stages.0.blocks.0.conv_dw.weight off by 1.4 relative, 15 parameters
# past tolerance) while the loss stays right. The first step is right, so only the full tier sees it.
COMPILE_LAYOUT = pytest.mark.xfail(FULL, strict=True, reason="torch.compile: wrong ConvNeXt gradients after a "
                                   "layout recompile (known defect, fixed separately)")


@pytest.mark.parametrize("mode", [m if m != "compile" else pytest.param(m, marks=COMPILE_LAYOUT) for m in MODES])
def test_convnext_trains_like_cpu(mode):
    compare_training(CONVNEXT, mode)
