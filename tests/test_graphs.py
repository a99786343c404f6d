"""torch.tpu.TPUGraph: a captured region replays as one program and computes what CPU eager does."""
import copy

import pytest
import torch
import torch.nn.functional as F


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def batches(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(32, 8, generator=g), torch.randn(32, 4, generator=g)) for _ in range(n)]


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=False)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


# CPU cannot be capturable; the tpu optimizer is, as CUDA graphs require for Adam's step count.
OPTIMIZERS = {
    "sgd": lambda ps, tpu: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps, tpu: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adamw_capturable": lambda ps, tpu: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, capturable=tpu),
}


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_train_step_replays_match_cpu(opt_name):
    data = batches(6)
    cpu = mlp()
    cpu_opt = OPTIMIZERS[opt_name](cpu.parameters(), False)
    tpu = copy.deepcopy(cpu).to("tpu")
    tpu_opt = OPTIMIZERS[opt_name](tpu.parameters(), True)
    static_x = torch.zeros(32, 8, device="tpu")
    static_y = torch.zeros(32, 4, device="tpu")

    # Warm-up (two eager steps, as CUDA requires before capture), then capture one step.
    cpu_losses, tpu_losses = [], []
    for x, y in data[:2]:
        cpu_losses.append(train_step(cpu, cpu_opt, x, y).item())
        static_x.copy_(x)
        static_y.copy_(y)
        tpu_losses.append(train_step(tpu, tpu_opt, static_x, static_y).item())
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        static_loss = train_step(tpu, tpu_opt, static_x, static_y)
    for x, y in data[2:]:
        cpu_losses.append(train_step(cpu, cpu_opt, x, y).item())
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        tpu_losses.append(static_loss.item())
    torch.testing.assert_close(torch.tensor(tpu_losses), torch.tensor(cpu_losses), rtol=1e-5, atol=1e-6)
    for p_cpu, p_tpu in zip(cpu.parameters(), tpu.parameters()):
        torch.testing.assert_close(p_tpu.detach().cpu(), p_cpu.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(p_tpu.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [torch.optim.Adam, torch.optim.AdamW])
def test_capturing_the_step_of_a_non_capturable_optimizer_raises(make):
    """As on CUDA: Adam's step count lives on the host unless capturable=True, so a captured step would replay
    one step's bias correction forever. The capture raises, leaves the parameters untouched and the engine
    usable; capturable=True captures."""
    w = torch.randn(4).to("tpu").requires_grad_()
    opt = make([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    before = w.detach().cpu()
    assert not torch.tpu.is_current_stream_capturing()
    seen = []
    with pytest.raises(RuntimeError, match=r"graph capture of step\(\) for an instance of " + make.__name__):
        with torch.tpu.graph(torch.tpu.TPUGraph()):
            seen.append(torch.tpu.is_current_stream_capturing())
            seen.append(torch.accelerator.current_stream().is_capturing())
            (w * w).sum().backward()
            opt.step()
    assert seen == [True, True] and not torch.tpu.is_current_stream_capturing()
    torch.testing.assert_close(w.detach().cpu(), before, rtol=0, atol=0)
    assert (w + 1).cpu().shape == (4,)


def test_capture_does_not_run_the_region():
    w = torch.ones(3, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        w.add_(1)
        out = w * 2
    assert w.cpu().tolist() == [1.0, 1.0, 1.0]
    g.replay()
    g.replay()
    assert w.cpu().tolist() == [3.0, 3.0, 3.0]
    assert out.cpu().tolist() == [6.0, 6.0, 6.0]
    assert out.stride() == (1,) and out.dtype == torch.float32


def test_replay_is_one_launch_and_records_no_ops():
    x = torch.randn(16, 16, device="tpu")
    w = torch.randn(16, 16, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        y = x
        for _ in range(5):
            y = torch.tanh(y @ w)
    g.replay()
    torch.tpu.synchronize()
    torch.tpu.reset_metrics()
    for _ in range(3):
        g.replay()
    torch.tpu.synchronize()
    m = torch.tpu.metrics()
    assert m["executions"] == 3
    assert m["ops_recorded"] == 0
    ref = x.cpu()
    for _ in range(5):
        ref = torch.tanh(ref @ w.cpu())
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-5, atol=1e-5)


def test_static_input_made_by_empty_sees_copies():
    x = torch.empty(4, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        y = x + 1
    for v in ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]):
        x.copy_(torch.tensor(v))
        g.replay()
        assert y.cpu().tolist() == [a + 1 for a in v]


def test_dropout_draws_new_masks_per_replay():
    x = torch.ones(64, 64, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        y = F.dropout(x, p=0.5, training=True)
    g.replay()
    first = y.cpu().clone()
    g.replay()
    second = y.cpu()
    assert not torch.equal(first, second)
    for m in (first, second):
        assert set(m.unique().tolist()) <= {0.0, 2.0}
        assert 0.3 < (m == 0).float().mean().item() < 0.7


@pytest.mark.parametrize("sync", ["item", "cpu", "print", "synchronize"])
def test_host_sync_in_capture_raises_and_engine_stays_usable(sync, capsys):
    x = torch.arange(4.0, device="tpu")
    g = torch.tpu.TPUGraph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        with torch.tpu.graph(g):
            y = x * 2
            if sync == "item":
                y.sum().item()
            elif sync == "cpu":
                y.cpu()
            elif sync == "print":
                print(y)
            else:
                torch.tpu.synchronize()
    with pytest.raises(RuntimeError, match="holds no capture"):
        g.replay()
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert (x * 3).cpu().tolist() == [0.0, 3.0, 6.0, 9.0]
    g2 = torch.tpu.TPUGraph()
    with torch.tpu.graph(g2):
        z = x + 1
    g2.replay()
    assert z.cpu().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_error_in_region_aborts_cleanly():
    x = torch.ones(3, device="tpu")
    g = torch.tpu.TPUGraph()
    with pytest.raises(RuntimeError):
        with torch.tpu.graph(g):
            x.add_(1)
            torch.mm(x, x)  # 1-D arguments: mm raises
    assert x.cpu().tolist() == [1.0, 1.0, 1.0]
    assert (x + 1).cpu().tolist() == [2.0, 2.0, 2.0]


def test_graph_keeps_its_storages_alive_and_reset_frees_them():
    torch.tpu.synchronize()
    before = torch.tpu.memory_allocated()
    x = torch.ones(1024, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        y = x * 2
    out = y
    del x, y
    g.replay()
    assert out.cpu()[:3].tolist() == [2.0, 2.0, 2.0]
    del out
    assert torch.tpu.memory_allocated() >= before + 2 * 4096
    g.reset()
    assert torch.tpu.memory_allocated() == before


def test_pool_handle_and_stream_are_accepted():
    pool = torch.tpu.graph_pool_handle()
    s = torch.tpu.Stream()
    x = torch.ones(2, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g, pool=pool, stream=s):
        y = x + x
    g.replay()
    assert y.cpu().tolist() == [2.0, 2.0]


def test_make_graphed_callables_forward_and_backward_match_cpu():
    cpu = mlp(3)
    tpu = copy.deepcopy(cpu).to("tpu")
    sample = torch.randn(32, 8, device="tpu", requires_grad=True)
    graphed = torch.tpu.make_graphed_callables(tpu, (sample,))
    for x, y in batches(3, seed=5):
        for p in list(cpu.parameters()) + list(tpu.parameters()):
            p.grad = None
        xc = x.clone().requires_grad_()
        loss_c = F.mse_loss(cpu(xc), y)
        loss_c.backward()
        xt = x.to("tpu").requires_grad_()
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        out = graphed(xt)
        assert torch.tpu.metrics()["executions"] == 2  # the input copy and the forward replay
        loss_t = F.mse_loss(out, y.to("tpu"))
        loss_t.backward()
        torch.testing.assert_close(loss_t.item(), loss_c.item(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-6)
        for p_cpu, p_tpu in zip(cpu.parameters(), tpu.parameters()):
            torch.testing.assert_close(p_tpu.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-6)


def test_make_graphed_callables_accumulates_gradients_across_backwards():
    """Two backwards without zero_grad sum both gradients, as eager does: the parameters' .grad must not be the
    backward graph's static buffer, which the second replay overwrites (it gave twice the second gradient)."""
    cpu = mlp(4)
    tpu = copy.deepcopy(cpu).to("tpu")
    graphed = torch.tpu.make_graphed_callables(tpu, (torch.randn(32, 8, device="tpu"),), num_warmup_iters=1)
    for x, y in batches(3, seed=7):
        F.mse_loss(cpu(x), y).backward()
        F.mse_loss(graphed(x.to("tpu")), y.to("tpu")).backward()
    for p_cpu, p_tpu in zip(cpu.parameters(), tpu.parameters()):
        torch.testing.assert_close(p_tpu.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-6)


def test_debug_dump_writes_the_captured_program(tmp_path):
    x = torch.ones(4, 3, device="tpu")
    g = torch.tpu.TPUGraph()
    with pytest.raises(RuntimeError, match="holds no capture"):
        g.debug_dump(str(tmp_path / "none.mlir"))
    g.enable_debug_mode()
    with torch.tpu.graph(g):
        y = (x * 2).exp().sum(dim=1)
    g.debug_dump(str(tmp_path / "g.mlir"))
    text = (tmp_path / "g.mlir").read_text()
    assert text.startswith("module") and "func.func public @main" in text
    assert "stablehlo.exponential" in text and "stablehlo.reduce" in text
    g.replay()
    torch.testing.assert_close(y.cpu(), (torch.ones(4, 3) * 2).exp().sum(dim=1))
