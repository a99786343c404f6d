"""nn.Embedding and nn.EmbeddingBag on tpu against CPU: every mode and option, forward and the
gradients of the table and of per_sample_weights, no CPU fallback; bad ids and offsets are errors
at the call site that leave the table as it was."""
import pytest
import torch
import torch.nn as nn


TOL = dict(atol=1e-5, rtol=1e-5)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def pair(module):
    """A CPU module and its tpu copy with the same table."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        module.weight.copy_(torch.randn(module.weight.shape, generator=gen) * 2)
    other = type(module)(**{k: getattr(module, k) for k in KEYS[type(module)]}).to("tpu")
    with torch.no_grad():
        other.weight.copy_(module.weight)
    return module, other


KEYS = {
    nn.Embedding: ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"],
    nn.EmbeddingBag: ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                      "sparse", "include_last_offset", "padding_idx"],
}


def compare(cpu, tpu, *inputs, psw=None):
    """Forward, backward under a fixed upstream gradient; compares outputs, tables (max_norm
    renormalizes them in place), table gradients and per_sample_weights gradients."""
    kw_c, kw_t = {}, {}
    if psw is not None:
        kw_c["per_sample_weights"] = psw.clone().requires_grad_()
        kw_t["per_sample_weights"] = psw.to("tpu").requires_grad_()
    want = cpu(*inputs, **kw_c)
    got = tpu(*[x.to("tpu") for x in inputs], **kw_t)
    torch.testing.assert_close(got.detach().cpu(), want.detach(), **TOL)
    g = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    want.backward(g)
    got.backward(g.to("tpu"))
    torch.testing.assert_close(tpu.weight.detach().cpu(), cpu.weight.detach(), **TOL)
    torch.testing.assert_close(tpu.weight.grad.cpu(), cpu.weight.grad, **TOL)
    if psw is not None:
        torch.testing.assert_close(kw_t["per_sample_weights"].grad.cpu(), kw_c["per_sample_weights"].grad, **TOL)


IDS = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 7, 7])
OFFSETS = torch.tensor([0, 2, 2, 5, 9])  # an empty bag, duplicates inside and across bags


BAG_OPTS = [
    {},
    {"padding_idx": 2},
    {"include_last_offset": True},
    {"max_norm": 1.5},
    {"max_norm": 1.0, "norm_type": 1.0, "padding_idx": 4},
    {"scale_grad_by_freq": True},
]
# CPU refuses scale_grad_by_freq for max bags, so that pair is not a case.
BAG_CASES = [(m, o) for m in ["sum", "mean", "max"] for o in BAG_OPTS if not (m == "max" and o.get("scale_grad_by_freq"))]


@pytest.mark.parametrize("bag_mode,opts", BAG_CASES,
                         ids=[m + "-" + ("-".join(f"{k}={v}" for k, v in o.items()) or "plain") for m, o in BAG_CASES])
def test_embedding_bag_modes(mode, bag_mode, opts):
    cpu, tpu = pair(nn.EmbeddingBag(10, 3, mode=bag_mode, **opts))
    offsets = torch.cat([OFFSETS, torch.tensor([len(IDS)])]) if opts.get("include_last_offset") else OFFSETS
    compare(cpu, tpu, IDS, offsets)


@pytest.mark.parametrize("opts", [{}, {"padding_idx": 7}, {"include_last_offset": True}])
def test_embedding_bag_per_sample_weights(mode, opts):
    cpu, tpu = pair(nn.EmbeddingBag(10, 4, mode="sum", **opts))
    psw = torch.randn(len(IDS), generator=torch.Generator().manual_seed(2))
    offsets = torch.cat([OFFSETS, torch.tensor([len(IDS)])]) if opts.get("include_last_offset") else OFFSETS
    compare(cpu, tpu, IDS, offsets, psw=psw)


@pytest.mark.parametrize("bag_mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_int32(mode, bag_mode):
    cpu, tpu = pair(nn.EmbeddingBag(10, 3, mode=bag_mode, padding_idx=0))
    compare(cpu, tpu, torch.tensor([[1, 0, 4], [0, 0, 0], [9, 9, 3]], dtype=torch.int32))


@pytest.mark.parametrize("opts", [{}, {"padding_idx": 2}, {"max_norm": 1.2}, {"scale_grad_by_freq": True}])
def test_embedding_module(mode, opts):
    cpu, tpu = pair(nn.Embedding(10, 5, **opts))
    compare(cpu, tpu, torch.tensor([[1, 2, 4], [2, 9, 2]]))


BAD = [
    ("id past the end", dict(ids=[1, 10], offsets=[0, 1]), "idx to be 10"),
    ("negative id", dict(ids=[1, -1], offsets=[0, 1]), "idx to be -1"),
    ("decreasing offsets", dict(ids=[1, 2, 3], offsets=[0, 2, 1]), "non-decreasing"),
    ("offset past the end", dict(ids=[1, 2, 3], offsets=[0, 5]), "non-decreasing"),
    ("first offset not 0", dict(ids=[1, 2, 3], offsets=[1, 2]), "offsets[0]"),
    ("weights with mean", dict(ids=[1, 2, 3], offsets=[0, 1], mode="mean", psw=True), "per_sample_weights"),
]


@pytest.mark.parametrize("case", BAD, ids=[b[0] for b in BAD])
def test_embedding_bag_bad_input(mode, case):
    _, args, message = case
    bag = nn.EmbeddingBag(10, 3, mode=args.get("mode", "sum")).to("tpu")
    before = bag.weight.detach().cpu().clone()
    ids = torch.tensor(args["ids"], device="tpu")
    offsets = torch.tensor(args["offsets"], device="tpu")
    psw = torch.ones(len(args["ids"]), device="tpu") if args.get("psw") else None
    with pytest.raises((RuntimeError, NotImplementedError), match=message.replace("[", r"\[")):
        bag(ids, offsets, per_sample_weights=psw)
    torch.testing.assert_close(bag.weight.detach().cpu(), before, rtol=0, atol=0)
    # The module still works afterwards.
    out = bag(torch.tensor([1, 2], device="tpu"), torch.tensor([0, 1], device="tpu"))
    torch.testing.assert_close(out.detach().cpu(), before[[1, 2]], rtol=0, atol=0)


def test_embedding_bad_ids(mode):
    emb = nn.Embedding(10, 3).to("tpu")
    before = emb.weight.detach().cpu().clone()
    for ids in ([3, 10], [-1, 2]):
        with pytest.raises((RuntimeError, IndexError), match="index out of range"):
            emb(torch.tensor(ids, device="tpu"))
    torch.testing.assert_close(emb.weight.detach().cpu(), before, rtol=0, atol=0)


def test_uploaded_ids_need_no_sync():
    """Ids copied from the host are checked against their known range without a device read, so
    in fused mode lookups stay in one graph; an id changed on the device is still checked."""
    torch.tpu.set_mode("fused")
    try:
        w = torch.randn(10, 3)
        wt, ids = w.to("tpu"), torch.tensor([1, 9, 4]).to("tpu")
        torch.tpu.synchronize()
        before = torch.tpu.metrics()["executions"]
        out = wt.index_select(0, ids) + wt.index_select(0, ids).sin()
        assert torch.tpu.metrics()["executions"] == before
        torch.testing.assert_close(out.cpu(), w[[1, 9, 4]] + w[[1, 9, 4]].sin())
        ids.add_(1)  # now holds 10: out of range, known only on the device
        with pytest.raises(IndexError, match="index out of range"):
            wt.index_select(0, ids)
    finally:
        torch.tpu.set_mode("strict")
