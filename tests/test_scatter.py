"""Scatter/gather family, flat take/put, masked_scatter, cross, trace and unfold's backward against CPU torch."""
import pytest
import torch

from conftest import check, to_cpu

g = torch.Generator().manual_seed(5)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def grads(fn, *args):
    """Checks the gradients of fn(*args).sum() w.r.t. the float args on tpu against CPU."""
    def run(dev):
        xs = [a.detach().to(dev).requires_grad_(a.is_floating_point()) if isinstance(a, torch.Tensor) else a
              for a in args]
        fn(*xs).pow(2).sum().backward()
        return [to_cpu(x.grad) for x in xs if isinstance(x, torch.Tensor) and x.requires_grad]
    for got, want in zip(run("tpu"), run("cpu")):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(mode, reduce, include_self):
    x = torch.randn(4, 5, generator=g)
    idx = torch.tensor([[0, 1, 0, 3, 3], [2, 2, 0, 1, 3]])
    src = torch.randn(2, 5, generator=g)
    f = lambda t, s, i: t.scatter_reduce(0, i, s, reduce, include_self=include_self)
    check(f, x, src, idx)
    check(f, torch.arange(20).reshape(4, 5), torch.arange(10).reshape(2, 5) - 3, idx)
    if reduce in ("sum", "prod", "mean"):  # CPU has complex kernels for these
        check(f, torch.randn(4, 5, dtype=torch.complex64, generator=g), torch.randn(2, 5, dtype=torch.complex64, generator=g), idx)
    if reduce in ("sum", "mean"):
        grads(lambda t, s: t.scatter_reduce(0, idx.to(t.device), s, reduce, include_self=include_self), x, src)


def test_scatter_legacy_reduce_and_int32_index(mode):
    x = torch.randn(3, 4, generator=g)
    idx = torch.tensor([[0, 2, 1, 0], [0, 0, 2, 1]])
    src = torch.randn(2, 4, generator=g)
    check(lambda t, s, i: t.scatter(0, i, s, reduce="add"), x, src, idx)
    check(lambda t, s, i: t.scatter(0, i, s, reduce="multiply"), x, src, idx)
    check(lambda t, i: t.scatter(1, i, 2.0, reduce="multiply"), x, idx)
    i32 = idx.to(torch.int32)
    check(lambda t, i: t.gather(1, i), x, i32)
    check(lambda t, s, i: t.scatter(0, i, s), x, src, i32)
    check(lambda t, s, i: t.scatter_add(0, i, s), x, src, i32)


def test_index_add_copy_reduce(mode):
    x = torch.randn(4, 3, 2, generator=g)
    idx = torch.tensor([2, 0, 2])
    src = torch.randn(4, 3, 2, generator=g)
    check(lambda t, s, i: t.index_add(1, i, s), x, src, idx)
    check(lambda t, s, i: t.index_add(1, i, s, alpha=-2), x, src, idx)
    check(lambda t, s, i: t.index_add(0, i + 1, s), x, torch.randn(3, 3, 2, generator=g), idx)
    check(lambda t, s, i: t.index_copy(1, i[:2], s[:, :2]), x, src, idx)
    for reduce in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            check(lambda t, s, i: t.index_reduce(1, i, s, reduce, include_self=inc), x, src, idx)
    check(lambda t, s, i: t.index_add_(0, i, s), torch.tensor(1.0), torch.tensor(2.0), torch.tensor([0]))
    grads(lambda t, s: t.index_add(1, idx.to(t.device), s, alpha=3), x, src)


def test_take_put(mode):
    x = torch.randn(3, 4, generator=g)
    idx = torch.tensor([[0, -1], [5, 11]])
    check(lambda t, i: torch.take(t, i), x, idx)
    v = torch.randn(2, 2, generator=g)
    check(lambda t, i, s: t.put(i, s), x, idx, v)
    check(lambda t, i, s: t.put_(i, s, accumulate=True), x.clone(), torch.tensor([1, 1, -12]), torch.randn(3, generator=g))
    grads(lambda t: torch.take(t, idx.to(t.device)), x)


def test_masked_scatter(mode):
    x = torch.randn(3, 4, generator=g)
    mask = torch.rand(3, 4, generator=g) > 0.5
    src = torch.randn(12, generator=g)
    check(lambda t, m, s: t.masked_scatter(m, s), x, mask, src)
    check(lambda t, m, s: t.masked_scatter_(m, s.reshape(3, 4)), x.clone(), mask[1], src)
    check(lambda t, m, s: t.masked_scatter(m, s), x, mask & False, src)


def test_cross_trace_unfold(mode):
    a, b = torch.randn(4, 3, generator=g), torch.randn(1, 3, generator=g)
    check(lambda x, y: torch.linalg.cross(x, y), a, b)
    check(lambda x, y: torch.cross(x.t(), y.expand(4, 3).t(), dim=0), a, b)
    grads(lambda x, y: torch.linalg.cross(x, y), a, b)
    m = torch.randn(3, 5, generator=g)
    check(torch.trace, m)
    check(torch.trace, torch.arange(12, dtype=torch.int32).reshape(4, 3))
    grads(torch.trace, m)
    grads(lambda t: t.unfold(1, 2, 1), m)
    grads(lambda t: t.unfold(0, 2, 2), torch.randn(5, 2, generator=g))


def test_unique_for_index_fill_backward(mode):
    check(lambda i: torch._unique(i, return_inverse=True), torch.tensor([3, 1, 3, 0]))
    x = torch.randn(4, 3, generator=g)
    v = torch.tensor(1.5)
    grads(lambda t, val: t.index_fill(0, torch.tensor([1, 1, 3], device=t.device), val), x, v)


def test_gather_with_0_dim_index_or_input(mode):
    # A 0-dim index of a 1-D input is read as one element and gives a 0-dim result; a 0-dim input broadcasts.
    cases = [(torch.tensor([3.0]), torch.tensor(0)), (torch.tensor([1.0, 2.0, 3.0]), torch.tensor(2)),
             (torch.tensor(3.0), torch.tensor(0)), (torch.tensor(3.0), torch.tensor([0, 0]))]
    for x, i in cases:
        want = torch.gather(x, 0, i)
        got = torch.gather(x.to("tpu"), 0, i.to("tpu")).cpu()
        assert got.shape == want.shape and torch.equal(got, want)


def test_empty_index_of_another_rank_is_a_no_op(mode):
    """CPU checks no shapes against an empty index: every scatter leaves self as it was and gather gives an empty
    result shaped like the index."""
    idx = torch.tensor([], dtype=torch.long)
    ops = [
        lambda t, i: t.scatter_(0, i, torch.ones_like(t)),
        lambda t, i: t.scatter_(0, i, torch.ones_like(t), reduce="add"),
        lambda t, i: t.scatter_(0, i, 2.0, reduce="multiply"),
        lambda t, i: t.scatter_(0, i, 3.0),
        lambda t, i: t.scatter_add_(0, i, torch.ones_like(t)),
        lambda t, i: t.scatter_reduce_(0, i, torch.ones_like(t), "amax", include_self=False),
        lambda t, i: t.gather(0, i),
        lambda t, i: t.gather(1, i.view(0, 3)),
    ]
    for f in ops:
        want = f(torch.arange(4.0).view(2, 2), idx)
        got = f(torch.arange(4.0).view(2, 2).to("tpu"), idx.to("tpu"))
        assert got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want)
