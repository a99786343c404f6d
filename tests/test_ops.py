"""Every op of the foundation set against CPU torch, in debug, strict and fused mode."""
import pytest
import torch

from conftest import Draws, check, no_fallbacks

randn, randint = Draws(0).pair()


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_factories(mode):
    for dtype in (torch.float32, torch.int64, torch.bool, torch.bfloat16):
        assert torch.equal(torch.zeros(2, 3, dtype=dtype, device="tpu").cpu(), torch.zeros(2, 3, dtype=dtype))
        assert torch.equal(torch.ones(4, dtype=dtype, device="tpu").cpu(), torch.ones(4, dtype=dtype))
    assert torch.equal(torch.full((2, 2), 7.5, device="tpu").cpu(), torch.full((2, 2), 7.5))
    assert torch.equal(torch.arange(10, device="tpu").cpu(), torch.arange(10))
    assert torch.equal(torch.arange(1, 4, 0.5, device="tpu").cpu(), torch.arange(1, 4, 0.5))
    assert torch.equal(torch.arange(5, -3, -2, device="tpu").cpu(), torch.arange(5, -3, -2))
    # An integer arange truncates start and step, as PyTorch's kernel does; its length comes from the floats.
    for args in [(0.5, 5, 1.5), (1.7, 9.2, 2.5), (0.2, 4, 0.7), (7, -7.5, -2.9)]:
        for dtype in (torch.int64, torch.int32, torch.int8):
            want = torch.arange(*args, dtype=dtype)
            assert torch.equal(torch.arange(*args, dtype=dtype, device="tpu").cpu(), want), (args, dtype)
    e = torch.empty(3, 4, device="tpu")
    e.fill_(2.0)
    assert torch.equal(e.cpu(), torch.full((3, 4), 2.0))
    e.zero_()
    assert torch.equal(e.cpu(), torch.zeros(3, 4))
    assert torch.equal(torch.zeros_like(e).cpu(), torch.zeros(3, 4))
    assert torch.equal(torch.full_like(e, 3).cpu(), torch.full((3, 4), 3.0))


def test_default_dtype_sets_what_integers_promote_to(mode):
    """After torch.set_default_dtype(float64), integer division, Python floats and floating unary ops of
    integers give float64 (complex128 for a complex number), as on CPU; switching back gives float32 again."""
    a, u = torch.tensor([1, 2, 7], dtype=torch.int32), torch.tensor([1, 2, 250], dtype=torch.uint8)
    cases = [lambda a, u: a / a, lambda a, u: torch.true_divide(a, 2), lambda a, u: u + 5.5,
             lambda a, u: torch.sqrt(a), lambda a, u: u * 1j, lambda a, u: a.float() + 0.5]
    try:
        for default in (torch.float64, torch.float32, torch.float64):
            torch.set_default_dtype(default)
            for _ in range(2):  # the second call replays the recorded plan
                for f in cases:
                    want, got = f(a, u), f(a.to("tpu"), u.to("tpu"))
                    assert got.dtype == want.dtype, (default, got.dtype, want.dtype)
                    torch.testing.assert_close(got.cpu(), want)
    finally:
        torch.set_default_dtype(torch.float32)


def test_range_factories_into_a_strided_out_of_the_same_count(mode):
    """An out= view with the result's element count keeps its shape and gets the values row by row, as on CPU."""
    for make in (lambda out: torch.arange(0, 4, out=out), lambda out: torch.linspace(0, 3, 4, out=out),
                 lambda out: torch.logspace(0, 3, 4, base=2.0, out=out)):
        want, got = torch.zeros(2, 3), torch.zeros(2, 3, device="tpu")
        make(want.narrow(1, 1, 2))
        make(got.narrow(1, 1, 2))
        assert torch.equal(got.cpu(), want), (got.cpu(), want)


