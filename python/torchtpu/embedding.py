"""Many embedding tables with the optimizer fused into the backward pass (the SparseCore model).

``FusedEmbeddingBagCollection`` holds several pooled embedding tables, takes jagged ids per
feature in TorchRec's ``KeyedJaggedTensor`` layout (``KeyedJagged`` here, or TorchRec's own
object: anything with ``keys()``, ``values()`` and ``lengths()`` or ``offsets()``) and returns
one pooled ``[batch, dim]`` tensor per feature. Its backward applies the optimizer to the rows
the batch touched, in place, and gives the tables no gradient: no table-sized (or even
batch-sized sparse) gradient is ever materialized. Dense parameters keep their usual optimizer.

How a step runs:

1. On the host, ids are checked (range, offsets, weights), padding ids are pointed at a scratch
   row with gain 0, each id is given its gain (1, its per-sample weight, or 1/len for mean
   pooling), and the ids of every table of one embedding dim are deduplicated together: tables
   of the same dim are stacked into one device buffer. Each feature's bags are padded to a
   width (its longest bag, rounded to a few sizes), and features of one width form a group: a
   [bags, width] matrix of rows, gains and positions among the distinct rows.
2. On the device, ``_TableStack.lookup`` gathers each group's rows and sums them over the bag
   width (a gather and a reduction, which XLA fuses; no scatter). ``_TableStack.update`` (in
   the backward) spreads each bag's gradient over its slots, sums the slots into one gradient
   row per distinct row (the one scatter-add) and applies the optimizer to those rows, one
   block of adjacent tables at a time (``_Block``), so only one block's gradient rows are held.
   Pieces of at most ``CHUNK`` slots, or distinct rows, keep the other temporaries small.

``lookup`` and ``update`` take the host-prepared ``_Batch`` (padded ids, gains, positions among the
distinct rows of their block: the CSR-wrapped COO input of SparseCore kernels, padded). They are the one
interface a SparseCore kernel plugs into; on the XLA CPU plugin (and on CPU) they lower to
gathers, reductions and scatter-adds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = ["EmbeddingBagConfig", "KeyedJagged", "FusedEmbeddingBagCollection"]

OPTIMIZERS = {
    "sgd": dict(lr=0.01),
    "adagrad": dict(lr=0.01, lr_decay=0.0, eps=1e-10, initial_accumulator_value=0.0),
    "adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8),
    "rowwise_adagrad": dict(lr=0.01, eps=1e-10, initial_accumulator_value=0.0),
}


@dataclass
class EmbeddingBagConfig:
    """One table: ``num_embeddings`` rows of ``embedding_dim``, looked up by ``feature_names``;
    ``pooling`` is "sum" or "mean"; ids equal to ``padding_idx`` are skipped (as in
    ``nn.EmbeddingBag``)."""
    name: str
    num_embeddings: int
    embedding_dim: int
    feature_names: list = field(default_factory=list)
    pooling: str = "sum"
    padding_idx: int | None = None


class KeyedJagged:
    """TorchRec's KeyedJaggedTensor layout: ``values`` holds the ids of every key, key-major;
    ``lengths`` ([len(keys) * batch]) or ``offsets`` (its cumulative sum with a leading 0) cut
    them into bags; ``weights`` (optional) are per-id weights for sum pooling."""

    def __init__(self, keys, values, lengths=None, offsets=None, weights=None):
        if (lengths is None) == (offsets is None):
            raise ValueError("KeyedJagged: give exactly one of lengths and offsets")
        self.keys_, self.values_, self.lengths_, self.offsets_, self.weights_ = list(keys), values, lengths, offsets, weights

    def keys(self):
        return list(self.keys_)

    def values(self):
        return self.values_

    def lengths(self):
        if self.lengths_ is None:
            return self.offsets_[1:] - self.offsets_[:-1]
        return self.lengths_

    def offsets(self):
        if self.offsets_ is None:
            return torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(self.lengths_.long(), 0)])
        return self.offsets_

    def weights_or_none(self):
        return self.weights_


def _round8(n):
    """n (at least 8) rounded up to one of eight sizes per power of two: at most 12.5% padding."""
    step = 1 << (n.bit_length() - 4)
    return -(-n // step) * step


def _bucket(n):
    """_round8 of n, at least 64."""
    return 64 if n <= 64 else _round8(n)


def _fail(msg):
    raise ValueError(f"FusedEmbeddingBagCollection: {msg}")


def _host_offsets(kjt, n):
    """The KJT's offsets as a CPU int64 tensor, checked against n values."""
    lengths = getattr(kjt, "lengths_", None) if isinstance(kjt, KeyedJagged) else None
    offsets = getattr(kjt, "offsets_", None) if isinstance(kjt, KeyedJagged) else None
    if lengths is None and offsets is None:
        offsets = kjt.offsets()
    if offsets is not None:
        offsets = offsets.detach().to("cpu", torch.long)
        if offsets.dim() != 1 or offsets.numel() < 1:
            _fail(f"offsets has to be a 1-D tensor with a leading 0, got shape {tuple(offsets.shape)}")
        if offsets[0] != 0:
            _fail(f"offsets[0] has to be 0, got {int(offsets[0])}")
        step = offsets[1:] - offsets[:-1]
        if (step < 0).any():
            at = int(torch.nonzero(step < 0)[0]) + 1
            _fail(f"offsets have to be non-decreasing, got {int(offsets[at])} after {int(offsets[at - 1])} at {at}")
        if offsets[-1] != n:
            _fail(f"offsets[-1] has to be the number of ids ({n}), got {int(offsets[-1])}")
        return offsets
    lengths = lengths.detach().to("cpu", torch.long)
    if lengths.dim() != 1 or (lengths < 0).any():
        _fail("lengths have to be a 1-D tensor of non-negative counts")
    if int(lengths.sum()) != n:
        _fail(f"lengths add up to {int(lengths.sum())}, but there are {n} ids")
    return torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)])


