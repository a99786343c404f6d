"""Sparse COO gradients on tpu: embeddings with sparse=True give the same sparse gradient as CPU,
sparse tensors move between devices and combine like CPU's, and SGD, SparseAdam and Adagrad update
the tables as on CPU without a table-sized gradient."""
import pytest
import torch
import torch.nn as nn


TOL = dict(atol=1e-5, rtol=1e-5)
IDS = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 7, 7])
OFFSETS = torch.tensor([0, 2, 2, 5, 9])


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def same_sparse(got, want):
    assert got.layout == torch.sparse_coo and got.device.type == "tpu"
    assert got.is_coalesced() == want.is_coalesced()
    got = got.cpu()
    assert got.layout == torch.sparse_coo and got.shape == want.shape
    torch.testing.assert_close(got._indices(), want._indices(), rtol=0, atol=0)
    torch.testing.assert_close(got._values(), want._values(), **TOL)


def modules(make, seed=0):
    torch.manual_seed(seed)
    cpu = make()
    tpu = make().to("tpu")
    with torch.no_grad():
        tpu.weight.copy_(cpu.weight)
    return cpu, tpu


@pytest.mark.parametrize("make,call", [
    (lambda: nn.Embedding(10, 3, sparse=True), lambda m, d: m(IDS.to(d).reshape(1, -1))),
    (lambda: nn.Embedding(10, 3, sparse=True, padding_idx=2), lambda m, d: m(IDS.to(d))),
    (lambda: nn.EmbeddingBag(10, 3, mode="sum", sparse=True), lambda m, d: m(IDS.to(d), OFFSETS.to(d))),
    (lambda: nn.EmbeddingBag(10, 3, mode="mean", sparse=True, padding_idx=4), lambda m, d: m(IDS.to(d), OFFSETS.to(d))),
    (lambda: nn.EmbeddingBag(10, 3, mode="sum", sparse=True),
     lambda m, d: m(IDS.to(d), OFFSETS.to(d), per_sample_weights=torch.linspace(-1, 1, len(IDS)).to(d))),
], ids=["embedding", "embedding-pad", "bag-sum", "bag-mean-pad", "bag-weights"])
def test_sparse_gradient_matches_cpu(mode, make, call):
    cpu, tpu = modules(make)
    g = torch.randn(call(cpu, "cpu").shape, generator=torch.Generator().manual_seed(1))
    for _ in range(2):  # the second backward accumulates sparse + sparse
        call(cpu, "cpu").backward(g)
        call(tpu, "tpu").backward(g.to("tpu"))
        same_sparse(tpu.weight.grad, cpu.weight.grad)
    torch.testing.assert_close(tpu.weight.grad.to_dense().cpu(), cpu.weight.grad.to_dense(), **TOL)
    torch.testing.assert_close(tpu.weight.grad.coalesce().cpu().to_dense(), cpu.weight.grad.to_dense(), **TOL)


