"""ResNet-18 (torchvision) classification training in every mode."""
import pytest
import torch
import torch.nn.functional as F
import torchvision

from .harness import MODES, Case, compare_training


def build():
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=10)


def batch(i):
    g = torch.Generator().manual_seed(500 + i)
    return torch.randn(4, 3, 64, 64, generator=g), torch.randint(0, 10, (4,), generator=g)


def loss(model, b):
    return F.cross_entropy(model(b[0]), b[1])


# After the first step the gradients are noise amplified by training: BatchNorm normalizes layer4's 2x2 maps over
# 16 values a channel, and AdamW's first updates are lr * sign(gradient) whatever its size, so rounding decides the
# direction of the tiny ones. CPU float32 against CPU float64 (tests/models/noise.py resnet18), per step:
#   loss gap      2.6e-7  1.7e-5  3.0e-4  7.8e-4
#   gradient      4.9e-6  2.3e-2  1.4e-1  2.9e-1   (step 3: layer1.1.bn1.weight)
# and tpu (fused) against CPU float64: loss 2.6e-7 6.8e-6 2.5e-4 1.2e-3, gradient 6.7e-6 3.0e-2 1.9e-1 3.8e-1:
# tpu is as far from the exact trajectory as CPU float32 is. Against CPU float32 tpu measured at most
# loss 9.8e-8 2.4e-5 5.7e-5 2.6e-3 and gradient 6.9e-6 2.7e-2 1.9e-1 4.0e-1 (the two noises add).
# The running statistics after step 3 follow layer4's batch statistics under those noisy parameters: CPU float32
# lies 5.0e-3 from CPU float64 there (layer4.1.bn2.running_mean), tpu (fused) 6.7e-3, and tpu against CPU float32
# 6.7e-3 in every mode (layer4.x.bn1.running_mean). The fast tier's one step keeps 1e-4.
RESNET = Case("resnet18", build, batch, loss, loss_tol=(1e-4, 1e-4, 1e-3, 5e-3), grad_tol=(1e-3, 0.1, 0.5, 1.0),
              buffer_tol=(1e-4, 1e-4, 1e-3, 2e-2))


@pytest.mark.parametrize("mode", MODES)
def test_resnet18_trains_like_cpu(mode):
    compare_training(RESNET, mode)
