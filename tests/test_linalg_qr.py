"""Householder QR, symmetric eigh, SVD and least squares on tpu against CPU torch."""
import torch

from tests.conftest import grad_pairs, no_fallbacks


def _sym(n, batch=()):
    x = torch.randn(*batch, n, n)
    return x + x.mT


def test_qr_geqrf_householder_ormqr(mode):
    torch.manual_seed(0)
    torch.tpu.reset_metrics()
    for shape in [(5, 3), (2, 3, 4)]:
        a = torch.randn(*shape)
        for qmode in ["reduced", "complete", "r"]:
            want = torch.linalg.qr(a, mode=qmode)
            got = torch.linalg.qr(a.to("tpu"), mode=qmode)
            for g, w in zip(got, want):
                assert g.shape == w.shape
                torch.testing.assert_close(g.cpu(), w, atol=1e-5, rtol=1e-5)
        h, tau = torch.geqrf(a)
        gh, gtau = torch.geqrf(a.to("tpu"))
        torch.testing.assert_close(gh.cpu(), h, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(gtau.cpu(), tau, atol=1e-5, rtol=1e-5)
        other = torch.randn(*shape[:-2], shape[-2], 2)
        for left, trans in [(True, False), (True, True)]:
            want = torch.ormqr(h, tau, other, left, trans)
            got = torch.ormqr(gh, gtau, other.to("tpu"), left, trans)
            torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
        want = torch.ormqr(h, tau, other.mT, False, False)
        got = torch.ormqr(gh, gtau, other.mT.to("tpu"), False, False)
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
    a = torch.randn(2, 6, 4)
    h, tau = torch.geqrf(a)
    want = torch.linalg.householder_product(h, tau[..., :3])
    got = torch.linalg.householder_product(h.to("tpu"), tau[..., :3].to("tpu"))
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
    assert no_fallbacks() == {}


def test_eigh_values_and_vectors(mode):
    torch.manual_seed(1)
    torch.tpu.reset_metrics()
    for a, uplo in [(_sym(5), "L"), (torch.randn(2, 4, 4, dtype=torch.float64), "U")]:
        w_want = torch.linalg.eigvalsh(a, UPLO=uplo)
        w, v = torch.linalg.eigh(a.to("tpu"), UPLO=uplo)
        w, v = w.cpu(), v.cpu()
        torch.testing.assert_close(w, w_want)
        full = a.tril() + a.tril(-1).mT if uplo == "L" else a.triu() + a.triu(1).mT
        torch.testing.assert_close(v @ torch.diag_embed(w) @ v.mT, full, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(v.abs(), torch.linalg.eigh(a, UPLO=uplo)[1].abs(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.linalg.eigvalsh(a.to("tpu"), UPLO=uplo).cpu(), w_want)
    assert no_fallbacks() == {}


def test_svd_values_and_vectors(mode):
    torch.manual_seed(2)
    torch.tpu.reset_metrics()
    for a, full in [(torch.randn(5, 3), False), (torch.randn(2, 3, 4, dtype=torch.float64), True)]:
        uw, sw, vw = torch.linalg.svd(a, full_matrices=full)
        u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("tpu"), full_matrices=full))
        assert u.shape == uw.shape and vh.shape == vw.shape
        torch.testing.assert_close(s, sw)
        k = s.shape[-1]
        torch.testing.assert_close(u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :], a, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(u[..., :k].abs(), uw[..., :k].abs(), atol=1e-5, rtol=1e-5)
        eye = torch.eye(u.shape[-1], dtype=a.dtype)
        torch.testing.assert_close(u.mT @ u, eye.expand_as(u.mT @ u), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.linalg.svdvals(a.to("tpu")).cpu(), torch.linalg.svdvals(a))
    # Rank-deficient input: U is still orthogonal.
    a = torch.randn(6, 4)
    a[:, 3] = a[:, 0]
    u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("tpu"), full_matrices=True))
    torch.testing.assert_close(u @ u.mT, torch.eye(6), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(u[:, :4] @ torch.diag(s) @ vh, a, atol=1e-5, rtol=1e-5)
    assert no_fallbacks() == {}


def test_lstsq_and_rank(mode):
    torch.manual_seed(3)
    torch.tpu.reset_metrics()
    a, b = torch.randn(2, 5, 3), torch.randn(2, 5, 2)
    for driver, x, y in [(None, a, b), ("gelsd", a[0], b[0])]:
        want = torch.linalg.lstsq(x, y, driver=driver)
        got = torch.linalg.lstsq(x.to("tpu"), y.to("tpu"), driver=driver)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g.cpu(), w, atol=1e-5, rtol=1e-5)
    assert torch.equal(torch.linalg.matrix_rank(a.to("tpu")).cpu(), torch.linalg.matrix_rank(a))
    assert no_fallbacks() == {}


def test_linalg_gradients(mode):
    torch.manual_seed(4)
    torch.tpu.reset_metrics()
    a, s = torch.randn(4, 3), _sym(4)

    def svd_loss(x):
        u, sv, vh = torch.linalg.svd(x, full_matrices=False)
        return (sv * torch.arange(1.0, 4.0, device=x.device)).sum() + (u @ vh).sin().sum()

    def eigh_loss(x):
        w, v = torch.linalg.eigh(x)
        return (w * w).sum() + ((v * v) @ torch.arange(1.0, 5.0, device=x.device)).sum()

    checks = grad_pairs(svd_loss, a) + grad_pairs(eigh_loss, s)
    checks += grad_pairs(lambda x, y: torch.linalg.lstsq(x, y).solution.square().sum(), a, torch.randn(4, 2))
    checks += grad_pairs(lambda x: torch.linalg.pinv(x).sum(), a)
    for got, want in checks:
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert no_fallbacks() == {}
