"""Fused step replay: a segment whose ops match an earlier segment's step tape records nothing and
launches that segment's program; a segment that differs records again from the differing op on.
CPU PyTorch is the reference for values; the same script with TORCHTPU_STEP_REPLAY=0 is the
reference for random draws."""
import json
import os
import re
import textwrap

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fork_server

ROOT = os.path.join(os.path.dirname(__file__), "..")
TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture
def fused():
    torch.tpu.set_mode("fused")
    torch.tpu.synchronize()
    torch.tpu.reset_metrics()
    yield
    torch.tpu.synchronize()
    torch.tpu.set_mode("strict")


class MLP(nn.Module):
    """Three layers whose middle activation a test may swap between steps."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 4)
        self.act, self.drop = nn.GELU(), nn.Dropout(dropout)

    def forward(self, x):
        return self.fc3(self.act(self.fc2(self.drop(torch.relu(self.fc1(x))))))


def batch(i, n=24):
    g = torch.Generator().manual_seed(100 + i)
    return torch.randn(n, 16, generator=g), torch.randint(0, 4, (n,), generator=g)


def train(device, steps, before_step=lambda i, model: None, keep=lambda i: None):
    """AdamW on a new batch each step; returns the losses, the model and the last step's grads.

    before_step may change the model; keep(i) returns the number of rows of the logits the loss uses
    (None: all)."""
    torch.manual_seed(0)
    model = MLP().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = []
    for i in range(steps):
        before_step(i, model)
        x, y = (t.to(device) for t in batch(i))
        n = keep(i)
        logits = model(x)
        if n is not None:
            logits, y = logits[:n], y[:n]
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [float(v.item()) for v in losses], model, [p.grad.detach().clone() for p in model.parameters()]


def assert_matches_cpu(got, want):
    losses, model, grads = got
    ref_losses, ref_model, ref_grads = want
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **TOL)
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), **TOL, msg=lambda m: f"{name}: {m}")
    for g, h in zip(grads, ref_grads):
        torch.testing.assert_close(g.cpu(), h, **TOL)


ADAMW_LOOP = """
import json, sys
sys.path.insert(0, {tests!r})
import torch
import test_fused_step_replay as t
torch.tpu.set_mode("fused")
got = t.train("tpu", {steps})
m = torch.tpu.metrics()
t.assert_matches_cpu(got, t.train("cpu", {steps}))
print(json.dumps(m))
"""


def test_adamw_loop_replays_its_steps_and_matches_cpu():
    # A process of its own, as a training script is: after some other test files in one process, one
    # segment of this loop once departed from its tape (its fourth op of 16), with the values still CPU's.
    steps = 20
    r = fork_server.run(ADAMW_LOOP.format(tests=os.path.dirname(__file__), steps=steps), cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads(r.stdout.splitlines()[-1])
    # Each step is three segments (forward, backward, optimizer step); from the second step on,
    # each replays its tape: the optimizer's step count changes its numbers, so some of its ops run
    # their rule again, on the tape's program.
    assert m["step_replays"] >= 3 * (steps - 2), m
    assert m["step_replay_ops"] >= 20 * (steps - 2), m
    assert m["step_replay_reruns"] > 0, m
    assert m["step_replay_fallbacks"] == 0, m
    assert m["graphs_compiled"] <= 6, m


def test_a_step_with_another_op_falls_back_and_matches_cpu(fused):
    # Step 6 swaps the middle activation: the forward and backward segments match their tapes up to
    # it, record from there on, and the next step replays the usual tapes again.
    def swap(i, model):
        model.act = nn.Tanh() if i == 6 else nn.GELU()

    steps = 10
    got = train("tpu", steps, before_step=swap)
    m = torch.tpu.metrics()
    assert_matches_cpu(got, train("cpu", steps, before_step=swap))
    assert m["step_replay_fallbacks"] >= 2, m
    assert m["step_replays"] >= 3 * (steps - 4), m


def test_a_step_with_another_shape_falls_back_and_matches_cpu(fused):
    # Step 5 trains on the first 10 rows of the logits: the slice changes the shape of the loss's
    # input in the middle of the forward segment.
    steps = 9
    keep = lambda i: 10 if i == 5 else None  # noqa: E731
    got = train("tpu", steps, keep=keep)
    m = torch.tpu.metrics()
    assert_matches_cpu(got, train("cpu", steps, keep=keep))
    assert m["step_replay_fallbacks"] >= 1, m
    assert m["step_replays"] >= 3 * (steps - 4), m


DEPARTURES = """
import sys
sys.path.insert(0, {tests!r})
import torch, torch.nn as nn
import test_fused_step_replay as t
torch.tpu.set_mode("fused")
t.train("tpu", 8, before_step=lambda i, model: setattr(model, "act", nn.Tanh() if i == 5 else nn.GELU()))
print("switch", flush=True)
t.train("tpu", 8, keep=lambda i: 10 if i == 5 else None)
print("end", torch.tpu.metrics()["step_replay_fallbacks"], flush=True)
"""


def test_the_replays_log_says_where_and_why_a_step_departs():
    r = fork_server.run(DEPARTURES.format(tests=os.path.dirname(__file__)),
                        env=dict(os.environ, TORCHTPU_LOG="replays"), cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [l for l in r.stderr.splitlines() if l.startswith("torchtpu: step replay departs")]
    fallbacks = int(r.stdout.split()[-1])
    assert len(lines) >= fallbacks >= 6, (r.stdout, lines)
    # Step 5 swaps GELU for Tanh: the forward departs at the activation (op 4 of the forward's 8) and
    # the backward at its gradient; step 6 departs back from the tapes step 5 recorded.
    want = [r"op 4 of 8 \(aten::gelu\): another op \(aten::tanh where the tape has aten::gelu\)",
            r"\(aten::gelu_backward\): another op \(aten::tanh_backward where the tape has aten::gelu_backward\)",
            r"op 4 of 8 \(aten::tanh\): another op \(aten::gelu where the tape has aten::tanh\)",
            # The short slice of the logits reaches log_softmax with 10 rows where the tape has 24.
            r"\(aten::_log_softmax\): argument 0's tensor 0: float32 \[10 4\] strides \[4 1\] "
            r"where the tape has float32 \[24 4\] strides \[4 1\]",
            r"\(aten::_log_softmax\): argument 0's tensor 0: float32 \[24 4\] strides \[4 1\] "
            r"where the tape has float32 \[10 4\] strides \[4 1\]"]
    at = 0
    for w in want:
        found = [i for i, l in enumerate(lines) if i >= at and re.search(w, l)]
        assert found, (w, lines)
        at = found[0] + 1
    # Without the topic nothing is printed.
    r = fork_server.run(DEPARTURES.format(tests=os.path.dirname(__file__)),
                        env={k: v for k, v in os.environ.items() if k != "TORCHTPU_LOG"}, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "step replay departs" not in r.stderr, r.stderr[-3000:]


def test_a_new_batch_shape_records_its_own_tape(fused):
    # A batch of another size matches no tape from its first op: the step records, and later steps
    # of either size replay their own tape.
    def run(device):
        torch.manual_seed(0)
        w = torch.randn(16, 8).to(device)
        outs = []
        for i in range(8):
            x = batch(i, n=12 if i % 2 else 24)[0].to(device)
            outs.append(torch.tanh(x @ w).sum(0).cpu())
        return outs

    got = run("tpu")
    m = torch.tpu.metrics()
    for a, b in zip(got, run("cpu")):
        torch.testing.assert_close(a, b, **TOL)
    assert m["step_replays"] >= 5, m


def test_a_result_kept_alive_is_computed_although_the_tape_dropped_it(fused):
    # The tape's program does not output h (it was freed before its flush); the step that keeps h
    # cannot launch it and records instead.
    torch.manual_seed(0)
    w = torch.randn(8, 8)
    tw = w.to("tpu")
    for i in range(6):
        x = batch(i, n=4)[0][:, :8]
        if i == 4:
            h = torch.relu(x.to("tpu") @ tw)
            out = (h * 2).sum(0).cpu()
            torch.testing.assert_close(h.cpu(), torch.relu(x @ w), **TOL)
        else:
            out = (torch.relu(x.to("tpu") @ tw) * 2).sum(0).cpu()
        torch.testing.assert_close(out, (torch.relu(x @ w) * 2).sum(0), **TOL)
    m = torch.tpu.metrics()
    assert m["step_replays"] >= 3 and m["step_replay_fallbacks"] >= 1, m


def test_out_writes_in_place_views_and_moving_windows(fused):
    # out= into a persistent tensor, an in-place op on a view of it, an accumulation, and a window of
    # a device-resident dataset that moves every step (its offset is a runtime input, so the op
    # reading it runs its rule again on the tape's program).
    data = torch.randn(40, 8)

    def run(device):
        d = data.to(device)
        buf, acc = torch.zeros(4, 8, device=device), torch.zeros(8, device=device)
        for i in range(8):
            torch.mul(d[4 * i:4 * i + 4], 2, out=buf)
            buf[:, 1:3].add_(1.0)
            acc.add_(buf.sum(0))
            if device == "tpu":
                torch.tpu.mark_step()
        return buf.cpu(), acc.cpu()

    got = run("tpu")
    m = torch.tpu.metrics()
    for a, b in zip(got, run("cpu")):
        torch.testing.assert_close(a, b, **TOL)
    assert m["step_replays"] >= 5 and m["step_replay_reruns"] >= 5, m


def test_a_step_that_reads_host_values_still_matches_cpu(fused):
    # A boolean mask reads the data to the host in the middle of the step: the segment before the
    # read replays, the read launches it, and the values stay right.
    torch.manual_seed(0)
    w = torch.randn(8, 8)
    tw = w.to("tpu")
    for i in range(5):
        x = batch(i, n=6)[0][:, :8]
        h = torch.tanh(x.to("tpu") @ tw)
        got = (h[h > 0] * 3).cpu()
        ref = torch.tanh(x @ w)
        torch.testing.assert_close(got, ref[ref > 0] * 3, **TOL)
    assert torch.tpu.metrics()["step_replays"] >= 3


def test_positions_from_arange_replay_with_their_value_range(fused):
    # torch.arange fills an empty out that PyTorch resizes after the first call, and the value
    # range of its result lets the embedding skip its index check: both replay. Positions that start
    # past the table have another range: that step leaves the tape, and the index check raises as
    # on CPU.
    torch.manual_seed(0)
    table = torch.randn(16, 4)
    tt = table.to("tpu")
    for i, start in enumerate([0, 0, 0, 0, 10, 0, 0]):
        pos = torch.arange(start, start + 8, device="tpu")
        if start + 8 > 16:
            with pytest.raises(IndexError, match="out of range"):
                F.embedding(pos, tt).cpu()
            continue
        got = (F.embedding(pos, tt) * (i + 1)).sum(0).cpu()
        torch.testing.assert_close(got, (table[start:start + 8] * (i + 1)).sum(0), **TOL)
    m = torch.tpu.metrics()
    assert m["step_replays"] >= 4 and m["step_replay_fallbacks"] >= 1, m


def test_a_learning_rate_schedule_replays_with_the_new_rates(fused):
    def run(device):
        torch.manual_seed(0)
        model = nn.Linear(16, 4).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for i in range(8):
            x, y = (t.to(device) for t in batch(i))
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        return [p.detach().cpu() for p in model.parameters()]

    got = run("tpu")
    m = torch.tpu.metrics()
    for a, b in zip(got, run("cpu")):
        torch.testing.assert_close(a, b, **TOL)
    assert m["step_replays"] >= 10 and m["step_replay_reruns"] > 0, m


def test_dropout_draws_anew_each_replayed_step(fused):
    torch.manual_seed(0)
    x = torch.ones(64, 64, device="tpu")
    outs = []
    for _ in range(6):
        outs.append((F.dropout(x, 0.5, training=True) + 0).cpu())
    m = torch.tpu.metrics()
    # The dropout replays without running its rule again: each replay uploads its own seed.
    assert m["step_replays"] >= 4 and m["step_replay_reruns"] == 0, m
    masks = [o != 0 for o in outs]
    for a, b in zip(masks, masks[1:]):
        assert not torch.equal(a, b)
    for o, k in zip(outs, masks):
        assert set(o.unique().tolist()) <= {0.0, 2.0}
        assert 0.45 < k.float().mean().item() < 0.55


DROPOUT_TRAINING = """
    import torch, torch.nn.functional as F
    sys_path = {root!r}
    import sys; sys.path.insert(0, sys_path + "/tests")
    from test_fused_step_replay import MLP, batch
    torch.tpu.set_mode("fused")
    torch.manual_seed(0)
    model = MLP(dropout=0.3).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for i in range(8):
        x, y = (t.to("tpu") for t in batch(i))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    m = torch.tpu.metrics()
    print(*(repr(v) for v in losses), repr(sum(p.sum().item() for p in model.parameters())))
    print(m["step_replays"], m["step_replay_reruns"])
"""


@pytest.mark.parametrize("cut", ["1", "0"], ids=["three-programs", "one-program"])
def test_replay_draws_the_same_numbers_as_recording(cut):
    # The same seeds reach each dropout whether its step is replayed or recorded, so a training run
    # with dropout gives bit for bit the same losses and parameters either way.
    out = {}
    for flag in ("1", "0"):
        env = dict(os.environ, TORCHTPU_STEP_REPLAY=flag, TORCHTPU_BACKWARD_CUT=cut)
        r = fork_server.run(textwrap.dedent(DROPOUT_TRAINING.format(root=ROOT)), env=env, cwd=ROOT, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        out[flag] = r.stdout.splitlines()
    assert out["1"][0] == out["0"][0], out
    replays, reruns = map(int, out["1"][1].split())
    assert replays >= 5 and reruns >= 5, out["1"]
    assert out["0"][1] == "0 0", out["0"]
