"""Symmetric matrix square root and polar decomposition on tpu against CPU torch."""
import pytest
import torch

from tests.conftest import no_fallbacks


def _spd(n, batch=(), dtype=torch.float32):
    x = torch.randn(*batch, n, n, dtype=dtype)
    return x @ x.mT + 0.5 * torch.eye(n, dtype=dtype)


def _grads(fn, *xs):
    want_in = [x.clone().requires_grad_() for x in xs]
    got_in = [x.to("tpu").requires_grad_() for x in xs]
    fn(*want_in).backward()
    fn(*got_in).backward()
    return [(g.grad.cpu(), w.grad) for g, w in zip(got_in, want_in)]


def test_matrix_sqrth_values(mode):
    torch.manual_seed(0)
    torch.tpu.reset_metrics()
    for a in [_spd(4), _spd(3, (2,), torch.float64), torch.randn(5, 5), torch.randn(0, 3, 3), torch.randn(2, 0, 0)]:
        want = torch.linalg.matrix_sqrth(a)
        got = torch.linalg.matrix_sqrth(a.to("tpu")).cpu()
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    a = _spd(3)
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
    checks = _grads(lambda x: (torch.linalg.matrix_sqrth(x @ x.mT + torch.eye(4, device=x.device)) * w.to(x.device)).sum(),
                    torch.randn(4, 4))

    def polar_loss(x):
        u, h = torch.linalg.polar(x)
        return (u * w[:, :3].to(x.device)).sum() + (h * h).sum()

    checks += _grads(polar_loss, torch.randn(4, 3))
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