CHUNK = 32768  # ids (slots) per device piece: bounds the batch-sized temporaries in strict mode


def _width(n):
    """A bag width for a longest bag of n ids: exact up to 8, then one of eight sizes per power of
    two (at most 12.5% padding), so fixed multi-hot sizes keep one program."""
    return max(n, 1) if n <= 8 else _round8(n)


@dataclass
class _Group:
    """Features of one stack whose bags are padded to the same width: row r of ``ids``, ``gain``
    and ``local`` [bags, width] is one bag (feature-major, then batch order); ``ids`` are rows
    of the stack, ``gain`` their factors in the bag's sum (0 in padding slots, which name the
    scratch row), ``local`` their positions among their block's rows (padding slots: the block's
    last row, scratch). ``pieces`` cut the bags into runs of at most CHUNK slots."""
    slots: list
    ids: torch.Tensor
    gain: torch.Tensor
    local: torch.Tensor
    pieces: list


@dataclass
class _Block:
    """Tables of one stack whose touched rows share one gradient buffer in the update: ``rows``
    are the distinct rows the batch touches in them, padded with the scratch row to a bucketed
    size (at most the tables' rows or their slots) plus the scratch row. ``members`` are its
    features as (group, feature slot) pairs."""
    rows: torch.Tensor
    members: list


@dataclass
class _Batch:
    """One stack's part of a batch, prepared on the host and uploaded: its bag-width groups, the
    blocks of its update, and the most slots one device piece takes."""
    groups: list
    blocks: list
    chunk: int


