"""CompiledGraph: one AOTAutograd FX graph (forward, backward or inference) run as tpu programs.

The first call with real tpu tensors captures: the graph runs once on its inputs while the engine
records every op into one pending graph instead of running it, then the engine compiles that graph
into one program whose parameters are the inputs by position, and runs it. Later calls replay: the
inputs' buffers are bound and the cached executable launched, with no per-op dispatch. A 0-dim CPU
tensor input (HuggingFace's generate() passes cache positions so) is copied to the device at each call
and bound as a 0-dim program input, so a new value replays the same program; a larger CPU input (an index
table made on the CPU) is copied once and its copy bound while later calls pass the same contents, and a CPU
output that no input reaches (a constant made in the graph) is a constant of the program. A graph that cannot
become one program (an op without a tpu rule, a value read to the host, a CPU input it writes, an output
on the CPU that depends on its inputs) runs eagerly on tpu from then on, counted in torch.tpu.metrics();
in strict mode its ops are recorded in fused mode for the call, so that they still launch as one program.

A dynamic graph (Dynamo made some sizes symbolic: `dynamic=True`, `mark_dynamic`, or a size seen to change)
captures one program per concrete shape for its first DYNAMIC_PROGRAMS shapes (a short last batch, a few
bucketed lengths). Later new shapes are recorded in fused mode instead of captured: there a tensor grown a
step at a time (a decoding loop's key/value cache) is held padded to a capacity (engine/pad.go), so the loop
compiles one program per capacity, not one per length."""

import hashlib
import os
import weakref

import torch

from . import stats

# DYNAMIC_PROGRAMS is how many concrete shapes a dynamic graph captures programs for
# (TORCHTPU_DYNAMIC_PROGRAMS; a process that sees a few lengths over and over may want more).
DYNAMIC_PROGRAMS = int(os.environ.get("TORCHTPU_DYNAMIC_PROGRAMS") or 2)


def _free(handles):
    from .. import _lib

    lib = _lib.lib()
    for h in handles:
        lib.ttpu_program_free(h)


class _Output:
    """Where one graph output comes from at replay."""

    __slots__ = ("kind", "index", "sizes", "strides", "offset", "direct", "value")

    CONST, FRESH, INPUT = 0, 1, 2


class _Program:
    __slots__ = ("handle", "outputs", "checked", "seeded")

    def __init__(self, handle, outputs, seeded):
        self.handle, self.outputs, self.checked, self.seeded = handle, outputs, False, seeded

    def rebuild(self, results, tensors):
        out = []
        check = not self.checked
        for o in self.outputs:
            if o.kind == _Output.FRESH:
                t = results[o.index]
                if check:
                    # The result is its storage's whole value, shaped as the storage. Handing it
                    # out as is needs the captured view's exact geometry: a permuted view whose
                    # sizes happen to equal the storage's shape (a square transpose) has other
                    # strides, and would read the data in the wrong order.
                    o.direct = tuple(t.shape) == o.sizes and t.stride() == o.strides and o.offset == 0
                if not o.direct:
                    t = t.as_strided(o.sizes, o.strides, o.offset)
                out.append(t)
            elif o.kind == _Output.INPUT:
                # o.offset is relative to the input's own offset (a sliding input moves).
                src = tensors[o.index]
                if check:
                    o.direct = tuple(src.shape) == o.sizes and src.stride() == o.strides and o.offset == 0
                out.append(src if o.direct else src.as_strided(o.sizes, o.strides, src.storage_offset() + o.offset))
            else:
                # A tensor constant is copied: whoever takes it may write into it.
                out.append(o.value.clone() if isinstance(o.value, torch.Tensor) else o.value)
        self.checked = True
        return out


def _is_dynamic(gm):
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        v = node.meta.get("val", node.meta.get("example_value"))
        if isinstance(v, torch.SymInt | torch.SymFloat):
            return True
        if isinstance(v, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in v.shape):
            return True
    return False


def _written_inputs(gm):
    """The positions of the graph's inputs that some op writes in place (an input mutation)."""
    places = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    out = set()
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None:
            continue
        for arg, value in zip(schema.arguments, node.args):
            if value in places and arg.alias_info is not None and arg.alias_info.is_write:
                out.add(places[value])
        for name, value in node.kwargs.items():
            arg = next((a for a in schema.arguments if a.name == name), None)
            if value in places and arg is not None and arg.alias_info is not None and arg.alias_info.is_write:
                out.add(places[value])
    return out


