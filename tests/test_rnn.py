"""nn.LSTM, nn.GRU and their cells on tpu against CPU: outputs, states and every gradient, in each mode and compiled.

PyTorch runs these modules on a non-CPU device through the fused cell kernels
(`_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell` and their backward), which have no CPU
kernel to fall back to, so the tests also check that nothing ran on the CPU.
"""
import copy

import pytest
import torch
import torch.nn as nn

from conftest import no_fallbacks

TOL = dict(atol=2e-5, rtol=2e-5)


def _modules():
    torch.manual_seed(0)
    return {
        "lstm": (nn.LSTM(6, 8, num_layers=2, batch_first=True), (3, 5, 6)),
        "lstm_bi_nobias": (nn.LSTM(6, 8, bidirectional=True, bias=False), (5, 3, 6)),
        "lstm_proj": (nn.LSTM(6, 8, proj_size=4, batch_first=True), (3, 5, 6)),
        "gru": (nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True), (3, 5, 6)),
        "gru_nobias": (nn.GRU(6, 8, bias=False), (5, 3, 6)),
    }


def _loss(out):
    y, state = out
    states = state if isinstance(state, tuple) else (state,)
    return (y * torch.linspace(-1, 1, y.shape[-1], device=y.device)).sum() + sum((s ** 2).sum() for s in states)


def _run(module, x, device):
    m = copy.deepcopy(module).to(device)
    xs = x.to(device).requires_grad_()
    out = m(xs)
    _loss(out).backward()
    y, state = out
    grads = {n: p.grad.cpu() for n, p in m.named_parameters()}
    return y.detach().cpu(), state, xs.grad.cpu(), grads


@pytest.mark.parametrize("name", list(_modules()))
def test_rnn_module_matches_cpu(mode, name):
    module, shape = _modules()[name]
    x = torch.randn(*shape)
    torch.tpu.reset_metrics()
    y, state, gx, grads = _run(module, x, "tpu")
    wy, wstate, wgx, wgrads = _run(module, x, "cpu")
    torch.testing.assert_close(y, wy, **TOL)
    states, wstates = (state, wstate) if isinstance(state, tuple) else ((state,), (wstate,))
    for s, w in zip(states, wstates):
        torch.testing.assert_close(s.detach().cpu(), w.detach(), **TOL)
    torch.testing.assert_close(gx, wgx, **TOL)
    assert grads.keys() == wgrads.keys()
    for n in grads:
        torch.testing.assert_close(grads[n], wgrads[n], **TOL, msg=lambda m: f"{name}.{n}: {m}")
    assert not no_fallbacks()


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_cells_with_given_state_match_cpu(mode, kind):
    torch.manual_seed(1)
    cell = nn.LSTMCell(5, 7) if kind == "lstm" else nn.GRUCell(5, 7)
    x, h = torch.randn(4, 5), torch.randn(4, 7)
    state = (h, torch.randn(4, 7)) if kind == "lstm" else h

    def run(device):
        c = copy.deepcopy(cell).to(device)
        xs = x.to(device).requires_grad_()
        st = tuple(s.to(device).requires_grad_() for s in state) if kind == "lstm" else state.to(device).requires_grad_()
        out = c(xs, st)
        outs = out if isinstance(out, tuple) else (out,)
        # Only hy reaches the loss for LSTM, so the kernel sees an absent grad_cy.
        outs[0].pow(2).sum().backward()
        sts = st if isinstance(st, tuple) else (st,)
        return [o.detach().cpu() for o in outs] + [xs.grad.cpu()] + [s.grad.cpu() for s in sts] + [
            p.grad.cpu() for p in c.parameters()]

    torch.tpu.reset_metrics()
    for got, want in zip(run("tpu"), run("cpu")):
        torch.testing.assert_close(got, want, **TOL)
    assert not no_fallbacks()


def test_lstm_trains_like_cpu(mode):
    torch.manual_seed(2)
    lstm, head = nn.LSTM(4, 16, batch_first=True), nn.Linear(16, 3)
    x, target = torch.randn(8, 10, 4), torch.randint(0, 3, (8,))

    def train(device):
        l, hd = copy.deepcopy(lstm).to(device), copy.deepcopy(head).to(device)
        opt = torch.optim.AdamW(list(l.parameters()) + list(hd.parameters()), lr=1e-2)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            y, _ = l(x.to(device))
            loss = nn.functional.cross_entropy(hd(y[:, -1]), target.to(device))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in l.parameters()]

    got, want = train("tpu"), train("cpu")
    torch.testing.assert_close(torch.tensor(got[0]), torch.tensor(want[0]), atol=1e-5, rtol=1e-5)
    for p, w in zip(got[1], want[1]):
        torch.testing.assert_close(p, w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("allow_rnn", [False, True])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_compiled_rnn_matches_cpu(kind, allow_rnn):
    """Dynamo runs RNN modules outside the graph unless allow_rnn is set; both ways give CPU's values."""
    import torch._dynamo

    torch._dynamo.reset()
    with torch._dynamo.config.patch(allow_rnn=allow_rnn):
        _compiled_rnn_matches_cpu(kind, allow_rnn)


def _compiled_rnn_matches_cpu(kind, allow_rnn):
    torch.manual_seed(3)
    module = nn.LSTM(6, 8, batch_first=True) if kind == "lstm" else nn.GRU(6, 8, batch_first=True)
    x = torch.randn(3, 5, 6)
    m = copy.deepcopy(module).to("tpu")
    compiled = torch.compile(m, backend="tpu")
    torch.tpu.reset_metrics()
    for _ in range(2):  # the second call replays the captured programs
        m.zero_grad()
        out = compiled(x.to("tpu"))
        _loss(out).backward()
    wout = module(x)
    _loss(wout).backward()
    torch.testing.assert_close(out[0].detach().cpu(), wout[0].detach(), **TOL)
    for (n, p), w in zip(m.named_parameters(), module.parameters()):
        torch.testing.assert_close(p.grad.cpu(), w.grad, **TOL, msg=lambda s: f"{n}: {s}")
    metrics = torch.tpu.metrics()
    assert metrics["compiled_fallbacks"] == 0, metrics["compiled_fallback_reasons"]
    if allow_rnn:
        assert metrics["compiled_replays"] >= 1, metrics
    assert not no_fallbacks()


def test_bad_gate_sizes_raise_naming_the_op():
    g = torch.randn(2, 12, device="tpu")
    with pytest.raises(RuntimeError, match="_thnn_fused_lstm_cell"):
        torch.ops.aten._thnn_fused_lstm_cell(g, g, torch.randn(2, 4, device="tpu"))
    x = torch.randn(2, 4, device="tpu")
    assert torch.tpu.is_available() and (x + 1).cpu().shape == (2, 4)
