"""Random numbers generated on the device: reproducibility and distributions."""
import warnings

import pytest
import torch
import torch.nn.functional as F


N = 100_000


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_manual_seed_reproducible(mode):
    for seed_fn in (torch.manual_seed, torch.tpu.manual_seed):
        seed_fn(123)
        a = torch.rand(1000, device="tpu").cpu()
        b = torch.randn(1000, device="tpu").cpu()
        seed_fn(123)
        assert torch.equal(a, torch.rand(1000, device="tpu").cpu())
        assert torch.equal(b, torch.randn(1000, device="tpu").cpu())
        seed_fn(124)
        assert not torch.equal(a, torch.rand(1000, device="tpu").cpu())
    # Successive draws differ.
    assert not torch.equal(torch.rand(100, device="tpu").cpu(), torch.rand(100, device="tpu").cpu())


def test_generator_object(mode):
    g = torch.Generator(device="tpu").manual_seed(7)
    a = torch.rand(500, device="tpu", generator=g).cpu()
    g.manual_seed(7)
    assert torch.equal(a, torch.rand(500, device="tpu", generator=g).cpu())
    g.manual_seed(8)
    assert not torch.equal(a, torch.rand(500, device="tpu", generator=g).cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_uniform_normal(mode, dtype):
    torch.manual_seed(0)
    u = torch.rand(N, device="tpu", dtype=dtype).cpu().double()
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - (1 / 12) ** 0.5) < 0.01
    x = torch.empty(N, device="tpu", dtype=dtype).uniform_(-2, 3).cpu().double()
    assert x.min() >= -2 and x.max() < 3 and abs(x.mean() - 0.5) < 0.05
    z = torch.randn(N, device="tpu", dtype=dtype).cpu().double()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    y = torch.empty(N, device="tpu", dtype=dtype).normal_(3, 0.5).cpu().double()
    assert abs(y.mean() - 3) < 0.02 and abs(y.std() - 0.5) < 0.02
    assert u.dtype == torch.float64  # converted above; the device tensors had dtype


def test_normal_tensors_exponential(mode):
    torch.manual_seed(1)
    mean = torch.full((N,), 2.0, device="tpu")
    z = torch.normal(mean, 3.0).cpu()
    assert abs(z.mean() - 2) < 0.05 and abs(z.std() - 3) < 0.05
    z = torch.normal(mean, torch.full((N,), 0.5, device="tpu")).cpu()
    assert abs(z.std() - 0.5) < 0.02
    e = torch.empty(N, device="tpu").exponential_(2.0).cpu()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.02


