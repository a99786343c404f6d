"""torch.compile(backend="tpu"): registration, compiled vs eager vs CPU results, in-place updates of
inputs, RNG, recompiles and fallbacks. Each scenario runs in its own interpreter (compile_util)."""
from compile_util import run


def test_backend_listed_after_import_and_default_compile_routes_to_it():
    res, err = run("""
listed = "tpu" in torch._dynamo.list_backends()
m = nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.LayerNorm(5))
x = torch.randn(3, 6)
want = m(x)
got = torch.compile(m.to("tpu"))(x.to("tpu")).cpu()   # the default backend
report(listed=listed, err=(got - want).abs().max().item(), **counters())
""")
    assert res["listed"]
    assert res["err"] < 1e-5
    assert res["compiled_programs"] == 1 and res["compiled_fallbacks"] == 0
    assert "ModuleNotFoundError" not in err and "No module named" not in err
    assert 'backend="tpu"' in err  # the one-time notice naming the backend


def test_forward_ops_compiled_match_eager_and_cpu():
    res, _ = run("""
torch.manual_seed(0)
cases = {
    "pointwise": (lambda x, y: (x.sin() * y.exp() - x.tanh() / (y.abs() + 1)).clamp(-2, 2), [(5, 7), (5, 7)]),
    "broadcast_pow": (lambda x, y: (x - y.mean(0)) ** 2 + x.sigmoid(), [(4, 6), (3, 6)]),
    "reductions": (lambda x: (x.sum(1), x.amax(0), x.var(1), x.logsumexp(0), x.cumsum(1)), [(6, 5)]),
    "matmul": (lambda a, b: (a @ b, torch.bmm(a.unsqueeze(0), b.unsqueeze(0)), F.linear(a, b.t())), [(4, 8), (8, 3)]),
    "softmax_norm": (lambda x: (F.softmax(x, -1), F.layer_norm(x, (6,)), F.log_softmax(x, 0)), [(5, 6)]),
    "conv_pool": (lambda x, w: F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2), [(2, 3, 8, 8), (4, 3, 3, 3)]),
    "shapes": (lambda x: (torch.cat([x, x.flip(0)], 1), x.t().reshape(-1)[::2], x.permute(1, 0)[1:, :2].contiguous(),
                          torch.where(x > 0, x, -x), x.expand(2, *x.shape).sum(0)), [(4, 5)]),
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [(2, 4, 8, 16)] * 3),
    "indexing": (lambda x, i: (x[i], x[i - 5, 1:], x.index_select(0, i), F.embedding(i, x), torch.gather(x, 1, i.view(-1, 1).expand(-1, 2) % 5)),
                 [(6, 5), "idx"]),
}
out = {}
for name, (fn, shapes) in cases.items():
    args = [torch.randint(0, 6, (4,)) if s == "idx" else torch.randn(*s) for s in shapes]
    want = fn(*args)
    cf = torch.compile(fn, backend="tpu")
    errs = []
    for _ in range(2):   # capture, then replay
        got = cf(*[a.to("tpu") for a in args])
        eager = fn(*[a.to("tpu") for a in args])
        ws, gs, es = [want] if torch.is_tensor(want) else want, [got] if torch.is_tensor(got) else got, \\
            [eager] if torch.is_tensor(eager) else eager
        errs.append(max(max((g.cpu() - w).abs().max().item(), (g.cpu() - e.cpu()).abs().max().item())
                        for g, w, e in zip(gs, ws, es)))
    out[name] = max(errs)
report(errs=out, **counters())
""")
    assert all(e < 1e-4 for e in res["errs"].values()), res["errs"]
    assert res["compiled_fallbacks"] == 0, res["compiled_fallback_reasons"]
    assert res["compiled_replays"] >= len(res["errs"])


def test_inplace_updates_of_inputs_are_written_back():
    res, _ = run("""
def f(x, y, z):
    x.add_(y)
    y.mul_(2)
    z[1:].zero_()
    return x * y
cf = torch.compile(f, backend="tpu")
ok = []
for i in range(3):
    xc, yc, zc = torch.randn(4, 4), torch.randn(4, 4), torch.randn(3, 4)
    xt, yt, zt = xc.to("tpu"), yc.to("tpu"), zc.to("tpu")
    zview = zt[0]
    r = cf(xt, yt, zt)
    rc = f(xc, yc, zc)
    ok.append(all(torch.equal(a.cpu(), b) for a, b in [(r, rc), (xt, xc), (yt, yc), (zt, zc), (zview, zc[0])]))
report(ok=ok, **counters())
""")
    assert res["ok"] == [True, True, True]
    assert res["compiled_programs"] == 1 and res["compiled_replays"] == 2


def test_dropout_draws_from_the_tpu_generator():
    res, _ = run("""
def f(x):
    return F.dropout(x, 0.5, training=True) + torch.rand_like(x)
cf = torch.compile(f, backend="tpu")
x = torch.ones(16, 16, device="tpu")
torch.manual_seed(3); a = [cf(x).cpu() for _ in range(3)]
torch.manual_seed(3); b = [cf(x).cpu() for _ in range(3)]
torch.manual_seed(3); e = [f(x).cpu() for _ in range(3)]
report(differ=[not torch.equal(a[0], a[1]), not torch.equal(a[1], a[2])],
       repro=[torch.equal(p, q) for p, q in zip(a, b)], eager=[torch.equal(p, q) for p, q in zip(a, e)],
       **counters())
""")
    assert res["differ"] == [True, True]
    assert res["repro"] == [True, True, True]
    assert res["eager"] == [True, True, True]
    assert res["compiled_programs"] == 1


