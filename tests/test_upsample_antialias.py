"""Antialiased bilinear upsampling against CPU torch, values and gradients, in the three modes; uint8 images
byte for byte."""
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


@pytest.mark.parametrize("antialias", [False, True])
def test_upsample_bilinear_uint8_exact(mode, antialias):
    """CPU's uint8 bilinear kernels (plain and antialiased) interpolate the width, round to uint8, then the
    height, with fixed-point weights: tpu gives the same bytes, channels_last inputs and scale factors included."""
    for shape, kw in [((2, 3, 9, 11), {"size": (4, 5)}), ((1, 4, 5, 7), {"size": (9, 4)}),
                      ((2, 1, 8, 8), {"size": (16, 16), "align_corners": True}),
                      ((1, 3, 11, 13), {"scale_factor": (1.7, 0.6)}),
                      ((1, 3, 13, 11), {"size": (5, 17), "align_corners": True})]:
        x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
        for t in (x, x.contiguous(memory_format=torch.channels_last)):
            want = F.interpolate(t, mode="bilinear", antialias=antialias, **kw)
            got = F.interpolate(t.to("tpu"), mode="bilinear", antialias=antialias, **kw)
            assert got.dtype == torch.uint8 and got.stride() == want.stride()
            assert torch.equal(got.cpu(), want), (shape, kw)
