"""The check that every rank issues the same collective before tpu_gloo runs it in gloo.

gloo matches the ranks' messages by issue order alone: ranks that call different collectives
(an all_reduce against a broadcast), name different roots or pass buffers of different sizes hang
until the group's timeout, return without a word, or overwrite each other's data. So every group
collective first all-gathers a small signature of the call (one exchange, where an all-reduce
takes two): the ranks agree when every rank's signature is the same. The signature holds the collective's kind,
its root, its reduce op, whether this rank could read its inputs, and the count, ranks, dtypes and
shapes of the tensors whose shapes must match; where they do not agree, every rank raises, naming
what differs. The signature is made on the calling thread; the group's issuer thread (waiter.py)
settles it and starts the data collective only where it holds, so the caller never waits for the
other ranks to reach the same call.
"""

import hashlib

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as _c10d

KINDS = ["allreduce", "allreduce_coalesced", "reduce", "reduce_scatter", "reduce_scatter_tensor", "broadcast",
         "allgather", "all_gather_into_tensor", "gather", "scatter", "all_to_all_single", "all_to_all", "barrier"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128]

_LEN = 64


def _tensor_fields(tensors):
    fields = []
    for t in tensors:
        fields += [t.dim(), DTYPES.index(t.dtype) if t.dtype in DTYPES else 99, *t.shape]
    return fields


def _op_code(op):
    if op is None:
        return -1
    kind = op.op if hasattr(op, "op") else op
    return int(kind)


def _op_name(code):
    try:
        return dist.ReduceOp.RedOpType(code).name
    except (TypeError, ValueError):
        return f"op #{code}"


def signature(what, tensors, root=None, op=None, failed_rank=-1):
    """The int64 fields of a call: kind, root, reduce op, a digest of every tensor field, the
    tensor count, the rank whose inputs could not be read (-1: none), then the first tensor fields."""
    fields = _tensor_fields(tensors)
    digest = int.from_bytes(hashlib.blake2b(repr(fields).encode(), digest_size=7).digest(), "little")
    sig = [KINDS.index(what), -1 if root is None else int(root), _op_code(op), digest, len(tensors),
           failed_rank] + fields
    sig = sig[:_LEN]
    return sig + [0] * (_LEN - len(sig))


def _name(code):
    return KINDS[code] if 0 <= code < len(KINDS) else f"collective #{code}"


class Agreement:
    """The signature of one rank's call to `what`, made where the call is issued; settle() checks it
    against the other ranks'. failed says that this rank could not read its inputs (it raises its own
    exception at the call and still owes its peers the agreement)."""

    def __init__(self, gloo, rank, what, tensors, root=None, op=None, failed=False):
        self.gloo, self.rank, self.what = gloo, rank, what
        self.sig = signature(what, tensors, root, op, failed_rank=rank if failed else -1)
        self.shapes = ", ".join(f"{list(t.shape)} {t.dtype}" for t in tensors)

    def settle(self):
        """Raise unless every rank of the group signed the same call and none failed to read its
        inputs; errors name the collective (`tpu_gloo <what>: ...`)."""
        what, sig, rank = self.what, self.sig, self.rank
        mine = torch.tensor(sig, dtype=torch.int64)
        every = torch.empty(self.gloo.size() * _LEN, dtype=torch.int64)
        try:
            self.gloo._allgather_base(every, mine, _c10d.AllgatherOptions()).wait()
        except RuntimeError as e:
            raise RuntimeError(f"tpu_gloo {what} failed: {e}") from e
        every = every.view(-1, _LEN)
        high, low = every.amax(0).tolist(), every.amin(0).tolist()
        if high[5] >= 0:
            raise RuntimeError(
                f"tpu_gloo {what}: rank {high[5]} could not read its input tensors (its own error says why), so "
                f"no rank ran the collective")
        if high == low:
            return
        if high[0] != low[0]:
            raise RuntimeError(
                f"tpu_gloo {what}: the ranks called different collectives ({_name(low[0])} and {_name(high[0])} "
                f"at the same point; rank {rank} called {what}): every rank must issue the same collectives "
                f"in the same order")
        if high[1] != low[1]:
            raise RuntimeError(
                f"tpu_gloo {what}: the ranks named different roots ({low[1]} and {high[1]}; rank {rank} "
                f"named {sig[1]})")
        if high[2] != low[2]:
            raise RuntimeError(
                f"tpu_gloo {what}: the ranks passed different reduce ops ({_op_name(low[2])} and "
                f"{_op_name(high[2])}; rank {rank} passed {_op_name(sig[2])})")
        raise RuntimeError(
            f"tpu_gloo {what}: the ranks passed tensors of different shapes or dtypes "
            f"(rank {rank} passed {self.shapes})")
