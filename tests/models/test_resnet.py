"""ResNet-18 (torchvision) classification training in every mode."""
import pytest
import torch
import torch.nn.functional as F
import torchvision

from harness import MODES, Case, compare_training


def build():
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=10)


def batch(i):
    g = torch.Generator().manual_seed(500 + i)
    return torch.randn(4, 3, 64, 64, generator=g), torch.randint(0, 10, (4,), generator=g)


def loss(model, b):
    return F.cross_entropy(model(b[0]), b[1])


RESNET = Case("resnet18", build, batch, loss)


@pytest.mark.parametrize("mode", MODES)
def test_resnet18_trains_like_cpu(mode):
    compare_training(RESNET, mode)
