"""Optimizer steps mark step boundaries: a fused training loop launches about one graph per step."""
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
        per_step = []
        for _ in range(steps):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            per_step.append(torch.tpu.metrics()["executions"])
        m = torch.tpu.metrics()
        assert not {k: v for k, v in m["cpu_fallbacks"].items() if v}
        params = [p.detach().cpu() for p in model.parameters()]
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
    return per_step, m, params


def test_fused_loop_runs_one_graph_per_step():
    per_step, m, fused = train("fused")
    _, strict_m, strict = train("strict")
    # Each step launched its graph at opt.step() (a few extra graphs are allowed, but not one per op).
    assert per_step[0] >= 1
    assert all(b > a for a, b in zip(per_step, per_step[1:])), per_step
    assert m["executions"] <= 2 * len(per_step), m["executions"]
    assert strict_m["executions"] > 3 * m["executions"]
    assert m["ops_recorded"] > 3 * m["executions"]
    for a, b in zip(fused, strict):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


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
