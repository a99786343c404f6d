"""Dtype conformance fixes found by the dtype sweep (tests/conformance/test_sweep_dtypes.py), against CPU:
norm of complex tensors, and half-precision addcmul/addcdiv/lerp computed in float32 and rounded once."""
import platform
import warnings

import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_addmm_baddbmm_linear_round_once(dtype):
    """CPU's addmm and baddbmm sum beta*self + alpha*product in float32 and round once; rounding the
    product to the half type first differs in the last bit for many elements."""
    torch.manual_seed(0)
    c, a, b = torch.randn(16, 24).to(dtype), torch.randn(16, 32).to(dtype), torch.randn(32, 24).to(dtype)
    bc, ba, bb = torch.randn(3, 16, 24).to(dtype), torch.randn(3, 16, 32).to(dtype), torch.randn(3, 32, 24).to(dtype)
    cases = [(torch.addmm, (c, a, b), {"beta": 0.5, "alpha": 1.5}),
             (torch.baddbmm, (bc, ba, bb), {"beta": 1.0, "alpha": -0.7}),
             (torch.nn.functional.linear, (a, b.mT, c[0]), {})]
    for fn, args, kw in cases:
        want = fn(*args, **kw)
        got = fn(*(t.to("tpu") for t in args), **kw)
        assert got.dtype == dtype
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, msg=fn.__name__)

@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_norm_of_complex_is_the_real_norm_of_magnitudes(dtype):
    x = torch.randn(5, 10, dtype=dtype)
    for p, dim in [(2, 1), (1, 0), (3, None), (float("inf"), 1)]:
        want = torch.norm(x, p, dim=dim)
        got = torch.norm(x.to("tpu"), p, dim=dim)
        assert got.dtype == want.dtype == dtype.to_real()
        torch.testing.assert_close(got.cpu(), want)
    a, p_, n = (torch.randn(4, 6, dtype=dtype) for _ in range(3))
    want = torch.nn.functional.triplet_margin_loss(a, p_, n)
    got = torch.nn.functional.triplet_margin_loss(a.to("tpu"), p_.to("tpu"), n.to("tpu"))
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_addcmul_addcdiv_lerp_round_once(dtype):
    """CPU computes these in float32 and rounds once: the results agree exactly, not to a few ulps."""
    torch.manual_seed(0)
    x, t1, t2, w = (torch.randn(4096).to(dtype) for _ in range(4))
    t2 = t2.abs() + 0.5
    X, T1, T2, W = (v.to("tpu") for v in (x, t1, t2, w))
    for want, got in [(torch.addcmul(x, t1, t2, value=0.3), torch.addcmul(X, T1, T2, value=0.3)),
                      (torch.addcdiv(x, t1, t2, value=-1.7), torch.addcdiv(X, T1, T2, value=-1.7)),
                      (torch.lerp(x, t1, w), torch.lerp(X, T1, W)),
                      (torch.lerp(x, t1, 0.3), torch.lerp(X, T1, 0.3))]:
        assert got.dtype == dtype
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_lerp_renorm_dist(dtype):
    x, y, w = (torch.randn(5, 5, dtype=dtype) for _ in range(3))
    X, Y, W = (v.to("tpu") for v in (x, y, w))
    torch.testing.assert_close(torch.lerp(X, Y, 0.4).cpu(), torch.lerp(x, y, 0.4))
    torch.testing.assert_close(torch.lerp(X, Y, W).cpu(), torch.lerp(x, y, w))
    z = torch.randn(5, 5, 5, dtype=dtype)
    got = torch.renorm(z.to("tpu"), 2, 1, 0.5)
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), torch.renorm(z, 2, 1, 0.5))
    torch.testing.assert_close(torch.dist(z.to("tpu"), 2 * z.to("tpu")).cpu(), torch.dist(z, 2 * z))


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_wide_unsigned_dtypes_end_to_end(dtype):
    """uint16/uint32/uint64: copies both ways (the top of the range included), creation, comparisons,
    unique (ordered as unsigned numbers), and ops that compute in float, as CPU does."""
    top = torch.iinfo(dtype).max
    vals = [7, top, 0, 1, 7, top // 2 + 5]
    x = torch.tensor(vals, dtype=torch.int64 if dtype != torch.uint64 else torch.uint64).to(dtype) \
        if dtype != torch.uint64 else torch.tensor([7, 2**64 - 1, 0, 1, 7, 2**63 + 5], dtype=dtype)
    X = x.to("tpu")
    assert X.dtype == dtype and torch.equal(X.cpu(), x)
    assert torch.equal((X == X.flip(0)).cpu(), x == x.flip(0))
    assert torch.equal((X != X.flip(0)).cpu(), x != x.flip(0))
    assert torch.equal(X, X.clone())
    for kw in ({}, {"return_inverse": True, "return_counts": True}):
        want, got = torch.unique(x, **kw), torch.unique(X, **kw)
        for w, g in zip(want if kw else [want], got if kw else [got]):
            assert g.dtype == w.dtype and torch.equal(g.cpu(), w)
    for got, want in [(torch.full_like(X, 3), torch.full_like(x, 3)),
                      (torch.zeros(2, 3, dtype=dtype, device="tpu"), torch.zeros(2, 3, dtype=dtype)),
                      (X[1:4], x[1:4])]:
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
    torch.testing.assert_close(torch.special.i0e(X).cpu(), torch.special.i0e(x))



@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
@pytest.mark.parametrize("other", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.complex64,
                                   torch.uint16, torch.uint32, torch.float16, torch.float64])