def _pieces(bags, width, chunk, start=0):
    step = max(1, chunk // width)
    return [(a, min(a + step, bags)) for a in range(start, bags, step)]


def _blocks(slots, limit):
    """Cuts the tables (their row spans [lo, hi) in the stack, the keys of slots) into blocks of
    adjacent tables whose sizes (rows, or slots of their features when fewer) add up to at most
    limit, or one table each when larger. Returns [(lo, hi, size)] in row order."""
    out = []
    for lo, hi in sorted(slots):
        size = min(hi - lo, slots[(lo, hi)])
        if out and out[-1][1] == lo and out[-1][2] + size <= limit:
            out[-1] = (out[-1][0], hi, out[-1][2] + size)
        else:
            out.append((lo, hi, size))
    return out


def _group_bags(feats, spans, scratch, batch, chunk):
    """feats: per feature slot, (ids, bag, gain) with padding ids already pointing at the scratch
    row with gain 0; spans: per feature slot, its table's rows [lo, hi) in the stack. Returns the
    groups and the blocks (host tensors)."""
    widths = []
    for ids, bag, _ in feats:
        longest = int(torch.bincount(bag, minlength=batch).max()) if ids.numel() else 0
        widths.append(_width(longest))
    slots = {}
    for span, w in zip(spans, widths):
        slots[span] = slots.get(span, 0) + batch * w
    cuts = _blocks(slots, 2 * chunk)
    block_of = [next(i for i, (lo, hi, _) in enumerate(cuts) if lo <= span[0] < hi) for span in spans]
    unique, inverse = torch.unique(torch.cat([torch.zeros(0, dtype=torch.long)] + [f[0] for f in feats]),
                                   sorted=True, return_inverse=True)
    bounds = [lo for lo, _, _ in cuts] + [cuts[-1][1]] if cuts else []
    firsts = torch.searchsorted(unique, torch.tensor(bounds, dtype=torch.long))
    blocks = []
    for i, (lo, hi, size) in enumerate(cuts):
        rows = unique[firsts[i]:firsts[i + 1]]
        # The distinct rows, bucketed: fewer padding rows for the optimizer, and the same program
        # while the count stays within its bucket.
        size = min(size, _bucket(rows.numel()))
        cuts[i] = (lo, hi, size)
        blocks.append(_Block(torch.cat([rows, torch.full((size + 1 - rows.numel(),), scratch)]), []))
    groups, start = [], 0
    at_feature = []
    for ids, _, _ in feats:
        at_feature.append((start, start + ids.numel()))
        start += ids.numel()
    for width in sorted(set(widths)):
        members = [k for k, w in enumerate(widths) if w == width]
        n = len(members) * batch
        gid = torch.full((n * width,), scratch, dtype=torch.long)
        gain = torch.zeros(n * width)
        local = torch.empty(n * width, dtype=torch.long)
        for j, k in enumerate(members):
            blk = block_of[k]
            blocks[blk].members.append((len(groups), j))
            local[j * batch * width:(j + 1) * batch * width] = cuts[blk][2]  # the block's scratch row
            ids, bag, w = feats[k]
            if not ids.numel():
                continue
            counts = torch.bincount(bag, minlength=batch)
            first = torch.cumsum(counts, 0) - counts
            at = (j * batch + bag) * width + torch.arange(ids.numel()) - first[bag]
            gid[at], gain[at] = ids, w
            pos = inverse[at_feature[k][0]:at_feature[k][1]] - firsts[blk]
            local[at] = torch.where(ids == scratch, cuts[blk][2], pos)
        groups.append(_Group(members, gid.view(n, width), gain.view(n, width), local.view(n, width),
                             _pieces(n, width, chunk)))
    return groups, blocks


class _TableStack(nn.Module):
    """Tables of one embedding dim stacked into one [rows, dim] buffer, with their optimizer state."""

    def __init__(self, tables, dim, optimizer, kwargs, device, dtype):
        super().__init__()
        self.dim = dim
        self.base = {}
        rows = 0
        for t in tables:
            self.base[t.name] = rows
            rows += t.num_embeddings
        # One more row: the scratch row that padding slots point at (see _bucket).
        self.scratch = rows
        rows += 1
        weight = torch.zeros(rows, dim, dtype=dtype)
        for t in tables:
            bound = math.sqrt(1.0 / t.num_embeddings)
            weight[self.base[t.name]:self.base[t.name] + t.num_embeddings].uniform_(-bound, bound)
        self.weight = nn.Parameter(weight.to(device), requires_grad=False)
        self.optimizer, self.hp = optimizer, kwargs
        self.steps = 0
        init = kwargs.get("initial_accumulator_value", 0.0)
        if optimizer == "adagrad":
            self.register_buffer("state_sum", torch.full((rows, dim), init, dtype=dtype, device=device))
        elif optimizer == "rowwise_adagrad":
            self.register_buffer("state_sum", torch.full((rows,), init, dtype=dtype, device=device))
        elif optimizer == "adam":
            self.register_buffer("exp_avg", torch.zeros(rows, dim, dtype=dtype, device=device))
            self.register_buffer("exp_avg_sq", torch.zeros(rows, dim, dtype=dtype, device=device))

    def lookup(self, b: _Batch):
        """The pooled rows of each group, [bags, dim]: gather the rows of each bag's slots, weight
        them and sum over the bag; a piece of at most CHUNK slots at a time."""
        out = []
        for g in b.groups:
            width = g.ids.shape[1]
            parts = [(self.weight.index_select(0, g.ids[a:e].reshape(-1)).view(e - a, width, self.dim)
                      * g.gain[a:e].unsqueeze(2)).sum(1) for a, e in g.pieces]
            out.append(self.weight.new_zeros(0, self.dim) if not parts else parts[0] if len(parts) == 1 else torch.cat(parts))
        return out

    @torch.no_grad()
    def update(self, b: _Batch, grads):
        """Applies the optimizer to the touched rows from the pooled gradients of the groups: each
        slot's gradient (its bag's, times its gain) is summed into its distinct row, then the
        distinct rows are updated CHUNK rows at a time; one block of tables at a time, so the
        gradient rows of one block are all that is held."""
        self.steps += 1
        if self.optimizer == "sgd":  # no per-row state: the slots' gradients go straight into the table
            every = [(i, j) for i, grp in enumerate(b.groups) for j in range(len(grp.slots))]
            for ids, _, rows in self._slot_grads(b, grads, every):
                self.weight.index_add_(0, ids, rows, alpha=-self.hp["lr"])
            return
        for blk in b.blocks:
            g = torch.zeros(blk.rows.numel(), self.dim, dtype=self.weight.dtype, device=self.weight.device)
            for _, local, rows in self._slot_grads(b, grads, blk.members):
                g.index_add_(0, local, rows)
            for a in range(0, blk.rows.numel(), CHUNK):
                self._apply(blk.rows[a:a + CHUNK], g[a:a + CHUNK])

    def _slot_grads(self, b, grads, members):
        """Per piece of each member (group, feature slot): its slots' rows, their positions among
        the block's rows, and their gradients (the bag's gradient times the slot's gain), flat."""
        for i, j in members:
            grp, grad = b.groups[i], grads[i]
            if grad is None:
                continue
            bags = grp.ids.shape[0] // len(grp.slots)
            for a, e in _pieces((j + 1) * bags, grp.ids.shape[1], b.chunk, j * bags):
                rows = (grad[a:e].unsqueeze(1) * grp.gain[a:e].unsqueeze(2)).reshape(-1, self.dim)
                yield grp.ids[a:e].reshape(-1), grp.local[a:e].reshape(-1), rows

    def _apply(self, u, g):
        """One optimizer step for the distinct rows u with gradient rows g (a slice of the
        gradient buffer: never written here, which would copy the whole buffer)."""
        hp, w = self.hp, self.weight
        if self.optimizer == "sgd":
            w.index_add_(0, u, g, alpha=-hp["lr"])
        elif self.optimizer == "adagrad":
            # Read, then write: a write that no later read of this state waits for would make
            # XLA copy the whole state to keep the read's old version. u may repeat the scratch
            # row (padding); its gradient rows are zero, so its copies agree.
            s = self.state_sum.index_select(0, u).addcmul_(g, g)
            self.state_sum.index_copy_(0, u, s)
            clr = hp["lr"] / (1 + (self.steps - 1) * hp["lr_decay"])
            w.index_add_(0, u, g / s.sqrt_().add_(hp["eps"]), alpha=-clr)
        elif self.optimizer == "rowwise_adagrad":
            s = self.state_sum.index_select(0, u) + g.pow(2).mean(1)
            self.state_sum.index_copy_(0, u, s)
            w.index_add_(0, u, g / s.sqrt_().add_(hp["eps"]).unsqueeze(1), alpha=-hp["lr"])
        else:  # adam, lazily: only the touched rows move, as torch.optim.SparseAdam
            b1, b2 = hp["betas"]
            m0, v0 = self.exp_avg.index_select(0, u), self.exp_avg_sq.index_select(0, u)
            m = g.sub(m0).mul_(1 - b1).add_(m0)
            v = (g * g).sub_(v0).mul_(1 - b2).add_(v0)
            del m0, v0
            self.exp_avg.index_copy_(0, u, m)
            self.exp_avg_sq.index_copy_(0, u, v)
            step = hp["lr"] * math.sqrt(1 - b2 ** self.steps) / (1 - b1 ** self.steps)
            w.index_add_(0, u, m.div_(v.sqrt_().add_(hp["eps"])), alpha=-step)


class _FusedLookup(torch.autograd.Function):
    """Pooled lookups of every stack; the backward updates the tables and returns no gradient."""

    @staticmethod
    def forward(ctx, anchor, stacks, batches):
        ctx.stacks, ctx.batches = stacks, batches
        return tuple(p for s, b in zip(stacks, batches) for p in s.lookup(b))

    @staticmethod
    def backward(ctx, *grads):
        at = 0
        for s, b in zip(ctx.stacks, ctx.batches):
            g = grads[at:at + len(b.groups)]
            at += len(b.groups)
            if any(x is not None for x in g):
                s.update(b, g)
        return None, None, None


def _optimizer_name(optimizer):
    names = {torch.optim.SGD: "sgd", torch.optim.Adagrad: "adagrad", torch.optim.Adam: "adam",
             torch.optim.SparseAdam: "adam"}
    name = names.get(optimizer, optimizer)
    if name not in OPTIMIZERS:
        raise ValueError(f"FusedEmbeddingBagCollection: optimizer has to be one of {sorted(OPTIMIZERS)} "
                         f"(or torch.optim.SGD, Adagrad, Adam, SparseAdam), got {optimizer!r}")
    return name


class FusedEmbeddingBagCollection(nn.Module):
    """Pooled embedding tables whose optimizer runs inside the backward pass.

    ``tables`` is a list of ``EmbeddingBagConfig``; ``optimizer`` one of "sgd", "adagrad",
    "adam" (lazy, as SparseAdam), "rowwise_adagrad" or the matching ``torch.optim`` class, with
    ``optimizer_kwargs`` (lr, eps, betas, lr_decay, initial_accumulator_value as torch names
    them). ``chunk`` is the number of ids per device chunk (default ``CHUNK``): smaller chunks
    keep less batch-sized memory, larger ones launch fewer scatters. ``forward(kjt)`` returns {feature: [batch, dim]} in the tables' feature order. The
    tables are parameters with ``requires_grad=False``: ``weight(name)`` is a view of one."""

    def __init__(self, tables, optimizer="sgd", optimizer_kwargs=None, device="tpu", dtype=torch.float32, chunk=None):
        super().__init__()
        self.chunk = chunk
        name = _optimizer_name(optimizer)
        kwargs = dict(OPTIMIZERS[name])
        unknown = set(optimizer_kwargs or {}) - set(kwargs)
        if unknown:
            raise TypeError(f"FusedEmbeddingBagCollection: {name} takes {sorted(kwargs)}, not {sorted(unknown)}")
        kwargs.update(optimizer_kwargs or {})
        self.tables = {t.name: t for t in tables}
        self.feature_table = {}
        for t in tables:
            if t.pooling not in ("sum", "mean"):
                raise ValueError(f"FusedEmbeddingBagCollection: table {t.name}: pooling has to be 'sum' or 'mean', got {t.pooling!r}")
            for f in t.feature_names:
                if f in self.feature_table:
                    raise ValueError(f"FusedEmbeddingBagCollection: feature {f} belongs to two tables")
                self.feature_table[f] = t
        self.features = list(self.feature_table)
        dims = sorted({t.embedding_dim for t in tables})
        self.stacks = nn.ModuleList(
            _TableStack([t for t in tables if t.embedding_dim == d], d, name, kwargs, device, dtype) for d in dims)
        self.stack_of = {t.name: dims.index(t.embedding_dim) for t in tables}
        # The features of each stack, in output order.
        self.stack_features = [[f for f in self.features if self.feature_table[f].embedding_dim == d] for d in dims]
        self._anchor = torch.empty(0, requires_grad=True)

    def weight(self, table):
        """The rows of one table: a view into its stack."""
        t = self.tables[table]
        s = self.stacks[self.stack_of[table]]
        return s.weight[s.base[table]:s.base[table] + t.num_embeddings]

    def _prepare(self, kjt):
        keys = list(kjt.keys())
        if sorted(keys) != sorted(self.features):
            _fail(f"the input has keys {keys}, the tables expect features {self.features}")
        values = kjt.values().detach().to("cpu")
        if values.dim() != 1 or values.is_floating_point() or values.is_complex():
            _fail(f"values have to be a 1-D integer tensor of ids, got {values.dtype} of shape {tuple(values.shape)}")
        values = values.long()
        offsets = _host_offsets(kjt, values.numel())
        if (offsets.numel() - 1) % len(keys):
            _fail(f"{offsets.numel() - 1} bags do not split evenly over {len(keys)} keys")
        batch = (offsets.numel() - 1) // len(keys)
        weights = kjt.weights_or_none()
        if weights is not None:
            weights = weights.detach().to("cpu")
            if weights.shape != values.shape:
                _fail(f"weights of shape {tuple(weights.shape)} do not match ids of shape {tuple(values.shape)}")
        batches = []
        device = self.stacks[0].weight.device
        starts = offsets[::batch].tolist() if batch else [0] * (len(keys) + 1)  # each key's first id, and the end
        tables = [self.feature_table[f] for f in keys]
        if weights is not None:
            for f, t in zip(keys, tables):
                if t.pooling != "sum":
                    _fail(f"feature {f}: per-sample weights need pooling='sum', table {t.name} pools by {t.pooling!r}")
        # One pass checks every id against its table's rows.
        limit = torch.repeat_interleave(torch.tensor([t.num_embeddings for t in tables]),
                                        torch.tensor(starts[1:]) - torch.tensor(starts[:-1]))
        bad = (values < 0) | (values >= limit)
        if bad.any():
            at = int(bad.nonzero()[0])
            k = max(i for i in range(len(keys)) if starts[i] <= at)
            _fail(f"feature {keys[k]}: id {int(values[at])} is out of range for table {tables[k].name} "
                  f"with {tables[k].num_embeddings} rows")
        bag_of = torch.repeat_interleave(torch.arange(offsets.numel() - 1), offsets[1:] - offsets[:-1])
        gains = weights.float() if weights is not None else torch.ones(values.numel())
        for s, feats in zip(self.stacks, self.stack_features):
            parts, spans = [], []
            for f in feats:
                t, k = self.feature_table[f], keys.index(f)
                ids = values[starts[k]:starts[k + 1]] + s.base[t.name]
                bag = bag_of[starts[k]:starts[k + 1]] - k * batch
                w = gains[starts[k]:starts[k + 1]]
                if t.padding_idx is not None:
                    pad = values[starts[k]:starts[k + 1]] == t.padding_idx
                    ids, w = ids.masked_fill(pad, s.scratch), w.masked_fill(pad, 0.0)
                else:
                    pad = None
                if t.pooling == "mean":
                    kept = bag if pad is None else bag[~pad]
                    count = torch.bincount(kept, minlength=batch).clamp_(min=1)
                    w = w / count[bag]
                parts.append((ids, bag, w))
                spans.append((s.base[t.name], s.base[t.name] + t.num_embeddings))
            chunk = self.chunk or CHUNK
            groups, blocks = _group_bags(parts, spans, s.scratch, batch, chunk)
            dt = s.weight.dtype
            for g in groups:
                g.ids, g.gain, g.local = g.ids.to(device), g.gain.to(device, dt), g.local.to(device)
            for blk in blocks:
                blk.rows = blk.rows.to(device)
            batches.append(_Batch(groups, blocks, chunk))
        return batches, batch

    def forward(self, kjt):
        batches, batch = self._prepare(kjt)
        anchor = self._anchor if torch.is_grad_enabled() else self._anchor.detach()
        pooled = _FusedLookup.apply(anchor, list(self.stacks), batches)
        out, at = {}, 0
        for b, feats in zip(batches, self.stack_features):
            for g in b.groups:
                # unbind: one stack in the backward, not a zero-filled group per feature
                for k, v in zip(g.slots, pooled[at].view(len(g.slots), batch, -1).unbind(0)):
                    out[feats[k]] = v
                at += 1
        return {f: out[f] for f in self.features}