def test_linspace_and_logspace(mode):
    """Evenly spaced values as CPU's kernel forms them (from both ends), on the device, with no fallback."""
    torch.tpu.reset_metrics()
    # (1, 127, 50) and (0, 999999, 10**6): the step was a product with the reciprocal of steps - 1 (XLA's rewrite of a
    # division by a constant), so linspace(1, 127, 50) of int16 gave 54 where CPU gives 55 at index 21.
    ranges = [(-1, 1, 7), (0, 10, 5), (3.3, -2.7, 11), (0, 1, 1), (2, 5, 0), (-5.5, 7.25, 100), (1, 127, 50),
              (0, 999999, 10**6)]
    for start, end, steps in ranges:
        for dtype in (torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.bfloat16):
            if dtype == torch.int16 and end > 2**15:
                continue
            want = torch.linspace(start, end, steps, dtype=dtype)
            got = torch.linspace(start, end, steps, dtype=dtype, device="tpu").cpu()
            # CPU's vector loop steps float64 and bf16 lanes from each block's first value: one rounding apart.
            exact = dtype not in (torch.float64, torch.bfloat16)
            torch.testing.assert_close(got, want, atol=0 if exact else None, rtol=0 if exact else None)
            if end > 1000:
                continue  # 2 ** 999999 overflows every dtype
            want = torch.logspace(start, end, steps, base=2.0, dtype=dtype)
            got = torch.logspace(start, end, steps, base=2.0, dtype=dtype, device="tpu").cpu()
            if dtype.is_floating_point:
                torch.testing.assert_close(got, want, rtol=1e-2 if dtype == torch.bfloat16 else 1e-5, atol=0)
            else:
                assert torch.equal(got, want), (start, end, steps, dtype, got, want)
    out = torch.empty(2, device="tpu")
    torch.linspace(0, 1, 5, out=out)  # resized to 5, as on CPU
    assert torch.equal(out.cpu(), torch.linspace(0, 1, 5))
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1, device="tpu")
    assert not no_fallbacks()


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_arith_promotion_and_broadcast(mode, op):
    f = getattr(torch, op)
    a, b = randn(3, 4), randn(4)
    check(f, a, b)
    check(lambda x: f(x, 2), a)
    check(lambda x: f(x, 2.5), a)
    check(f, randint(-5, 5, 3, 1), randn(1, 4, dtype=torch.float64))
    if op != "div":
        check(f, randint(-5, 5, 2, 3), randint(-5, 5, 3, dtype=torch.int32))
        check(lambda x: f(x, 3), randint(-5, 5, 2, 3, dtype=torch.int8))
    check(f, randn(2, 3, dtype=torch.float16), randn(2, 3, dtype=torch.bfloat16))
    check(f, randn(2, 3), torch.tensor(2.0, dtype=torch.float64))
    # A Python float with an integer tensor gives the default dtype, a 0-dim float64 tensor gives float64.
    check(lambda x: f(x, 2.5), randint(-5, 5, 2, 3))
    check(lambda x: f(x, torch.tensor(2.5, dtype=torch.float64)), randint(-5, 5, 2, 3))
    check(lambda x: f(x, 1 + 2j), randint(-5, 5, 2, 3))


def test_add_alpha_and_uint8(mode):
    check(lambda x, y: torch.add(x, y, alpha=3), randn(5), randn(5))
    check(lambda x, y: torch.sub(x, y, alpha=2), randint(0, 9, 5), randint(0, 9, 5))
    check(torch.add, randint(0, 200, 6, dtype=torch.uint8), randint(-100, 100, 6, dtype=torch.int8))
    check(torch.add, torch.tensor([True, False]), torch.tensor([True, True]))


@pytest.mark.parametrize("rounding", [None, "trunc", "floor"])
def test_div_rounding(mode, rounding):
    a = torch.tensor([7.0, -7.0, 7.5, -7.5, 0.0])
    b = torch.tensor([2.0, 2.0, -2.0, -2.0, 3.0])
    check(lambda x, y: torch.div(x, y, rounding_mode=rounding), a, b)
    ia, ib = torch.tensor([7, -7, 7, -7, 0]), torch.tensor([2, 2, -2, -2, 3])
    check(lambda x, y: torch.div(x, y, rounding_mode=rounding), ia, ib)
    check(lambda x: torch.div(x, 3, rounding_mode=rounding), ia)
    # Quotients that round up to an integer, infinities and zero divisors: floor takes CPU's fmod-based steps
    # (1 / 0.1 floors to 9, inf floors to nan), not floor(x / y).
    fa = torch.tensor([1.0, 7.0, -7.0, 0.3, 5.5, float("inf"), 2.0, -0.0, 1.0, -1.0])
    fb = torch.tensor([0.1, 0.7, 0.7, 0.1, -1.1, 3.0, float("inf"), 3.0, 0.0, 0.0])
    for dtype in (torch.float32, torch.float64):
        check(lambda x, y: torch.div(x, y, rounding_mode=rounding), fa.to(dtype), fb.to(dtype))
        check(lambda x: torch.div(x, 0.1, rounding_mode=rounding), fa.to(dtype))
        check(lambda x: x.clone().div_(0.7, rounding_mode=rounding), fa.to(dtype))


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu"])
def test_unary(mode, name):
    f = getattr(torch, name)
    x = randn(4, 5)
    if name in ("log", "sqrt", "rsqrt"):
        x = x.abs() + 0.1
    check(f, x)
    check(f, x.double())
    check(lambda t: f(t.t()), x)
    if name not in ("neg", "abs", "relu"):
        check(f, randint(1, 9, 6))  # integers promote to float32
    else:
        check(f, randint(-9, 9, 6))


