"""Shared code of the model zoo: trains one model on CPU and on tpu from the same initial state and the same
batches, and compares every step's loss and the gradient of every parameter.

A zoo case names a model family's builder (a seeded, small, randomly initialized model), its batches and its loss.
`compare_training` runs it on CPU eager (the reference, computed once per case and step count) and on tpu in one
mode: "strict", "fused", or "compile" (strict mode with the model wrapped in torch.compile(backend="tpu")).
It asserts, per step, the relative loss gap and the relative error of every parameter's gradient; every
parameter after the last step against CPU's AdamW fed tpu's gradients; and no CPU fallback over the whole run.
The default selection trains one step; `TORCHTPU_ZOO=full` (make test-models) trains FULL_STEPS steps and
selects the tests marked `zoo_full` (generation, autocast). Generation is compared in generation.py.

With TORCHTPU_ZOO_REPORT=FILE each tpu run appends one JSON line to FILE (gaps, worst parameter, programs
compiled, step times against CPU eager); tests/models/table.py turns the lines into a table.
"""
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

FULL = os.environ.get("TORCHTPU_ZOO", "") == "full"
FULL_STEPS = 4
STEPS = FULL_STEPS if FULL else 1
MODES = ["strict", "fused", "compile"]
LR = 1e-3
FLOOR = 1e-6
OPTIMIZER_TOL = 1e-5  # measured: 1e-7 at most (ViT, GPT-2 under autocast)


@dataclass
class Case:
    """One zoo model: how to build it, what it trains on and how its loss is computed.

    build() returns the CPU model, seeded so that every call gives the same weights. batch(i) returns the i-th
    batch as a tuple of CPU tensors. loss(model, batch) returns the scalar loss of model (or its compiled
    wrapper) on batch, already on the model's device. The tolerances bound the relative loss gap and the
    relative gradient error (norm of the difference over the norm of CPU's gradient) at every step; each is a
    number, or a sequence with one per step whose last entry holds for later steps. buffer_tol bounds the buffers'
    relative error after the last step (buffer_gap); None takes the loss tolerance of that step.
    """
    name: str
    build: Callable[[], torch.nn.Module]
    batch: Callable[[int], tuple]
    loss: Callable[[torch.nn.Module, tuple], torch.Tensor]
    loss_tol: object = 1e-4
    grad_tol: object = 1e-3
    autocast: Optional[torch.dtype] = None
    buffer_tol: object = None
    _reference: dict = field(default_factory=dict, repr=False)


@dataclass
class Run:
    """What one training run produced: per step the loss, every parameter's gradient and the step's wall time;
    and every parameter and buffer (batch norms' running statistics and counts) after the last optimizer step."""
    losses: list
    grads: list
    seconds: list
    params: dict
    buffers: dict = field(default_factory=dict)


def to(batch, device, dtype=None):
    """Moves a batch's tensors to device (floating ones to dtype, if given)."""
    out = []
    for t in batch:
        if isinstance(t, torch.Tensor):
            t = t.to(device)
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
        out.append(t)
    return tuple(out)


def sync(device):
    if device == "tpu":
        torch.tpu.synchronize()


def train(case, model, device, steps, forward=None, dtype=None):
    """Trains model (already on device) for steps AdamW steps on case's batches; returns the Run.

    forward is what the loss calls (the model itself, or its torch.compile wrapper). Gradients are copied out
    after the optimizer step, outside the timed region (AdamW leaves them unchanged).
    """
    forward = model if forward is None else forward
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    names = [n for n, _ in model.named_parameters()]
    losses, grads, seconds = [], [], []
    for i in range(steps):
        batch = to(case.batch(i), device, dtype)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if case.autocast is not None:
            with torch.autocast(device, dtype=case.autocast):
                loss = case.loss(forward, batch)
        else:
            loss = case.loss(forward, batch)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        sync(device)
        seconds.append(time.perf_counter() - start)
        grads.append({n: (None if p.grad is None else p.grad.detach().to("cpu", torch.float64))
                      for n, p in zip(names, model.parameters())})
    params = {n: p.detach().to("cpu", torch.float64) for n, p in model.named_parameters()}
    buffers = {n: b.detach().cpu() for n, b in model.named_buffers()}
    return Run(losses, grads, seconds, params, buffers)


