"""Convolution and pooling layers, forward and gradients, against CPU torch in all three modes."""
import pytest
import torch
import torch.nn as nn

from conftest import Draws

randn = Draws(0).randn


TOL = dict(atol=1e-4, rtol=1e-4)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def run_layer(layer, x, permute=None):
    """Runs layer on x on CPU and on tpu; compares the output and every gradient.

    With permute, the input handed to the layer is x.permute(permute), a
    non-contiguous view on both devices.
    """
    torch.manual_seed(0)
    ref = layer
    ref.zero_grad(set_to_none=True)
    dev = [p.detach().clone().to("tpu").requires_grad_() for p in ref.parameters()]
    xc = x.clone().requires_grad_()
    xt = x.clone().to("tpu").requires_grad_()
    inc, intpu = (xc, xt) if permute is None else (xc.permute(permute), xt.permute(permute))
    want = ref(inc)
    names = [n for n, _ in ref.named_parameters()]
    params = dict(zip(names, dev))
    got = torch.func.functional_call(ref, params, (intpu,))
    gout = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    want.backward(gout)
    got.backward(gout.to("tpu"))
    torch.testing.assert_close(got.detach().cpu(), want.detach(), **TOL)
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL)
    for n, p, q in zip(names, ref.parameters(), dev):
        torch.testing.assert_close(q.grad.cpu(), p.grad, **TOL, msg=lambda m: f"{n}: {m}")


CONV2D = [
    dict(cin=3, cout=4, k=3),
    dict(cin=4, cout=6, k=3, stride=2, padding=1),
    dict(cin=4, cout=6, k=3, dilation=2, padding=1, groups=2),
    dict(cin=4, cout=4, k=(3, 2), stride=(2, 1), padding=(1, 0), groups=4, bias=False),
    dict(cin=3, cout=5, k=4, padding="same"),
]


@pytest.mark.parametrize("cfg", CONV2D, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_conv2d(mode, cfg):
    cfg = dict(cfg)
    cin, cout, k = cfg.pop("cin"), cfg.pop("cout"), cfg.pop("k")
    torch.manual_seed(0)
    layer = nn.Conv2d(cin, cout, k, **cfg)
    run_layer(layer, randn(2, cin, 9, 8))


def test_conv2d_non_contiguous(mode):
    torch.manual_seed(0)
    layer = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    run_layer(layer, randn(2, 9, 8, 4), permute=(0, 3, 1, 2))  # an NHWC buffer seen as NCHW


CONV1D = [
    dict(cin=3, cout=4, k=3),
    dict(cin=4, cout=6, k=3, stride=2, padding=1, dilation=2, groups=2),
    dict(cin=3, cout=2, k=5, padding="same", bias=False),
]


@pytest.mark.parametrize("cfg", CONV1D, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_conv1d(mode, cfg):
    cfg = dict(cfg)
    cin, cout, k = cfg.pop("cin"), cfg.pop("cout"), cfg.pop("k")
    torch.manual_seed(0)
    layer = nn.Conv1d(cin, cout, k, **cfg)
    run_layer(layer, randn(3, cin, 11))
    if "groups" in cfg:
        run_layer(layer, randn(3, 11, cin), permute=(0, 2, 1))


def test_conv_transpose2d(mode):
    torch.manual_seed(0)
    run_layer(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), randn(2, 4, 5, 6))
    run_layer(nn.ConvTranspose2d(3, 2, 2, dilation=2), randn(1, 3, 4, 4))


def test_conv_transpose_output_padding_past_stride(mode):
    # output_padding >= stride (allowed below the dilation): the plain
    # convolution that maps the result back to the input yields extra
    # trailing elements, which the input gradient must drop.
    torch.manual_seed(0)
    run_layer(nn.ConvTranspose2d(4, 4, 3, padding=1, dilation=2, output_padding=1), randn(2, 4, 4, 4))
    run_layer(nn.ConvTranspose2d(4, 2, 3, stride=(2, 1), padding=(0, 1), dilation=(1, 3),
                                 output_padding=(1, 2), groups=2), randn(2, 4, 4, 5))
    run_layer(nn.ConvTranspose3d(2, 2, 2, dilation=3, output_padding=(2, 0, 1)), randn(1, 2, 3, 3, 2))


SMALL_MAPS = [  # the kernel outgrows the input: the lowering pads the input itself (hlo.kernelOutgrowsInput)
    (nn.Conv2d(8, 6, 3, padding=1), (2, 8, 1, 1)),  # a ResNet's last stage on 32-pixel images
    (nn.Conv2d(8, 6, 3, padding=1, bias=False), (2, 8, 2, 2)),
    (nn.Conv2d(8, 6, 3, stride=2, padding=1), (2, 8, 2, 3)),
    (nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2), (2, 4, 3, 2)),
    (nn.Conv1d(4, 6, 5, padding=2), (3, 4, 2)),
    (nn.Conv1d(4, 6, 3, padding=1), (3, 4, 1)),  # taps that meet only padding are cut (hlo.cropIdleTaps)
    (nn.Conv2d(4, 6, 5, padding=2), (2, 4, 1, 2)),
    (nn.Conv2d(4, 6, 3, padding=(0, 1)), (2, 4, 3, 1)),
    (nn.Conv3d(2, 3, 3, padding=1), (1, 2, 2, 1, 2)),
    (nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1), (2, 6, 1, 2)),
    (nn.ConvTranspose2d(4, 4, 4, stride=3, padding=2, groups=2), (2, 4, 2, 1)),
]