def test_pow_max_min_where_clamp(mode):
    a, b = randn(3, 4).abs() + 0.5, randn(3, 4)
    check(torch.pow, a, b)
    check(lambda x: x ** 2, b)
    check(lambda x: 2 ** x, b)
    check(lambda x: torch.pow(x, 3), randint(-4, 4, 5))
    check(torch.maximum, a, b)
    check(torch.minimum, a, b)
    check(torch.maximum, torch.tensor([1.0, float("nan")]), torch.tensor([float("nan"), 2.0]))
    check(torch.fmax, torch.tensor([1.0, float("nan")]), torch.tensor([float("nan"), 2.0]))
    p, q = torch.tensor([True, False, False, True]), torch.tensor([False, False, True, True])
    check(torch.fmax, p, q)
    check(torch.fmin, p, q)
    check(lambda c, x, y: torch.where(c, x, y), b > 0, a, b)
    check(lambda c, x: torch.where(c, x, 0.0), b > 0, a)
    check(lambda x: torch.clamp(x, -0.5, 0.5), b)
    check(lambda x: torch.clamp(x, min=0.1), b)
    check(lambda x: x.clamp(max=3), randint(-9, 9, 7))
    check(lambda x, lo, hi: torch.clamp(x, lo, hi), b, -a, a)


def test_comparisons_and_logical(mode):
    a, b = randint(0, 3, 4, 4), randint(0, 3, 4)
    for f in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
        check(f, a, b)
        check(lambda x: f(x, 1), a)
        check(lambda x: f(x, 1.5), a)
        check(f, randn(3), randn(3).double())
    p, q = randn(5) > 0, randn(5) > 0
    check(torch.logical_and, p, q)
    check(torch.logical_or, p, q)
    check(torch.logical_xor, p, q)
    check(torch.logical_not, p)
    check(torch.logical_and, randn(5), randint(0, 2, 5))


def test_reductions(mode):
    x = randn(3, 4, 5)
    check(torch.sum, x)
    check(lambda t: t.sum(dim=1), x)
    check(lambda t: t.sum(dim=(0, 2), keepdim=True), x)
    check(lambda t: t.sum(dim=-1, dtype=torch.float64), x)
    check(lambda t: t.sum(), randint(0, 5, 4, 4, dtype=torch.int32))
    check(lambda t: t.sum(), torch.tensor([True, True, False]))
    check(torch.mean, x)
    check(lambda t: t.mean(dim=[0, 1]), x)
    check(lambda t: t.amax(dim=1), x)
    check(lambda t: t.amin(dim=(0, 2), keepdim=True), x)
    check(lambda t: t.max(dim=1), x)
    check(lambda t: t.min(dim=2, keepdim=True), x)
    check(lambda t: t.max(), x)
    check(lambda t: t.min(), randint(-9, 9, 8))
    check(lambda t: t.argmax(), x)
    check(lambda t: t.argmax(dim=1, keepdim=True), x)
    check(lambda t: t.argmin(dim=0), x)
    check(lambda t: t.argmax(dim=0), torch.tensor([[1.0, 3.0], [3.0, 1.0], [3.0, 3.0]]))


def test_matmul_family(mode):
    a, b, c = randn(3, 4), randn(4, 5), randn(5)
    check(torch.mm, a, b)
    check(torch.matmul, a, b)
    check(lambda x, y: x @ y, b.t(), a.t())
    check(torch.bmm, randn(2, 3, 4), randn(2, 4, 2))
    check(lambda bias, x, y: torch.addmm(bias, x, y, beta=0.5, alpha=2), c, a, b)
    check(torch.matmul, randn(2, 3, 4), b)
    check(torch.matmul, b, c)
    check(torch.matmul, c, c)
    check(torch.matmul, randn(2, 1, 3, 4), randn(5, 4, 2))
    check(torch.mm, a.double(), b.double())