def test_wide_unsigned_promotion_as_cpu(dtype, other):
    """uint16/32/64 promote only with themselves and floats; with anything else CPU raises, and so does tpu,
    with CPU's message."""
    a, b = torch.ones(3, dtype=dtype), torch.ones(3, dtype=other)
    try:
        want = a + b
    except NotImplementedError:  # CPU has no add kernel for the type: compare with the value it would give
        want = (a.double() + b.double()).to(torch.promote_types(dtype, other))
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            a.to("tpu") + b.to("tpu")
        assert str(got.value).startswith(str(e).splitlines()[0])
        return
    got = a.to("tpu") + b.to("tpu")
    assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
    assert (a.to("tpu") + 5).dtype == dtype

@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_logaddexp_and_logcumsumexp(dtype):
    x, y = torch.randn(40, dtype=dtype) * 3, torch.randn(40, dtype=dtype) * 3
    got = torch.logaddexp(x.to("tpu"), y.to("tpu"))
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), torch.logaddexp(x, y))
    edge = torch.tensor([complex(float("-inf"), 0), complex(1e30, 1)], dtype=dtype)
    torch.testing.assert_close(torch.logaddexp(edge.to("tpu"), edge.to("tpu")).cpu(), torch.logaddexp(edge, edge))
    z = torch.randn(5, 6, dtype=dtype) * 3
    for d in (0, 1):
        torch.testing.assert_close(torch.logcumsumexp(z.to("tpu"), d).cpu(), torch.logcumsumexp(z, d))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_silu(dtype):
    x = torch.randn(20, dtype=dtype) * 2
    got = torch.nn.functional.silu(x.to("tpu"))
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), torch.nn.functional.silu(x))


BIG = 2**53 + 1
BIG_INT_CASES = {
    "fill_": lambda d: torch.zeros(3, dtype=torch.int64, device=d).fill_(BIG),
    "fill_ int64 max": lambda d: torch.zeros(3, dtype=torch.int64, device=d).fill_(2**63 - 1),
    "full": lambda d: torch.full((3,), BIG, device=d),
    "add number": lambda d: torch.arange(3, device=d) + BIG,
    "mul number": lambda d: torch.ones(3, dtype=torch.int64, device=d) * BIG,
    "eq number": lambda d: torch.tensor([BIG, BIG - 1, 3], device=d).eq(BIG),
    "where numbers": lambda d: torch.where(torch.tensor([True, False, True], device=d), BIG, -BIG),
    "clamp": lambda d: torch.tensor([BIG, 0, -BIG], device=d).clamp(-BIG + 2, BIG - 1),
    "uint8 fill -1": lambda d: torch.zeros(3, dtype=torch.uint8, device=d).fill_(-1),
    "int32 max": lambda d: torch.zeros(3, dtype=torch.int32, device=d) + (2**31 - 1),
    "0-dim cpu tensor": lambda d: torch.arange(3, device=d) + torch.tensor(BIG),
}


@pytest.mark.parametrize("name", sorted(BIG_INT_CASES))
def test_python_integers_stay_exact(mode, name):
    # Python integers reach integer tensors exactly: a float64 on the way would round 2**53 + 1 to 2**53 and
    # 2**63 - 1 to 2**63 (which wraps to the smallest int64).
    want = BIG_INT_CASES[name]("cpu")
    got = BIG_INT_CASES[name]("tpu")
    assert got.dtype == want.dtype
    assert got.cpu().tolist() == want.tolist()


