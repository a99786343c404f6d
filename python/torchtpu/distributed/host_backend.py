"""HostStagedBackend: c10d collectives on tpu tensors through gloo on host copies.

The CPU PJRT plugin cannot run an XLA collective across processes, so every collective here copies
its tpu inputs to host memory, runs the matching gloo collective asynchronously, and copies the
results back into the tpu outputs when gloo finishes; the Work's future completes after that copy
and holds the output tensors. Reductions gloo lacks are built around it: AVG is a SUM divided by
the group size, PREMUL_SUM multiplies by its factor before a SUM.
"""

import queue
import threading

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as _c10d
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch._C._distributed_c10d import _create_work_from_future
from torch.futures import Future

_Red = dist.ReduceOp.RedOpType
_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
           torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128]


# traffic counts what this process handed to gloo: collectives issued and their input bytes.
traffic = {"collectives": 0, "bytes": 0}


def _host(t):
    """A host copy of t that gloo may overwrite."""
    return t.detach().to("cpu", copy=True).contiguous()


def _staging(t):
    """An uninitialized host buffer for an output gloo fills completely."""
    return torch.empty(t.shape, dtype=t.dtype)


def _count(tensors):
    traffic["collectives"] += 1
    traffic["bytes"] += sum(t.numel() * t.element_size() for t in tensors)


def _values(done, result):
    """result, once every future in done has a value (raising the first failure)."""
    for f in done.value():
        f.value()
    return result


class _Plan:
    """What to do with gloo's host results: scale them, then copy them into the tpu outputs."""

    def __init__(self, pairs, result, divisor=None):
        self.pairs = pairs  # (tpu destination, host source)
        self.result = result
        self.divisor = divisor

    def finish(self):
        for dst, src in self.pairs:
            if self.divisor is not None:
                if src.is_floating_point() or src.is_complex():
                    src.div_(self.divisor)
                else:
                    src.copy_(torch.div(src, self.divisor, rounding_mode="trunc"))
            dst.copy_(src.view(dst.shape) if src.numel() == dst.numel() else src)
        return self.result


