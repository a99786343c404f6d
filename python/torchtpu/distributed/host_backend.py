"""HostStagedBackend: c10d collectives on tpu tensors through gloo on host copies.

The CPU PJRT plugin cannot run an XLA collective across processes, so every collective here copies
its tpu inputs into pinned host buffers that later collectives reuse (staging.py), runs the matching
gloo collective asynchronously, and copies the results back into the tpu outputs when gloo finishes;
the Work's future completes after that copy and holds the output tensors. A collective that fails
leaves its tpu outputs as they were (gloo only ever wrote the host copies) and raises from the Work's
wait() and its future. Every group collective first checks that all ranks called it alike
(agreement.py). Reductions gloo lacks are built around it: AVG is a SUM divided by the group size,
PREMUL_SUM multiplies by its factor before a SUM.
"""

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as _c10d
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch.futures import Future

from .agreement import Agreement
from .staging import StagingPool
from .waiter import Waiter, settled
from .work import RaisingWork

_Red = dist.ReduceOp.RedOpType


# traffic counts what this process handed to gloo: collectives issued and their input bytes.
traffic = {"collectives": 0, "bytes": 0}


def _dtype_only(t):
    """A stand-in for t in an agreement that checks its dtype alone."""
    return torch.empty(0, dtype=t.dtype)


def _count(tensors):
    traffic["collectives"] += 1
    traffic["bytes"] += sum(t.numel() * t.element_size() for t in tensors)


def _values(done, result):
    """result, once every future in done has a value (raising the first failure)."""
    for f in done.value():
        f.wait()
    return result


class _Plan:
    """What to do with gloo's host results: scale them, copy them into the tpu outputs, and give the
    collective's staging buffers back to the pool."""

    def __init__(self, pairs, result, divisor=None, held=(), pool=None):
        self.pairs = pairs  # (tpu destination, host source)
        self.result = result
        self.divisor = divisor
        self.held, self.pool = held, pool

    def finish(self):
        for dst, src in self.pairs:
            if self.divisor is not None:
                if src.is_floating_point() or src.is_complex():
                    src.div_(self.divisor)
                else:
                    src.copy_(torch.div(src, self.divisor, rounding_mode="trunc"))
            dst.copy_(src.view(dst.shape) if src.numel() == dst.numel() else src)
        # The copies to the device have read the host buffers (uploads copy during the call).
        for buf in self.held:
            self.pool.give(buf)
        self.held = ()
        return self.result