def test_shape_ops(mode):
    a, b = randn(2, 3), randn(4, 3)
    check(lambda x, y: torch.cat([x, y]), a, b)
    check(lambda x, y: torch.cat([x.t(), y.t()], dim=1), a, b)
    check(lambda x, y: torch.cat([x, y.int()]), a, randint(0, 5, 2, 3, dtype=torch.int32))
    check(lambda x: torch.stack([x, x * 2, x * 3], dim=1), a)
    idx = torch.tensor([3, 0, 0, 2])
    check(lambda x, i: torch.index_select(x, 0, i), b, idx)
    check(lambda x, i: x.index_select(1, i[1:]), b, idx)
    gi = torch.tensor([[0, 2, 1], [1, 1, 0]])
    check(lambda x, i: torch.gather(x, 1, i), a, gi)
    check(lambda x, i: torch.gather(x, 0, i), b, gi)
    check(lambda x: x[1:, ::2].contiguous(), b)
    check(lambda x: x.reshape(-1), b.t())


def test_softmax(mode):
    x = randn(3, 7)
    check(lambda t: torch.softmax(t, dim=1), x)
    check(lambda t: torch.softmax(t, dim=0), x)
    check(lambda t: torch.log_softmax(t, dim=-1), x)
    check(lambda t: torch.log_softmax(t, dim=0), x.double())
    check(lambda t: torch.softmax(t * 100, dim=1), x)


def test_inplace_on_views(mode):
    def transposed(a):
        a.t().add_(1)
        return a

    def strided(a):
        a[1:, ::2].mul_(2)
        return a

    def slice_assign(a):
        a[0] = 5
        a[:, 1] = torch.arange(a.shape[0], dtype=a.dtype, device=a.device)
        return a

    def expanded_source(a):
        a.copy_(a[0:1].expand_as(a) + 1)
        return a

    def as_strided_write(a):
        a.as_strided((2, 2), (3, 1), 1).sub_(7)
        return a

    def column_view_of_base(a):
        v = a.view(-1)
        v[2:9:3].fill_(-4)
        return a

    def out_variant(a):
        out = torch.empty(0, device=a.device)
        torch.add(a, 1, out=out)
        return out

    for f in (transposed, strided, slice_assign, expanded_source, as_strided_write, column_view_of_base, out_variant):
        x = randn(4, 6)
        check(f, x.clone())
    # Base stays consistent when the view is written through a second alias.
    cpu = randn(3, 3)
    t = cpu.to("tpu")
    alias = t[1]
    alias.add_(10)
    cpu[1].add_(10)
    torch.testing.assert_close(t.cpu(), cpu)


def test_eye_vdot_addbmm(mode):
    for dtype in (torch.float32, torch.int64, torch.bool):
        assert torch.equal(torch.eye(3, 4, dtype=dtype, device="tpu").cpu(), torch.eye(3, 4, dtype=dtype))
        assert torch.equal(torch.eye(2, dtype=dtype, device="tpu").cpu(), torch.eye(2, dtype=dtype))
    check(torch.vdot, randn(5), randn(5))
    check(lambda s, a, b: torch.addbmm(s, a, b, beta=0.5, alpha=2), randn(3, 2), randn(4, 3, 5), randn(4, 5, 2))


