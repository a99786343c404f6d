"""0-dim CPU tensors as inputs of compiled graphs (HuggingFace's generate() passes cache positions so): each is
copied to the device at the call and bound as a 0-dim program input, so a new value replays the program."""
from compile_util import run


def test_cpu_scalars_are_program_inputs_and_new_values_do_not_recompile():
    res, _ = run("""
def f(x, n, s):
    # An int64 scalar and a float scalar, used as values (n also picks a row).
    rows = torch.arange(x.shape[0], device=x.device)[:, None]
    return (x * s).sin() + n, torch.where(rows == n, x * s, 0.0)
cf = torch.compile(f, backend="tpu")
x = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
ok, devices = [], []
torch.tpu.reset_metrics()
for v, w in [(1, 0.5), (4, -2.25), (0, 3.0), (5, 1e-3)]:
    n, s = torch.tensor(v), torch.tensor(w)
    got = cf(x.to("tpu"), n, s)
    want = f(x, n, s)
    devices += [g.device.type for g in got]
    ok.append(all(g.dtype == w_.dtype and g.shape == w_.shape and torch.allclose(g.cpu(), w_, rtol=1e-6, atol=1e-6)
                  for g, w_ in zip(got, want)))
    ok.append(n.item() == v and n.device.type == "cpu")  # the caller's tensor is left alone
m = torch.tpu.metrics()
report(ok=ok, devices=sorted(set(devices)), scalar_inputs=m["compiled_scalar_inputs"], **counters())
""")
    assert res["ok"] == [True] * 8
    assert res["devices"] == ["tpu"]
    # One program for four values: compiled once, replayed three times, never run eagerly.
    assert res["compiled_programs"] == 1 and res["compiled_programs_by_reason"] == {"new": 1}
    assert res["graphs_compiled"] == 1 and res["compiled_replays"] == 3
    assert res["compiled_fallbacks"] == 0 and res["compiled_fallback_calls"] == 0
    assert res["scalar_inputs"] == 8


def test_a_new_scalar_dtype_is_a_new_program():
    res, _ = run("""
def f(x, s):
    return x * s + 1
cf = torch.compile(f, backend="tpu")
x = torch.randn(3, 3, generator=torch.Generator().manual_seed(0))
ok = []
for s in [torch.tensor(2), torch.tensor(3), torch.tensor(2.5), torch.tensor(0.5, dtype=torch.float64)]:
    got = cf(x.to("tpu"), s)
    want = f(x, s)
    ok.append(got.dtype == want.dtype and torch.allclose(got.cpu(), want, atol=1e-5))
report(ok=ok, **counters())
""")
    assert res["ok"] == [True] * 4
    # int64, then float32 and float64: one program per dtype (Dynamo may trace a dtype anew, as a new graph).
    assert res["compiled_programs"] == 3 and sum(res["compiled_programs_by_reason"].values()) == 3
    assert res["compiled_replays"] == 1 and res["compiled_fallbacks"] == 0


def test_scalars_that_shape_the_result_stay_correct():
    # A value that decides a shape cannot be a program input: Dynamo breaks the graph at .item() (each length
    # is then its own program), or, capturing scalar outputs, the graph reads the value to the host and runs
    # eagerly. Either way the results are CPU's.
    res, _ = run("""
def head(x, n):
    return x[: n.item()] * 2
def ones(x, n):
    # x.sum() adds in another order than CPU's: where it is near -1, what is left is its rounding, hence atol.
    return torch.ones(int(n), 4, device=x.device) + x.sum()
x = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
ok = []
for fn in (head, ones):
    cf = torch.compile(fn, backend="tpu")
    for v in [2, 5, 2, 3]:
        n = torch.tensor(v)
        got, want = cf(x.to("tpu"), n), fn(x, n)
        ok.append(got.shape == want.shape and torch.allclose(got.cpu(), want, atol=1e-5))
first = counters()
torch._dynamo.reset()
torch._dynamo.config.capture_scalar_outputs = True
cf = torch.compile(head, backend="tpu")
for v in [2, 5, 3]:
    n = torch.tensor(v)
    got, want = cf(x.to("tpu"), n), head(x, n)
    ok.append(got.shape == want.shape and torch.allclose(got.cpu(), want, atol=1e-5))
report(ok=ok, first=first, **counters())
""")
    assert res["ok"] == [True] * 11
    assert res["first"]["compiled_fallbacks"] == 0, res["first"]["compiled_fallback_reasons"]
    reasons = res["compiled_fallback_reasons"]
    assert res["compiled_fallbacks"] >= 1 and any("host" in r for r in reasons), reasons


