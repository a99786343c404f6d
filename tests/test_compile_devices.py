"""torch.compile on several tpu devices (TORCHTPU_CPU_DEVICE_COUNT=2, read when the plugin loads,
so each scenario runs in its own interpreter): a captured program runs on its inputs' device."""
from compile_util import run

TWO = {"TORCHTPU_CPU_DEVICE_COUNT": "2"}


def test_one_compiled_graph_trains_on_each_device_like_cpu():
    res, _ = run("""
import copy
torch.manual_seed(0)
ref = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
x, y = torch.randn(4, 6), torch.randn(4, 3)

def loss_and_grads(model, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    return loss

want = loss_and_grads(ref, x, y).item()
want_grads = [p.grad for p in ref.parameters()]
step = torch.compile(loss_and_grads, backend="tpu")
out = []
for dev in ["tpu:1", "tpu:0", "tpu:1", "tpu:0"]:
    m = copy.deepcopy(ref).to(dev)
    for p in m.parameters():
        p.grad = None
    got = step(m, x.to(dev), y.to(dev))
    gerr = max((p.grad.cpu() - w).abs().max().item() for p, w in zip(m.parameters(), want_grads))
    out.append(dict(dev=dev, loss_dev=str(got.device), grad_devs=sorted({str(p.grad.device) for p in m.parameters()}),
                    loss_err=abs(got.item() - want), grad_err=gerr))
report(out=out, **counters())
""", env=TWO)
    for r in res["out"]:
        assert r["loss_dev"] == r["dev"] and r["grad_devs"] == [r["dev"]], r
        assert r["loss_err"] < 1e-6 and r["grad_err"] < 1e-6, r
    # Forward and backward, once per device; the second visit of a device replays its programs.
    assert res["compiled_fallbacks"] == 0, res["compiled_fallback_reasons"]
    assert res["compiled_programs"] == 4, res
    assert res["compiled_programs_by_reason"].get("device") == 2, res["compiled_programs_by_reason"]
    assert res["compiled_replays"] >= 4


def test_compiled_in_place_update_on_the_second_device():
    res, _ = run("""
torch.manual_seed(0)
w, g = torch.randn(5, 3), torch.randn(5, 3)

@torch.compile(backend="tpu")
def sgd(w, g, lr):
    # The random draw (times zero) makes the program take a seed, uploaded for its device.
    w.add_(g + torch.rand_like(g) * 0, alpha=-lr)
    return w.sum()

wt, gt = w.to("tpu:1"), g.to("tpu:1")
sums = [sgd(wt, gt, 0.5).item() for _ in range(3)]
ref = w.clone()
want = []
for _ in range(3):
    ref.add_(g, alpha=-0.5)
    want.append(ref.sum().item())
report(sums=sums, want=want, err=(wt.cpu() - ref).abs().max().item(), dev=str(wt.device), **counters())
""", env=TWO)
    assert res["err"] < 1e-6 and res["dev"] == "tpu:1"
    assert all(abs(a - b) < 1e-5 for a, b in zip(res["sums"], res["want"]))
    assert res["compiled_fallbacks"] == 0, res["compiled_fallback_reasons"]
    assert res["compiled_replays"] == 2, res
