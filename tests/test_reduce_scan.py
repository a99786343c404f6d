"""Scans, sorts and statistics against CPU torch in the three modes, with no op falling back."""
import warnings

import pytest
import torch

from conftest import Draws, check

draws = Draws(0)
randn, randint, g = draws.randn, draws.randint, draws.gen


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def grad_check(fn, x, atol=1e-5):
    """Checks fn(x) and d(sum(fn(x) * w))/dx on tpu against CPU."""
    w = torch.randn(fn(x).shape, generator=g)
    outs = []
    for dev in ("cpu", "tpu"):
        xi = x.clone().to(dev).requires_grad_(True)
        y = fn(xi)
        (y * w.to(dev)).sum().backward()
        outs.append((y.detach().cpu(), xi.grad.cpu()))
    torch.testing.assert_close(outs[1], outs[0], atol=atol, rtol=1e-4)


def test_scans(mode):
    x = randn(4, 6)
    check(lambda t: torch.cumsum(t, 1), x)
    check(lambda t: torch.cumsum(t, 0, dtype=torch.float64), x)
    check(lambda t: torch.cumsum(t, -1), randint(-5, 5, 3, 7))
    check(lambda t: torch.cumsum(t, 0), randint(0, 2, 5).bool())
    check(lambda t: torch.cumprod(t, 1), x)
    check(lambda t: torch.logcumsumexp(t, 1), x)
    check(lambda t: torch.logcumsumexp(t, 0), torch.tensor([float("-inf"), 1.0, float("-inf"), 3.0]))
    y = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 2.0, 5.0], [2.0, 2.0, 1.0, 1.0, 0.0, 4.0]])
    check(lambda t: torch.cummax(t, 1), y)
    check(lambda t: torch.cummin(t, 1), y)
    check(lambda t: torch.cummax(t, 0), randint(-3, 3, 5, 2))
    check(lambda t: torch.cumsum(t, 0), torch.tensor(2.5))


def test_scan_grads(mode):
    x = randn(3, 5)
    grad_check(lambda t: torch.cumsum(t, 1), x)
    grad_check(lambda t: torch.cumprod(t, 1), x)
    grad_check(lambda t: torch.logcumsumexp(t, 1), x)
    grad_check(lambda t: torch.cummax(t, 1).values, x)


def test_sorts(mode):
    x = torch.tensor([[3.0, float("nan"), 1.0, 2.0, 1.0], [0.0, -1.0, float("inf"), 5.0, -2.0]])
    check(lambda t: torch.sort(t), x)
    check(lambda t: torch.sort(t, descending=True), x)
    check(lambda t: torch.sort(t, dim=0, stable=True), x)
    check(lambda t: torch.argsort(t, dim=1, stable=True), randint(0, 3, 4, 8))
    check(lambda t: torch.msort(t), randn(5, 3))
    check(lambda t: torch.topk(t, 3), randn(4, 9))
    check(lambda t: torch.topk(t, 2, dim=0, largest=False), randn(4, 9))
    check(lambda t: torch.kthvalue(t, 2, 1, keepdim=True), randn(3, 7))
    check(lambda t: torch.median(t), randn(5, 5))
    check(lambda t: torch.median(t, 1), randn(4, 6))
    check(lambda t: torch.median(t, 1), x)
    check(lambda t: torch.nanmedian(t, 1), x)
    check(lambda t: torch.nanmedian(t), x)
    check(lambda t: torch.mode(t, 1), torch.tensor([[1, 2, 2, 3, 3, 0], [5, 5, 5, 1, 1, 1]]))
    grad_check(lambda t: torch.sort(t, 1).values, randn(3, 6))
    grad_check(lambda t: torch.topk(t, 2).values, randn(3, 6))
    grad_check(lambda t: torch.median(t, 0).values, randn(5, 4))