@pytest.mark.parametrize("case", range(len(SMALL_MAPS)))
def test_kernel_larger_than_the_input(mode, case):
    torch.manual_seed(0)
    layer, shape = SMALL_MAPS[case]
    run_layer(layer, randn(*shape))


def test_conv_errors():
    x = torch.randn(1, 5, 8, 8).to("tpu")
    w = torch.randn(4, 3, 3, 3).to("tpu")
    with pytest.raises(RuntimeError, match="expected input.*to have 3 channels, but got 5 channels"):
        torch.nn.functional.conv2d(x, w)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(torch.randn(1, 3, 2, 2).to("tpu"), w)


MAXPOOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0)),
    dict(kernel_size=3, stride=2, dilation=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("cfg", MAXPOOL, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_max_pool2d(mode, cfg):
    layer = nn.MaxPool2d(**cfg)
    run_layer(layer, randn(2, 3, 9, 8))
    if cfg in MAXPOOL[:2]:
        run_layer(layer, randn(2, 9, 8, 3), permute=(0, 3, 1, 2))


def test_max_pool2d_indices_and_ties(mode):
    x = torch.tensor([[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [-1.0, 5.0, 0.0, 0.0], [5.0, -1.0, 0.0, 0.0]]]])
    want_v, want_i = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    got_v, got_i = torch.nn.functional.max_pool2d(x.to("tpu"), 2, return_indices=True)
    assert torch.equal(got_v.cpu(), want_v) and torch.equal(got_i.cpu(), want_i)
    x = randn(3, 7, 7)  # unbatched, overlapping windows
    want_v, want_i = torch.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True)
    got_v, got_i = torch.nn.functional.max_pool2d(x.to("tpu"), 3, 2, 1, return_indices=True)
    assert torch.equal(got_v.cpu(), want_v) and torch.equal(got_i.cpu(), want_i)


def test_max_pool1d(mode):
    run_layer(nn.MaxPool1d(3, stride=2, padding=1), randn(2, 3, 10))


AVGPOOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 1), divisor_override=5),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
]


@pytest.mark.parametrize("cfg", AVGPOOL, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_avg_pool2d(mode, cfg):
    layer = nn.AvgPool2d(**cfg)
    run_layer(layer, randn(2, 3, 9, 8))
    if cfg in AVGPOOL[1:3]:
        run_layer(layer, randn(2, 9, 8, 3), permute=(0, 3, 1, 2))


def test_avg_pool1d_unbatched(mode):
    run_layer(nn.AvgPool1d(3, stride=2, padding=1), randn(2, 3, 10))
    run_layer(nn.AvgPool2d(2), randn(3, 6, 6))


@pytest.mark.parametrize("out", [(3, 4), (1, 1), (5, 3), (2, 1)], ids=str)
def test_adaptive_avg_pool2d(mode, out):
    layer = nn.AdaptiveAvgPool2d(out)
    run_layer(layer, randn(2, 3, 8, 12))
    if out == (5, 3):
        run_layer(layer, randn(2, 9, 10, 3), permute=(0, 3, 1, 2))


def test_pool_errors():
    x = torch.randn(1, 2, 4, 4).to("tpu")
    with pytest.raises(RuntimeError, match="pad should be"):
        torch.nn.functional.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        torch.nn.functional.avg_pool2d(x, 5)


@pytest.mark.parametrize("step_mode", ["strict", "fused"])
def test_small_cnn_training_step(step_mode):
    torch.tpu.set_mode(step_mode)
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.AvgPool2d(2),
        nn.AdaptiveAvgPool2d((3, 3)), nn.Flatten(), nn.Linear(72, 5),
    )
    try:
        run_layer(net, randn(4, 3, 16, 16))
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
