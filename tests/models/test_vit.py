"""A small torchvision VisionTransformer (image 32, patch 8, two layers) training in every mode."""
import pytest
import torch
import torch.nn.functional as F
from torchvision.models import VisionTransformer

from .harness import MODES, Case, compare_training


def build():
    torch.manual_seed(0)
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                             num_classes=10)


def batch(i):
    g = torch.Generator().manual_seed(600 + i)
    return torch.randn(4, 3, 32, 32, generator=g), torch.randint(0, 10, (4,), generator=g)


def loss(model, b):
    return F.cross_entropy(model(b[0]), b[1])


VIT = Case("vit", build, batch, loss)


@pytest.mark.parametrize("mode", MODES)
def test_vit_trains_like_cpu(mode):
    compare_training(VIT, mode)