def test_new_shape_recompiles_counted_and_explained():
    res, err = run("""
def h(x):
    return (x * x).sum(-1)
ok = []
cs = torch.compile(h, backend="tpu", dynamic=False)
for n in (3, 5, 5):
    x = torch.randn(n, 4)
    ok.append(torch.allclose(cs(x.to("tpu")).cpu(), h(x)))
report(ok=ok, **counters())
""", env={"TORCHTPU_LOG": "recompiles"})
    assert res["ok"] == [True] * 3
    assert res["compiled_programs_by_reason"] == {"new": 1, "shapes": 1}
    assert "(shapes): input 0 shape [3, 4] -> [5, 4]" in err


def test_dynamic_shapes_do_not_crash():
    res, _ = run("""
def h(x, y):
    return (x @ y).relu().sum(0) / x.shape[0]
ok = []
cd = torch.compile(h, backend="tpu", dynamic=True)
for n in (3, 5, 7, 5):
    x, y = torch.randn(n, 4), torch.randn(4, 2)
    ok.append(torch.allclose(cd(x.to("tpu"), y.to("tpu")).cpu(), h(x, y), atol=1e-6))
x = torch.randn(6, 4); torch._dynamo.mark_dynamic(x, 0)
cm = torch.compile(h, backend="tpu")
ok.append(torch.allclose(cm(x.to("tpu"), torch.ones(4, 2, device="tpu")).cpu(), h(x, torch.ones(4, 2)), atol=1e-6))
# Attention's kernel choice reads sizes: a dynamic sequence length must stay symbolic (one Dynamo graph).
from torch._dynamo.utils import counters as dynamo_counters
def attn(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
dynamo_counters.clear()
ca = torch.compile(attn, backend="tpu")
for t in (5, 7, 9):
    q, k, v = (torch.randn(2, 2, t, 8) for _ in range(3))
    m = torch.ones(t, t).tril().bool()
    args = [a.to("tpu") for a in (q, k, v, m)]
    for a in args[:3]:
        torch._dynamo.mark_dynamic(a, 2)
    torch._dynamo.mark_dynamic(args[3], 0)
    torch._dynamo.mark_dynamic(args[3], 1)
    ok.append(torch.allclose(ca(*args).cpu(), attn(q, k, v, m), atol=1e-5))
report(ok=ok, attention_graphs=dynamo_counters["stats"]["unique_graphs"], **counters())
""")
    assert res["ok"] == [True] * 8
    assert res["attention_graphs"] == 1
    assert res["compiled_fallbacks"] == 0


def test_unsupported_ops_and_graph_breaks_fall_back_eagerly():
    res, _ = run("""
def f(x):
    y = x.sin() + 1
    w = torch.linalg.eigvals(y)   # no tpu rule: runs on CPU, so the graph runs eagerly
    return y * 2, w.real
def g(x):
    y = x.cos()
    print("a graph break")
    i = torch.arange(3, device=x.device)
    return y[y > 0].sum() + y[i].sum()   # a mask gives a data-dependent shape
ok = []
cf, cg = torch.compile(f, backend="tpu"), torch.compile(g, backend="tpu")
for _ in range(2):
    x = torch.randn(4, 4)
    r, rc = cf(x.to("tpu")), f(x)
    ok.append(all(torch.allclose(a.cpu(), b, atol=1e-5) for a, b in zip(r, rc)))
    ok.append(torch.allclose(cg(x.to("tpu")).cpu(), g(x), atol=1e-5))
report(ok=ok, **counters())
""")
    assert res["ok"] == [True] * 4
    assert res["compiled_fallbacks"] >= 1
    assert any("linalg" in r for r in res["compiled_fallback_reasons"]), res["compiled_fallback_reasons"]
    assert res["compiled_fallback_calls"] >= 1


def test_a_graph_that_falls_back_in_strict_mode_still_launches_one_program():
    # A CPU tensor input that the graph writes keeps it from becoming a program.
    res, _ = run("""
def f(x, s):
    s.mul_(1.0)
    y = (x * s.to(x.device)).sin() + x.cos() * 2 - 1
    return y.exp() / (y * y + 1)
cf = torch.compile(f, backend="tpu")
x, s = torch.randn(8, 8), torch.full((8,), 3.0)
ok, launches = [], []
for i in range(3):
    s += 1
    before = torch.tpu.metrics()["executions"]
    r = cf(x.to("tpu"), s)
    torch.tpu.synchronize()
    launches.append(torch.tpu.metrics()["executions"] - before)
    ok.append(torch.allclose(r.cpu(), f(x, s), rtol=1e-5, atol=1e-6))
report(ok=ok, launches=launches, mode=torch.tpu.get_mode(), **counters())
""")
    assert res["ok"] == [True] * 3
    assert res["compiled_fallbacks"] == 1 and "written in place" in next(iter(res["compiled_fallback_reasons"]))
    assert res["mode"] == "strict"
    # Ten ops, launched together rather than one by one.
    assert res["launches"] == [1, 1, 1], res["launches"]
