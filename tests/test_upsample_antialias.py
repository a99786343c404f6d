"""Antialiased bilinear upsampling against CPU torch, values and gradients, in the three modes; uint8 takes the
counted CPU path."""
import pytest
import torch
import torch.nn.functional as F

from conftest import Draws, check_grad, no_fallbacks

draws = Draws(0)
randn, g = draws.randn, draws.gen


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_upsample_bilinear_aa(mode):
    x = randn(2, 3, 10, 12)
    check_grad(lambda a: F.interpolate(a, size=(4, 15), mode="bilinear", antialias=True), x)
    check_grad(lambda a: F.interpolate(a, scale_factor=(0.6, 1.7), mode="bilinear", antialias=True,
                                       align_corners=True), x)


def test_upsample_bilinear_aa_uint8_runs_on_cpu():
    # CPU's uint8 kernel rounds through fixed-point weights; tpu takes the counted CPU path for it.
    x = torch.randint(0, 256, (1, 2, 9, 11), generator=g, dtype=torch.uint8)
    got = F.interpolate(x.to("tpu"), size=(4, 5), mode="bilinear", antialias=True)
    assert got.device.type == "tpu"
    assert torch.equal(got.cpu(), F.interpolate(x, size=(4, 5), mode="bilinear", antialias=True))
    assert no_fallbacks() == {"aten::_upsample_bilinear2d_aa": 1}
    torch.tpu.reset_metrics()
