"""frexp, isin, nonzero_static, histograms, margin losses, antialiased upsampling, CPU flash
attention and segment_reduce against CPU torch, values and gradients, in the three modes."""
import pytest
import torch
import torch.nn.functional as F

from conftest import check, no_fallbacks

g = torch.Generator().manual_seed(0)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def check_grad(fn, *args, atol=1e-5, rtol=1.3e-6):
    """Compares fn's value and the gradients of its sum w.r.t. the float args on CPU and tpu."""
    cpu = [a.detach().clone().requires_grad_(a.is_floating_point()) if isinstance(a, torch.Tensor) else a for a in args]
    tpu = [a.detach().to("tpu").requires_grad_(a.is_floating_point()) if isinstance(a, torch.Tensor) else a
           for a in args]
    want, got = fn(*cpu), fn(*tpu)
    torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol)
    want.sum().backward()
    got.sum().backward()
    for a, b in zip(cpu, tpu):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            torch.testing.assert_close(b.grad.cpu(), a.grad, atol=atol, rtol=rtol)


def test_frexp(mode):
    specials = [0.0, -0.0, 1.0, -3.5, 1e-40, -2e-45, float("inf"), float("-inf"), float("nan"), 1e30]
    x = torch.cat([randn(6) * 100, torch.tensor(specials)])
    check(torch.frexp, x)
    check(torch.frexp, torch.tensor([1e-310, -4e-320, 1e300, 0.0, -2.5], dtype=torch.float64))
    check(torch.frexp, torch.tensor([0.0, 1.0, -6.5, 1e-6, 300.0, float("inf")], dtype=torch.bfloat16))


def test_isin(mode):
    a = torch.tensor([[1, 2, 3], [4, 5, 6]])
    t = torch.tensor([2, 6, 9])
    check(torch.isin, a, t)
    check(lambda x, y: torch.isin(x, y, invert=True, assume_unique=True), a, t)
    check(lambda x: torch.isin(x, 5), a)
    check(lambda y: torch.isin(6, y), t)
    check(torch.isin, torch.tensor([0.5, 1.0, float("nan")]), torch.tensor([1, 2]))


def test_nonzero_static(mode):
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    check(lambda t: torch.nonzero_static(t, size=5), x)
    check(lambda t: torch.nonzero_static(t, size=2, fill_value=7), x)
    check(lambda t: torch.nonzero_static(t, size=3), torch.tensor([0.0, 1.5, 0.0, -2.0]))
    check(lambda t: torch.combinations(t, 2), torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_histogram(mode):
    x = randn(20)
    w = randn(20).abs()
    check(lambda t: torch.histogram(t, 5), x)
    check(lambda t, u: torch.histogram(t, 4, range=(-1.0, 1.0), weight=u, density=True), x, w)
    check(lambda t, e: torch.histogram(t, e), x, torch.tensor([-1.0, 0.0, 0.5, 2.0]))
    check(lambda t: torch.histogram(t, 4), torch.tensor([0.0, 1.0, 2.0, 4.0, 4.0]))  # last bin includes its right edge
    check(lambda t: torch.histogram(t, 3), torch.full((4,), 2.0, dtype=torch.float64))
    pts = randn(15, 2)
    check(lambda t, u: torch.histogramdd(t, [2, 3], weight=u, density=True), pts, w[:15])
    check(lambda t, e, f: torch.histogramdd(t, [e, f]), pts, torch.tensor([-2.0, 0.0, 2.0]), torch.tensor([-1.0, 1.0]))


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


def test_flash_attention_dropout_is_refused_like_cpu():
    q = randn(1, 2, 4, 8).to("tpu")
    with pytest.raises(RuntimeError, match="Currently do not support dropout > 0"):
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, dropout_p=0.5)


def test_flash_attention_for_cpu(mode):
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    mask = randn(4, 6)
    check_grad(lambda a, b, c: f(a, b, c, is_causal=True)[0], q, k, v, rtol=1e-5)
    check_grad(lambda a, b, c: f(a, b, c, attn_mask=mask.to(a.device), scale=0.3)[0], q, k, v, rtol=1e-5)
    check(lambda a, b, c: f(a, b, c)[1], q, k, v, atol=1e-5, rtol=1e-5)


def test_flash_attention_strides_match_cpu():
    # Compiled graphs view these results with the strides CPU's kernels (and their meta functions) give.
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    layouts = []
    for dev in ("cpu", "tpu"):
        # The query as a transformer block makes it: heads split out of [B, L, H*E] and moved forward.
        a = q.transpose(1, 2).contiguous().to(dev).transpose(1, 2)
        b, c = k.to(dev), v.to(dev)
        out, lse = f(a, b, c, is_causal=True)
        grads = bwd(out, a, b, c, out, lse, 0.0, True)
        layouts.append([(t.shape, t.stride()) for t in (out, lse, *grads)])
        if dev == "tpu":
            torch.testing.assert_close(grads[1].cpu(), cpu_grads[1], atol=1e-5, rtol=1e-5)
        cpu_grads = grads
    assert layouts[0] == layouts[1]


def test_segment_reduce(mode):
    data = randn(7, 3)
    data[2, 1] = 0.0
    lengths = torch.tensor([2, 0, 4, 1])
    offsets = torch.tensor([0, 3, 3, 7])
    cases = [("sum", {"lengths": lengths}), ("max", {"offsets": offsets}), ("min", {"lengths": lengths}),
             ("prod", {"lengths": lengths, "initial": 0.5}), ("mean", {"offsets": offsets, "initial": 1.0})]
    for reduce, kw in cases:
        def seg(a, reduce=reduce, kw=kw):
            kw2 = {n: (t.to(a.device) if isinstance(t, torch.Tensor) else t) for n, t in kw.items()}
            return torch.segment_reduce(a, reduce, axis=0, unsafe=True, **kw2)
        check_grad(seg, data)
    check(lambda a, l: torch.segment_reduce(a, "mean", lengths=l), data, lengths)  # empty segments are NaN