@pytest.mark.parametrize("shape,dims", [((8, 8, 8, 16), None), ((1000, 100), None), ((32, 64, 64), (1, 2)),
                                        ((2, 256, 256), (0, 1))])
def test_float32_sums_over_several_dims_stay_precise(mode, shape, dims):
    """A float32 sum or mean over several dims of many elements is as precise as CPU's cascade sum: the XLA CPU
    plugin accumulated such sums in order along the outer dims (1..8192 held as 8x8x8x16 summed to 33557328,
    CPU 33558528)."""
    n = torch.Size(shape).numel()
    for x in (torch.arange(1, n + 1, dtype=torch.float32).reshape(shape), torch.rand(shape, dtype=torch.float32)):
        d = dims if dims is not None else tuple(range(len(shape)))
        for f in (lambda t: t.sum(d), lambda t: t.mean(d)):
            ref = f(x.double())
            err = ((f(x.to("tpu")).cpu().double() - ref).abs() / ref.abs()).max().item()
            cpu = ((f(x).double() - ref).abs() / ref.abs()).max().item()
            assert err <= max(2 * cpu, 1.2e-7), (shape, dims, err, cpu)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_wide_unsigned_convert_to_complex(dtype):
    """A copy from a wide unsigned dtype into complex64 or complex128 converts, as on CPU (complex64 was refused
    as a promotion)."""
    x = torch.tensor([0, 1, 7, 65535], dtype=torch.int64).to(dtype)
    for c in (torch.complex64, torch.complex128):
        torch.testing.assert_close(x.to("tpu").to(c).cpu(), x.to(c), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.complex64])
def test_product_with_a_bool_mask_keeps_nans_and_signed_zeros(mode, dtype):
    """x * mask with a bool tensor is x * 0 where the mask is False, as on CPU: inf and nan give NaN, -1 gives -0
    (XLA would rewrite the product into a select that gives +0), also when the mask broadcasts or comes from a
    comparison in the same graph."""
    x = torch.tensor([float("inf"), float("nan"), -1.0, 2.0, -float("inf"), -0.0]).to(dtype)
    m = torch.tensor([False, True, False, True, False, False])

    def run(device):
        xd, md = x.to(device), m.to(device)
        return [xd * md, md * xd, xd.view(6, 1) * md, xd * (xd.real > 0), torch.mul(xd, md), xd.clone().mul_(md)]
    for t, c in zip(run("tpu"), run("cpu")):
        t = t.cpu()
        torch.testing.assert_close(t, c, equal_nan=True, atol=0, rtol=0)
        parts = [t.real, t.imag] if t.is_complex() else [t]
        cparts = [c.real, c.imag] if c.is_complex() else [c]
        for tp, cp in zip(parts, cparts):
            assert torch.equal(torch.signbit(tp), torch.signbit(cp)) or torch.isnan(cp).any()


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_wide_unsigned_lcm_gcd_abs(dtype):
    """lcm, gcd and abs of wide unsigned tensors (CPU has no kernels for them) equal CPU's int64 results; abs of an
    unsigned tensor no longer reaches XLA, which refuses it."""
    a = torch.tensor([4, 6, 0, 9, 65535, 21], dtype=torch.int64)
    b = torch.tensor([6, 4, 5, 0, 3, 14], dtype=torch.int64)
    ta, tb = a.to(dtype).to("tpu"), b.to(dtype).to("tpu")
    assert torch.equal(torch.lcm(ta, tb).cpu().to(torch.int64), torch.lcm(a, b))
    assert torch.equal(torch.gcd(ta, tb).cpu().to(torch.int64), torch.gcd(a, b))
    assert torch.equal(torch.abs(ta).cpu().to(torch.int64), a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_float_to_uint8_wraps_through_int64_as_c10_casts(mode, dtype):
    """c10 casts floats to uint8 through int64, so CPU and CUDA agree that -55.7 gives 201 and 300.7 gives 44 (XLA's
    convert saturated both); NaN, infinities and values past int64 give 0."""
    x = torch.tensor([-55.67, -0.5, -1.0, 255.9, 256.0, 300.7, 1e10, -1e10, 97.3, 1e20, float("inf"), float("nan"),
                      -float("inf")]).to(dtype)
    assert torch.equal(x.to("tpu").to(torch.uint8).cpu(), x.to(torch.uint8))
    assert torch.equal((x.to("tpu") * 1).byte().cpu(), (x * 1).byte())
    if dtype == torch.float32:
        z = torch.complex(x, torch.ones_like(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # casting complex to real warns on both devices
            assert torch.equal(z.to("tpu").to(torch.uint8).cpu(), z.to(torch.uint8))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="CPU's casts out of range are x86's here")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64])