def test_statistics(mode):
    x = randn(4, 5)
    xn = x.clone()
    xn[1, 2] = float("nan")
    check(lambda t: torch.nansum(t, 1), xn)
    check(lambda t: torch.nanmean(t), xn)
    check(lambda t: torch.var_mean(t, 1, correction=0), x)
    check(lambda t: torch.std_mean(t, keepdim=True, dim=0), x)
    check(lambda t: torch.aminmax(t), x)
    check(lambda t: torch.aminmax(t, dim=1, keepdim=True), x)
    check(lambda t: torch.count_nonzero(t, (0, 1)), randint(0, 2, 3, 4))
    check(lambda t: torch.norm(t, 3, dim=1), x)
    check(lambda t: torch.dist(t, t.flip(0), 1.5), x)
    check(lambda t: torch.renorm(t, 2, 0, 1.0), x)
    check(lambda t: torch.histc(t, 7), x)
    check(lambda t: torch.histc(t, 4, -1.0, 1.0), x)
    grad_check(lambda t: torch.var_mean(t, 1)[0], x)
    grad_check(lambda t: torch.renorm(t, 2, 0, 1.0), x)



def test_histc_of_integers_counts_as_cuda_does(mode):
    """CPU refuses histc of an integer tensor and CUDA counts it; transformers' mixture-of-experts layers count
    tokens per expert with it on every device but CPU and MPS. The bounds take the input's type, bins split
    [min, max] in integer arithmetic, max lands in the last bin, the counts keep the input's dtype: here against
    CPU's float64 histogram of the same numbers, which agrees wherever the quotient is exact."""
    cases = [
        (torch.tensor([0, 3, 1, 1, 2, 3, 0, 3], dtype=torch.int32), 4, 0, 3),  # tokens per expert
        (torch.tensor([0, 1, 1, 3, 2, 3, 0, 5, -1, 9]), 4, 0, 3),  # elements outside [min, max] are ignored
        (torch.tensor([5, 7, 7, 9, 100, 41], dtype=torch.int16), 3, 0, 0),  # min == max: the data's range
        (torch.tensor([4, 4, 4], dtype=torch.uint8), 5, 0, 0),  # a constant: [4 - 1, 4 + 1]
        (torch.tensor([1, 2, 3, 4, 5, 6, 7], dtype=torch.int8), 3, 1.9, 6.2),  # bounds truncated to 1 and 6
        (randint(-50, 50, 40), 7, -20, 30),
    ]
    for x, bins, lo, hi in cases:
        got = torch.histc(x.to("tpu"), bins, lo, hi).cpu()
        want = torch.histc(x.double(), bins, int(lo), int(hi)).to(x.dtype)
        assert got.dtype == x.dtype and torch.equal(got, want), (x, bins, lo, hi, got, want)
    experts = randint(0, 4, 24).int().sort().values
    got = torch.histc(experts.to("tpu"), bins=4, min=0, max=3).cpu()
    assert torch.equal(got, torch.bincount(experts, minlength=4).int())
    with pytest.raises(NotImplementedError, match="histogram_cpu"):
        torch.histc(torch.tensor([True, False], device="tpu"), 2)

def test_search_and_unique(mode):
    seq = torch.tensor([1.0, 2.0, 2.0, 4.0, 7.0])
    vals = torch.tensor([[0.5, 2.0, 7.0], [4.0, 9.0, float("nan")]])
    check(lambda s, v: torch.searchsorted(s, v), seq, vals)
    check(lambda s, v: torch.searchsorted(s, v, right=True, out_int32=True), seq, vals)
    seq2 = torch.sort(randn(2, 6)).values
    check(lambda s, v: torch.searchsorted(s, v, side="right"), seq2, randn(2, 3))
    perm = torch.tensor([4, 0, 3, 1, 2])
    check(lambda s, v, p: torch.searchsorted(s, v, sorter=p), seq[torch.argsort(perm)], vals, torch.argsort(seq[torch.argsort(perm)]))
    check(lambda v, s: torch.bucketize(v, s), vals, seq)
    check(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True), torch.tensor([1, 1, 2, 2, 3, 1, 1]))
    check(lambda t: torch.unique_consecutive(t, dim=0), torch.tensor([[1, 2], [1, 2], [3, 4]]))
    check(lambda t: torch.bincount(t), torch.tensor([0, 3, 3, 1, 5]))
    check(lambda t, w: torch.bincount(t, w, minlength=8), torch.tensor([0, 3, 3, 1]), randn(4))


def test_equal(mode):
    x = randn(3, 4)
    assert torch.equal(x.to("tpu"), x.clone().to("tpu"))
    y = x.clone()
    y[1, 2] += 1
    assert not torch.equal(x.to("tpu"), y.to("tpu"))
    assert not torch.equal(x.to("tpu"), x[:2].to("tpu"))
    n = torch.tensor([float("nan")])
    assert not torch.equal(n.to("tpu"), n.to("tpu"))
    assert torch.equal(torch.empty(0, 2, device="tpu"), torch.empty(0, 2, device="tpu"))


