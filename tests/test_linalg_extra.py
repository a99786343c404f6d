"""Symmetric matrix square root and polar decomposition on tpu against CPU torch."""
import pytest
import torch

from tests.conftest import grad_pairs, no_fallbacks


def _spd(n, batch=(), dtype=torch.float32):
    x = torch.randn(*batch, n, n, dtype=dtype)
    return x @ x.mT + 0.5 * torch.eye(n, dtype=dtype)


def test_matrix_sqrth_values(mode):
    torch.manual_seed(0)
    torch.tpu.reset_metrics()
    for a in [_spd(4), _spd(3, (2,), torch.float64), torch.randn(0, 3, 3), torch.randn(2, 0, 0)]:
        want = torch.linalg.matrix_sqrth(a)
        got = torch.linalg.matrix_sqrth(a.to("tpu")).cpu()
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    a = torch.randn(3, 3)  # not symmetric: only the lower triangle is read
    out = torch.empty(0, device="tpu")
    torch.ops.aten.linalg_matrix_sqrth.out(a.to("tpu"), out=out)
    torch.testing.assert_close(out.cpu(), torch.linalg.matrix_sqrth(a), atol=1e-5, rtol=1e-5)
    assert no_fallbacks() == {}


def test_polar_values(mode):
    torch.manual_seed(1)
    torch.tpu.reset_metrics()
    for a in [torch.randn(4, 4), torch.randn(2, 5, 3, dtype=torch.float64), torch.randn(3, 0)]:
        uw, hw = torch.linalg.polar(a)
        u, h = (t.cpu() for t in torch.linalg.polar(a.to("tpu")))
        assert u.shape == uw.shape and h.shape == hw.shape and u.dtype == uw.dtype
        torch.testing.assert_close(u, uw, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(h, hw, atol=1e-5, rtol=1e-5)
    a = torch.randn(3, 3)
    a[:, 2] = a[:, 1]  # rank deficient: H is still defined
    hw = torch.linalg.polar(a)[1]
    u, h = torch.empty(0, device="tpu"), torch.empty(0, device="tpu")
    torch.linalg.polar(a.to("tpu"), out=(u, h))
    torch.testing.assert_close(h.cpu(), hw, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close((u @ h).cpu(), a, atol=1e-5, rtol=1e-5)
    assert no_fallbacks() == {}


def test_sqrth_polar_gradients(mode):
    torch.manual_seed(2)
    torch.tpu.reset_metrics()
    w = torch.randn(4, 4)
    checks = grad_pairs(lambda x: (torch.linalg.matrix_sqrth(x @ x.mT + torch.eye(4, device=x.device)) * w.to(x.device)).sum(),
                    torch.randn(4, 4))

    def polar_loss(x):
        u, h = torch.linalg.polar(x)
        return (u * w[:, :3].to(x.device)).sum() + (h * h).sum()

    checks += grad_pairs(polar_loss, torch.randn(4, 3))
    for got, want in checks:
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert no_fallbacks() == {}


def test_sqrth_polar_errors():
    for fn in [torch.linalg.matrix_sqrth, torch.linalg.polar]:
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            fn(torch.randn(3, device="tpu"))
        with pytest.raises((RuntimeError, NotImplementedError), match="Got Long"):
            fn(torch.ones(2, 2, dtype=torch.int64, device="tpu"))
    with pytest.raises(RuntimeError, match="square matrices"):
        torch.linalg.matrix_sqrth(torch.randn(2, 3, device="tpu"))
    with pytest.raises(RuntimeError, match="at least as many rows as columns"):
        torch.linalg.polar(torch.randn(2, 3, device="tpu"))


def test_integer_convolutions(mode):
    torch.manual_seed(3)
    torch.tpu.reset_metrics()
    F = torch.nn.functional
    cases = [
        (F.conv1d, (1, 2, 5), (3, 2, 2), {}),
        (F.conv2d, (2, 4, 5, 6), (6, 2, 3, 2), dict(groups=2, stride=2, padding=1, dilation=(1, 2))),
        (F.conv3d, (1, 2, 4, 4, 4), (2, 2, 2, 2, 2), dict(padding=1)),
        (F.conv_transpose1d, (1, 2, 5), (2, 3, 2), dict(stride=2)),
        (F.conv_transpose2d, (1, 4, 4, 4), (4, 2, 3, 3), dict(stride=2, groups=2, padding=1, output_padding=1)),
        (F.conv_transpose3d, (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), {}),
    ]
    for f, xs, ws, kw in cases:
        x, w = torch.randint(-9, 9, xs), torch.randint(-9, 9, ws)
        out_ch = w.shape[1] * kw.get("groups", 1) if "transpose" in f.__name__ else w.shape[0]
        bias = torch.randint(-9, 9, (out_ch,))
        want = f(x, w, bias, **kw)
        got = f(x.to("tpu"), w.to("tpu"), bias.to("tpu"), **kw).cpu()
        assert got.dtype == torch.int64 and torch.equal(got, want), f.__name__
    # Products wrap around as CPU's integer arithmetic does.
    big, k = torch.full((1, 1, 3), 2**62), torch.full((1, 1, 2), 3)
    assert torch.equal(F.conv1d(big.to("tpu"), k.to("tpu")).cpu(), F.conv1d(big, k))
    assert no_fallbacks() == {}


def test_integer_pools_and_mvlgamma(mode):
    torch.manual_seed(4)
    torch.tpu.reset_metrics()
    F = torch.nn.functional
    x2, x3 = torch.randint(-50, 50, (2, 3, 7, 8)), torch.randint(-50, 50, (1, 2, 5, 6, 7))
    for f, x in [(F.avg_pool2d, x2), (F.avg_pool3d, x3)]:
        for kw in [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                   dict(kernel_size=2, stride=1, padding=1), dict(kernel_size=3, divisor_override=-4)]:
            got = f(x.to("tpu"), **kw).cpu()
            assert got.dtype == torch.int64 and torch.equal(got, f(x, **kw)), (f.__name__, kw)
    for f, x in [(F.max_pool2d, x2), (F.max_pool3d, x3)]:
        for dt in [torch.int64, torch.int8]:
            w, wi = f(x.to(dt), 3, 2, 1, 2, True, return_indices=True)
            g, gi = f(x.to(dt).to("tpu"), 3, 2, 1, 2, True, return_indices=True)
            assert g.dtype == dt and torch.equal(g.cpu(), w) and torch.equal(gi.cpu(), wi)
    x = torch.randint(1, 9, (3, 4))
    for p in [1, 3]:
        got = torch.mvlgamma(x.to("tpu"), p).cpu()
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, torch.mvlgamma(x, p))
    assert no_fallbacks() == {}


def test_integer_refusals():
    F = torch.nn.functional
    with pytest.raises(RuntimeError, match="not implemented for 'Int'"):
        F.avg_pool2d(torch.ones(1, 2, 4, 4, dtype=torch.int32, device="tpu"), 2)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        F.max_pool2d(torch.ones(1, 2, 4, 4, dtype=torch.bool, device="tpu"), 2)
    with pytest.raises(RuntimeError, match="boolean tensor"):
        torch.mvlgamma(torch.ones(2, dtype=torch.bool, device="tpu"), 1)


def test_hash_tensor(mode):
    torch.manual_seed(5)
    torch.tpu.reset_metrics()
    for x, kw in [(torch.randn(3, 4), {}), (torch.randn(2, 3, 4).half(), dict(dim=[0, 2], keepdim=True)),
                  (torch.tensor([1, 2, 3, -7]), {}), (torch.randint(-100, 100, (4, 5), dtype=torch.int8), dict(dim=[-1])),
                  (torch.tensor([True, True, False]), {}), (torch.tensor([-0.0, float("inf"), 2.5], dtype=torch.float64), {})]:
        want = torch.hash_tensor(x, **kw)
        got = torch.hash_tensor(x.to("tpu"), **kw).cpu()
        assert got.dtype == torch.uint64 and got.shape == want.shape
        assert torch.equal(got.view(torch.int64), want.view(torch.int64))
    out = torch.empty(0, dtype=torch.uint64, device="tpu")
    torch.hash_tensor(torch.arange(5, device="tpu"), out=out)
    assert out.cpu().view(torch.int64).item() == 1 ^ 2 ^ 3 ^ 4
    assert no_fallbacks() == {}
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.hash_tensor(torch.randn(0, 3, device="tpu"))
