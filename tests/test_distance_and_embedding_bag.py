"""Distance and embedding-bag functions, forward and gradients, against CPU torch in all three modes."""
import pytest
import torch
import torch.nn.functional as F


TOL = dict(atol=1e-4, rtol=1e-4)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


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


BAG = [
    dict(mode="sum"),
    dict(mode="mean"),
    dict(mode="max"),
    dict(mode="sum", padding_idx=2),
    dict(mode="mean", padding_idx=2),
    dict(mode="max", padding_idx=2),
    dict(mode="sum", include_last_offset=True),
    dict(mode="mean", scale_grad_by_freq=True),
]


@pytest.mark.parametrize("cfg", BAG, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_embedding_bag(mode, cfg):
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(10, 3, generator=gen)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2])
    offs = torch.tensor([0, 2, 2, 5, 9] if cfg.get("include_last_offset") else [0, 2, 2, 5])
    run_fn(lambda a: F.embedding_bag(idx.to(a.device), a, offs.to(a.device), **cfg), w)


def test_embedding_bag_2d_and_weights(mode):
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(10, 4, generator=gen)
    psw = torch.randn(6, generator=gen)
    idx = torch.tensor([[1, 2, 0], [4, 4, 7]])
    run_fn(lambda a: F.embedding_bag(idx.to(a.device), a, mode="max"), w)
    flat = idx.reshape(-1)
    offs = torch.tensor([0, 1, 4])
    run_fn(lambda a, s: F.embedding_bag(flat.to(a.device), a, offs.to(a.device), mode="sum", per_sample_weights=s, padding_idx=4), w, psw)


@pytest.mark.parametrize("bag", [False, True])
def test_embedding_max_norm(mode, bag):
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(10, 3, generator=gen) * 3
    idx = torch.tensor([1, 2, 4, 2, 9])
    wc, wt = w.clone(), w.clone().to("tpu")
    if bag:
        want = F.embedding_bag(idx, wc, torch.tensor([0, 2]), max_norm=1.5, norm_type=3.0)
        got = F.embedding_bag(idx.to("tpu"), wt, torch.tensor([0, 2]).to("tpu"), max_norm=1.5, norm_type=3.0)
    else:
        want = F.embedding(idx, wc, max_norm=1.5)
        got = F.embedding(idx.to("tpu"), wt, max_norm=1.5)
    torch.testing.assert_close(got.cpu(), want, **TOL)
    torch.testing.assert_close(wt.cpu(), wc, **TOL)