def test_cummax_cummin_of_long_dimensions(mode):
    """Long scans (XLA:CPU once failed to compile cummax over 100 elements) give CPU's values and indices,
    ties to the later index and NaN winning."""
    torch.manual_seed(0)
    nan = float("nan")
    cases = [torch.randn(100, 100), torch.randn(7, 300), torch.tensor([1.0, 3.0, 3.0, nan, 2.0, nan, 5.0]),
             torch.randint(0, 3, (50, 40)), torch.randint(0, 2, (30,)).bool(), torch.randn(4, 200).half()]
    for x in cases:
        for f in (torch.cummax, torch.cummin):
            for d in range(x.dim()):
                v, i = f(x.to("tpu"), d)
                w, j = f(x, d)
                assert torch.equal(i.cpu(), j), (f.__name__, x.shape, d)
                torch.testing.assert_close(v.cpu(), w, equal_nan=True, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_var_and_std_of_complex_are_real(mode, dtype):
    """var/std of a complex tensor is the real parts' variance plus the imaginary parts', of the real dtype."""
    z = torch.randn(4, 5, dtype=dtype, generator=torch.Generator().manual_seed(0))
    cases = [lambda t: torch.var(t), lambda t: torch.std(t, dim=1),
             lambda t: torch.var(t, dim=0, correction=0, keepdim=True), lambda t: torch.var_mean(t, dim=1),
             lambda t: torch.std_mean(t)]
    for f in cases:
        want, got = f(z), f(z.to("tpu"))
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.dtype == w.dtype
            torch.testing.assert_close(g.cpu(), w)


def test_logcumsumexp_and_logaddexp_of_infinities(mode):
    # Two equal infinities combine to that infinity (inf - inf is NaN on the way); NaN propagates, as on CPU.
    x = torch.tensor([-float("inf"), -float("inf"), 1.0, 1.0, float("inf"), float("inf"), float("nan"), 1.0, 1.0])
    for got, want in [(x.to("tpu").logcumsumexp(0), x.logcumsumexp(0)),
                      (torch.logaddexp(x.to("tpu"), x.to("tpu")), torch.logaddexp(x, x)),
                      (x.to("tpu").expand(2, -1).logcumsumexp(1), x.expand(2, -1).logcumsumexp(1))]:
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_unique_with_nans_and_infinities(mode, dtype):
    """NaNs sort last and each is its own value; -inf, signed zeros and repeats group as on CPU
    (a NaN once broke the host sort: values went missing and counts were wrong)."""
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([nan, 1.0, -2.0, 3.0, inf, -inf, -0.0, 0.0, nan, 1.0], dtype=dtype)
    for args in [{}, {"return_inverse": True, "return_counts": True}]:
        want = torch.unique(x, **args)
        got = torch.unique(x.to("tpu"), **args)
        for w, g in zip(want if isinstance(want, tuple) else [want], got if isinstance(got, tuple) else [got]):
            torch.testing.assert_close(g.cpu(), w, equal_nan=True, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.float16])
def test_cumsum_and_cumprod_accumulate_as_cpu(mode, dtype):
    """CPU's scans accumulate in at::acc_type (float64 for float32, complex128 for complex64, float32 for float16),
    and round each running value: cumsum([1e8, 1, -1e8, 3]) is [1e8, 1e8, 1, 4] there (it was [.., 0, 3] on tpu)."""
    big = 1e8 if dtype != torch.float16 else 1e3
    x = torch.tensor([big, 1, -big, 3.0, 1e-3, 0.3, -0.7, big / 3]).to(dtype)
    assert torch.equal(x.to("tpu").cumsum(0).cpu(), x.cumsum(0))
    if dtype != torch.float16:
        y = torch.tensor([-1e30, -1e30, 7, -0.0, 3, 1e-30, 1e30]).to(dtype)
        assert torch.equal(y.to("tpu").cumprod(0).cpu().isnan(), y.cumprod(0).isnan())
        torch.testing.assert_close(y.to("tpu").cumprod(0).cpu(), y.cumprod(0), equal_nan=True)
    p = torch.softmax(torch.linspace(-3, 3, 50000), 0).to(dtype)  # top-p sampling's running probabilities
    torch.testing.assert_close(p.to("tpu").cumsum(0).cpu(), p.cumsum(0), rtol=0, atol=0)


