"""nn.Embedding and nn.EmbeddingBag through torch.compile(backend="tpu") against CPU eager: every
bag mode and option of the eager tests, values and the gradients of the table and of
per_sample_weights, compiled to programs (not run eagerly). One fresh interpreter runs them all."""
import compile_util

CODE = r"""
TOL = dict(atol=1e-5, rtol=1e-5)
IDS = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 7, 7])
OFFSETS = torch.tensor([0, 2, 2, 5, 9])
BAG_OPTS = [{}, {"padding_idx": 2}, {"include_last_offset": True}, {"max_norm": 1.5},
            {"max_norm": 1.0, "norm_type": 1.0, "padding_idx": 4}, {"scale_grad_by_freq": True}]
cases = [("bag", m, o, False) for m in ["sum", "mean", "max"] for o in BAG_OPTS
         if not (m == "max" and o.get("scale_grad_by_freq"))]
cases += [("bag", "sum", o, True) for o in [{}, {"padding_idx": 7}, {"include_last_offset": True}]]
cases += [("emb", None, o, False) for o in [{}, {"padding_idx": 2}, {"max_norm": 1.2}, {"scale_grad_by_freq": True}]]

def make(kind, mode, opts):
    torch.manual_seed(0)
    if kind == "bag":
        return nn.EmbeddingBag(10, 3, mode=mode, **opts)
    return nn.Embedding(10, 3, **opts)

def fwd(m, x, offsets, psw):
    if isinstance(m, nn.EmbeddingBag):
        return m(x, offsets, per_sample_weights=psw)
    return m(x)

failures, done = [], 0
for kind, mode, opts, weighted in cases:
    cpu = make(kind, mode, opts)
    tpu = make(kind, mode, opts).to("tpu")
    x = IDS if kind == "bag" else IDS.view(1, -1)
    psw = torch.rand(IDS.shape, generator=torch.Generator().manual_seed(2)) if weighted else None
    torch._dynamo.reset()  # every case compiles afresh (they share the lambda's code)
    step = torch.compile(lambda m, a, o, w: fwd(m, a, o, w), backend="tpu", dynamic=False)
    pc = psw.clone().requires_grad_() if weighted else None
    pt = psw.to("tpu").requires_grad_() if weighted else None
    # With include_last_offset the offsets end with the number of ids, as in the eager tests.
    offsets = torch.cat([OFFSETS, torch.tensor([len(IDS)])]) if opts.get("include_last_offset") else OFFSETS
    want = fwd(cpu, x, offsets, pc)
    got = step(tpu, x.to("tpu"), offsets.to("tpu"), pt)
    g = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    want.backward(g)
    got.backward(g.to("tpu"))
    try:
        torch.testing.assert_close(got.detach().cpu(), want.detach(), **TOL)
        torch.testing.assert_close(tpu.weight.detach().cpu(), cpu.weight.detach(), **TOL)
        torch.testing.assert_close(tpu.weight.grad.cpu(), cpu.weight.grad, **TOL)
        if weighted:
            torch.testing.assert_close(pt.grad.cpu(), pc.grad, **TOL)
    except AssertionError as e:
        failures.append(f"{kind} {mode} {opts} weighted={weighted}: {str(e).splitlines()[0]}")
    done += 1
m = torch.tpu.metrics()
report(cases=done, failures=failures, programs=m["compiled_programs"], fallbacks=m["compiled_fallbacks"],
       reasons=m["compiled_fallback_reasons"], cpu_fallbacks=m["cpu_fallbacks"])
"""


def test_embedding_and_bags_compiled_match_cpu():
    r, _ = compile_util.run(CODE, timeout=900)
    assert r["failures"] == [], r["failures"]
    assert r["cases"] == 24
    # Each case compiles its forward and backward graphs into programs, none falls back to eager.
    assert r["programs"] >= 2 * r["cases"], r
    assert r["fallbacks"] == 0, r["reasons"]
    assert r["cpu_fallbacks"] == {}, r["cpu_fallbacks"]
