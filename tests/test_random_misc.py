"""gcd/lcm, the remaining random distributions (cauchy, geometric, log-normal,
multinomial) and fractional max pooling, natively on tpu."""
import math

import pytest
import torch
import torch.nn.functional as F

from conftest import check, no_fallbacks

N = 50_000


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_gcd_lcm(mode, dtype):
    g = torch.Generator().manual_seed(0)
    lo = 0 if dtype == torch.uint8 else -60
    a = torch.randint(lo, 60, (4, 6), generator=g).to(dtype)
    b = torch.randint(lo, 60, (6,), generator=g).to(dtype)
    a[0, :2] = 0
    b[1] = 0
    check(torch.gcd, a, b)
    check(torch.lcm, a, b)
    check(lambda x, y: x.clone().gcd_(y), a, b)
    check(lambda x, y: x.clone().lcm_(y), a, b)
    check(lambda x, y: torch.gcd(x, y, out=torch.empty_like(x)), a, b)
    check(lambda x, y: x[:, ::2].lcm(y[::2]), a, b)


def test_gcd_edge_values(mode):
    a = torch.tensor([-2**63, 7, 0, -12, 2**40 * 3, 1])
    b = torch.tensor([-2**63, 0, 0, 18, 2**41 * 9, -1])
    check(torch.gcd, a, b)
    check(torch.lcm, a[1:], b[1:])
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.gcd(torch.ones(2, device="tpu"), torch.ones(2, device="tpu"))


def test_cauchy_log_normal(mode):
    torch.manual_seed(3)
    c = torch.empty(N, device="tpu").cauchy_(1.0, 2.0).cpu().double()
    q = torch.quantile(c, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    # Quartiles of Cauchy(1, 2) are 1 - 2, 1, 1 + 2; the sample quantiles' standard error is ~0.03.
    assert (q - torch.tensor([-1.0, 1.0, 3.0], dtype=torch.float64)).abs().max() < 0.15, q
    x = torch.empty(N, device="tpu", dtype=torch.float64).log_normal_(0.5, 0.25).cpu()
    assert x.min() > 0
    lx = x.log()
    assert abs(lx.mean() - 0.5) < 0.01 and abs(lx.std() - 0.25) < 0.01
    h = torch.empty(N, device="tpu", dtype=torch.bfloat16).log_normal_().cpu().float().log()
    assert abs(h.mean() - 1) < 0.05 and abs(h.std() - 2) < 0.05
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        torch.empty(3, device="tpu").cauchy_(0, 0)
    with pytest.raises(RuntimeError, match="dtype must be a floating point but you specified long int"):
        torch.empty(3, device="tpu", dtype=torch.int64).cauchy_()
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        torch.empty(3, device="tpu").log_normal_(0, -1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_geometric(mode, dtype):
    torch.manual_seed(4)
    p = 0.2
    g = torch.empty(N, device="tpu", dtype=dtype).geometric_(p).cpu().double()
    assert g.min() >= 1 and torch.equal(g, g.round())
    se = math.sqrt((1 - p) / p**2 / N)
    assert abs(g.mean() - 1 / p) < 5 * se
    assert abs(g.var() - (1 - p) / p**2) < 0.05 * (1 - p) / p**2
    assert abs((g == 1).double().mean() - p) < 0.01
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\)"):
        torch.empty(3, device="tpu").geometric_(1.0)


def test_seed_and_views(mode):
    for op in (lambda t: t.cauchy_(), lambda t: t.log_normal_(), lambda t: t.geometric_(0.3)):
        torch.manual_seed(11)
        a = op(torch.empty(1000, device="tpu")).cpu()
        torch.manual_seed(11)
        assert torch.equal(a, op(torch.empty(1000, device="tpu")).cpu())
        assert not torch.equal(a, op(torch.empty(1000, device="tpu")).cpu())
        x = torch.zeros(8, 10, device="tpu")
        op(x[:, ::2])
        xc = x.cpu()
        assert (xc[:, 1::2] == 0).all() and (xc[:, ::2] != 0).all()


def test_multinomial_with_replacement(mode):
    torch.manual_seed(5)
    w = torch.tensor([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 3.0, 1.0]], device="tpu")
    n = 20_000
    s = torch.multinomial(w, n, replacement=True)
    assert s.dtype == torch.int64 and s.shape == (2, n)
    s = s.cpu()
    for row, weights in zip(s, w.cpu()):
        freq = torch.bincount(row, minlength=4).double() / n
        want = weights.double() / weights.sum()
        assert (freq - want).abs().max() < 0.015, (freq, want)
        assert freq[want == 0].sum() == 0
    one = torch.multinomial(torch.tensor([0.0, 1.0, 3.0], device="tpu", dtype=torch.float64), N, True).cpu()
    assert abs((one == 2).double().mean() - 0.75) < 0.01 and (one != 0).all()
    torch.manual_seed(9)
    a = torch.multinomial(w, 50, True).cpu()
    torch.manual_seed(9)
    assert torch.equal(a, torch.multinomial(w, 50, True).cpu())


