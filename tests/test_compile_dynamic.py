"""A dynamic compiled graph in a loop whose sizes grow a step at a time (a decoding step over a key/value cache
appended by cat): its first shapes are captured as programs, later new shapes are recorded in fused mode, where
the growing cache is held padded (engine/pad.go), so the loop compiles a bounded number of programs however
many steps it takes, never hits Dynamo's recompile limit, and gives CPU's values at every step."""
import compile_util

DECODE = """
torch.manual_seed(0)
D, B = 8, 2

class Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))

    def forward(self, x, kc, vc):
        # x: (batch, heads, 1, D); the cache: (batch, heads, length, D), as transformers keeps it.
        k = torch.cat([kc, self.k(x)], dim=2)
        v = torch.cat([vc, self.v(x)], dim=2)
        a = F.scaled_dot_product_attention(self.q(x), k, v)
        return self.o(a).tanh(), k, v

def decode(step, x, kc, vc, n):
    outs = []
    for _ in range(n):
        x, kc, vc = step(x, kc, vc)
        outs.append(x)
    return outs, kc, vc

step = Step().eval()
x0, k0, v0 = torch.randn(B, 2, 1, D), torch.randn(B, 2, 4, D), torch.randn(B, 2, 4, D)
with torch.no_grad():
    want, wk, wv = decode(step, x0, k0, v0, {steps})
    tstep = step.to("tpu")
    cstep = torch.compile(tstep.forward, backend="tpu", **{kw})
    torch.tpu.reset_metrics()
    got, gk, gv = decode(cstep, x0.to("tpu"), k0.to("tpu"), v0.to("tpu"), {steps})
    torch.tpu.await_compiles()  # strict mode's background compiles count once taken in
    worst = max((g.cpu() - w).abs().max().item() for g, w in zip(got, want))
    ok = gk.shape == wk.shape and gk.stride() == wk.stride() and torch.allclose(gk.cpu(), wk, atol=1e-5)
    ok = ok and torch.allclose(gv.cpu(), wv, atol=1e-5)
    first = counters()
    # A second loop from the same start: nothing new to compile.
    decode(cstep, x0.to("tpu"), k0.to("tpu"), v0.to("tpu"), {steps})
    torch.tpu.synchronize()
    torch.tpu.await_compiles()
m = torch.tpu.metrics()
from torch._dynamo.utils import counters as dynamo
report(worst=worst, cache_ok=ok, first=first, compiled_again=m["graphs_compiled"] - first["graphs_compiled"],
       recorded=m["compiled_recorded_calls"], frames=dynamo["stats"]["unique_graphs"],
       report=torch.tpu.metrics_report())
"""


def test_a_growing_decode_loop_compiles_a_bounded_number_of_programs():
    # 40 steps from 4 keys, capacities from 16: the cache crosses 16, 32 and 64 while it grows to 44.
    res, err = compile_util.run(DECODE.format(steps=40, kw="{}"), env={"TORCHTPU_PAD_MIN": "16",
                                                                   "TORCHTPU_LOG": "recompiles"})
    assert res["worst"] < 1e-5 and res["cache_ok"], res
    first = res["first"]
    assert first["compiled_fallbacks"] == 0, first["compiled_fallback_reasons"]
    # Dynamo: a static graph for the first size, a dynamic one from the second on: never the recompile limit.
    assert res["frames"] <= 2, res
    # Programs: the static graph's and two dynamic shapes' captures, then the recorded steps (the step that first
    # grows the cache, and each capacity's padded step: 16, 32, 64), with their one-op uploads: O(log n), where
    # one program per length compiled 40.
    assert first["compiled_programs"] == 3, first
    assert first["graphs_compiled"] <= 12, first
    # The second loop: Dynamo hands every size to the dynamic graph (its newest), which replays its two
    # captured shapes and records the other 38; its first step, which starts a new cache from a plain tensor,
    # compiles the one program its size had not needed before.
    assert res["recorded"] == (40 - 3) + (40 - 2), res
    assert res["compiled_again"] <= 1, res
    assert "is dynamic and has programs for 2 shapes" in err
    assert "torch.compile calls recorded fused (dynamic shapes past a graph's programs) 75" in res["report"]


def test_dynamic_true_captures_its_first_shapes_and_records_the_rest():
    res, _ = compile_util.run(DECODE.format(steps=12, kw="{\"dynamic\": True}"))
    assert res["worst"] < 1e-5 and res["cache_ok"], res
    first = res["first"]
    assert res["frames"] == 1 and first["compiled_programs"] == 2, res
    assert res["recorded"] == 2 * (12 - 2) and res["compiled_again"] <= 1, res


TRAIN = """
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
tmodel = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
tmodel.load_state_dict(model.state_dict())
tmodel = tmodel.to("tpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9)

def step(m, o, x, y):
    loss = F.cross_entropy(m(x), y)
    loss.backward()
    o.step()
    o.zero_grad()
    return loss

cstep = torch.compile(step, backend="tpu", dynamic=True)
losses, worst_grad = [], 0.0
for n in [8, 6, 4, 7, 8, 5, 6, 4, 7, 5]:   # five batch sizes: the first at its static graph, two captured, the rest recorded
    x, y = torch.randn(n, 6), torch.randint(0, 3, (n,))
    want = step(model, opt, x, y).item()
    got = cstep(tmodel, topt, x.to("tpu"), y.to("tpu")).item()
    losses.append((got, want))
diff = max((a.detach().cpu() - b.detach()).abs().max().item() for a, b in zip(tmodel.parameters(), model.parameters()))
bufs = [topt.state[p]["momentum_buffer"].cpu() for p in tmodel.parameters()]
wbufs = [opt.state[p]["momentum_buffer"] for p in model.parameters()]
mom = max((a - b).abs().max().item() for a, b in zip(bufs, wbufs))
m = torch.tpu.metrics()
report(losses=losses, params=diff, momentum=mom, recorded=m["compiled_recorded_calls"], **counters())
"""


def test_a_dynamic_training_step_records_new_batch_sizes_like_cpu():
    # Momentum buffers hold every step's gradients: equal buffers and parameters after ten steps at five batch
    # sizes say the recorded steps' gradients equal CPU's, not only their losses.
    res, _ = compile_util.run(TRAIN)
    for got, want in res["losses"]:
        assert abs(got - want) <= 1e-5 * max(1.0, abs(want)), res["losses"]
    assert res["params"] < 1e-5 and res["momentum"] < 1e-5, res
    assert res["compiled_fallbacks"] == 0, res["compiled_fallback_reasons"]
    assert res["recorded"] > 0 and res["compiled_programs"] == 6, res  # forward and backward at three shapes


def test_the_number_of_captured_shapes_is_a_setting():
    res, _ = compile_util.run(DECODE.format(steps=12, kw="{\"dynamic\": True}"), env={"TORCHTPU_DYNAMIC_PROGRAMS": "5"})
    assert res["worst"] < 1e-5 and res["cache_ok"], res
    assert res["first"]["compiled_programs"] == 5 and res["recorded"] == 2 * (12 - 5), res
