"""float8 tensors (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz) against CPU torch, in debug,
strict and fused mode.

A float8 element is CPU's byte: host copies and storage bytes equal CPU's. Conversions to and from every dtype give
CPU's bit patterns (round to nearest even; float8_e4m3fn saturates, float8_e5m2 overflows to infinity, the fnuz
types to their one NaN and have no negative zero). The ops CPU implements for float8 run on tpu and give CPU's
values; the others raise CPU's error.
"""
import warnings

import pytest
import torch

from conftest import Draws, on_both

randn = Draws(38).randn

pytestmark = pytest.mark.usefixtures("mode")

FORMATS = [torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz]
fmt = pytest.mark.parametrize("d", FORMATS, ids=lambda d: str(d).removeprefix("torch."))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def patterns(d):
    """Every float8 value of dtype d, by bit pattern."""
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(d)


def f32_probes():
    """float32 values that exercise rounding to float8: for each exponent from far below the float8
    subnormals to past float8_e5m2's largest value, mantissas whose top twelve bits take every value and whose
    low bits sit at, just above and just below ties; both signs; the infinities, NaNs and extremes."""
    e = torch.arange(90, 151, dtype=torch.int64)
    top = torch.arange(4096, dtype=torch.int64) << 11
    low = torch.tensor([0, 1, 0x3FF, 0x400, 0x401, 0x7FF])
    bits = ((e[:, None, None] << 23) | top[None, :, None] | low[None, None, :]).flatten()
    specials = torch.tensor([0, 1, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001, 0x00800000])
    bits = torch.cat([bits, specials])
    bits = torch.cat([bits, bits | (1 << 31)])
    return torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32).view(torch.float32)


def to_cpu(t):
    return t.detach().cpu()


def assert_bits(got, want):
    """got (tpu) has want's (CPU) dtype, shape, strides and bytes."""
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != CPU's {want.dtype}"
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != CPU's {tuple(want.shape)}"
    assert got.stride() == want.stride(), f"strides {got.stride()} != CPU's {want.stride()}"
    g, w = to_cpu(got).contiguous(), want.contiguous()
    if g.dtype.is_floating_point and g.dtype.itemsize in (1, 4):
        view = torch.uint8 if g.dtype.itemsize == 1 else torch.int32
        g, w = g.view(view), w.view(view)
        bad = (g != w).nonzero()
        assert bad.numel() == 0, f"{bad.shape[0]} of {g.numel()} differ, first at {bad[0].tolist()}: {g[tuple(bad[0])]} != {w[tuple(bad[0])]}"
    else:
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def check(fn, *args, fallback=False):
    got, want = on_both(fn, *args, fallback=fallback)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_bits(g, w)
    else:
        assert_bits(got, want)


def f8(d, *shape, scale=4.0):
    return (randn(*shape) * scale).to(d)


@fmt
def test_creation(d):
    t = torch.device("tpu")
    assert_bits(torch.zeros(2, 3, dtype=d, device=t), torch.zeros(2, 3, dtype=d))
    assert_bits(torch.ones(4, dtype=d, device=t), torch.ones(4, dtype=d))
    assert_bits(torch.full((2, 2), -1.375, dtype=d, device=t), torch.full((2, 2), -1.375, dtype=d))
    assert_bits(torch.tensor([1.0, -0.0, 0.1, 200.0], dtype=d, device=t), torch.tensor([1.0, -0.0, 0.1, 200.0], dtype=d))
    x = f8(d, 3, 4)
    for fn in (torch.zeros_like, torch.ones_like, lambda a: torch.full_like(a, 0.3), lambda a: a.new_full((2,), -3.0),
               lambda a: a.new_zeros(5)):
        check(fn, x)
    e = torch.empty(3, 5, dtype=d, device=t)
    assert e.dtype == d and e.untyped_storage().nbytes() == 15