def _constant_outputs(gm):
    """The positions of the graph's outputs that no input reaches and no random op makes: values fixed when the
    graph was traced (DeBERTa's attention scale, torch.sqrt(torch.tensor(d)), a CPU tensor that AOTAutograd
    saves for the backward)."""
    varying = {}

    def varies(node):
        if not isinstance(node, torch.fx.Node):
            return False
        if node not in varying:
            varying[node] = True  # provisional: a cycle cannot occur in an FX graph
            target = getattr(node, "target", None)
            random = torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())
            deps = []
            torch.fx.node.map_arg((node.args, node.kwargs), deps.append)
            varying[node] = node.op == "placeholder" or random or any(varies(d) for d in deps)
        return varying[node]

    out = set()
    for node in gm.graph.nodes:
        if node.op == "output":
            outs = node.args[0] if isinstance(node.args[0], tuple | list) else [node.args[0]]
            out = {i for i, v in enumerate(outs) if isinstance(v, torch.fx.Node) and not varies(v)}
    return out


def _has_cpu_output(gm):
    """Whether the graph returns a tensor on the CPU (by its traced metadata)."""
    for node in gm.graph.nodes:
        if node.op != "output":
            continue
        for v in node.args[0] if isinstance(node.args[0], tuple | list) else [node.args[0]]:
            val = v.meta.get("val") if isinstance(v, torch.fx.Node) else None
            if isinstance(val, torch.Tensor) and val.device.type == "cpu":
                return True
    return False


