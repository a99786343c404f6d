"""Training under torch.compile(backend="tpu"): the three examples match CPU, a whole train step
(backward and AdamW inside the compiled function) matches CPU, and a second process with the same
TORCHTPU_CACHE_DIR compiles nothing."""
import pytest
from compile_util import run

STEPS = 30


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_example_loss_curve_matches_cpu(name):
    res, _ = run(f"""
import train_{name} as ex
cpu = ex.train(device="cpu", steps={STEPS}, seed=0, dropout=0.0, log=None)[0]
torch.tpu.reset_metrics()
tpu = ex.train(device="tpu", steps={STEPS}, seed=0, dropout=0.0, log=None, compile=True)[0]
report(cpu=cpu, tpu=tpu, **counters())
""", timeout=900)
    for step, (got, ref) in enumerate(zip(res["tpu"], res["cpu"])):
        assert abs(got - ref) <= 1e-4 * max(1.0, abs(ref)), f"step {step}: tpu {got} vs cpu {ref}"
    assert len(res["tpu"]) == STEPS
    # One forward and one backward program, replayed every later step.
    assert res["compiled_programs"] == 2 and res["compiled_fallbacks"] == 0, res
    assert res["compiled_replays"] == 2 * (STEPS - 1)


STEP_SCRIPT = """
import copy
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 4))
ref = copy.deepcopy(model)
model = model.to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1{capturable})
ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
g = torch.Generator().manual_seed(1)
data = [(torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)) for _ in range(4)]

@torch.compile(backend="tpu")
def train_step(x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss

w = model[0].weight
row, col = w[0], w.t()[:, 1]         # views of a parameter, taken before any step
losses, ref_losses, per_step, views_ok = [], [], [], []
for i in range(8):
    x, y = data[i % 4]
    before = counters()
    losses.append(train_step(x.to("tpu"), y.to("tpu")).item())
    after = counters()
    per_step.append(after["compiled_replays"] - before["compiled_replays"])
    l = F.cross_entropy(ref(x), y); l.backward(); ref_opt.step(); ref_opt.zero_grad()
    ref_losses.append(l.item())
    views_ok.append(torch.equal(row.cpu(), w[0].cpu()) and torch.equal(col.cpu(), w[1].cpu()))
param_err = max((p.cpu() - q).abs().max().item() for p, q in zip(model.parameters(), ref.parameters()))
steps_on = sorted({{s["step"].device.type for s in opt.state.values()}})
report(losses=losses, ref=ref_losses, per_step=per_step, views_ok=views_ok, param_err=param_err, steps_on=steps_on,
       **counters())
"""


@pytest.mark.parametrize("capturable", ["", ", capturable=True"], ids=["default", "capturable"])
def test_whole_train_step_with_adamw_matches_cpu(capturable):
    # By default AdamW keeps its step counts on the CPU; Dynamo moves them to the device for
    # CUDA and XPU parameters, and torchtpu has it do so for tpu ones, so the optimizer step is
    # a program either way.
    res, _ = run(STEP_SCRIPT.format(capturable=capturable))
    for got, want in zip(res["losses"], res["ref"]):
        assert abs(got - want) <= 1e-4 * max(1.0, abs(want))
    assert res["param_err"] < 1e-4
    assert all(res["views_ok"])
    # Dynamo breaks the step at loss.backward(): forward, backward and the optimizer step are one
    # program each, and every later step replays exactly those three.
    assert res["compiled_programs"] == 3 and res["compiled_fallbacks"] == 0, res
    assert res["per_step"][-1] == 3
    assert res["steps_on"] == ["tpu"]


def test_second_process_loads_programs_from_the_disk_cache(tmp_path):
    env = {"TORCHTPU_CACHE_DIR": str(tmp_path / "cache")}
    script = STEP_SCRIPT.format(capturable="")
    first, _ = run(script, env=env)
    second, _ = run(script, env=env)
    assert first["graphs_compiled"] > 0
    assert second["graphs_compiled"] == 0
    assert second["compiled_programs"] == 3
    assert second["losses"] == first["losses"]