@fmt
def test_host_round_trip_and_storage_bytes(d):
    p = patterns(d)
    assert_bits(p.to("tpu"), p)
    assert torch.equal(p.to("tpu").view(torch.uint8).cpu(), torch.arange(256, dtype=torch.int32).to(torch.uint8))
    x = f8(d, 4, 8)
    t = x.to("tpu")
    assert bytes(t.untyped_storage().cpu()) == bytes(x.untyped_storage())
    # A view's bytes, a reinterpreted view, and bytes written through one.
    assert_bits(t[1:3, ::2].contiguous(), x[1:3, ::2].contiguous())
    assert_bits(t.view(torch.uint8), x.view(torch.uint8))
    assert_bits(t.view(torch.int8)[0].view(d), x.view(torch.int8)[0].view(d))
    u = torch.arange(16, dtype=torch.int32).to(torch.uint8)
    t.view(torch.uint8)[2, 2:6] = u[:4].to("tpu")
    x.view(torch.uint8)[2, 2:6] = u[:4]
    assert bytes(t.untyped_storage().cpu()) == bytes(x.untyped_storage())


@fmt
def test_from_float16_every_pattern(d):
    h = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16)
    check(lambda a: a.to(d), h)
    check(lambda a: a.float().to(d), h)
    # Through bfloat16 (finite values: CPU's float16 -> bfloat16 drops a NaN's sign).
    check(lambda a: a.bfloat16().to(d), h[h.isfinite()][::7])


@fmt
def test_from_float32(d):
    check(lambda a: a.to(d), f32_probes())


@fmt
def test_from_float64_rounds_through_float32(d):
    # Values between float32 neighbours whose float32 rounding is a float8 tie: CPU rounds to float32 first.
    base = patterns(d).float()
    base = base[base.isfinite() & (base.abs() < 1e4)].double()
    step = torch.where(base == 0, torch.full_like(base, 2.0**-20), base.abs() * 2.0**-4)
    x = torch.cat([base + step, base - step, base + step * (1 + 2.0**-30), base + step * (1 - 2.0**-30)])
    check(lambda a: a.to(d), x)
    check(lambda a: a.to(d), f32_probes().double())


@fmt
def test_from_integers(d):
    check(lambda a: a.to(d), torch.arange(-70000, 70000, 37, dtype=torch.int64))
    check(lambda a: a.to(d), torch.arange(-128, 128, dtype=torch.int32).to(torch.int8))
    check(lambda a: a.to(d), torch.arange(256, dtype=torch.int32).to(torch.uint8))
    check(lambda a: a.to(d), torch.tensor([True, False]))


@fmt
def test_to_other_dtypes(d):
    p = patterns(d)
    for to in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.bool, torch.complex64):
        check(lambda a: a.to(to), p)
    # Integers of the values each integer type holds (CPU's conversion of others is undefined behaviour).
    v = p.float()
    for to, lo, hi in ((torch.int64, -2**62, 2**62), (torch.int32, -2**31, 2**31 - 1), (torch.int16, -32768, 32767),
                       (torch.int8, -128, 127), (torch.uint8, 0, 255)):
        keep = p[v.isfinite() & (v >= lo) & (v <= hi)]
        check(lambda a: a.to(to), keep)


@pytest.mark.parametrize("src", FORMATS, ids=lambda d: str(d).removeprefix("torch."))
@fmt
def test_between_formats(src, d):
    check(lambda a: a.to(d), patterns(src))
    check(lambda a: torch.empty(256, dtype=d, device=a.device).copy_(a), patterns(src))


@fmt
def test_item_and_tolist(d):
    p = patterns(d)
    t = p.to("tpu")
    for i in (0, 1, 0x38, 0x7B, 0x7C, 0x7E, 0x7F, 0x80, 0x81, 0xFE, 0xFF):
        got, want = t[i].item(), p[i].item()
        assert (got == want and str(got) == str(want)) or (got != got and want != want), (i, got, want)
    assert str(t[:40].tolist()) == str(p[:40].tolist())