def test_scalar_inputs_written_in_place_or_returned_on_cpu_run_eagerly():
    res, _ = run("""
def bump(x, s):
    s.add_(1)
    return x * s
def keep(x, s):
    return x * s, s + 1
x = torch.randn(3, 3, generator=torch.Generator().manual_seed(0))
ok = []
cb, ck = torch.compile(bump, backend="tpu"), torch.compile(keep, backend="tpu")
for v in [1.0, 2.0]:
    s, s_ref = torch.tensor(v), torch.tensor(v)
    got, want = cb(x.to("tpu"), s), bump(x, s_ref)
    ok.append(torch.allclose(got.cpu(), want, atol=1e-5) and s.item() == s_ref.item() == v + 1 and s.device.type == "cpu")
    s = torch.tensor(v)
    (a, b), (wa, wb) = ck(x.to("tpu"), s), keep(x, s)
    ok.append(torch.allclose(a.cpu(), wa) and b.device == wb.device and torch.equal(b, wb))
report(ok=ok, **counters())
""")
    assert res["ok"] == [True] * 4
    reasons = res["compiled_fallback_reasons"]
    assert res["compiled_fallbacks"] == 2, reasons
    assert any("written in place" in r for r in reasons) and any("an output is a CPU tensor" in r for r in reasons)


def test_cpu_constants_made_in_the_graph_are_program_outputs():
    # DeBERTa's attention scale, torch.sqrt(torch.tensor(d)): a CPU tensor that no input reaches, which AOTAutograd
    # saves for the backward, so the forward graph returns it. It is a constant of the program (handed out as a
    # fresh copy each call); a CPU output that an input reaches still keeps its graph eager.
    res, _ = run("""
def scaled(x):
    return (x / torch.sqrt(torch.tensor(x.size(-1), dtype=torch.float) * 2)).tanh().sum()
def counted(x, s):
    return x * s, s * 2
cf = torch.compile(scaled, backend="tpu")
ok = []
for seed in range(3):
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))
    xt = x.to("tpu").requires_grad_()
    xc = x.clone().requires_grad_()
    got, want = cf(xt), scaled(xc)
    got.backward(), want.backward()
    ok.append(torch.allclose(got.cpu(), want, atol=1e-5) and torch.allclose(xt.grad.cpu(), xc.grad, atol=1e-6))
m = torch.tpu.metrics()
replays = m["compiled_replays"]
cc = torch.compile(counted, backend="tpu")
s = torch.tensor(3.0)
a, b = cc(torch.ones(2, device="tpu"), s)
ok.append(b.device.type == "cpu" and b.item() == 6.0 and torch.equal(a.cpu(), torch.full((2,), 3.0)))
report(ok=ok, replays=replays, **counters())
""")
    assert res["ok"] == [True] * 4
    reasons = res["compiled_fallback_reasons"]
    assert res["compiled_fallbacks"] == 1 and any("an output is a CPU tensor" in r for r in reasons), reasons
    assert res["replays"] >= 4  # forward and backward replayed on the second and third calls


def test_cpu_tables_are_copied_once_and_again_when_they_change():
    # An index table made on the CPU (BEiT's relative positions) is a graph input of rank 2: the program binds a
    # tpu copy, made once while calls pass the same contents (the same tensor, or an equal new one) and again
    # when they change, whether in place or as a new tensor.
    res, _ = run("""
def f(table, idx):
    return table[idx.view(-1)].view(*idx.shape, -1).sum(-1) * 2
cf = torch.compile(f, backend="tpu")
table = torch.randn(10, 3, generator=torch.Generator().manual_seed(0))
idx = torch.tensor([[0, 3], [9, 4]])
ok, copies = [], []
for step in range(6):
    if step == 2:
        idx = idx.clone()  # equal contents, another tensor
    if step == 3:
        idx[0, 0] = 7  # written in place
    if step == 5:
        idx = torch.tensor([[1, 1], [2, 2]])  # a new tensor with other contents
    got = cf(table.to("tpu"), idx)
    ok.append(torch.allclose(got.cpu(), f(table, idx), atol=1e-6) and got.device.type == "tpu")
    copies.append(torch.tpu.metrics()["compiled_cpu_inputs"])
report(ok=ok, copies=copies, **counters())
""")
    assert res["ok"] == [True] * 6
    assert res["compiled_fallbacks"] == 0, res["compiled_fallback_reasons"]
    assert res["copies"] == [1, 1, 1, 2, 2, 3], res["copies"]
    assert res["compiled_programs"] == 1
