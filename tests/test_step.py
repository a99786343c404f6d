"""Step boundaries: in fused mode a training step launches three graphs (the forward when the backward
starts, the backward when it ends, the optimizer step at opt.step()), the same three every step."""
import torch


class Square(torch.nn.Module):
    def forward(self, x):
        return x * x


def train(mode, steps=3):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), Square(), torch.nn.Linear(8, 2))
    x, y = torch.randn(16, 4), torch.randn(16, 2)
    model = model.to("tpu")
    x, y = x.to("tpu"), y.to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.tpu.set_mode(mode)
    try:
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        per_step, compiled = [], []
        for _ in range(steps):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            per_step.append(torch.tpu.metrics()["executions"])
            compiled.append(torch.tpu.metrics()["graphs_compiled"])
        m = torch.tpu.metrics()
        m["compiled_per_step"] = compiled
        assert not {k: v for k, v in m["cpu_fallbacks"].items() if v}
        params = [p.detach().cpu() for p in model.parameters()]
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
    return per_step, m, params


def test_fused_loop_runs_three_graphs_per_step(op_by_op):
    per_step, m, fused = train("fused")
    _, strict_m, strict = train("strict")
    # Forward, backward and optimizer step: three launches a step, cut at the same ops every step.
    assert per_step == [3, 6, 9], per_step
    assert m["flushes_by_reason"] == {"backward start": 3, "backward end": 3, "step mark": 3}, m["flushes_by_reason"]
    # The first step's optimizer differs (it creates the momentum buffers); from the third step on
    # every launch is a cache hit.
    assert m["compiled_per_step"][2] == m["compiled_per_step"][1], m["compiled_per_step"]
    assert strict_m["executions"] > 3 * m["executions"]
    assert "backward start" not in strict_m["flushes_by_reason"]
    for a, b in zip(fused, strict):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_backward_launches_the_forward_before_recording_the_rest():
    torch.manual_seed(0)
    w = torch.randn(32, 32).to("tpu").requires_grad_()
    x = torch.randn(8, 32).to("tpu")
    torch.tpu.set_mode("fused")
    try:
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        seen = []
        # A hook runs inside the backward pass, after the forward graph was launched at its first op.
        w.register_hook(lambda g: seen.append(torch.tpu.metrics()["executions"]))
        loss = torch.tanh(x @ w).sum()
        assert torch.tpu.metrics()["executions"] == 0
        loss.backward()
        assert seen == [1], seen
        grad = w.grad.cpu()
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
    wc = w.detach().cpu().requires_grad_()
    torch.tanh(x.cpu() @ wc).sum().backward()
    torch.testing.assert_close(grad, wc.grad, rtol=1e-5, atol=1e-5)


def test_cpu_optimizer_does_not_mark_steps():
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 3)).sum().backward()
    torch.tpu.reset_metrics()
    opt.step()
    opt.step()
    assert torch.tpu.metrics()["executions"] == 0


def test_mark_step_by_hand():
    torch.tpu.set_mode("fused")
    try:
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        a = torch.ones(4, device="tpu")
        b = a * 2 + 1
        torch.tpu.mark_step()
        assert torch.tpu.metrics()["executions"] == 1
        torch.testing.assert_close(b.cpu(), torch.full((4,), 3.0))
    finally:
        torch.tpu.set_mode("strict")