def test_var_and_std_of_float32_accumulate_in_float64(mode):
    """CPU's Welford sums for float32 are double: std of values near 3e19 is finite (their variance, 1.2e39,
    overflows float32 only when var itself is returned)."""
    z = torch.tensor([[3e19, -3e19, 1.0, 5e19], [1.0, 2.0, 3.0, 4.5]])
    for f in (lambda t: t.std(1), lambda t: t.var(1), lambda t: t.std(), lambda t: torch.std_mean(t, 1)[0],
              lambda t: torch.var_mean(t, 1, correction=0)[0]):
        torch.testing.assert_close(f(z.to("tpu")).cpu(), f(z), rtol=1e-6, atol=0)


def test_searchsorted_and_bucketize_stop_where_cpus_binary_search_stops():
    """searchsorted and bucketize search each value by halving, as CPU's kernel does: on sorted rows the answer is the
    count of entries before the value (NaN values last), on unsorted rows (which PyTorch's own tests pass) wherever
    CPU's search stops, which a count of smaller entries missed; the inputs' non-contiguity hints warn as on CPU."""
    torch.manual_seed(0)
    cases = []
    for m in (1, 2, 3, 7, 8, 100):
        s = torch.randn(m).sort().values
        v = torch.randn(5, 13) * 2
        u = torch.randn(4, m)
        v2 = torch.randn(4, 9)
        for right in (False, True):
            cases += [(torch.searchsorted, (s, v), {"right": right}), (torch.bucketize, (v, s), {"right": right}),
                      (torch.searchsorted, (u.sort(-1).values, v2), {"right": right}),
                      (torch.searchsorted, (u, v2), {"right": right}),
                      (torch.searchsorted, (u, v2), {"sorter": u.argsort(-1), "right": right})]
    ints = torch.randint(-50, 50, (4, 10))
    cases += [(torch.searchsorted, (ints.sort(-1).values, torch.randint(-60, 60, (4, 7))), {}),
              (torch.searchsorted, (torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64),
                                    torch.tensor([1.0, float("nan"), 2.0, float("nan")], dtype=torch.float64)), {}),
              (torch.searchsorted, (torch.tensor([0.0, 1.0, float("nan")]), torch.tensor([0.5, 5.0, float("nan")])),
               {"side": "right"}),
              (torch.searchsorted, (torch.tensor([1.0, 2.0]), 1.5), {}),
              (torch.searchsorted, (torch.tensor([]), torch.ones(3)), {})]
    values_3d = torch.tensor([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]])
    cases.append((torch.searchsorted, (values_3d.permute(2, 1, 0).double(), values_3d.permute(2, 1, 0).int()), {}))
    for f, args, kw in cases:
        tpu_args = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
        tpu_kw = {k: a.to("tpu") if isinstance(a, torch.Tensor) else a for k, a in kw.items()}
        assert torch.equal(f(*tpu_args, **tpu_kw).cpu(), f(*args, **kw)), (f.__name__, args, kw)


def test_var_and_std_warn_when_no_degrees_of_freedom_are_left_as_on_cpu():
    # CPU's var/std kernels warn when the correction is not less than the elements reduced into each result.
    def counts(device):
        t = torch.randn(10, 20, device=device)
        calls = [lambda: torch.std(t, dim=-1, correction=20), lambda: torch.var(t, dim=-1, correction=20),
                 lambda: torch.var_mean(t, dim=-1, correction=20), lambda: torch.std_mean(t, dim=-1, correction=20),
                 lambda: torch.ones(1, device=device).std(), lambda: torch.ones(3, 1, device=device).var(1),
                 lambda: torch.ones(3, 2, device=device).var(1, unbiased=False), lambda: torch.ones(0, device=device).var(),
                 lambda: t.var(), lambda: torch.ones(0, 3, device=device).var(1), lambda: t.var((0, 1), correction=200)]
        out = []
        for f in calls:
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                f()
            out.append([str(w.message).split(" (Triggered internally")[0] for w in ws])
        return out
    assert counts("tpu") == counts("cpu")