@pytest.mark.parametrize("to", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_float_to_signed_integers_out_of_range_as_cpu(dtype, to):
    """c10's float-to-int casts on x86 (CPU tensors) give the int32 minimum (int64's for int64) for what int32 cannot
    hold, NaN and infinities included, and int8/int16 take the low bits of the int32 value (200.5 gives -56, 1e10
    gives 0); XLA's convert saturated (float32 max gave 2147483647, CPU -2147483648)."""
    vals = [-3.4028234663852886e38, -2.0**40, -2.0**31 - 1000, -2.0**31, -2.0**31 - 0.5, -300.7, -1.5, 0.5, 200.5,
            70000.3, 2.0**31 - 1, 2.0**31, 2.0**33 + 5, 2.0**63, 3.4028234663852886e38, float("inf"), float("-inf"),
            float("nan"), -0.0]
    x = torch.tensor(vals, dtype=torch.float64).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # casting complex to real warns on both devices
        want = x.to(to)
        got = x.to("tpu").to(to).cpu()
    assert torch.equal(got, want), (got.tolist(), want.tolist())


@pytest.mark.parametrize("dtype", [torch.uint64, torch.float32, torch.float64, torch.complex64, torch.int64,
                                   torch.uint8, torch.bool])
@pytest.mark.parametrize("value", [2**63 + 5, 2**64 - 1, 2**63 - 1, -3])
def test_fills_beyond_int64_as_cpu(dtype, value):
    # Python integers past int64's range reach fill_ as unsigned Scalars; CPU fills uint64 (and floats) with them
    # and raises its overflow error for narrower integers.
    def fill(device):
        try:
            return torch.empty(3, dtype=dtype, device=device).fill_(value).cpu(), None
        except RuntimeError as e:
            return None, str(e)

    (got, got_err), (want, want_err) = fill("tpu"), fill("cpu")
    assert (got_err is None) == (want_err is None)
    if want_err is not None:
        assert got_err.startswith(want_err)  # the op and its arguments follow CPU's message
    if want is not None:
        assert torch.equal(got, want)
        full = torch.full((2,), value, dtype=dtype, device="tpu").cpu()
        assert torch.equal(full, torch.full((2,), value, dtype=dtype))


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", [torch.uint64, torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool])
def test_comparisons_with_integers_beyond_int64_as_cpu(op, dtype):
    """A Python integer beyond int64 (torch.iinfo(torch.uint64).max) reaches a comparison as an unsigned Scalar, which
    PyTorch's boxed path cannot hold: CPU compares uint64 and floating tensors with it exactly, wraps it into other
    integer types (it compares as -1, or 255 for uint8) and refuses bools. tpu raised an int64 overflow error."""
    if dtype == torch.uint64:
        x = torch.tensor([0, 1, 2**63, 2**64 - 1], dtype=torch.uint64)
    else:
        x = torch.tensor([0, 1, 255, -1]).to(dtype)
    for v in (2**64 - 1, 2**63 + 5):
        def run(device):
            try:
                return getattr(x.to(device), op)(v).cpu(), None
            except (RuntimeError, NotImplementedError) as e:
                return None, str(e)
        (got, got_err), (want, want_err) = run("tpu"), run("cpu")
        if want_err is not None:
            if dtype == torch.uint64 and op in ("lt", "le", "gt", "ge"):
                continue  # CPU has no ordering kernel for uint64; tpu orders them as unsigned
            assert got_err is not None and got_err.startswith(want_err.splitlines()[0])
        else:
            assert torch.equal(got, want), (v, got, want)


def _outcome(f, *args):
    try:
        r = f(*args)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome being compared
        return type(e), str(e).split("\n")[0]
    return r.cpu() if isinstance(r, torch.Tensor) else r


def _index(t, *v):
    return torch.tensor(list(v), device=t.device)


# Ops that take an integer Python number and apply it to int64 tensors: the number must stay exact past 2**53.
INT64_SCALAR_OPS = {
    "scatter_value": lambda t: t.scatter(0, _index(t, 2), 2**62 + 11),
    "scatter_value_reduce": lambda t: t.scatter(0, _index(t, 2), 2**53 + 1, reduce="add"),
    "searchsorted_scalar": lambda t: torch.searchsorted(_index(t, 2**53, 2**53 + 2), 2**53 + 1),
    "bucketize_scalar": lambda t: torch.bucketize(2**53 + 1, _index(t, 2**53, 2**53 + 2)),
    "addcmul_value": lambda t: torch.addcmul(t, torch.ones_like(t), torch.ones_like(t), value=2**53 + 1),
    "index_add_alpha": lambda t: t.index_add(0, _index(t, 1), _index(t, 1), alpha=2**53 + 1),
    "threshold": lambda t: torch.threshold(t, 2**53 + 1, 2**62 + 5),
    "index_fill": lambda t: t.index_fill(0, _index(t, 1), 2**62 + 9),
    "masked_fill": lambda t: t.masked_fill(t > 5, 2**62 + 7),
    "clamp": lambda t: t.clamp(min=2**53 + 3, max=2**62 + 5),
    "add": lambda t: t + (2**62 + 12345),
    "remainder": lambda t: t % (2**40 + 3),
}


@pytest.mark.parametrize("op", sorted(INT64_SCALAR_OPS))
def test_int64_tensors_take_integer_numbers_past_2_53_exactly(op):
    """Rules that turned a Python integer into a float64 constant lost its low bits past 2**53: scatter(..., value)
    wrote 2**62 where CPU writes 2**62 + 11, and threshold(x, 2**53 + 1, v) left 2**53 + 1 unreplaced."""
    x = torch.tensor([2**62 + 1, -(2**61) - 7, 3, 0, 2**53 + 1], dtype=torch.int64)
    f = INT64_SCALAR_OPS[op]
    want, got = _outcome(f, x), _outcome(f, x.to("tpu"))
    assert got.dtype == want.dtype and torch.equal(got, want), (got, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.uint8, torch.int16,
                                   torch.int32, torch.int64])