@fmt
def test_copies_and_indexing(d):
    x = f8(d, 6, 5)
    i = torch.tensor([4, 0, 0, 2])
    m = randn(6, 5) > 0
    check(lambda a: a.clone(), x)
    check(lambda a: a.t().contiguous(), x)
    check(lambda a, i: a.index_select(0, i), x, i)
    check(lambda a, i: a.index_select(1, i[1:]), x, i)
    check(lambda a, i: a[i], x, i)
    check(lambda a, m: a[m], x, m)
    check(lambda a, m: a.masked_select(m), x, m)
    check(lambda a: torch.cat([a, a[:2]], 0), x)
    check(lambda a: torch.stack([a, a], 1), x)
    check(lambda a: a.roll((1, -2), (0, 1)), x)
    check(lambda a: a.repeat(2, 1, 3), x)
    check(lambda a: torch.nn.functional.pad(a, (1, 2, 0, 1), value=0.75), x)


@fmt
def test_moves_keep_every_pattern(d):
    # CPU moves bytes: NaNs keep their sign and (float8_e5m2) payload, -0 stays.
    p = patterns(d)
    i = torch.arange(255, -1, -1)
    m = torch.arange(256) % 3 == 0
    check(lambda a: a.clone(), p)
    check(lambda a, i: a.index_select(0, i), p, i)
    check(lambda a: torch.cat([a[128:], a[:128]]), p)
    check(lambda a, m: torch.where(m, a, a.roll(1)), p, m)
    check(lambda a: a.view(16, 16).t().contiguous(), p)
    check(lambda a: torch.empty(256, dtype=a.dtype, device=a.device).copy_(a), p)
    check(lambda a: a.abs(), p)


@fmt
def test_writes(d):
    x = f8(d, 6, 5)
    v = f8(d, 2, 5)
    i = torch.tensor([3, 1])
    m = randn(6, 5) > 0

    def index_put(a, i, v):
        a = a.clone()
        a[i] = v
        return a

    def fill_view(a):
        a = a.clone()
        a[1:4, ::2].fill_(-2.5)
        a[0].zero_()
        return a

    def copy_into_view(a, v):
        a = a.clone()
        a[2:4] = v.float() * 3  # a float32 source rounded into float8
        return a

    check(index_put, x, i, v)
    check(fill_view, x)
    check(copy_into_view, x, v)
    check(lambda a, m, v: torch.where(m, a, v[:1]), x, m, v)
    check(lambda a, v: torch.slice_scatter(a, v, 0, 1, 3), x, v)
    check(lambda a, v: torch.select_scatter(a, v[0], 0, 4), x, v)


@fmt
def test_values_and_comparisons(d):
    p = patterns(d)
    q = p.roll(3)
    check(lambda a, b: a == b, p, q)
    check(lambda a, b: a != b, p, q)
    check(lambda a: a == 1.0, p)
    check(lambda a: a.isnan(), p)
    check(lambda a: a.isinf(), p)
    check(lambda a: a.abs(), p)
    check(lambda a: a.any(), p)
    check(lambda a: a.view(16, 16).all(1), p)
    t = p.to("tpu")
    assert torch.equal(t, t.clone()) == torch.equal(p, p.clone())
    assert torch.equal(t[:8], t[:8].clone()) == torch.equal(p[:8], p[:8].clone()) is True
    # CPU compares a view with itself with a kernel it lacks for float8.
    assert error_of(torch.equal, t, t) == error_of(torch.equal, p, p) is not None


@fmt
def test_products(d):
    # CPU multiplies in float and rounds once; a matrix product accumulates in float.
    a, b, c = f8(d, 7, 9), f8(d, 9, 6), f8(d, 7, 6, scale=1.0)
    x, y = f8(d, 64), f8(d, 64)
    check(lambda x, y: x * y, x, y)
    check(lambda x, y: x.view(8, 8) * y[:8].view(1, 8), x, y)
    check(lambda a, b: a @ b, a, b)
    check(lambda c, a, b: torch.addmm(c, a, b), c, a, b)


@fmt
def test_reductions_into_another_dtype(d):
    # The sums add float32 (float64) values in another order than CPU's: equal up to rounding.
    x = f8(d, 5, 6)
    for fn in (lambda a: a.sum(dtype=torch.float32), lambda a: a.sum(1, dtype=torch.float64),
               lambda a: a.mean(0, dtype=torch.float32)):
        got, want = on_both(fn, x)
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(to_cpu(got), want)


