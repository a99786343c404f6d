"""torchtpu.embedding.FusedEmbeddingBagCollection: the same tables and losses as the plain
sparse-gradient path over small DLRM steps (20 in strict mode) (duplicate ids in and across bags, empty bags,
padding ids), row-wise Adagrad against hand-derived values, clear errors for bad input with the
tables untouched, and peak memory within tables + optimizer state + 25%."""
import os
import sys

import pytest
import torch

import torchtpu.embedding

from torchtpu.embedding import EmbeddingBagConfig, FusedEmbeddingBagCollection, KeyedJagged

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import train_dlrm  # noqa: E402

ROWS = [20, 7, 50, 3, 12]
HOT = [2, 3, 1, 4, 2]
TOL = dict(atol=1e-5, rtol=1e-5)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def run(kind, optimizer, steps, pooling="sum", weighted=False, lr=0.05, chunk=None):
    torch.manual_seed(0)
    model = train_dlrm.DLRM(ROWS, dim=8, embeddings=kind, optimizer=optimizer, lr=lr, device="tpu",
                            pooling=pooling, padding_idx=0, bottom=(16,), top=(16,), chunk=chunk)
    model.init_tables(0)
    opts = model.make_optimizers(lambda p: torch.optim.SGD(p, lr=lr))
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        dense, kjt, labels = train_dlrm.synthetic_batch(gen, ROWS, 6, hot=HOT, ragged=True)
        if weighted:
            kjt = KeyedJagged(kjt.keys(), kjt.values(), lengths=kjt.lengths(),
                              weights=torch.rand(kjt.values().shape, generator=gen))
        losses.append(train_dlrm.train_step(model, opts, dense.to("tpu"), kjt, labels.to("tpu")).item())
    return losses, [w.detach().cpu() for w in model.tables()], model


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_fused_matches_sparse_path(mode, optimizer):
    # Twenty steps in strict mode (the default); the other modes run the same code path over fewer.
    steps = 20 if mode == "strict" else 6
    want_losses, want_tables, _ = run("sparse", optimizer, steps)
    got_losses, got_tables, _ = run("fused", optimizer, steps)
    torch.testing.assert_close(got_losses, want_losses, **TOL)
    for g, w in zip(got_tables, want_tables):
        torch.testing.assert_close(g, w, **TOL)
    # The batches did hold empty bags, padding ids and repeated ids.
    gen = torch.Generator().manual_seed(1)
    _, kjt, _ = train_dlrm.synthetic_batch(gen, ROWS, 6, hot=HOT, ragged=True)
    assert (kjt.lengths() == 0).any() and (kjt.values() == 0).any()
    assert kjt.values()[:kjt.lengths()[:6].sum()].unique().numel() < kjt.lengths()[:6].sum()


@pytest.mark.parametrize("optimizer", ["adagrad", "adam"])
def test_update_blocks_match_sparse_path(optimizer):
    # Chunks of 8 ids cut the tables into update blocks of at most 16 rows: tables alone, and
    # small neighbours sharing one block; bags are cut into pieces of one to eight bags.
    want_losses, want_tables, _ = run("sparse", optimizer, 6)
    got_losses, got_tables, model = run("fused", optimizer, 6, chunk=8)
    torch.testing.assert_close(got_losses, want_losses, **TOL)
    for g, w in zip(got_tables, want_tables):
        torch.testing.assert_close(g, w, **TOL)
    _, kjt, _ = train_dlrm.synthetic_batch(torch.Generator().manual_seed(1), ROWS, 6, hot=HOT, ragged=True)
    (batch,), _ = model.emb._prepare(kjt)
    spans = [sorted({model.emb.stack_features[0][g.slots[j]] for i, j in blk.members for g in [batch.groups[i]]})
             for blk in batch.blocks]
    assert len(spans) > 2 and any(len(s) > 1 for s in spans), spans


@pytest.mark.parametrize("pooling,weighted", [("mean", False), ("sum", True)])
def test_fused_pooling_and_weights(pooling, weighted):
    want_losses, want_tables, _ = run("sparse", "adagrad", 5, pooling=pooling, weighted=weighted)
    got_losses, got_tables, _ = run("fused", "adagrad", 5, pooling=pooling, weighted=weighted)
    torch.testing.assert_close(got_losses, want_losses, **TOL)
    for g, w in zip(got_tables, want_tables):
        torch.testing.assert_close(g, w, **TOL)


def test_rowwise_adagrad_by_hand():
    """Loss = sum of pooled outputs, so each bag's gradient is all ones and a row's gradient is
    (its count in the batch) * ones; row-wise Adagrad adds mean(g^2) per row to its state."""
    lr, eps = 0.5, 1e-10
    ebc = FusedEmbeddingBagCollection([EmbeddingBagConfig("t", 5, 3, ["a"])], "rowwise_adagrad",
                                      {"lr": lr, "eps": eps})
    w0 = torch.arange(15, dtype=torch.float32).reshape(5, 3) / 10
    with torch.no_grad():
        ebc.weight("t").copy_(w0)
    kjt = KeyedJagged(["a"], torch.tensor([1, 1, 3, 1]), offsets=torch.tensor([0, 3, 3, 4]))
    want, state = w0.clone(), torch.zeros(5)
    for _ in range(2):
        out = ebc(kjt)["a"]
        torch.testing.assert_close(out.detach().cpu(), torch.stack([2 * want[1] + want[3], torch.zeros(3), want[1]]))
        out.sum().backward()
        for row, count in ((1, 3.0), (3, 1.0)):
            state[row] += count ** 2
            want[row] -= lr * count / (state[row].sqrt() + eps)
        torch.testing.assert_close(ebc.weight("t").cpu(), want, **TOL)