class HostStagedBackend(_C10dBackend):
    """The "tpu_gloo" backend: a c10d Backend whose collectives run in gloo on host copies."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        prefixed = dist.PrefixStore("tpu_gloo/", store)
        self._gloo = dist.ProcessGroupGloo(prefixed, rank, size, timeout)
        self._size = size
        self._pending = queue.SimpleQueue()
        threading.Thread(target=self._wait_loop, name="tpu_gloo-waiter", daemon=True).start()

    def getBackendName(self):
        return "tpu_gloo"

    # Every collective is issued on its own (c10d's coalescing manager batches them for us).
    @property
    def supports_coalescing(self):
        return False

    # -- helpers ---------------------------------------------------------------------------

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

    def _launch(self, what, start, plan):
        """Run start() (a gloo Work) and return a Work whose future completes after plan.finish().

        gloo's own futures report success even when a peer died, so the waiter thread waits on
        each gloo Work (which raises then) in issue order and completes the future itself."""
        try:
            work = start()
        except RuntimeError as e:
            raise RuntimeError(f"tpu_gloo {what}: {e}") from e
        fut = Future()
        self._pending.put((what, work, plan, fut))
        return _create_work_from_future(fut)

    def _wait_loop(self):
        while True:
            what, work, plan, fut = self._pending.get()
            try:
                work.wait()
            except Exception as e:  # a peer died or timed out
                fut.set_exception(RuntimeError(f"tpu_gloo {what} failed: {e}"))
                continue
            try:
                fut.set_result(plan.finish())
            except Exception as e:
                fut.set_exception(RuntimeError(f"tpu_gloo {what}: copying the result to the device failed: {e}"))

    def _agree(self, what, tensors):
        """Raise on every rank unless all ranks passed tensors of the same shapes and dtypes.

        gloo reduces mismatched buffers without a word, so a small MAX all-reduce of each rank's
        signature and its negation comes first: the two agree only when every rank's does."""
        sig = [len(tensors)]
        for t in tensors:
            sig += [t.dim(), _DTYPES.index(t.dtype) if t.dtype in _DTYPES else 99, *t.shape]
        sig = sig[:64] + [0] * (64 - len(sig[:64]))
        both = torch.tensor(sig + [-v for v in sig], dtype=torch.int64)
        o = _c10d.AllreduceOptions()
        o.reduceOp = dist.ReduceOp.MAX
        try:
            self._gloo.allreduce([both], o).wait()
        except RuntimeError as e:
            raise RuntimeError(f"tpu_gloo {what} failed: {e}") from e
        if not torch.equal(both[:64], -both[64:]):
            shapes = ", ".join(f"{list(t.shape)} {t.dtype}" for t in tensors)
            raise RuntimeError(
                f"tpu_gloo {what}: the ranks passed tensors of different shapes or dtypes "
                f"(rank {self.rank()} passed {shapes})")

    @staticmethod
    def _chain(works, result):
        """One Work for several: done when all are, holding result."""
        futs = [w.get_future() for w in works]
        return _create_work_from_future(torch.futures.collect_all(futs).then(lambda f: _values(f, result)))

    # -- reductions ------------------------------------------------------------------------

    def allreduce(self, tensors, opts):
        _count(tensors)
        self._agree("allreduce", tensors)
        hosts = [_host(t) for t in tensors]
        op, div = self._op(opts.reduceOp, hosts, "allreduce")
        o = _c10d.AllreduceOptions()
        o.reduceOp = op
        return self._launch("allreduce", lambda: self._gloo.allreduce(hosts, o),
                            _Plan(list(zip(tensors, hosts)), tensors, div))

    def allreduce_coalesced(self, tensors, opts):
        _count(tensors)
        hosts = [_host(t) for t in tensors]
        op, div = self._op(opts.reduceOp, hosts, "allreduce_coalesced")
        o = _c10d.AllreduceCoalescedOptions()
        o.reduceOp = op
        return self._launch("allreduce_coalesced", lambda: self._gloo.allreduce_coalesced(hosts, o),
                            _Plan(list(zip(tensors, hosts)), tensors, div))

    def reduce(self, tensors, opts):
        _count(tensors)
        self._agree("reduce", tensors)
        hosts = [_host(t) for t in tensors]
        op, div = self._op(opts.reduceOp, hosts, "reduce")
        o = _c10d.ReduceOptions()
        o.reduceOp, o.rootRank, o.rootTensor = op, opts.rootRank, opts.rootTensor
        pairs = list(zip(tensors, hosts)) if self.rank() == opts.rootRank else []
        return self._launch("reduce", lambda: self._gloo.reduce(hosts, o), _Plan(pairs, tensors, div))

    def reduce_scatter(self, outputs, input_lists, opts):
        _count([t for ts in input_lists for t in ts])
        self._agree("reduce_scatter", list(outputs))
        hosts_in = [[_host(t) for t in ts] for ts in input_lists]
        hosts_out = [_staging(t) for t in outputs]
        op, div = self._op(opts.reduceOp, [h for hs in hosts_in for h in hs], "reduce_scatter")
        o = _c10d.ReduceScatterOptions()
        o.reduceOp = op
        return self._launch("reduce_scatter", lambda: self._gloo.reduce_scatter(hosts_out, hosts_in, o),
                            _Plan(list(zip(outputs, hosts_out)), outputs, div))

    def reduce_scatter_single(self, output, input, opts):
        _count([input])
        self._agree("reduce_scatter_tensor", [output, input])
        host_in, host_out = _host(input), _staging(output)
        op, div = self._op(opts.reduceOp, [host_in], "reduce_scatter_tensor")
        o = _c10d.ReduceScatterOptions()
        o.reduceOp = op
        return self._launch("reduce_scatter_tensor", lambda: self._gloo._reduce_scatter_base(host_out, host_in, o),
                            _Plan([(output, host_out)], output, div))

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        works = [self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs)]
        return self._chain(works, outputs)

    # -- data movement ---------------------------------------------------------------------

    def broadcast(self, tensors, opts):
        _count(tensors)
        self._agree("broadcast", tensors)
        root = self.rank() == opts.rootRank
        hosts = [_host(t) if root else _staging(t) for t in tensors]
        o = _c10d.BroadcastOptions()
        o.rootRank, o.rootTensor = opts.rootRank, opts.rootTensor
        pairs = list(zip(tensors, hosts)) if self.rank() != opts.rootRank else []
        return self._launch("broadcast", lambda: self._gloo.broadcast(hosts, o), _Plan(pairs, tensors))

    def allgather(self, output_lists, inputs, opts):
        _count(inputs)
        self._agree("allgather", list(inputs))
        hosts_in = [_host(t) for t in inputs]
        hosts_out = [[_staging(t) for t in ts] for ts in output_lists]
        pairs = [(d, h) for ds, hs in zip(output_lists, hosts_out) for d, h in zip(ds, hs)]
        return self._launch("allgather", lambda: self._gloo.allgather(hosts_out, hosts_in, _c10d.AllgatherOptions()),
                            _Plan(pairs, output_lists))

    def allgather_coalesced(self, output_lists, inputs, opts):
        works = [self.allgather([outs], [i], opts) for outs, i in zip(output_lists, inputs)]
        return self._chain(works, output_lists)

    def all_gather_single(self, output, input, opts):
        _count([input])
        self._agree("all_gather_into_tensor", [output, input])
        host_in, host_out = _host(input), _staging(output)
        return self._launch("all_gather_into_tensor",
                            lambda: self._gloo._allgather_base(host_out, host_in, _c10d.AllgatherOptions()),
                            _Plan([(output, host_out)], output))

    def all_gather_single_coalesced(self, outputs, inputs, opts):
        works = [self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs)]
        return self._chain(works, outputs)

    def gather(self, output_lists, inputs, opts):
        _count(inputs)
        hosts_in = [_host(t) for t in inputs]
        hosts_out = [[_staging(t) for t in ts] for ts in output_lists]
        o = _c10d.GatherOptions()
        o.rootRank = opts.rootRank
        pairs = [(d, h) for ds, hs in zip(output_lists, hosts_out) for d, h in zip(ds, hs)]
        return self._launch("gather", lambda: self._gloo.gather(hosts_out, hosts_in, o), _Plan(pairs, output_lists))

    def scatter(self, outputs, input_lists, opts):
        _count([t for ts in input_lists for t in ts])
        hosts_in = [[_host(t) for t in ts] for ts in input_lists]
        hosts_out = [_staging(t) for t in outputs]
        o = _c10d.ScatterOptions()
        o.rootRank = opts.rootRank
        return self._launch("scatter", lambda: self._gloo.scatter(hosts_out, hosts_in, o),
                            _Plan(list(zip(outputs, hosts_out)), outputs))

    def all_to_all_single(self, output, input, output_splits, input_splits, opts):
        _count([input])
        host_in, host_out = _host(input), _staging(output)
        return self._launch(
            "all_to_all_single",
            lambda: self._gloo.alltoall_base(host_out, host_in, output_splits, input_splits, _c10d.AllToAllOptions()),
            _Plan([(output, host_out)], output))

    def alltoall(self, outputs, inputs, opts):
        """The list form as one all_to_all_single over the flattened tensors."""
        _count(inputs)
        if len({t.dtype for t in list(outputs) + list(inputs)}) > 1:
            raise ValueError("tpu_gloo all_to_all: every input and output tensor must have the same dtype")
        host_in = torch.cat([_host(t).reshape(-1) for t in inputs])
        host_out = torch.empty(sum(t.numel() for t in outputs), dtype=outputs[0].dtype)
        in_splits = [t.numel() for t in inputs]
        out_splits = [t.numel() for t in outputs]
        pieces = list(torch.split(host_out, out_splits))
        return self._launch(
            "all_to_all",
            lambda: self._gloo.alltoall_base(host_out, host_in, out_splits, in_splits, _c10d.AllToAllOptions()),
            _Plan(list(zip(outputs, pieces)), outputs))

    def barrier(self, opts):
        return self._launch("barrier", lambda: self._gloo.barrier(_c10d.BarrierOptions()), _Plan([], []))

    def send(self, tensors, dst, tag):
        _count(tensors)
        hosts = [_host(t) for t in tensors]
        return self._launch("send", lambda: self._gloo.send(hosts, dst, tag), _Plan([], tensors))

    def recv(self, tensors, src, tag):
        hosts = [_staging(t) for t in tensors]
        return self._launch("recv", lambda: self._gloo.recv(hosts, src, tag),
                            _Plan(list(zip(tensors, hosts)), tensors))