class HostStagedBackend(_C10dBackend):
    """The "tpu_gloo" backend: a c10d Backend whose collectives run in gloo on host copies."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        prefixed = dist.PrefixStore("tpu_gloo/", store)
        self._gloo = dist.ProcessGroupGloo(prefixed, rank, size, timeout)
        self._size = size
        self._waiter = Waiter("tpu_gloo-waiter")
        self._pool = StagingPool()

    def getBackendName(self):
        return "tpu_gloo"

    def shutdown(self):
        """Called by destroy_process_group: end the waiter thread before the interpreter can finalize."""
        self._waiter.stop()

    def abort(self):
        self._waiter.stop()

    # Every collective is issued on its own (c10d's coalescing manager batches them for us).
    @property
    def supports_coalescing(self):
        return False

    # -- helpers ---------------------------------------------------------------------------

    def _host(self, t, held):
        """A host copy of t, in a staging buffer gloo may overwrite (added to held)."""
        return self._pool.copy_of(t, held)

    def _staging(self, t, held):
        """An uninitialized staging buffer shaped like t for an output gloo fills completely."""
        return self._pool.empty_like(t, held)

    def _plan(self, held, pairs, result, divisor=None):
        """The plan of a collective whose staging buffers are held: they go back to the pool once
        the results are on the device."""
        return _Plan(pairs, result, divisor, held, self._pool)

    def _op(self, op, hosts, what):
        """The gloo reduce op for op, scaling the host inputs for PREMUL_SUM; returns (op, divisor)."""
        kind = op.op if hasattr(op, "op") else op
        if kind == _Red.AVG:
            for h in hosts:
                if h.dtype == torch.bool:
                    raise ValueError(f"{what}: ReduceOp.AVG is not supported for bool tensors")
            return dist.ReduceOp.SUM, self._size
        if kind == _Red.PREMUL_SUM:
            factor = op.factor
            if isinstance(factor, torch.Tensor):
                factor = factor.to("cpu")
            for h in hosts:
                h.mul_(factor)
            return dist.ReduceOp.SUM, None
        return op, None

    def _launch(self, what, start, plan, agreement=None):
        """Queue start() (a gloo Work) behind agreement and return a Work whose future completes
        after plan.finish().

        The issuer thread settles the agreement, then starts the gloo collective; the waiter thread
        waits on each gloo Work in issue order (its wait raises when the collective failed) and
        completes the future with the result or the error (waiter.py)."""
        outcome = Future()
        fut = settled(outcome)
        self._waiter.put(what, agreement, start, plan, outcome)
        return RaisingWork(fut, what, outcome)

    def _agree(self, what, tensors, root=None, op=None, prepare=None):
        """prepare()'s host copies and the call's agreement with the other ranks, for _launch.

        prepare runs first: a rank where it raises (its inputs could not be read) queues an
        agreement that says so and raises; every other rank's collective then fails at its
        agreement, before any of them starts the data collective, which would otherwise pair with
        this rank's next call."""
        prepared = None
        if prepare is not None:
            try:
                prepared = prepare()
            except Exception:  # noqa: BLE001 - every failure must reach the other ranks
                failed = Agreement(self._gloo, self.rank(), what, tensors, root=root, op=op, failed=True)
                self._waiter.put(what, failed, None, None, None)
                raise
        return prepared, Agreement(self._gloo, self.rank(), what, tensors, root=root, op=op)

    @staticmethod
    def _chain(works, result, what):
        """One Work for several: done when all are, holding result (or the first failure)."""
        futs = [w.get_future() for w in works]
        return RaisingWork(torch.futures.collect_all(futs).then(lambda f: _values(f, result)), what)

    # -- reductions ------------------------------------------------------------------------

    def allreduce(self, tensors, opts):
        held = []
        _count(tensors)
        hosts, agreed = self._agree("allreduce", tensors, op=opts.reduceOp,
                                    prepare=lambda: [self._host(t, held) for t in tensors])
        op, div = self._op(opts.reduceOp, hosts, "allreduce")
        o = _c10d.AllreduceOptions()
        o.reduceOp = op
        return self._launch("allreduce", lambda: self._gloo.allreduce(hosts, o),
                            self._plan(held, list(zip(tensors, hosts)), tensors, div), agreed)

    def allreduce_coalesced(self, tensors, opts):
        held = []
        _count(tensors)
        hosts, agreed = self._agree("allreduce_coalesced", tensors, op=opts.reduceOp,
                                    prepare=lambda: [self._host(t, held) for t in tensors])
        op, div = self._op(opts.reduceOp, hosts, "allreduce_coalesced")
        o = _c10d.AllreduceCoalescedOptions()
        o.reduceOp = op
        return self._launch("allreduce_coalesced", lambda: self._gloo.allreduce_coalesced(hosts, o),
                            self._plan(held, list(zip(tensors, hosts)), tensors, div), agreed)

    def reduce(self, tensors, opts):
        held = []
        _count(tensors)
        hosts, agreed = self._agree("reduce", tensors, root=opts.rootRank, op=opts.reduceOp,
                                    prepare=lambda: [self._host(t, held) for t in tensors])
        op, div = self._op(opts.reduceOp, hosts, "reduce")
        o = _c10d.ReduceOptions()
        o.reduceOp, o.rootRank, o.rootTensor = op, opts.rootRank, opts.rootTensor
        pairs = list(zip(tensors, hosts)) if self.rank() == opts.rootRank else []
        return self._launch("reduce", lambda: self._gloo.reduce(hosts, o), self._plan(held, pairs, tensors, div),
                            agreed)

    def reduce_scatter(self, outputs, input_lists, opts):
        held = []
        _count([t for ts in input_lists for t in ts])
        hosts_in, agreed = self._agree("reduce_scatter", list(outputs), op=opts.reduceOp,
                                       prepare=lambda: [[self._host(t, held) for t in ts] for ts in input_lists])
        hosts_out = [self._staging(t, held) for t in outputs]
        op, div = self._op(opts.reduceOp, [h for hs in hosts_in for h in hs], "reduce_scatter")
        o = _c10d.ReduceScatterOptions()
        o.reduceOp = op
        return self._launch("reduce_scatter", lambda: self._gloo.reduce_scatter(hosts_out, hosts_in, o),
                            self._plan(held, list(zip(outputs, hosts_out)), outputs, div), agreed)

    def reduce_scatter_single(self, output, input, opts):
        held = []
        _count([input])
        host_in, agreed = self._agree("reduce_scatter_tensor", [output, input], op=opts.reduceOp,
                                      prepare=lambda: self._host(input, held))
        host_out = self._staging(output, held)
        op, div = self._op(opts.reduceOp, [host_in], "reduce_scatter_tensor")
        o = _c10d.ReduceScatterOptions()
        o.reduceOp = op
        return self._launch("reduce_scatter_tensor", lambda: self._gloo._reduce_scatter_base(host_out, host_in, o),
                            self._plan(held, [(output, host_out)], output, div), agreed)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        works = [self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs)]
        return self._chain(works, outputs, "reduce_scatter_tensor")

    # -- data movement ---------------------------------------------------------------------

    def broadcast(self, tensors, opts):
        held = []
        _count(tensors)
        root = self.rank() == opts.rootRank
        hosts, agreed = self._agree(
            "broadcast", tensors, root=opts.rootRank,
            prepare=lambda: [self._host(t, held) if root else self._staging(t, held) for t in tensors])
        o = _c10d.BroadcastOptions()
        o.rootRank, o.rootTensor = opts.rootRank, opts.rootTensor
        pairs = list(zip(tensors, hosts)) if self.rank() != opts.rootRank else []
        return self._launch("broadcast", lambda: self._gloo.broadcast(hosts, o), self._plan(held, pairs, tensors),
                            agreed)

    def allgather(self, output_lists, inputs, opts):
        held = []
        _count(inputs)
        hosts_in, agreed = self._agree("allgather", list(inputs),
                                       prepare=lambda: [self._host(t, held) for t in inputs])
        hosts_out = [[self._staging(t, held) for t in ts] for ts in output_lists]
        pairs = [(d, h) for ds, hs in zip(output_lists, hosts_out) for d, h in zip(ds, hs)]
        return self._launch("allgather", lambda: self._gloo.allgather(hosts_out, hosts_in, _c10d.AllgatherOptions()),
                            self._plan(held, pairs, output_lists), agreed)

    def allgather_coalesced(self, output_lists, inputs, opts):
        works = [self.allgather([outs], [i], opts) for outs, i in zip(output_lists, inputs)]
        return self._chain(works, output_lists, "allgather")

    def all_gather_single(self, output, input, opts):
        held = []
        _count([input])
        host_in, agreed = self._agree("all_gather_into_tensor", [output, input],
                                      prepare=lambda: self._host(input, held))
        host_out = self._staging(output, held)
        return self._launch("all_gather_into_tensor",
                            lambda: self._gloo._allgather_base(host_out, host_in, _c10d.AllgatherOptions()),
                            self._plan(held, [(output, host_out)], output), agreed)

    def all_gather_single_coalesced(self, outputs, inputs, opts):
        works = [self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs)]
        return self._chain(works, outputs, "all_gather_into_tensor")

    def gather(self, output_lists, inputs, opts):
        held = []
        _count(inputs)
        hosts_in, agreed = self._agree("gather", list(inputs), root=opts.rootRank,
                                       prepare=lambda: [self._host(t, held) for t in inputs])
        hosts_out = [[self._staging(t, held) for t in ts] for ts in output_lists]
        o = _c10d.GatherOptions()
        o.rootRank = opts.rootRank
        pairs = [(d, h) for ds, hs in zip(output_lists, hosts_out) for d, h in zip(ds, hs)]
        return self._launch("gather", lambda: self._gloo.gather(hosts_out, hosts_in, o),
                            self._plan(held, pairs, output_lists), agreed)

    def scatter(self, outputs, input_lists, opts):
        held = []
        _count([t for ts in input_lists for t in ts])
        hosts_in, agreed = self._agree("scatter", list(outputs), root=opts.rootRank,
                                       prepare=lambda: [[self._host(t, held) for t in ts] for ts in input_lists])
        hosts_out = [self._staging(t, held) for t in outputs]
        o = _c10d.ScatterOptions()
        o.rootRank = opts.rootRank
        return self._launch("scatter", lambda: self._gloo.scatter(hosts_out, hosts_in, o),
                            self._plan(held, list(zip(outputs, hosts_out)), outputs), agreed)

    def all_to_all_single(self, output, input, output_splits, input_splits, opts):
        held = []
        _count([input])
        # The splits may differ between ranks: only the kind and dtype must agree.
        host_in, agreed = self._agree("all_to_all_single", [_dtype_only(input)],
                                      prepare=lambda: self._host(input, held))
        host_out = self._staging(output, held)
        return self._launch(
            "all_to_all_single",
            lambda: self._gloo.alltoall_base(host_out, host_in, output_splits, input_splits, _c10d.AllToAllOptions()),
            self._plan(held, [(output, host_out)], output), agreed)

    def alltoall(self, outputs, inputs, opts):
        """The list form as one all_to_all_single over the flattened tensors."""
        _count(inputs)
        if len({t.dtype for t in list(outputs) + list(inputs)}) > 1:
            raise ValueError("tpu_gloo all_to_all: every input and output tensor must have the same dtype")
        host_in, agreed = self._agree("all_to_all", [_dtype_only(inputs[0])],
                                      prepare=lambda: torch.cat([t.detach().to("cpu").reshape(-1) for t in inputs]))
        host_out = torch.empty(sum(t.numel() for t in outputs), dtype=outputs[0].dtype)
        in_splits = [t.numel() for t in inputs]
        out_splits = [t.numel() for t in outputs]
        pieces = list(torch.split(host_out, out_splits))
        return self._launch(
            "all_to_all",
            lambda: self._gloo.alltoall_base(host_out, host_in, out_splits, in_splits, _c10d.AllToAllOptions()),
            _Plan(list(zip(outputs, pieces)), outputs), agreed)

    def barrier(self, opts):
        _, agreed = self._agree("barrier", [])
        return self._launch("barrier", lambda: self._gloo.barrier(_c10d.BarrierOptions()), _Plan([], []), agreed)

    def send(self, tensors, dst, tag):
        held = []
        _count(tensors)
        hosts = [self._host(t, held) for t in tensors]
        return self._launch("send", lambda: self._gloo.send(hosts, dst, tag), self._plan(held, [], tensors))

    def recv(self, tensors, src, tag):
        held = []
        hosts = [self._staging(t, held) for t in tensors]
        return self._launch("recv", lambda: self._gloo.recv(hosts, src, tag),
                            self._plan(held, list(zip(tensors, hosts)), tensors))