def test_multinomial_without_replacement(mode):
    torch.manual_seed(6)
    w = torch.tensor([5.0, 1.0, 0.0, 3.0, 1.0], device="tpu")
    draws = torch.multinomial(w.repeat(4000, 1), 3).cpu()
    assert draws.shape == (4000, 3)
    srt = draws.sort(1).values
    assert (srt[:, 1:] != srt[:, :-1]).all(), "repeated category without replacement"
    assert (draws != 2).all()
    # The first draw follows the weights; all four positive categories come up.
    first = torch.bincount(draws[:, 0], minlength=5).double() / 4000
    assert (first - torch.tensor([0.5, 0.1, 0.0, 0.3, 0.1], dtype=torch.float64)).abs().max() < 0.03
    full = torch.multinomial(w, 5).cpu()
    assert sorted(full.tolist()) == [0, 1, 2, 3, 4] and full[-1] == 2
    out = torch.empty(2, dtype=torch.int64, device="tpu")
    torch.multinomial(w, 2, out=out)
    assert set(out.cpu().tolist()) <= {0, 1, 3, 4}


@pytest.mark.parametrize("weights,repl,msg", [
    ([1.0, -1.0], False, "probability tensor contains either `inf`, `nan` or element < 0"),
    ([1.0, float("nan")], False, "probability tensor contains either `inf`, `nan` or element < 0"),
    ([1.0, -1.0], True, r"invalid multinomial distribution \(encountering probability entry < 0\)"),
    ([1.0, float("inf")], True, r"invalid multinomial distribution \(encountering probability entry = infinity or NaN\)"),
    ([[1.0, 1.0], [0.0, 0.0]], True, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    ([0.0, 0.0], False, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
])
def test_multinomial_errors(mode, weights, repl, msg):
    with pytest.raises(RuntimeError, match=msg):
        torch.multinomial(torch.tensor(weights, device="tpu"), 2, repl)


def test_multinomial_arg_errors(mode):
    w = torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        torch.multinomial(w, 4)
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0 samples"):
        torch.multinomial(w, 0, True)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        torch.multinomial(torch.ones(2, 2, 2, device="tpu"), 1, True)


def _frac(x, k, o, s, n):
    op = torch.ops.aten.fractional_max_pool2d if n == 2 else torch.ops.aten.fractional_max_pool3d
    return op(x, k, o, s)


@pytest.mark.parametrize("n,shape,k,o", [
    (2, (2, 3, 9, 10), [2, 3], [4, 5]),
    (2, (3, 7, 6), [3, 2], [5, 1]),
    (3, (2, 2, 7, 8, 6), [2, 3, 2], [4, 5, 3]),
    (3, (2, 6, 5, 7), [3, 2, 2], [1, 3, 4]),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool(mode, n, shape, k, o, dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=g, dtype=dtype)
    x.view(-1)[::7] = x.view(-1)[3]  # ties keep the first maximum
    batched = len(shape) == n + 2
    samples = torch.rand(shape[0] if batched else 1, shape[-n - 1], n, generator=g, dtype=dtype)
    v, i = _frac(x, k, o, samples, n)
    tv, ti = _frac(x.to("tpu"), k, o, samples.to("tpu"), n)
    assert torch.equal(tv.cpu(), v) and torch.equal(ti.cpu(), i)
    # Gradients through the functional API with the same samples.
    fn = F.fractional_max_pool2d if n == 2 else F.fractional_max_pool3d
    xs = [x.clone().requires_grad_(), x.to("tpu").requires_grad_()]
    outs = [fn(xs[0], k, output_size=o, _random_samples=samples),
            fn(xs[1], k, output_size=o, _random_samples=samples.to("tpu"))]
    gy = torch.randn(outs[0].shape, generator=g, dtype=dtype)
    outs[0].backward(gy)
    outs[1].backward(gy.to("tpu"))
    assert torch.equal(outs[1].detach().cpu(), outs[0].detach())
    assert torch.equal(xs[1].grad.cpu(), xs[0].grad)


def test_fractional_max_pool_half_and_nan(mode):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 11, 9, generator=g)
    x[0, 0, 2:5, 1:4] = float("nan")
    x[1, 2] = float("-inf")
    s = torch.rand(2, 3, 2, generator=g)
    for d in (torch.float32, torch.bfloat16, torch.float16):
        v, i = _frac(x.to(d), [2, 2], [6, 5], s.to(d), 2)
        tv, ti = _frac(x.to(d).to("tpu"), [2, 2], [6, 5], s.to(d).to("tpu"), 2)
        torch.testing.assert_close(tv.cpu(), v, equal_nan=True, atol=0, rtol=0)
        assert torch.equal(ti.cpu(), i)
    with pytest.raises(RuntimeError, match="pool height 5 too large relative to input height 11"):
        _frac(x.to("tpu"), [5, 2], [8, 5], s.to("tpu"), 2)
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(1\\) equals to input channel size"):
        _frac(x.to("tpu"), [2, 2], [6, 5], torch.rand(2, 4, 2, device="tpu"), 2)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_random_draws_parts_like_cpu(mode, dtype):
    """randn, rand and normal_ of complex dtypes draw real and imaginary parts as CPU does: N(0, 1/2) each for
    randn, U[0, 1) each for rand, std / sqrt(2) each for normal_; the same seed gives the same numbers."""
    torch.manual_seed(0)
    torch.tpu.reset_metrics()
    n = 100_000
    z = torch.randn(n, dtype=dtype, device="tpu")
    assert z.dtype == dtype
    z = z.cpu()
    for part in (z.real, z.imag):
        assert abs(part.mean().item()) < 0.01 and abs(part.var().item() - 0.5) < 0.01
    assert abs((z.real * z.imag).mean().item()) < 0.01  # independent parts
    u = torch.rand(n, dtype=dtype, device="tpu").cpu()
    for part in (u.real, u.imag):
        assert part.min().item() >= 0 and part.max().item() < 1 and abs(part.mean().item() - 0.5) < 0.01
    g = torch.empty(n, dtype=dtype, device="tpu").normal_(2.0, 3.0).cpu()
    want_std = torch.empty(n, dtype=dtype).normal_(2.0, 3.0).real.std().item()  # 3 / sqrt(2)
    for part in (g.real, g.imag):
        assert abs(part.mean().item() - 2.0) < 0.03 and abs(part.std().item() - want_std) < 0.03
    torch.manual_seed(5)
    a = torch.randn(8, dtype=dtype, device="tpu").cpu()
    torch.manual_seed(5)
    assert torch.equal(torch.randn(8, dtype=dtype, device="tpu").cpu(), a)
    assert not no_fallbacks()