def test_threshold_converts_its_numbers_as_cpu(dtype):
    """CPU converts threshold's value to the tensor's dtype with an overflow check, and for integer types the threshold
    too (negative numbers wrap into uint8 down to -255); tpu compared an out-of-range threshold as a number."""
    x = torch.tensor([-5, 0, 1, 2, 3, 100, 127], dtype=dtype)
    for th, v in [(1e10, 1), (1, 1e10), (2.5, 1), (-300, 1), (1, -300), (1, 300), (200, 1), (-200, 2), (3, 2.7),
                  (float("inf"), 1), (float("nan"), 1)]:
        want, got = _outcome(torch.threshold, x, th, v), _outcome(torch.threshold, x.to("tpu"), th, v)
        if isinstance(want, tuple) or isinstance(got, tuple):
            assert isinstance(got, tuple) and got[0] == want[0] and got[1].startswith(want[1]), (th, v, got, want)
        else:
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=f"threshold {th}, value {v}")


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32])
def test_clamp_by_numbers_outside_the_dtype_as_cpu(dtype):
    """CPU bounds an integer clamp by numbers clamped into the dtype's range (a uint8 min of -3 bounds nothing; tpu
    wrapped it to 253 and raised every element to 253), refuses a min above the range or a max below it, and
    converts bounds of half types with the overflow check."""
    x = torch.tensor([0, 1, 5, 100, -3], dtype=dtype)
    cases = [dict(min=-3), dict(max=-3), dict(min=300), dict(max=300), dict(min=1e10), dict(max=-1e10), dict(min=2.5),
             dict(min=-3, max=300), dict(min=300, max=-3), dict(min=-200, max=-150), dict(min=2**40), dict(max=-2**40),
             dict(min=70000), dict(min=float("nan"))]
    for kw in cases:
        fns = [lambda t: torch.clamp(t, **kw)]
        if len(kw) == 1:
            f, v = (torch.clamp_min, kw["min"]) if "min" in kw else (torch.clamp_max, kw["max"])
            fns.append(lambda t: f(t, v))
        for fn in fns:
            want, got = _outcome(fn, x), _outcome(fn, x.to("tpu"))
            if isinstance(want, tuple) or isinstance(got, tuple):
                assert isinstance(got, tuple) and got[0] == want[0] and got[1].startswith(want[1]), (kw, got, want)
            else:
                torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=str(kw))


