"""TPUGraph replays after the first bind the storages the previous replay checked (graph_bound_replays counts
them); a storage changed since then sends the replay through the full checks, with their results and errors."""
import copy

import pytest
import torch

from test_graphs import batches, mlp, train_step as step


def bound_replays():
    return torch.tpu.metrics()["graph_bound_replays"]


def test_replays_bind_checked_storages_and_match_cpu():
    cpu = mlp()
    tpu = copy.deepcopy(cpu).to("tpu")
    cpu_opt = torch.optim.AdamW(cpu.parameters(), lr=1e-2)
    tpu_opt = torch.optim.AdamW(tpu.parameters(), lr=1e-2, capturable=True)
    data = batches(6)
    sx, sy = torch.zeros(32, 8, device="tpu"), torch.zeros(32, 4, device="tpu")

    cpu_losses, tpu_losses = [], []
    x, y = data[0]
    cpu_losses.append(step(cpu, cpu_opt, x, y).item())
    sx.copy_(x), sy.copy_(y)
    tpu_losses.append(step(tpu, tpu_opt, sx, sy).item())
    graph = torch.tpu.TPUGraph()
    with torch.tpu.graph(graph):
        static_loss = step(tpu, tpu_opt, sx, sy)
    before = bound_replays()
    for x, y in data[1:]:
        cpu_losses.append(step(cpu, cpu_opt, x, y).item())
        sx.copy_(x), sy.copy_(y)
        graph.replay()
        tpu_losses.append(static_loss.item())
    assert bound_replays() - before == len(data) - 2  # all but the first replay
    torch.testing.assert_close(torch.tensor(tpu_losses), torch.tensor(cpu_losses), rtol=1e-5, atol=1e-6)
    for p_cpu, p_tpu in zip(cpu.parameters(), tpu.parameters()):
        torch.testing.assert_close(p_tpu.detach().cpu(), p_cpu.detach(), rtol=1e-5, atol=1e-6)


def accumulate():
    """A graph of w += x with x = [1, 2, 3, 4] and w = 0, replayed twice (the second replay bound)."""
    x = torch.tensor([1.0, 2.0, 3.0, 4.0]).to("tpu")
    w = torch.zeros(4, device="tpu")
    graph = torch.tpu.TPUGraph()
    with torch.tpu.graph(graph):
        w.add_(x)
    before = bound_replays()
    graph.replay()
    graph.replay()
    assert bound_replays() - before == 1
    return graph, x, w


def test_pending_value_is_flushed_before_a_replay():
    graph, x, w = accumulate()
    with torch.tpu.mode("fused"):
        x.mul_(10)  # pending in fused mode
        before = bound_replays()
        graph.replay()
        assert bound_replays() == before  # the full checks ran
        assert w.cpu().tolist() == [12.0, 24.0, 36.0, 48.0]
        graph.replay()
    assert w.cpu().tolist() == [22.0, 44.0, 66.0, 88.0]


def test_replaced_parameter_storage_keeps_the_captured_one():
    graph, x, w = accumulate()
    old = w.data
    w.data = torch.full((4,), 100.0, device="tpu")  # a new storage: the graph still binds the old one
    graph.replay()
    assert old.cpu().tolist() == [3.0, 6.0, 9.0, 12.0]
    assert w.cpu().tolist() == [100.0] * 4
    del old
    graph.replay()
    x.copy_(torch.ones(4))
    graph.replay()
    assert w.cpu().tolist() == [100.0] * 4


@pytest.mark.parametrize("change", ["reshape", "retype"])
def test_changed_storage_fails_as_without_a_bound_replay(change):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0]).to("tpu")
    w = torch.zeros(4, device="tpu")
    graphs = [torch.tpu.TPUGraph(), torch.tpu.TPUGraph()]
    for graph in graphs:
        with torch.tpu.graph(graph):
            w.add_(x)
    graphs[0].replay()
    graphs[0].replay()  # bound; graphs[1] never replayed
    if change == "reshape":
        x.view(2, 2).copy_(torch.ones(2, 2))  # the storage is rewritten whole at another shape
    else:
        x.view(torch.int32).copy_(torch.zeros(4, dtype=torch.int32))
    errors = []
    for graph in graphs:
        before = bound_replays()
        with pytest.raises(RuntimeError, match="replay failed") as info:
            graph.replay()
        assert bound_replays() == before
        errors.append(str(info.value))
    assert errors[0] == errors[1]
