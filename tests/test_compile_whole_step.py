"""A compiled training step as one program: in fused mode the compiled graphs of a step (forward,
backward, optimizer step; Dynamo breaks at loss.backward()) are recorded into the pending graph and
launch together at the optimizer step's boundary. Counted by the engine's launches, against eager
CPU PyTorch."""
import pytest
from compile_util import run

STEPS = 20

WHOLE_STEP = """
import copy
from torch._dynamo.utils import counters as dynamo_counters
torch.tpu.set_mode({mode!r})
SCHED, ACC, CLIP = {sched!r}, {acc}, {clip}
torch.manual_seed(0)
ref = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 4))
model = copy.deepcopy(ref).to("tpu")

def make(params, device):
    # A tensor learning rate: a scheduler then changes a value, not a guarded Python float.
    opt = torch.optim.AdamW(params, lr=torch.tensor(1e-2, device=device), weight_decay=0.1)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.9 ** s)

opt, sched = make(model.parameters(), "tpu")
ref_opt, ref_sched = make(ref.parameters(), "cpu")
g = torch.Generator().manual_seed(1)
data = [(torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)) for _ in range(4)]

def body(model, opt, sched, x, y):
    if ACC == 2:  # two micro-batches, gradients accumulated (unrolled: Dynamo skips a frame that breaks in a loop)
        l1 = F.cross_entropy(model(x[:8]), y[:8]) / 2
        l1.backward()
        l2 = F.cross_entropy(model(x[8:]), y[8:]) / 2
        l2.backward()
        loss = l1.detach() + l2.detach()
    else:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    if CLIP:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    opt.zero_grad(set_to_none=True)
    if SCHED == "inside":
        sched.step()
    return loss

@torch.compile(backend="tpu", mode={compile_mode!r})
def step(x, y):
    return body(model, opt, sched, x, y)

losses, ref_losses, launches, seen = [], [], [], []
for i in range({steps}):
    x, y = data[i % 4]
    before = torch.tpu.metrics()["executions"]
    loss = step(x.to("tpu"), y.to("tpu"))
    if SCHED == "outside":
        sched.step()
    m = torch.tpu.metrics()
    launches.append(m["executions"] - before)
    seen.append([dynamo_counters["stats"]["unique_graphs"], m["compiled_programs"], m["graphs_compiled"]])
    losses.append(loss.item())
    ref_losses.append(body(ref, ref_opt, ref_sched, x, y).item())
    if SCHED == "outside":
        ref_sched.step()
param_err = max((p.cpu() - q).abs().max().item() for p, q in zip(model.parameters(), ref.parameters()))
state_err = max((opt.state[p][k].cpu() - ref_opt.state[q][k]).abs().max().item()
                for p, q in zip(model.parameters(), ref.parameters()) for k in ("exp_avg", "exp_avg_sq"))
report(sched=SCHED, losses=losses, ref=ref_losses, launches=launches, seen=seen, param_err=param_err, state_err=state_err,
       grads_none=[p.grad is None for p in model.parameters()], lr=opt.param_groups[0]["lr"].item(),
       ref_lr=ref_opt.param_groups[0]["lr"].item(), mode_after=torch.tpu.get_mode(), deferred=torch.tpu.metrics()["compiled_deferred"],
       step_replays=torch.tpu.metrics()["step_replays"], params=[p.detach().cpu().flatten().tolist() for p in model.parameters()],
       **counters())
"""


def whole_step(sched, acc, clip, steps, mode="fused", compile_mode=None, env=None):
    res, _ = run(WHOLE_STEP.format(sched=sched, acc=acc, clip=clip, steps=steps, mode=mode, compile_mode=compile_mode),
                 env=env)
    return res


def check_whole_step(res, steps):
    for i, (got, want) in enumerate(zip(res["losses"], res["ref"])):
        assert abs(got - want) <= 1e-5, f"step {i}: loss {got} vs CPU {want}"
    assert len(res["losses"]) == steps
    assert res["param_err"] <= 1e-5 and res["state_err"] <= 1e-5, res
    assert all(res["grads_none"]), "zero_grad(set_to_none=True) inside the step leaves no grads"
    assert res["lr"] == pytest.approx(res["ref_lr"], rel=1e-6)
    assert res["ref_lr"] < 1e-2 * 0.9 ** (steps - 1) or res["sched"] == "none"
    # The first step captures each graph and launches it; from the second on, a step is one launch.
    assert res["launches"][1:] == [1] * (steps - 1), res["launches"]
    # Nothing compiles after the second step: no Dynamo graph, captured program or XLA program.
    assert all(s == res["seen"][1] for s in res["seen"][1:]), res["seen"]
    assert res["compiled_fallbacks"] == 0, res
    # Every captured program is replayed into the pending graph once a step.
    assert res["deferred"] == res["compiled_programs"] * (steps - 1), res