HALF_SCALAR_OPS = {
    "mul": lambda t: t * 0.1, "rmul": lambda t: 0.1 * t, "mul_": lambda t: t.clone().mul_(0.1),
    "div": lambda t: t / 0.3, "div_": lambda t: t.clone().div_(0.3), "rdiv": lambda t: 0.3 / t,
    "mul_by_0d_float64": lambda t: t * torch.tensor(0.1, dtype=torch.float64, device=t.device),
    "mul_by_one_int64": lambda t: t * torch.tensor([257], device=t.device),
    "floor_divide": lambda t: t // 0.3, "div_floor": lambda t: torch.div(t, 0.3, rounding_mode="floor"),
    "add_alpha": lambda t: torch.add(t, t.flip(0), alpha=0.3), "sub_alpha": lambda t: torch.sub(t, t * 3, alpha=0.3),
    "leaky_relu": lambda t: torch.nn.functional.leaky_relu(t, 0.1), "threshold": lambda t: torch.threshold(t, 0.1, 0.3),
    "mul_past_half_range": lambda t: t * 1e10, "leaky_relu_past_half_range": lambda t: torch.nn.functional.leaky_relu(t, 1e10),
    "add": lambda t: t + 0.1, "sub": lambda t: 0.33 - t,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", sorted(HALF_SCALAR_OPS))
def test_half_types_with_a_number_round_as_cpu(dtype, op):
    """CPU's mul and division kernels read a one-element second operand of a float16/bfloat16 result in float32
    (bf16 * 0.1 multiplies by 0.1f, not by 0.10009765625, and rounds once: a fifth of the products differed), add and
    sub form x + alpha*y in float32, leaky_relu and threshold use their numbers in float32 (-0.0 * 1e10 is -0.0 there,
    NaN after narrowing 1e10 to float16's inf). 4096 elements: CPU's scalar tail loop rounds alpha*y separately."""
    torch.manual_seed(0)
    x = torch.randn(4096).to(dtype)
    x[:4] = torch.tensor([-0.0, 0.0, 1.0, -3.0])
    f = HALF_SCALAR_OPS[op]
    torch.testing.assert_close(f(x.to("tpu")).cpu(), f(x), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_sigmoid_and_rsqrt_compute_in_float32(dtype):
    """CPU computes sigmoid and rsqrt of half types in float32 and rounds once; XLA's float16 logistic differed from
    CPU in a third of the elements of a randn sample (and sigmoid's backward amplified it through 1 - y)."""
    torch.manual_seed(0)
    x = (torch.randn(4096) * 2).to(dtype)
    for f in (torch.sigmoid, lambda t: t.abs().rsqrt()):
        torch.testing.assert_close(f(x.to("tpu")).cpu(), f(x), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_types_round_every_op_of_a_fused_graph(dtype):
    """Fused mode records several ops into one program, where XLA would by default keep a half-type result in float32
    until the next op (excess precision): 0.3 / x, a reciprocal then a multiply, then differed from CPU in 1175 of
    4096 bfloat16 elements. CPU rounds every op's result, and every program here does too."""
    torch.manual_seed(0)
    x = torch.randn(4096).to(dtype)
    chains = [lambda t: 0.3 / t, lambda t: (t * 1.7 + 0.3).exp() - t, lambda t: torch.sigmoid(t) * t / 3]
    with torch.tpu.mode("fused"):
        for k, f in enumerate(chains):
            torch.testing.assert_close(f(x.to("tpu")).cpu(), f(x), rtol=0, atol=0, equal_nan=True, msg=f"chain {k}")


@pytest.mark.parametrize("dtype,tiny", [(torch.float32, [1e-45, 1e-40, -1e-39]), (torch.float64, [5e-324, -1e-310])])
def test_subnormals_count_as_zero_and_copies_keep_them(mode, dtype, tiny):
    """The plugin flushes subnormals to zero, read or written, as a TPU does (README, Modes): a stored
    subnormal compares equal to zero and multiplies to zero, where CPU keeps it; a round trip keeps its bits."""
    x = torch.tensor(tiny + [0.0, 1.0], dtype=dtype)
    d = x.to("tpu")
    ints = torch.int32 if dtype == torch.float32 else torch.int64
    assert torch.equal(d.cpu().view(ints), x.view(ints))
    assert (d != 0).cpu().tolist() == [False] * len(tiny) + [False, True]
    assert torch.equal((d * 1).cpu(), torch.tensor([0.0] * (len(tiny) + 1) + [1.0], dtype=dtype))