def reference(case, steps=STEPS, dtype=None):
    """CPU eager's run of case (float32 unless dtype says otherwise), computed once per step count and dtype."""
    key = (steps, dtype)
    if key not in case._reference:
        torch.manual_seed(0)
        model = case.build()
        if dtype is not None:
            model = model.to(dtype)
        case._reference[key] = train(case, model, "cpu", steps, dtype=dtype)
    return case._reference[key]


def grad_floor(grads):
    """FLOOR times the norm of all of one step's gradients together."""
    return FLOOR * sum(w.norm().item() ** 2 for w in grads.values() if w is not None) ** 0.5


def layout(t):
    """The strides of t's dimensions of more than one element: what places its elements in memory."""
    return tuple(st for st, n in zip(t.stride(), t.shape) if n > 1)


def gaps(got, want):
    """Per step: (relative loss gap, worst relative gradient error, the parameter it belongs to); a gradient laid
    out with other strides than CPU's fails at once.

    A gradient's error is the norm of its difference from CPU's over the norm of CPU's, or over FLOOR times the
    whole model's gradient norm where that is larger: a gradient that is zero in exact arithmetic (the key bias
    of softmax attention, which shifts all of a query's scores alike) is rounding noise on both sides (BERT's:
    3e-20 in float64, 1e-11 in float32, against a model gradient norm of 4.5).
    """
    out = []
    for lg, lw, gg, gw in zip(got.losses, want.losses, got.grads, want.grads):
        loss_gap = abs(lg - lw) / max(abs(lw), 1e-12)
        floor = grad_floor(gw)
        worst, where = 0.0, None
        for name, w in gw.items():
            g = gg[name]
            assert (g is None) == (w is None), f"{name}: gradient {'missing' if g is None else 'unexpected'}"
            if w is None:
                continue
            # The copies to CPU keep each gradient's strides (dense tensors keep their layout under .to()); a size-1
            # dimension's stride addresses nothing (a 1x1 convolution's weight: (128, 1, 128, 128) is (128, 1, 1, 1)).
            assert layout(g) == layout(w), \
                f"{name}: gradient strides {g.stride()} vs CPU's {w.stride()} (sizes {tuple(w.shape)})"
            err = (g - w).norm().item() / max(w.norm().item(), floor, 1e-30) if (g - w).abs().max() > 0 else 0.0
            if not err <= worst:  # catches NaN too
                worst, where = err, name
        out.append((loss_gap, worst, where))
    return out


def optimizer_gap(case, got):
    """Replays got's gradients through CPU's AdamW from the initial weights and returns the worst relative error
    of a tpu parameter after the last step against that replay, and its name.

    This checks tpu's optimizer steps apart from the gradients: against CPU's own trajectory, AdamW would turn
    the gradients' rounding noise into parameter moves of about lr whatever their size (BERT's key biases, whose
    gradient is zero in exact arithmetic, end 1.5 apart relative after four steps, CPU float32 against float64).
    """
    torch.manual_seed(0)
    model = case.build()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    named = list(model.named_parameters())
    for grads in got.grads:
        for n, p in named:
            p.grad = None if grads[n] is None else grads[n].to(p.dtype)
        opt.step()
    errs = {n: (got.params[n] - p.detach().double()).norm().item() / max(p.detach().double().norm().item(), 1e-30)
            for n, p in named}
    where = max(errs, key=errs.get)
    return errs[where], where