def test_bit_shifts(mode):
    a = torch.tensor([1, -8, 37, -1, 5, 1000], dtype=torch.int64)
    s = torch.tensor([0, 1, 3, 63, 64, -1], dtype=torch.int64)
    check(torch.bitwise_left_shift, a, s)
    check(torch.bitwise_right_shift, a, s)
    check(lambda x: x << 2, a)
    check(lambda x: x >> 1, a)
    u = torch.tensor([1, 128, 255, 7], dtype=torch.uint8)
    check(torch.bitwise_left_shift, u, torch.tensor([1, 1, 8, 2], dtype=torch.uint8))
    check(torch.bitwise_right_shift, u, torch.tensor([1, 7, 9, 0], dtype=torch.uint8))
    check(lambda x: x >> 2, torch.tensor([-100, 100, -3], dtype=torch.int32))


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_wide_unsigned_right_shift_is_logical(mode, dtype):
    """Right shifts of uint16/32/64 fill with zeros, as uint8's do (CPU has no kernel for them, so Python's
    integers are the reference): with the top bit set, an arithmetic shift would copy it in."""
    bits = torch.iinfo(dtype).bits
    vals = [2 ** bits - 1, 2 ** (bits - 1) + 10, 12345, 1, 0]
    shifts = [1, 3, bits - 1, 0, bits]
    x = torch.tensor(vals, dtype=dtype, device="tpu")
    s = torch.tensor(shifts, dtype=dtype, device="tpu")
    assert (x >> s).cpu().tolist() == [0 if k >= bits else v >> k for v, k in zip(vals, shifts)]
    assert (x >> 1).cpu().tolist() == [v >> 1 for v in vals]
    assert torch.bitwise_right_shift(x, bits).cpu().tolist() == [0] * len(vals)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_integer_pow_uses_every_exponent_bit(mode, dtype):
    """Integer powers wrap as CPU's do for exponents of 64 and more (XLA's integer power read only the low 6 bits:
    0 ** 64 gave 1), and a negative exponent gives 1 for 1, +-1 for -1 and 0 otherwise."""
    info = torch.iinfo(dtype)
    vals = [v for v in [0, 1, -1, 2, -2, 3, -3, 7, 64, 65, 100, 127, info.max, info.min] if info.min <= v <= info.max]
    x = torch.tensor(vals, dtype=dtype)
    base, exponent = x.repeat_interleave(len(vals)), x.repeat(len(vals))
    check(torch.pow, base, exponent)
    check(lambda b: b ** 64, base)
    check(lambda b: torch.pow(3, b.clamp(min=0)), base)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_float_arange_rounds_once_from_cpus_accumulate_type(mode, dtype):
    """CPU forms float32 arange values with float64 steps and rounds once: arange(-1.5, 2.7, 0.3)[5] is -5.6e-17,
    where float32 steps gave 6e-8. (CPU's vector blocks round their first value to float32 first, so other elements
    may differ by an ulp; half types compute in float32.)"""
    for start, end, step in [(-1.5, 2.7, 0.3), (0, 1, 0.1), (5, -5, -1.5), (0.5, 5, 2), (-3.3, 10.1, 0.7)]:
        want = torch.arange(start, end, step, dtype=dtype)
        got = torch.arange(start, end, step, dtype=dtype, device="tpu").cpu()
        torch.testing.assert_close(got, want, rtol=1.3e-6 if dtype == torch.float32 else 0, atol=0)
    near_zero = torch.arange(-1.5, 2.7, 0.3, dtype=dtype)[5]
    assert torch.arange(-1.5, 2.7, 0.3, dtype=dtype, device="tpu")[5].item() == near_zero.item()


def test_integer_arange_counts_and_steps_exactly_past_float64(mode):
    """With integer bounds and step, CPU sizes an int64 arange with integer arithmetic and forms its values in int64:
    arange(0, 100 * w, w) for w = 1449629115440469 has 100 elements (tpu counted in float64 and gave 101), and
    arange(2**62 + 1, 2**62 + 10, 3) has 3 (tpu gave none). Float bounds keep CPU's float64 count."""
    w = 1449629115440469
    cases = [((0, 100 * w, w), {}), ((2**62 + 1, 2**62 + 10, 3), {}), ((-2**62, -2**62 + 7), {}),
             ((2**53 + 1, 2**53 + 8, 2), {}), ((5, -6, -3), {}), ((0.5, 5, 1.5), {"dtype": torch.int64}),
             ((2**62, 2**62 + 10, 3.0), {}), ((0, 10, 3), {"dtype": torch.int32}), ((True,), {})]
    for args, kw in cases:
        want = torch.arange(*args, **kw)
        got = torch.arange(*args, device="tpu", **kw).cpu()
        assert got.dtype == want.dtype and torch.equal(got, want), (args, got, want)


def test_kaiser_window_on_tpu():
    """torch.kaiser_window's composite calls a DispatchStub with the output's device (it hit the stub's internal
    assert on tpu); the values equal CPU's for periodic and symmetric windows, any beta and dtype."""
    for args, kw in [((8,), {}), ((9, False), {}), ((7, True, 5.0), {}), ((1,), {}), ((0,), {}),
                     ((6,), {"dtype": torch.float64}), ((5, True, 2.5), {"dtype": torch.bfloat16})]:
        want = torch.kaiser_window(*args, **kw)
        got = torch.kaiser_window(*args, device="tpu", **kw)
        assert got.device.type == "tpu" and got.dtype == want.dtype
        torch.testing.assert_close(got.cpu(), want)
