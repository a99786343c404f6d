"""Gradient checkpointing draws the same random numbers in the recomputed forward as in the first one:
torch.utils.checkpoint saves and restores the tpu generator's state (it does so only for a device module
whose `_initialized` holds), so dropout under a checkpoint gives the gradients of the same step without
one, in every mode; torch.random.fork_rng restores the tpu generator too."""
import pytest
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def _grads(checkpointed, reentrant):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 16)).to("tpu")
    x = torch.randn(4, 16).to("tpu").requires_grad_()
    torch.manual_seed(123)
    y = checkpoint(model, x, use_reentrant=reentrant) if checkpointed else model(x)
    y.pow(2).sum().backward()
    return [t.grad.cpu() for t in (x, *model.parameters())]


def test_device_module_reports_initialized():
    torch.ones(1, device="tpu").cpu()
    assert torch.tpu._initialized is True
    assert getattr(torch.tpu, "_initialized", False)


@pytest.mark.parametrize("reentrant", [False, True])
def test_dropout_under_checkpoint_gives_the_same_gradients(mode, reentrant):
    plain = _grads(False, reentrant)
    ckpt = _grads(True, reentrant)
    assert any(g.abs().sum() > 0 for g in plain)
    for a, b in zip(plain, ckpt):
        # Before, the recomputation drew another dropout mask: differences of about 2.4.
        torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_fork_rng_restores_the_tpu_generator(mode):
    torch.manual_seed(7)
    want = torch.rand(8, device="tpu").cpu()
    torch.manual_seed(7)
    with torch.random.fork_rng(device_type="tpu"):
        torch.rand(8, device="tpu").cpu()
        torch.rand(3, device="tpu").cpu()
    torch.testing.assert_close(torch.rand(8, device="tpu").cpu(), want, rtol=0, atol=0)