BAD = [
    ("id past the end", dict(values=[1, 20], lengths=[1, 1]), "id 20 is out of range"),
    ("negative id", dict(values=[1, -3], lengths=[1, 1]), "id -3 is out of range"),
    ("decreasing offsets", dict(values=[1], offsets=[0, 2, 1]), "non-decreasing"),
    ("offsets past the end", dict(values=[1, 2, 3], offsets=[0, 1, 5]), "offsets\\[-1\\]"),
    ("negative lengths", dict(values=[1, 2], lengths=[3, -1]), "non-negative"),
    ("weights with mean", dict(values=[1, 2], lengths=[1, 1], weights=[0.5, 1.0]), "pooling='sum'"),
    ("unknown feature", dict(values=[1, 2], lengths=[1, 1], keys=["s", "zz"]), "expect features"),
]


@pytest.mark.parametrize("case", BAD, ids=[b[0] for b in BAD])
def test_bad_input(case):
    _, a, message = case
    tables = [EmbeddingBagConfig("s", 20, 4, ["s"]), EmbeddingBagConfig("m", 20, 4, ["m"], pooling="mean")]
    ebc = FusedEmbeddingBagCollection(tables, "adagrad", {"lr": 0.1})
    before = [ebc.weight(t).cpu().clone() for t in ("s", "m")]
    w = torch.tensor(a["weights"]) if "weights" in a else None
    lengths = torch.tensor(a["lengths"]) if "lengths" in a else None
    offsets = torch.tensor(a["offsets"]) if "offsets" in a else None
    with pytest.raises(ValueError, match=message):
        ebc(KeyedJagged(a.get("keys", ["s", "m"]), torch.tensor(a["values"]), lengths=lengths, offsets=offsets, weights=w))
    for t, b in zip(("s", "m"), before):
        torch.testing.assert_close(ebc.weight(t).cpu(), b, rtol=0, atol=0)


def test_offsets_and_lengths_agree():
    tables = [EmbeddingBagConfig("t", 30, 4, ["a", "b"])]
    ebc = FusedEmbeddingBagCollection(tables, "sgd", {"lr": 0.0})
    values = torch.tensor([3, 3, 7, 29, 0, 5])
    x = ebc(KeyedJagged(["a", "b"], values, lengths=torch.tensor([2, 0, 3, 1])))
    y = ebc(KeyedJagged(["b", "a"], torch.tensor([7, 29, 0, 5, 3, 3]), offsets=torch.tensor([0, 3, 4, 6, 6])))
    for f in ("a", "b"):
        torch.testing.assert_close(x[f].detach().cpu(), y[f].detach().cpu())
    w = ebc.weight("t").cpu()
    torch.testing.assert_close(x["a"].detach().cpu(), torch.stack([2 * w[3], torch.zeros(4)]))


@pytest.mark.parametrize("optimizer,state_factor", [("sgd", 0), ("adagrad", 1), ("adam", 2)])
def test_peak_memory(optimizer, state_factor, monkeypatch):
    """Peak device memory over a step stays within tables + optimizer state + 25%, at DLRM's
    proportions scaled down: tables about 30x the ids of a batch, chunks of 8192 ids."""
    torch.tpu.set_mode("strict")
    monkeypatch.setattr(torchtpu.embedding, "CHUNK", 8192)
    rows = [100_000, 60_000, 40_000]
    hot = [20, 5, 40]
    model = train_dlrm.DLRM(rows, dim=32, embeddings="fused", optimizer=optimizer, device="tpu", bottom=(16,), top=(16,))
    opts = model.make_optimizers()
    gen = torch.Generator().manual_seed(0)
    table_bytes = sum(rows) * 32 * 4 * (1 + state_factor)
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    for _ in range(2):
        dense, kjt, labels = train_dlrm.synthetic_batch(gen, rows, 512, hot=hot)
        train_dlrm.train_step(model, opts, dense.to("tpu"), kjt, labels.to("tpu"))
    torch.tpu.synchronize()
    peak = torch.tpu.max_memory_allocated()
    assert peak <= 1.25 * table_bytes, f"peak {peak} bytes, tables and state {table_bytes}"


def test_empty_batch_and_featureless_table():
    # A table no feature reads (its own stack, dim 8) and a batch of empty bags: zeros out,
    # zero gradients, tables unchanged.
    tables = [EmbeddingBagConfig("a", 10, 4, ["f"]), EmbeddingBagConfig("b", 10, 8, [])]
    ebc = FusedEmbeddingBagCollection(tables, "adagrad", {"lr": 0.5})
    before = ebc.weight("a").cpu().clone()
    kjt = KeyedJagged(["f"], torch.tensor([], dtype=torch.long), lengths=torch.tensor([0, 0]))
    out = ebc(kjt)
    (out["f"] * 3).sum().backward()
    assert torch.equal(out["f"].detach().cpu(), torch.zeros(2, 4))
    assert torch.equal(ebc.weight("a").cpu(), before)
    # Then ids again: only the touched rows move.
    out = ebc(KeyedJagged(["f"], torch.tensor([1, 2, 2]), lengths=torch.tensor([2, 1])))
    out["f"].sum().backward()
    moved = (ebc.weight("a").cpu() != before).any(1)
    assert moved.tolist() == [False, True, True] + [False] * 7