def test_sparse_tensor_ops(mode):
    i = torch.tensor([[0, 3, 1, 3, 0], [2, 1, 1, 1, 2]])
    v = torch.arange(10, dtype=torch.float32).reshape(5, 2)
    s = torch.sparse_coo_tensor(i, v, (4, 3, 2))
    t = s.to("tpu")
    assert t.is_sparse and t.device.type == "tpu" and t.sparse_dim() == 2 and t.dense_dim() == 1 and t._nnz() == 5
    same_sparse(t, s)
    same_sparse(t.coalesce(), s.coalesce())
    assert t.coalesce().is_coalesced()
    # Mixed coalesced and uncoalesced operands: the stored layout may differ from CPU's, the tensor may not.
    same_sparse((t + t.coalesce()).coalesce(), (s + s.coalesce()).coalesce())
    same_sparse(t.coalesce() + t.coalesce(), s.coalesce() + s.coalesce())
    same_sparse(t * 2.5, s * 2.5)
    same_sparse(t.mul(torch.tensor(-3.0, device="tpu")), s.mul(torch.tensor(-3.0)))
    d = torch.randn(4, 3, 2, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(d.to("tpu").add(t, alpha=0.5).cpu(), d.add(s, alpha=0.5), **TOL)
    dt = d.to("tpu")
    dt.add_(t)
    torch.testing.assert_close(dt.cpu(), d + s, **TOL)
    same_sparse(d.to("tpu").sparse_mask(t.coalesce()), d.sparse_mask(s.coalesce()))
    torch.testing.assert_close(t.to_dense().cpu(), s.to_dense(), rtol=0, atol=0)
    z = torch.zeros_like(t)
    assert z.is_sparse and z.device.type == "tpu" and z._nnz() == 0
    c = t.clone()
    c.zero_()
    assert c._nnz() == 0 and c.shape == s.shape
    torch.testing.assert_close(torch.linalg.vector_norm(t).cpu(), torch.linalg.vector_norm(s), **TOL)
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 2), (4, 3, 2))
    same_sparse(empty.to("tpu") + t, empty + s)


def train(device, make_opt, steps, clip=None, set_to_none=True):
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(50, 4, mode="sum", sparse=True).to(device)
    emb = nn.Embedding(50, 4, sparse=True).to(device)
    opt = make_opt(list(bag.parameters()) + list(emb.parameters()))
    gen = torch.Generator().manual_seed(3)
    losses, norms = [], []
    for _ in range(steps):
        ids = torch.randint(0, 50, (24,), generator=gen)
        offs = torch.tensor([0, 3, 3, 10, 17, 20])
        opt.zero_grad(set_to_none=set_to_none)
        loss = (bag(ids.to(device), offs.to(device)).pow(2).sum() + emb(ids[:6].to(device)).sin().sum())
        loss.backward()
        if clip is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(list(bag.parameters()) + list(emb.parameters()), clip)))
        opt.step()
        losses.append(float(loss))
    return bag.weight.detach().cpu(), emb.weight.detach().cpu(), losses, norms


OPTS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.05),
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "sparse-adam": lambda p: torch.optim.SparseAdam(p, lr=0.05),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
}


@pytest.mark.parametrize("opt", OPTS, ids=list(OPTS))
def test_optimizers_match_cpu(mode, opt):
    want = train("cpu", OPTS[opt], 10)
    got = train("tpu", OPTS[opt], 10)
    for g, w in zip(got[:2], want[:2]):
        torch.testing.assert_close(g, w, **TOL)
    torch.testing.assert_close(got[2], want[2], **TOL)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_and_clipping(mode, set_to_none):
    want = train("cpu", OPTS["sgd"], 4, clip=0.5, set_to_none=set_to_none)
    got = train("tpu", OPTS["sgd"], 4, clip=0.5, set_to_none=set_to_none)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOL)
    assert max(want[3]) > 0.5  # the clipping really scaled the gradients


@pytest.mark.parametrize("sparse", [True, False])
def test_no_table_sized_gradient(sparse):
    """A sparse backward allocates far less than the table; the dense one (the control) does not."""
    torch.tpu.set_mode("strict")
    rows, dim = 100_000, 64
    table_bytes = rows * dim * 4
    bag = nn.EmbeddingBag(rows, dim, mode="sum", sparse=sparse).to("tpu")
    ids = torch.randint(0, rows, (512,), device="tpu")
    offs = torch.arange(0, 512, 8, device="tpu")
    torch.tpu.synchronize()
    base = torch.tpu.memory_allocated()
    torch.tpu.reset_peak_memory_stats()
    bag(ids, offs).sum().backward()
    torch.tpu.synchronize()
    extra = torch.tpu.max_memory_allocated() - base
    assert bag.weight.grad.is_sparse == sparse
    if sparse:
        assert extra < table_bytes // 10, f"sparse backward peaked {extra} bytes above the table's {table_bytes}"
    else:
        assert extra >= table_bytes
