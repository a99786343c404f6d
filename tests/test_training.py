"""Training on tpu: each example's loss curve matches the same script on CPU, in every mode."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import train_cnn  # noqa: E402
import train_gpt  # noqa: E402
import train_mlp  # noqa: E402

STEPS = 30
EXAMPLES = {"mlp": train_mlp.train, "cnn": train_cnn.train, "gpt": train_gpt.train}
_cpu_losses = {}


def cpu_losses(name, steps=STEPS):
    # The examples' learning-rate schedules span their steps: a shorter run is a different curve.
    if (name, steps) not in _cpu_losses:
        _cpu_losses[name, steps] = EXAMPLES[name](device="cpu", steps=steps, seed=0, dropout=0.0, log=None)[0]
    return _cpu_losses[name, steps]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_loss_parity(name, mode):
    torch.tpu.reset_metrics()
    # Debug mode waits for every op: its first ten steps cover the same programs.
    steps = 10 if mode == "debug" else STEPS
    losses = EXAMPLES[name](device="tpu", mode=mode, steps=steps, seed=0, dropout=0.0, log=None)[0]
    torch.tpu.set_mode("strict")
    want = cpu_losses(name, steps)
    fallbacks = {k: v for k, v in torch.tpu.metrics()["cpu_fallbacks"].items() if v}
    assert fallbacks == {}, f"ops fell back to CPU: {fallbacks}"
    for step, (got, ref) in enumerate(zip(losses, want)):
        assert abs(got - ref) <= 1e-4 * max(1.0, abs(ref)), f"step {step}: tpu {got} vs cpu {ref}"
    assert len(losses) == steps and losses[-1] < losses[0]


def test_gpt_memory_stays_flat_and_is_released():
    import gc
    gc.collect()
    torch.tpu.synchronize()
    live0 = torch.tpu.metrics()["live_storages"]
    readings = []
    out = train_gpt.train(device="tpu", mode="fused", steps=200, seed=0, log=None,
                          on_step=lambda s: readings.append(torch.tpu.memory_allocated()))
    torch.tpu.set_mode("strict")
    after_warmup = readings[10:]
    assert min(after_warmup) > 0
    assert max(after_warmup) == min(after_warmup), f"memory moved: {min(after_warmup)}..{max(after_warmup)}"
    del out
    gc.collect()
    torch.tpu.synchronize()
    assert torch.tpu.metrics()["live_storages"] == live0


def test_bf16_autocast_mlp_converges_like_cpu():
    steps = 150
    cpu_acc = train_mlp.train(device="cpu", steps=steps, seed=0, dropout=0.0, log=None)[2]
    torch.tpu.reset_metrics()
    losses, _, tpu_acc = train_mlp.train(device="tpu", mode="fused", steps=steps, seed=0, dropout=0.0, log=None,
                                         autocast=torch.bfloat16)
    torch.tpu.set_mode("strict")
    assert abs(tpu_acc - cpu_acc) <= 0.02, f"bf16 autocast accuracy {tpu_acc:.3f} vs CPU fp32 {cpu_acc:.3f}"
    assert losses[-1] < 0.5 * losses[0]
    fallbacks = {k: v for k, v in torch.tpu.metrics()["cpu_fallbacks"].items() if v}
    assert fallbacks == {}, fallbacks


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_precision_parameters_train_like_cpu(dtype):
    def run(device):
        torch.manual_seed(0)
        x, y = train_mlp.make_data(n=256)
        model = train_mlp.MLP(dropout=0.0).to(device=device, dtype=dtype)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x, y = x.to(device=device, dtype=dtype), y.to(device)
        losses = []
        for _ in range(5):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.float().item())
        return losses, [p.detach().float().cpu() for p in model.parameters()]

    torch.tpu.reset_metrics()
    got, got_params = run("tpu")
    want, want_params = run("cpu")
    assert {k: v for k, v in torch.tpu.metrics()["cpu_fallbacks"].items() if v} == {}
    for g, w in zip(got, want):
        assert abs(g - w) <= 2e-2 * max(1.0, abs(w)), (got, want)
    for g, w in zip(got_params, want_params):
        torch.testing.assert_close(g, w, atol=2e-2, rtol=2e-2)