class CompiledGraph:
    """The callable a fw/bw/inference compiler returns (boxed: it takes the argument list)."""

    _boxed_call = True

    def __init__(self, gm, slot, step=False):
        self._boxed_call = True  # an instance attribute: wrappers (functools.wraps) copy it
        self.gm = gm
        self.slot = slot
        self.step = step  # mode="reduce-overhead": each program's replays open a compiled step
        self.name = "frame {} graph {} {}".format(*slot)
        self.digest = hashlib.sha256(gm.code.encode()).hexdigest()[:16]
        self.dynamic = _is_dynamic(gm)
        self.programs = {}
        self.fallback = None
        self._recorded = False  # a dynamic graph past DYNAMIC_PROGRAMS shapes: new shapes are recorded
        self._scalar_inputs = None  # why CPU inputs cannot be bound ("" when they can), found once
        self._cpu_inputs = {}  # position -> (tensor, its version, a copy of its contents, its tpu copy)
        self._handles = []
        # The program the last call replayed when every input was a tpu tensor: the next call hands
        # its inputs to it as they are, and the engine's signature check stands in for this loop's.
        # Not for a program with random ops: a try that mismatches would draw its seeds.
        self._fast = None
        weakref.finalize(self, _free, self._handles)

    def __call__(self, *args):
        # Boxed (one list of the graph's inputs) or, behind wrappers that drop _boxed_call, unboxed.
        args = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
        if self.fallback is not None:
            stats.bump("compiled_fallback_calls")
            return self._eager(args)
        fast = self._fast
        if fast is not None:
            results, mismatch = torch.ops.torchtpu.run_program(fast.handle, args)
            if not mismatch:
                stats.bump("compiled_replays")
                return fast.rebuild(results, args)
            self._fast = None
        device = next((a.device for a in args if isinstance(a, torch.Tensor) and a.device.type == "tpu"), None)
        tensors, scalars, bound = [], [], args
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                if a.device.type != "tpu":
                    reason = self._bind_reason(i, a, device)
                    if reason:
                        self._set_fallback(reason)
                        stats.bump("compiled_fallback_calls")
                        return self._eager(args)
                    a = self._on_device(i, a, device)
                    if bound is args:
                        bound = list(args)
                    bound[i] = a
                tensors.append(a)
            elif isinstance(a, int | float | bool):
                scalars.append(a)
        # A program runs on the device it was captured on: each device gets its own.
        device = device.index if device is not None else None
        key = (device, tuple(scalars), tuple(tuple(t.shape) for t in tensors) if self.dynamic else ())
        mismatch = None
        for prog in self.programs.get(key, ()):
            results, mismatch = torch.ops.torchtpu.run_program(prog.handle, tensors)
            if not mismatch:
                stats.bump("compiled_replays")
                if bound is args and len(tensors) == len(args) and not self.dynamic and not prog.seeded:
                    self._fast = prog
                return prog.rebuild(results, tensors)
        if self.dynamic and key not in self.programs and len(self.programs) >= DYNAMIC_PROGRAMS:
            if not self._recorded:
                self._recorded = True
                stats.note_recorded(self.slot, DYNAMIC_PROGRAMS)
            stats.bump("compiled_recorded_calls")
            # 0-dim CPU inputs go as the device copies made above: uploaded values whose ranges the
            # engine knows, so index checks on positions made from them read nothing.
            return self._eager(bound)
        return self._capture(bound, tensors, scalars, key, device, mismatch)

    def _on_device(self, i, a, device):
        """The tpu copy of CPU tensor input i (a) that the program binds. A 0-dim tensor (a cache position) is
        copied at every call; a larger one (an index table made on the CPU, BEiT's relative positions, which the
        backward graph receives) keeps its copy while later calls pass equal contents."""
        if a.dim() == 0:
            stats.bump("compiled_scalar_inputs")
            return a.to(device)
        held = self._cpu_inputs.get(i)
        if held is not None:
            src, version, seen, copy = held
            if (src is a and a._version == version) or (
                    seen.shape == a.shape and seen.dtype == a.dtype and seen.stride() == a.stride()
                    and torch.equal(seen, a)):
                return copy
        stats.bump("compiled_cpu_inputs")
        copy = a.to(device)
        self._cpu_inputs[i] = (a, a._version, a.clone(), copy)
        return copy

    def _bind_reason(self, i, a, device):
        """Why the non-tpu tensor input i (a) keeps the graph from being a program; "" when it is a CPU
        tensor that can be copied to device and bound as a program input. A mutated input or a CPU
        output would not be CPU's any more, so such graphs run eagerly."""
        why = (f"input on {a.device.type} (a compiled program takes tpu tensors, and CPU tensors that it neither "
               "writes nor returns)")
        if a.device.type != "cpu" or device is None or a.requires_grad:
            return why
        if self._scalar_inputs is None:
            self._scalar_inputs = "" if not _has_cpu_output(self.gm) else "an output is a CPU tensor"
            self._written = _written_inputs(self.gm)
        if self._scalar_inputs:
            return f"{why[:-1]}; {self._scalar_inputs})"
        if i in self._written:
            return f"CPU input {i} is written in place (a program writes tpu tensors only)"
        return ""

    def _eager(self, args):
        from ..modes import get_mode, mode

        # Debug mode keeps its op-by-op checks; strict mode's one launch per op is what a compiled
        # graph is for avoiding, so the graph's ops are fused and launched together at its end.
        if get_mode() == "strict":
            with mode("fused"):
                out = self.gm(*args)
        else:
            out = self.gm(*args)
        return list(out) if isinstance(out, tuple | list) else [out]

    def _set_fallback(self, reason):
        self.fallback = reason
        stats.note_fallback(reason)

    def _capture(self, args, tensors, scalars, key, device, mismatch):
        from ..metrics import metrics

        before = metrics()["cpu_fallbacks"]
        torch.ops.torchtpu.capture_begin(tensors, self.name)
        try:
            outs = self.gm(*args)
        except BaseException:
            torch.ops.torchtpu.capture_abort()
            raise
        outs = list(outs) if isinstance(outs, tuple | list) else [outs]
        # A CPU output is a constant of the program when no input reaches it; any other keeps the graph eager.
        fixed = set()
        if any(isinstance(o, torch.Tensor) and o.device.type != "tpu" for o in outs):
            fixed = {i for i in _constant_outputs(self.gm) if isinstance(outs[i], torch.Tensor)
                     and outs[i].device.type == "cpu"}
        touts = [o for i, o in enumerate(outs) if isinstance(o, torch.Tensor) and i not in fixed]
        if any(o.device.type != "tpu" for o in touts):
            torch.ops.torchtpu.capture_abort()
            self._set_fallback("an output is not a tpu tensor")
            return outs
        handle, kinds, indices, reason = torch.ops.torchtpu.capture_end(tensors, touts)
        if handle == 0:
            after = metrics()["cpu_fallbacks"]
            ops = sorted(op for op, n in after.items() if n > before.get(op, 0))
            if ops:
                reason = f"ops without a tpu rule ran on CPU ({', '.join(ops)})"
            self._set_fallback(reason)
            return outs
        self._handles.append(handle)
        from .. import _lib

        if self.step:
            _lib.lib().ttpu_program_step(handle)
        outputs, k = [], 0
        for i, o in enumerate(outs):
            r = _Output()
            if i in fixed:
                r.kind, r.value = _Output.CONST, o.clone()
            elif isinstance(o, torch.Tensor):
                r.kind = _Output.FRESH if kinds[k] == 0 else _Output.INPUT
                r.index = indices[k]
                r.sizes, r.strides, r.offset = tuple(o.shape), tuple(o.stride()), o.storage_offset()
                if r.kind == _Output.INPUT:
                    if tensors[r.index].dtype != o.dtype:
                        self._set_fallback("an output views an input as another dtype")
                        return outs
                    r.offset -= tensors[r.index].storage_offset()
                k += 1
            else:
                r.kind, r.value = _Output.CONST, o
            outputs.append(r)
        seeded = _lib.lib().ttpu_program_seeds(handle) > 0
        self.programs.setdefault(key, []).append(_Program(handle, outputs, seeded))
        parts = {
            "shapes": [tuple(t.shape) for t in tensors],
            "dtypes": [str(t.dtype).removeprefix("torch.") for t in tensors],
            "graph": self.digest,
            "ints": tuple(scalars),
            "device": device,
        }
        stats.note_program(self.slot, parts, mismatch or None)
        return outs
