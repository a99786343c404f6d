"""train_dlrm: DLRM on synthetic clicks, with the MLPerf DLRM-DCNv2 inputs (13 dense features, 26
multi-hot sparse features) and tables capped to fit; bottom/top MLPs and a dot interaction.

    python examples/train_dlrm.py --device tpu --embeddings fused --mode fused --steps 50

--embeddings dense:  one nn.EmbeddingBag per table, dense gradients, torch optimizer
--embeddings sparse: the same with sparse=True (sparse COO gradients)
--embeddings fused:  torchtpu.embedding.FusedEmbeddingBagCollection (optimizer inside backward)
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torchtpu.embedding import EmbeddingBagConfig, FusedEmbeddingBagCollection, KeyedJagged

DENSE = 13
# Rows and multi-hot sizes of the 26 sparse features (mlcommons/training recommendation_v2).
MLPERF_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209, 11938,
               155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]


def mlp(sizes, last_relu=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_relu or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Embeddings(nn.Module):
    """One nn.EmbeddingBag per table (feature i uses table i), fed from a KeyedJagged batch."""

    def __init__(self, rows, dim, sparse, pooling="sum", padding_idx=None):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(r, dim, mode=pooling, sparse=sparse, padding_idx=padding_idx)
                                  for r in rows)

    def forward(self, kjt):
        device = self.bags[0].weight.device
        offsets, batch = kjt.offsets(), kjt.offsets().numel() // len(self.bags)
        weights = kjt.weights_or_none()
        out = {}
        for k, (f, bag) in enumerate(zip(kjt.keys(), self.bags)):
            start, end = int(offsets[k * batch]), int(offsets[(k + 1) * batch])
            offs = offsets[k * batch:(k + 1) * batch] - start
            psw = None if weights is None else weights[start:end].to(device)
            out[f] = bag(kjt.values()[start:end].to(device), offs.to(device), per_sample_weights=psw)
        return out


class DLRM(nn.Module):
    def __init__(self, rows, dim=64, embeddings="sparse", optimizer="adagrad", lr=0.01, device="cpu",
                 pooling="sum", padding_idx=None, bottom=(512, 256), top=(512, 256), chunk=None):
        super().__init__()
        self.features = [f"f{i}" for i in range(len(rows))]
        self.bottom = mlp([DENSE, *bottom, dim]).to(device)
        n = len(rows) + 1
        self.top = mlp([dim + n * (n - 1) // 2, *top, 1], last_relu=False).to(device)
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("pairs", (li * n + lj).to(device))
        if embeddings == "fused":
            tables = [EmbeddingBagConfig(f"t{i}", r, dim, [f], pooling, padding_idx)
                      for i, (r, f) in enumerate(zip(rows, self.features))]
            self.emb = FusedEmbeddingBagCollection(tables, optimizer, {"lr": lr}, device=device, chunk=chunk)
        else:
            self.emb = Embeddings(rows, dim, embeddings == "sparse", pooling, padding_idx).to(device)
        self.kind, self.optimizer, self.lr = embeddings, optimizer, lr

    def tables(self):
        """The table weights in feature order (views into the fused stacks for the fused path)."""
        if self.kind == "fused":
            return [self.emb.weight(f"t{i}") for i in range(len(self.features))]
        return [b.weight for b in self.emb.bags]

    @torch.no_grad()
    def init_tables(self, seed=0):
        """Uniform(-1/sqrt(rows), 1/sqrt(rows)) from a CPU generator: the same on every path and device."""
        g = torch.Generator().manual_seed(seed)
        for w in self.tables():
            b = math.sqrt(1.0 / w.shape[0])
            w.copy_(torch.empty(w.shape).uniform_(-b, b, generator=g))

    def forward(self, dense, kjt):
        x = self.bottom(dense)
        pooled = self.emb(kjt)
        z = torch.stack([x] + [pooled[f] for f in self.features], 1)
        inter = torch.bmm(z, z.transpose(1, 2)).flatten(1).index_select(1, self.pairs)
        return self.top(torch.cat([x, inter], 1)).squeeze(1)

    def make_optimizers(self, dense_optimizer=None):
        """The dense parameters' optimizer (Adagrad by default) and, unless fused, the tables'."""
        dense = list(self.bottom.parameters()) + list(self.top.parameters())
        opts = [dense_optimizer(dense) if dense_optimizer else torch.optim.Adagrad(dense, lr=self.lr)]
        if self.kind != "fused":
            tables = list(self.emb.parameters())
            table_opt = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad,
                         "adam": torch.optim.SparseAdam if self.kind == "sparse" else torch.optim.Adam}[self.optimizer]
            opts.append(table_opt(tables, lr=self.lr))
        return opts


def synthetic_batch(gen, rows, batch, hot=MULTI_HOT, ragged=False):
    """Dense features, a KeyedJagged of ids (on CPU) and click labels from a fixed logistic rule.
    With ragged, bag sizes vary from 0 to twice the multi-hot size."""
    dense = torch.randn(batch, DENSE, generator=gen)
    if ragged:
        lengths = torch.cat([torch.randint(0, 2 * h + 1, (batch,), generator=gen) for h in hot])
    else:
        lengths = torch.tensor(hot).repeat_interleave(batch)
    sizes = lengths.view(len(hot), batch).sum(1).tolist()
    values = torch.cat([torch.randint(0, r, (n,), generator=gen) for r, n in zip(rows, sizes)])
    logit = dense[:, :4].sum(1) * 0.7 + 0.3 * dense[:, 4] * dense[:, 5]
    labels = torch.bernoulli(torch.sigmoid(logit), generator=gen)
    kjt = KeyedJagged([f"f{i}" for i in range(len(hot))], values, lengths=lengths)
    return dense, kjt, labels


def train_step(model, opts, dense, kjt, labels):
    for o in opts:
        o.zero_grad()
    loss = F.binary_cross_entropy_with_logits(model(dense, kjt), labels)
    loss.backward()
    for o in opts:
        o.step()
    return loss


def sync(device):
    if torch.device(device).type != "cpu":
        torch.accelerator.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="tpu")
    ap.add_argument("--embeddings", default="fused", choices=["dense", "sparse", "fused"])
    ap.add_argument("--mode", default=None, help="tpu mode: debug, strict or fused")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--rows", type=int, default=100_000, help="cap on each table's rows")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--optimizer", default="adagrad", choices=["sgd", "adagrad", "adam"])
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.mode and a.device == "tpu":
        torch.tpu.set_mode(a.mode)
    torch.manual_seed(a.seed)
    rows = [min(r, a.rows) for r in MLPERF_ROWS]
    model = DLRM(rows, a.dim, a.embeddings, a.optimizer, a.lr, a.device)
    model.init_tables(a.seed)
    opts = model.make_optimizers()
    gen = torch.Generator().manual_seed(a.seed + 1)
    warm, t0 = 2, None
    for step in range(a.steps):
        if step == warm:
            sync(a.device)
            t0 = time.perf_counter()
        dense, kjt, labels = synthetic_batch(gen, rows, a.batch)
        loss = train_step(model, opts, dense.to(a.device), kjt, labels.to(a.device))
        if step % 10 == 0 or step == a.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    if t0 is not None:
        sync(a.device)
        rate = (a.steps - warm) * a.batch / (time.perf_counter() - t0)
        print(f"{a.device} {a.embeddings}: {rate:.0f} samples/s")


if __name__ == "__main__":
    main()