def compare_training(case, mode, steps=STEPS):
    """Trains case on tpu in mode against CPU eager and asserts every step's loss gap and gradient errors."""
    want = reference(case, steps)
    torch.manual_seed(0)
    model = case.build().to("tpu")
    forward = model
    torch.tpu.set_mode("strict" if mode == "compile" else mode)
    try:
        if mode == "compile":
            torch._dynamo.reset()
            forward = torch.compile(model, backend="tpu", dynamic=False)
        torch.tpu.reset_metrics()
        got = train(case, model, "tpu", steps, forward)
        torch.tpu.synchronize()
        metrics = torch.tpu.metrics()
    finally:
        torch.tpu.set_mode("strict")
    per_step = gaps(got, want)
    fallbacks = {k: v for k, v in metrics["cpu_fallbacks"].items() if v}
    params = optimizer_gap(case, got)
    record(case, mode, steps, per_step, params, got, want, metrics, fallbacks)
    for step, (loss_gap, worst, where) in enumerate(per_step):
        assert loss_gap <= at_step(case.loss_tol, step), \
            f"step {step}: loss {got.losses[step]} vs CPU {want.losses[step]} (relative gap {loss_gap:.3g})"
        assert worst <= at_step(case.grad_tol, step), \
            f"step {step}: gradient of {where} off by {worst:.3g} (relative)"
    assert params[0] <= OPTIMIZER_TOL, \
        f"after step {steps - 1}: parameter {params[1]} off by {params[0]:.3g} (relative) from CPU's AdamW"
    buffers = buffer_gap(got, want)
    assert buffers[0] <= at_step(case.loss_tol if case.buffer_tol is None else case.buffer_tol, steps - 1), \
        f"after step {steps - 1}: buffer {buffers[1]} off by {buffers[0]:.3g} (relative)"
    assert not fallbacks, f"CPU fallbacks: {fallbacks}"
    if mode == "compile":
        assert metrics["compiled_fallbacks"] == 0, metrics["compiled_fallback_reasons"]


def buffer_gap(got, want):
    """The worst relative error of a tpu buffer after the last step against CPU's (a batch norm's running mean
    and variance follow the batches' statistics, which the loss and gradients do not see), and its name; a
    buffer whose dtype, shape or strides differ from CPU's counts as infinitely far. As for gradients, the norm
    divided by is at least FLOOR times that of all floating buffers together: a running mean that is zero in exact
    arithmetic (the batch mean of a bias-free convolution of a batch norm's output, MaxViT's) is rounding noise
    on both sides."""
    worst, where = 0.0, None
    floor = FLOOR * sum(w.double().norm().item() ** 2 for w in want.buffers.values() if w.is_floating_point()) ** 0.5
    for name, w in want.buffers.items():
        g = got.buffers[name]
        if g.dtype != w.dtype or g.shape != w.shape or layout(g) != layout(w):
            return float("inf"), f"{name} ({g.dtype} {tuple(g.shape)} {g.stride()} against CPU's "\
                                 f"{w.dtype} {tuple(w.shape)} {w.stride()})"
        g, w = g.double(), w.double()
        err = (g - w).norm().item() / max(w.norm().item(), floor, 1e-30) if (g - w).abs().max() > 0 else 0.0
        if not err <= worst:
            worst, where = err, name
    return worst, where


def at_step(tol, step):
    """A tolerance for step: a number, or one per step whose last entry holds for every later step."""
    if isinstance(tol, (int, float)):
        return tol
    return tol[min(step, len(tol) - 1)]


def compare_dtypes(case, steps, low=torch.float32, high=torch.float64):
    """CPU in dtype low against CPU in dtype high: the per-step gaps that numerical noise alone gives."""
    return gaps(reference(case, steps, None if low == torch.float32 else low), reference(case, steps, high))


def record(case, mode, steps, per_step, params, got, want, metrics, fallbacks):
    path = os.environ.get("TORCHTPU_ZOO_REPORT")
    if not path:
        return
    later = got.seconds[1:] or got.seconds
    cpu_later = want.seconds[1:] or want.seconds
    row = {
        "model": case.name, "mode": mode, "steps": steps,
        "loss_gap": max(p[0] for p in per_step),
        "grad_err": max(p[1] for p in per_step),
        "grad_param": max(per_step, key=lambda p: p[1])[2],
        "per_step": [[p[0], p[1]] for p in per_step],
        "param_err": params[0], "param": params[1],
        "fallbacks": sum(fallbacks.values()),
        "xla_compiles": metrics["graphs_compiled"],
        "compiled_programs": metrics["compiled_programs"],
        "compiled_fallbacks": metrics["compiled_fallbacks"],
        "first_step_s": got.seconds[0],
        "steady_step_s": statistics.median(later),
        "cpu_steady_step_s": statistics.median(cpu_later),
    }
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