def test_bernoulli(mode):
    torch.manual_seed(2)
    x = torch.empty(N, device="tpu").bernoulli_(0.3).cpu()
    assert set(x.unique().tolist()) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.01
    p = torch.tensor([0.1, 0.9], device="tpu").repeat(N // 2)
    y = torch.bernoulli(p).cpu()
    assert abs(y[0::2].mean() - 0.1) < 0.01 and abs(y[1::2].mean() - 0.9) < 0.01
    z = torch.empty(N, device="tpu").bernoulli_(p).cpu()
    assert abs(z[1::2].mean() - 0.9) < 0.01
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        torch.empty(3, device="tpu").bernoulli_(1.5)


def test_randint_random(mode):
    torch.manual_seed(3)
    r = torch.randint(-5, 7, (N,), device="tpu").cpu()
    assert r.dtype == torch.int64 and r.min() == -5 and r.max() == 6
    assert torch.bincount(r + 5).min() > N / 12 * 0.9
    r = torch.randint(10, (N,), device="tpu", dtype=torch.int32).cpu()
    assert r.dtype == torch.int32 and r.min() == 0 and r.max() == 9
    b = torch.empty(N, dtype=torch.uint8, device="tpu").random_().cpu()
    assert b.min() == 0 and b.max() == 255
    f = torch.empty(N, device="tpu").random_(0, 4).cpu()
    assert set(f.unique().tolist()) == {0.0, 1.0, 2.0, 3.0}
    t = torch.empty(N, dtype=torch.int64, device="tpu").random_(100).cpu()
    assert t.min() == 0 and t.max() == 99
    big = torch.empty(1000, dtype=torch.int64, device="tpu").random_().cpu()
    assert big.min() >= 0 and big.max() > 2**50
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.empty(3, device="tpu").random_(5, 2)


def test_randperm(mode):
    torch.manual_seed(4)
    for n in (1, 10, 1000):
        p = torch.randperm(n, device="tpu").cpu()
        assert p.dtype == torch.int64 and torch.equal(p.sort().values, torch.arange(n))
    torch.manual_seed(4)
    a = torch.randperm(1000, device="tpu").cpu()
    torch.manual_seed(4)
    assert torch.equal(torch.randperm(1000, device="tpu").cpu(), a)
    assert not torch.equal(a, torch.arange(1000))
    assert torch.equal(torch.randperm(0, device="tpu").cpu(), torch.randperm(0))


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout(mode, p):
    torch.manual_seed(5)
    x = torch.ones(N, device="tpu", requires_grad=True)
    y = F.dropout(x, p, training=True)
    y.sum().backward()
    yc, gc = y.detach().cpu(), x.grad.cpu()
    kept = yc != 0
    assert abs(kept.float().mean() - (1 - p)) < 0.01
    assert torch.allclose(yc[kept], torch.full_like(yc[kept], 1 / (1 - p)))
    assert torch.equal(gc, yc)  # the gradient goes through the same mask and scale
    torch.manual_seed(5)
    assert torch.equal(F.dropout(x.detach(), p, training=True).cpu(), yc)
    assert torch.equal(F.dropout(x.detach(), p, training=False).cpu(), torch.ones(N))
    m = torch.nn.Dropout(p).to("tpu").eval()
    assert torch.equal(m(x.detach()).cpu(), torch.ones(N))


def test_nn_init(mode):
    torch.manual_seed(6)
    w = torch.empty(300, 400, device="tpu")
    torch.nn.init.uniform_(w, -1, 1)
    assert w.cpu().min() >= -1 and w.cpu().max() < 1
    torch.nn.init.normal_(w, 0, 2)
    assert abs(w.cpu().std() - 2) < 0.05
    torch.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    bound = 1 / 400 ** 0.5
    assert w.cpu().abs().max() <= bound and w.cpu().abs().max() > 0.9 * bound
    torch.nn.init.xavier_normal_(w)
    assert abs(w.cpu().std() - (2 / 700) ** 0.5) < 0.005
    torch.nn.init.trunc_normal_(w, std=1.0, a=-2, b=2)
    assert w.cpu().abs().max() <= 2 and abs(w.cpu().std() - 0.88) < 0.03
    torch.nn.init.zeros_(w)
    assert torch.equal(w.cpu(), torch.zeros(300, 400))
    torch.nn.init.ones_(w)
    assert torch.equal(w.cpu(), torch.ones(300, 400))
    lin = torch.nn.Linear(64, 32, device="tpu")
    assert lin.weight.cpu().abs().max() <= 1 / 8


def test_new_seed_does_not_recompile(mode):
    x = torch.ones(1000, device="tpu")
    counts = []
    for i in range(4):
        torch.manual_seed(i)
        torch.rand(1000, device="tpu")
        torch.randint(0, 10 + i, (1000,), device="tpu")
        torch.nn.functional.dropout(x, 0.1 + 0.1 * i)
        torch.tpu.synchronize()
        counts.append(torch.tpu.metrics()["graphs_compiled"])
    assert counts[-1] == counts[1], counts


def test_factory_variants(mode):
    torch.manual_seed(9)
    x = torch.empty(N, device="tpu", dtype=torch.float64)
    assert torch.rand_like(x).dtype == torch.float64
    assert abs(torch.randn_like(x).cpu().std() - 1) < 0.02
    r = torch.randint_like(x, 3, 5).cpu()
    assert set(r.unique().tolist()) == {3.0, 4.0}
    z = torch.normal(2.0, 0.5, size=(N,), device="tpu").cpu()
    assert abs(z.mean() - 2) < 0.01 and abs(z.std() - 0.5) < 0.01
    assert torch.randint(5, (), device="tpu").shape == ()


def test_an_out_resize_does_not_draw_a_second_seed(mode):
    # An out= tensor of the wrong size makes the shim marshal the call again after resizing it; the retry drew a
    # second seed, so randperm(5, out=empty) differed from randperm(5) from the same state and advanced the
    # generator twice (PyTorch's test_randperm compares the two under fork_rng).
    s = torch.tpu.get_rng_state()
    want = torch.randperm(50, device="tpu").cpu()
    after = torch.rand(3, device="tpu").cpu()
    for out in (torch.empty(0, dtype=torch.long, device="tpu"), torch.empty(50, dtype=torch.long, device="tpu")):
        torch.tpu.set_rng_state(s)
        torch.randperm(50, out=out)
        assert torch.equal(out.cpu(), want)
        assert torch.equal(torch.rand(3, device="tpu").cpu(), after)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_random_from_to_past_exact_integers_warns_as_cpu(dtype):
    # CPU warns when random_(from, to) on a floating tensor reaches integers its type cannot hold exactly (past
    # 2^digits), and raises past the type's range; tpu drew silently.
    def messages(device):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            t = torch.empty(5, dtype=dtype, device=device)
            for lo, hi in [(-2**25, 5), (0, 2**25), (-2**12, 0), (0, 2**12), (-2**9, 2**9), (0, 10)]:
                try:
                    t.random_(lo, hi)
                except RuntimeError as e:
                    ws.append(warnings.WarningMessage(str(e).split(" (aten::")[0], RuntimeError, "", 0))
        return [str(w.message).split(" (Triggered internally")[0] for w in ws]
    assert messages("tpu") == messages("cpu")
