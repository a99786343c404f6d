"""Distance and embedding-bag functions, forward and gradients, against CPU torch in all three modes."""
import pytest
import torch
import torch.nn.functional as F

from conftest import no_fallbacks

TOL = dict(atol=1e-4, rtol=1e-4)


@pytest.fixture(autouse=True)
def fresh_metrics():
    torch.tpu.reset_metrics()
    yield
    assert no_fallbacks() == {}, "ops fell back to CPU"


def run_fn(fn, *xs, grad=True):
    """Runs fn on CPU and tpu copies of xs; compares the output and the gradient of each float input."""
    xc = [x.clone().requires_grad_(grad and x.is_floating_point()) for x in xs]
    xt = [x.clone().to("tpu").requires_grad_(grad and x.is_floating_point()) for x in xs]
    want, got = fn(*xc), fn(*xt)
    torch.testing.assert_close(got.detach().cpu(), want.detach(), **TOL)
    if not grad:
        return
    g = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    want.backward(g)
    got.backward(g.to("tpu"))
    for a, b in zip(xc, xt):
        if a.requires_grad:
            torch.testing.assert_close(b.grad.cpu(), a.grad, **TOL)


P = [2, 1, 0, 3, 0.5, float("inf")]


@pytest.mark.parametrize("p", P, ids=str)
def test_pdist(mode, p):
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    x[4] = x[1]  # a zero distance: its gradient is zero
    run_fn(lambda a: F.pdist(a, p), x)


@pytest.mark.parametrize("p", P, ids=str)
def test_cdist(mode, p):
    gen = torch.Generator().manual_seed(0)
    run_fn(lambda a, b: torch.cdist(a, b, p), torch.randn(2, 4, 3, generator=gen), torch.randn(1, 5, 3, generator=gen))
    run_fn(lambda a, b: torch.cdist(a, b, p), torch.randn(4, 2, generator=gen), torch.randn(3, 2, generator=gen))


def test_pdist_single_row(mode):
    run_fn(lambda a: F.pdist(a), torch.randn(1, 3), grad=False)
