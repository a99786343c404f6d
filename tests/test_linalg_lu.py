"""Triangular solves, Cholesky, LU and what builds on them, against CPU torch in the three modes."""
import pytest
import torch

from conftest import Draws, check

randn = Draws(0).randn


def spd(*shape, dtype=torch.float32):
    a = randn(*shape, dtype=dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def well_conditioned(*shape, dtype=torch.float32):
    return randn(*shape, dtype=dtype) + 3 * torch.eye(shape[-1], dtype=dtype)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def check_grad(fn, *args, atol=1e-4, rtol=1e-4):
    """Asserts fn's value and the gradients of a weighted sum of its outputs match CPU."""
    def run(device):
        leaves = [a.detach().to(device).requires_grad_() for a in args]
        out = fn(*leaves)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        outs = [o for o in outs if o.is_floating_point() and o.requires_grad]
        loss = sum((o * torch.linspace(-1, 1, o.numel()).reshape(o.shape).to(device)).sum() for o in outs)
        loss.backward()
        return [o.detach().cpu() for o in outs], [a.grad.cpu() for a in leaves]
    want_out, want_grad = run("cpu")
    got_out, got_grad = run("tpu")
    torch.testing.assert_close(got_out, want_out, atol=atol, rtol=rtol)
    torch.testing.assert_close(got_grad, want_grad, atol=atol, rtol=rtol)


def test_solve_triangular(mode):
    a = well_conditioned(2, 4, 4)
    b = randn(2, 4, 3)
    check_grad(lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), a, b)
    check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True), a[0], b[0].mT)
    check(lambda b, a: torch.triangular_solve(b, a, upper=False, transpose=True), b.double(), a.double())


def test_cholesky(mode):
    a = spd(3, 4, 4)
    b = randn(3, 4, 2)
    check_grad(lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a)), a, b)
    check_grad(lambda a: torch.cholesky_inverse(torch.linalg.cholesky(a[0], upper=True), upper=True), a)
    bad = a.clone()
    bad[1, 2, 2] = -100
    check(torch.linalg.cholesky_ex, bad.double())


@pytest.mark.parametrize("shape", [(2, 4, 4), (5, 3)])
def test_lu_factor_and_unpack(mode, shape):
    a = randn(*shape)
    check_grad(torch.linalg.lu, a)
    lu, piv = torch.linalg.lu_factor(a.mT)
    check(torch.lu_unpack, lu, piv)


def test_lu_singular(mode):
    # Exactly singular in floating point, whichever of A and A^T is factored.
    a = torch.tensor([[1.0, 2.0, 4.0], [2.0, 4.0, 8.0], [1.0, 1.0, 1.0]])
    check(torch.linalg.lu_factor_ex, torch.stack([a, torch.zeros(3, 3)]))
    check(torch.linalg.slogdet, torch.stack([a, torch.zeros(3, 3)]))


def test_lu_solve_solve_inv(mode):
    a = well_conditioned(2, 4, 4)
    b = randn(2, 4, 2)
    lu, piv = torch.linalg.lu_factor(a)
    check(lambda lu, piv, b: [torch.linalg.lu_solve(lu, piv, b, adjoint=True),
                              torch.linalg.lu_solve(lu, piv, b.mT, left=False)], lu, piv, b)
    check_grad(lambda a, b, v: [torch.linalg.solve(a, b), torch.linalg.solve(a[0], v)], a, b, randn(4))
    check_grad(lambda a: [torch.linalg.inv(a), torch.linalg.det(a), torch.linalg.slogdet(a)[1]], a)


def test_matrix_exp(mode):
    a = randn(2, 4, 4)
    check_grad(torch.linalg.matrix_exp, a)
    check(torch.linalg.matrix_exp, a[0].double() * 3)


def test_ldl(mode):
    a = randn(2, 5, 5)
    a = a + a.mT
    a[1, 0, 0] = 1e-3  # a 2x2 pivot in the second matrix
    check(torch.linalg.ldl_factor_ex, a)
    ld, piv = torch.linalg.ldl_factor(a)
    check(torch.linalg.ldl_solve, ld, piv, randn(2, 5, 2))


def test_det_grad_of_transposed_input(mode):
    a = well_conditioned(4, 4)
    check_grad(lambda a: [torch.linalg.det(a.mT), torch.linalg.slogdet(a.mT)[1]], a)


def test_check_errors(mode):
    z = torch.zeros(2, 3, 3, device="tpu")
    with pytest.raises(RuntimeError, match="not positive-definite"):
        torch.linalg.cholesky(z)
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.inv(z)
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.solve_ex(z, torch.ones(2, 3, device="tpu"), check_errors=True)
    with pytest.raises(RuntimeError, match=r"U\[1,1\] is zero"):
        torch.linalg.lu_factor(z)
    info = torch.linalg.cholesky_ex(torch.eye(3, device="tpu"), check_errors=True).info
    assert info.item() == 0


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_lu_triangular_and_cholesky_solves(mode, dtype):
    a = randn(3, 4, 4, dtype=dtype)
    b = randn(3, 4, 2, dtype=dtype)
    # LAPACK picks the pivot of largest |re| + |im|, which is what the factors and pivots are compared on.
    check(torch.linalg.lu_factor_ex, a)
    check(torch.linalg.lu, randn(2, 3, 5, dtype=dtype))
    t = randn(4, 4, dtype=dtype).triu() + 4 * torch.eye(4, dtype=dtype)
    for upper in (True, False):
        tri = t if upper else t.mT
        check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper), tri, b)
        check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=False), tri, b.mT)
        check(lambda b, a: torch.triangular_solve(b, a, upper=upper, transpose=True), b, tri)
    factor = torch.linalg.cholesky(a @ a.mH + 4 * torch.eye(4, dtype=dtype))
    for upper in (False, True):
        f = factor.mH.contiguous() if upper else factor
        check(lambda b, f: torch.cholesky_solve(b, f, upper=upper), b, f)
        check(lambda f: torch.cholesky_inverse(f, upper=upper), f)
    check_grad(lambda a, b: torch.linalg.solve_triangular(a, b, upper=True).real, t, b)