def error_of(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the exception itself is compared
        return type(e), str(e).split(" (aten::")[0].split("\n")[0]
    return None


REFUSED = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "div": lambda a, b: a / b, "neg": lambda a, b: -a,
    "sum": lambda a, b: a.sum(), "sum_dtype_f8": lambda a, b: a.sum(dtype=a.dtype), "mean": lambda a, b: a.mean(),
    "prod": lambda a, b: a.prod(), "cumsum": lambda a, b: a.cumsum(0), "max": lambda a, b: a.max(),
    "amax": lambda a, b: a.amax(0), "argmax": lambda a, b: a.argmax(), "maximum": lambda a, b: torch.maximum(a, b),
    "lt": lambda a, b: a < b, "ge_scalar": lambda a, b: a >= 1, "sort": lambda a, b: a.sort(), "topk": lambda a, b: a.topk(2),
    "gather": lambda a, b: a.gather(0, torch.zeros(2, 3, dtype=torch.int64, device=a.device)),
    "scatter": lambda a, b: a.scatter(0, torch.zeros(1, 3, dtype=torch.int64, device=a.device), b),
    "index_add": lambda a, b: a.index_add(0, torch.tensor([0], device=a.device), b[:1]),
    "nonzero": lambda a, b: a.nonzero(), "masked_fill": lambda a, b: a.masked_fill(a == a, 1.0),
    "exp": lambda a, b: a.exp(), "clamp": lambda a, b: a.clamp(0, 1), "relu": lambda a, b: a.relu(),
    "tril": lambda a, b: a.tril(), "flip": lambda a, b: a.flip(1), "mul_number": lambda a, b: a * 2,
    "mul_one_element": lambda a, b: a * b[:1, :1], "mv": lambda a, b: a @ b[0], "bmm": lambda a, b: a[None] @ b.t()[None],
    "arange": lambda a, b: torch.arange(3, dtype=a.dtype, device=a.device),
    "rand": lambda a, b: torch.rand(3, dtype=a.dtype, device=a.device),
    "promote_float32": lambda a, b: a + b.float(), "cat_float32": lambda a, b: torch.cat([a, b.float()]),
    "where_float32": lambda a, b: torch.where(a == a, a, b.float()), "eq_float32": lambda a, b: a == b.float(),
    "fill_overflow": lambda a, b: a.clone().fill_(1e5), "fill_inf": lambda a, b: a.clone().fill_(float("inf")),
    "pad_overflow": lambda a, b: torch.nn.functional.pad(a, (1, 1), value=1e5),
}


# A refusal is decided before any program runs, the same in every mode: strict mode alone keeps `make test` short.
@pytest.mark.parametrize("mode", ["strict"], indirect=True)
@pytest.mark.parametrize("op", sorted(REFUSED))
@fmt
def test_refused_like_cpu(d, op):
    a, b = f8(d, 3, 3), f8(d, 3, 3)
    want = error_of(REFUSED[op], a, b)
    got = error_of(REFUSED[op], a.to("tpu"), b.to("tpu"))
    if op == "fill_inf" and d == torch.float8_e5m2:
        assert want is None and got is None  # e5m2 holds infinity
        return
    assert want is not None, "CPU computes it"
    assert got == want


@fmt
def test_cpu_kernels_through_fallback(d):
    # Ops CPU implements for float8 that run on CPU from tpu: values are CPU's.
    x, v = f8(d, 4, 3), f8(d, 3, 3)
    i = torch.tensor([1, 1, 3])
    check(lambda a: a.flip(0), x, fallback=True)
    check(lambda a, i, v: a.index_put((i,), v, accumulate=True), x, i, v, fallback=True)


@fmt
def test_cat_of_formats_refused(d):
    other = FORMATS[(FORMATS.index(d) + 1) % 4]
    a, b = f8(d, 3), f8(other, 3)
    want = error_of(lambda x, y: torch.cat([x, y]), a, b)
    assert want is not None and error_of(lambda x, y: torch.cat([x, y]), a.to("tpu"), b.to("tpu")) == want