@pytest.mark.parametrize("sched", ["outside", "inside"])
def test_whole_step_with_accumulation_clipping_and_schedule_matches_cpu(sched):
    res = whole_step(sched, 2, True, STEPS)
    check_whole_step(res, STEPS)
    # Two forwards, two backwards, the clipping and the optimizer step at least.
    assert res["compiled_programs"] >= 5, res
    if sched == "inside":
        # From the third step on, the step's program replays and pastes nothing: the step tape holds
        # each compiled program's replay as one op (engine/program_tape.go). Bit for bit what recording
        # every step gives.
        recorded = whole_step(sched, 2, True, STEPS, env={"TORCHTPU_STEP_REPLAY": "0"})
        check_whole_step(recorded, STEPS)
        assert recorded["step_replays"] == 0
        assert res["step_replays"] >= STEPS - 3, res["step_replays"]
        assert res["losses"] == recorded["losses"]
        assert res["params"] == recorded["params"]


@pytest.mark.parametrize("mode,compile_mode", [("fused", None), ("strict", "reduce-overhead")])
def test_plain_step_returning_the_loss_is_one_launch(mode, compile_mode):
    # mode="reduce-overhead" records a compiled step as fused mode does, in strict mode too (the
    # scheduler's eager ops would launch on their own in strict mode, so it stays out of this step).
    res = whole_step("none", 1, False, 8, mode=mode, compile_mode=compile_mode)
    check_whole_step(res, 8)
    assert res["mode_after"] == mode  # a sync ends the open step: strict mode again
    assert res["compiled_programs"] == 3, res  # forward, backward, optimizer step


RESET = """
torch.tpu.set_mode("fused")
torch.manual_seed(0)
import copy, gc
ref = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
model = copy.deepcopy(ref).to("tpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
g = torch.Generator().manual_seed(1)
x, y = torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)

def body(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss

losses, ref_losses = [], []
for i in range(10):
    if i == 5:  # the compiled programs are freed while their replays sit in step tapes
        torch._dynamo.reset()
        gc.collect()
    step = torch.compile(lambda a, b: body(model, opt, a, b), backend="tpu")
    losses.append(step(x.to("tpu"), y.to("tpu")).item())
    ref_losses.append(body(ref, ref_opt, x, y).item())
err = max((p.cpu() - q).abs().max().item() for p, q in zip(model.parameters(), ref.parameters()))
report(losses=losses, ref=ref_losses, err=err, step_replays=torch.tpu.metrics()["step_replays"])
"""


def test_freed_programs_leave_no_step_tape_behind():
    res, _ = run(RESET)
    assert res["step_replays"] > 0, res
    for got, want in zip(res["losses"], res["ref"]):
        assert abs(got - want) <= 1e-5, res
    assert res["err"] <= 1e-5, res


DROPOUT = """
torch.tpu.set_mode("fused")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.5), nn.GELU(), nn.Linear(32, 4)).to("tpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.tpu.manual_seed(3)
g = torch.Generator().manual_seed(1)
batches = torch.randn(64, 8, generator=g).to("tpu")
labels = torch.randint(0, 4, (64,), generator=g).to("tpu")

@torch.compile(backend="tpu")
def step(x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss

losses, launches = [], []
for i in range(6):
    before = torch.tpu.metrics()["executions"]
    s = (i % 4) * 16
    losses.append(step(batches[s:s + 16], labels[s:s + 16]))  # a window of a larger storage
    launches.append(torch.tpu.metrics()["executions"] - before)
report(losses=[l.item() for l in losses], launches=launches, w=model[0].weight.cpu().flatten()[:16].tolist(),
       deferred=torch.tpu.metrics()["compiled_deferred"], **counters())
"""


def test_dropout_seeds_and_sliding_inputs_match_immediate_launches():
    # Each replay draws its seeds from the tpu generator whether it launches or is recorded, and a
    # batch sliced from a larger storage is read at its offset either way: the results agree bit for bit.
    deferred, _ = run(DROPOUT)
    launched, _ = run(DROPOUT, env={"TORCHTPU_DEFER_COMPILED": "0"})
    assert deferred["deferred"] > 0 and launched["deferred"] == 0
    assert deferred["launches"][1:] == [1] * 5, deferred["launches"]
    assert all(n >= 3 for n in launched["launches"][1:]), launched["launches"]
    assert deferred["losses"] == launched["losses"]
    assert deferred["w"] == launched["w"]
    assert len(set(deferred["losses"])) == len(deferred["losses"])


def test_strict_mode_still_launches_each_graph():
    res = whole_step("outside", 1, False, 4, mode="strict")
    assert res["mode_after"] == "strict"
    for got, want in zip(res["losses"], res["ref"]):
        assert abs(got - want) <= 1e-5
    assert res["deferred"] == 0
    assert all(n >= 3 for n in res["launches"][1:]), res["launches"]
