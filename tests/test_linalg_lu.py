"""Triangular solves, Cholesky, LU and what builds on them, against CPU torch in the three modes."""
import pytest
import torch

from conftest import check, no_fallbacks

g = torch.Generator().manual_seed(0)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype)


def spd(*shape, dtype=torch.float32):
    a = randn(*shape, dtype=dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def well_conditioned(*shape, dtype=torch.float32):
    return randn(*shape, dtype=dtype) + 3 * torch.eye(shape[-1], dtype=dtype)


@pytest.fixture(autouse=True)
def fresh_metrics():
    torch.tpu.reset_metrics()
    yield
    assert no_fallbacks() == {}, "ops fell back to CPU"


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


@pytest.mark.parametrize("batch", [(), (2,)])
def test_solve_triangular(mode, batch):
    a = well_conditioned(*batch, 4, 4)
    b = randn(*batch, 4, 3)
    for upper in (True, False):
        check_grad(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper), a, b)
        check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=False, unitriangular=True), a, b.mT)
    check(lambda b, a: torch.triangular_solve(b, a, upper=False, transpose=True), b, a)
    check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), a.double(), b.double())


@pytest.mark.parametrize("batch", [(), (3,)])
def test_cholesky(mode, batch):
    a = spd(*batch, 4, 4)
    check_grad(torch.linalg.cholesky, a)
    check(lambda a: torch.linalg.cholesky(a, upper=True), a.double())
    check_grad(lambda a: torch.cholesky_inverse(torch.linalg.cholesky(a)), a)
    b = randn(*batch, 4, 2)
    check_grad(lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a)), a, b)
    check(lambda a, b: torch.cholesky_solve(b, a, upper=True), torch.linalg.cholesky(a, upper=True), b)
    bad = a.clone()
    bad[..., 2, 2] = -100
    got = torch.linalg.cholesky_ex(bad.to("tpu")).info.cpu()
    assert torch.equal(got, torch.linalg.cholesky_ex(bad).info)


@pytest.mark.parametrize("shape", [(5, 5), (2, 4, 4), (5, 3), (3, 5)])
def test_lu_factor_and_unpack(mode, shape):
    a = randn(*shape)
    check(torch.linalg.lu_factor_ex, a)
    check(torch.linalg.lu, a.double())
    check_grad(torch.linalg.lu, a)
    lu, piv = torch.linalg.lu_factor(a)
    check(torch.lu_unpack, lu, piv)


def test_lu_singular(mode):
    a = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    check(torch.linalg.lu_factor_ex, a)
    check(torch.linalg.lu_factor_ex, torch.zeros(2, 3, 3))
    check(torch.linalg.det, a)
    check(torch.linalg.slogdet, torch.zeros(3, 3))


@pytest.mark.parametrize("batch", [(), (2,)])
def test_lu_solve_solve_inv(mode, batch):
    a = well_conditioned(*batch, 4, 4)
    b = randn(*batch, 4, 2)
    lu, piv = torch.linalg.lu_factor(a)
    for left in (True, False):
        for adjoint in (True, False):
            rhs = b if left else b.mT
            check(lambda lu, piv, rhs: torch.linalg.lu_solve(lu, piv, rhs, left=left, adjoint=adjoint), lu, piv, rhs)
    check_grad(torch.linalg.solve, a, b)
    check_grad(torch.linalg.solve, a, randn(4))
    check_grad(lambda a, b: torch.linalg.solve(a, b, left=False), a, b.mT)
    check_grad(torch.linalg.inv, a)
    check(torch.linalg.inv_ex, a.double())
    check_grad(torch.linalg.det, a)
    check_grad(lambda a: torch.linalg.slogdet(a)[1], a)
    check_grad(lambda a: torch.linalg.matrix_power(a, -2), a)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_matrix_exp(mode, batch):
    a = randn(*batch, 4, 4)
    check_grad(torch.linalg.matrix_exp, a)
    check(torch.linalg.matrix_exp, a.double() * 3)
