"""nn.functional pooling, upsampling, padding, fold/unfold and loss ops on tpu against CPU torch:
forward values and input gradients in debug, strict and fused mode, with no CPU fallbacks."""
import pytest
import torch
import torch.nn.functional as F

from conftest import Draws


draws = Draws(0)
randn, g = draws.randn, draws.gen
TOL = {"atol": 1e-4, "rtol": 1e-4}


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def compare(fn, *inputs, grad=True):
    """Runs fn on CPU and on tpu copies of inputs; compares outputs and the float inputs' gradients."""
    res = []
    for dev in ("cpu", "tpu"):
        leaves = [x.detach().to(dev).requires_grad_(grad and x.is_floating_point()) for x in inputs]
        out = fn(*leaves)
        outs = list(out) if isinstance(out, tuple) else [out]
        res.append((leaves, outs))
    (cl, co), (tl, to) = res
    for c, t in zip(co, to):
        torch.testing.assert_close(t.cpu(), c.detach(), **TOL)
    if not grad:
        return
    ups = [randn(*c.shape) for c in co if c.is_floating_point()]
    sum((c * u).sum() for c, u in zip(co, ups)).backward()
    sum((t * u.to("tpu")).sum() for t, u in zip(to, ups)).backward()
    for c, t in zip(cl, tl):
        if c.grad is not None:
            torch.testing.assert_close(t.grad.cpu(), c.grad, **TOL)


@pytest.mark.parametrize("kw", [
    dict(scale_factor=2, mode="nearest"), dict(size=(5, 7), mode="nearest"),
    dict(size=(5, 7), mode="nearest-exact"), dict(scale_factor=1.7, mode="bilinear"),
    dict(size=(3, 9), mode="bilinear", align_corners=True), dict(size=(6, 5), mode="bicubic"),
    dict(size=(6, 5), mode="bicubic", align_corners=True), dict(size=(3, 5), mode="area"),
])
def test_interpolate_2d(mode, kw):
    compare(lambda x: F.interpolate(x, **kw), randn(2, 3, 4, 6))


@pytest.mark.parametrize("kw", [dict(size=9, mode="linear"), dict(size=3, mode="nearest"),
                                dict(size=(3, 5, 4), mode="trilinear", align_corners=True)])
def test_interpolate_1d_3d(mode, kw):
    x = randn(2, 3, 4, 6, 5) if kw["mode"] == "trilinear" else randn(2, 3, 7)
    compare(lambda x: F.interpolate(x, **kw), x)


def test_pools_3d(mode):
    x = randn(2, 3, 5, 6, 7)
    compare(lambda x: F.max_pool3d(x, 3, stride=2, padding=1, ceil_mode=True), x)
    compare(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False), x)
    compare(lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), x)
    compare(lambda x: F.adaptive_max_pool3d(x, (2, 4, 3), return_indices=True), x)
    compare(lambda x: F.adaptive_max_pool2d(x[0], (4, 5), return_indices=True), x)


POOL3D = [
    lambda x: F.max_pool3d(x, 2, return_indices=True),
    lambda x: F.max_pool3d(x, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1)),
    lambda x: F.max_pool3d(x[0], 3, stride=2, ceil_mode=True, return_indices=True),
    lambda x: F.avg_pool3d(x, 2),
    lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True),
    lambda x: F.avg_pool3d(x, (3, 2, 2), stride=(2, 2, 1), padding=(1, 1, 0), divisor_override=5),
    lambda x: F.adaptive_avg_pool3d(x, (5, 3, 7)),
    lambda x: F.adaptive_avg_pool3d(x[0], 1),
    lambda x: F.adaptive_avg_pool3d(x, (3, 3, 3)),
    lambda x: F.adaptive_max_pool3d(x, 1, return_indices=True),
]


@pytest.mark.parametrize("i", range(len(POOL3D)))
def test_pools_3d_windows(mode, i):
    """The 3-d poolings share the 2-d ones' lowering: strides, dilation, ceil_mode, divisors and even bins."""
    compare(POOL3D[i], randn(2, 3, 5, 6, 7))


POOL_ERRORS = [
    lambda x: torch.ops.aten.avg_pool2d(x[0], [2, 2, 2]),
    lambda x: torch.ops.aten.max_pool3d_with_indices(x, [2, 2], [], [0], [1], False),
    lambda x: torch.ops.aten.avg_pool3d(x.int(), [2, 2, 2]),
    lambda x: torch.ops.aten._adaptive_avg_pool3d(x, [2, 2]),
    lambda x: torch.ops.aten._adaptive_avg_pool2d(x[0], [2]),
    lambda x: torch.ops.aten.adaptive_max_pool2d(x[0], [2]),
    lambda x: torch.ops.aten.adaptive_max_pool3d(x, [2, 2]),
]


@pytest.mark.parametrize("i", range(len(POOL_ERRORS)))
def test_pool_errors_as_cpu(i):
    """Bad pooling arguments raise CPU's exception class, with CPU's message, naming the op."""
    x = randn(1, 2, 4, 4, 4)
    with pytest.raises(Exception) as want:
        POOL_ERRORS[i](x)
    with pytest.raises(type(want.value)) as got:
        POOL_ERRORS[i](x.to("tpu"))
    msg = str(got.value)
    assert msg.startswith(str(want.value).split("\n")[0]), msg
    assert "on tpu, arguments:" in msg


def test_max_unpool(mode):
    x = randn(2, 3, 6, 8)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    compare(lambda o: F.max_unpool2d(o, idx.to(o.device), 2), out)


@pytest.mark.parametrize("fn", ["reflect", "replicate"])
def test_pad(mode, fn):
    compare(lambda x: F.pad(x, (2, 1, 1, 3), mode=fn), randn(2, 3, 5, 6))
    compare(lambda x: F.pad(x, (2, 1), mode=fn), randn(2, 3, 5))


@pytest.mark.parametrize("fn", ["reflect", "replicate"])
def test_pad_backward_of_complex(mode, fn):
    x = torch.randn(2, 3, 5, dtype=torch.complex64, generator=g)
    grads = []
    for dev in ("cpu", "tpu"):
        leaf = x.detach().to(dev).requires_grad_()
        w = torch.arange(10, dtype=torch.float32).to(dev)
        (F.pad(leaf, (2, 3), mode=fn).abs() * w).sum().backward()
        grads.append(leaf.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


def test_fold_unfold(mode):
    x = randn(2, 3, 7, 8)
    compare(lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), x)
    cols = randn(2, 3 * 2 * 2, 10)
    compare(lambda c: F.fold(c, (4, 5), (2, 2), padding=(1, 0), stride=(1, 2)), cols)


def test_losses(mode):
    x, t = randn(4, 5), randn(4, 5)
    compare(lambda x, t: F.huber_loss(x, t, delta=0.7), x, t)
    compare(lambda x, t: F.smooth_l1_loss(x, t, beta=0.5, reduction="sum"), x, t)
    p, w = torch.rand(4, 5, generator=g), torch.rand(4, 5, generator=g)
    compare(lambda p, w: F.binary_cross_entropy(p, w.detach(), weight=w.detach()), p, w)


def test_glu_prelu(mode):
    compare(lambda x: F.glu(x, 1), randn(3, 6, 2))
    compare(lambda x, w: F.prelu(x, w), randn(2, 4, 3), torch.rand(4, generator=g))
