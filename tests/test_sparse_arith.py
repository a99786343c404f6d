"""Arithmetic on sparse COO tensors on tpu matches CPU: the product of two sparse tensors (values,
stored indices, dtype and is_coalesced), division by a scalar with CPU's promotion, and the same
exception classes where CPU refuses (in-place results that cannot be cast, division by a tensor)."""
import re

import pytest
import torch

TOL = dict(atol=1e-5, rtol=1e-5)

pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def sparse(indices, values, size):
    return torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size)


# Coalesced and uncoalesced operands of size (3, 4), with repeated and unmatched positions.
C = torch.tensor([[0, 0, 1.5, 0], [2, 0, 0, -1], [0, 3, 0, 4]]).to_sparse()
C2 = torch.tensor([[0, 2.0, 2, 0], [0, 0, 0, 5], [1, 3, 0, -2]]).to_sparse()
U = sparse([[2, 0, 2, 1, 1], [1, 2, 1, 0, 3]], [1.0, 2.0, 3.0, 4.0, -1.0], (3, 4))
U2 = sparse([[1, 2, 1, 0], [3, 3, 3, 1]], [0.5, 2.0, 1.5, 7.0], (3, 4))
# Hybrid operands: two sparse dims and one dense dim, the second broadcasting in the dense dim.
H = sparse([[0, 1, 1, 0], [2, 0, 0, 1]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [-1.0, 0.5, 2.0]],
           (2, 3, 3))
H1 = sparse([[1, 0], [0, 2]], [[2.0], [-3.0]], (2, 3, 1))
EMPTY = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4))
SCALAR = torch.sparse_coo_tensor(torch.zeros(0, 2, dtype=torch.long), torch.tensor([2.0, 0.5]), ())  # 0-dim: 2.5


def same_sparse(got, want, exact_layout=True):
    assert got.layout == torch.sparse_coo and got.device.type == "tpu"
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.is_coalesced() == want.is_coalesced()
    got = got.cpu()
    if exact_layout:
        torch.testing.assert_close(got._indices(), want._indices(), rtol=0, atol=0)
        torch.testing.assert_close(got._values(), want._values(), **TOL)
    torch.testing.assert_close(got.to_dense(), want.to_dense(), **TOL)


def outcome(f):
    """Returns ("ok", result) or (the exception's class, its message)."""
    try:
        return "ok", f()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e), str(e)


def same_outcome(f, device_args, cpu_args):
    got, want = outcome(lambda: f(*device_args)), outcome(lambda: f(*cpu_args))
    assert got[0] == want[0], f"tpu gave {got}, CPU gave {want}"
    return got, want


PAIRS = {
    "coalesced": (C, C2), "coalesced-self": (C, C), "uncoalesced-coalesced": (U, C), "coalesced-uncoalesced": (C, U),
    "uncoalesced": (U, U2), "uncoalesced-self": (U, U), "hybrid-broadcast": (H, H1),
    "hybrid-broadcast-coalesced": (H.coalesce(), H1.coalesce()), "empty-left": (EMPTY, C), "empty-right": (U, EMPTY),
    "scalar-left": (SCALAR, U), "scalar-right": (C, SCALAR),
}


@pytest.mark.parametrize("pair", PAIRS, ids=list(PAIRS))
@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float32), (torch.int32, torch.int8),
                                    (torch.int64, torch.float32), (torch.float32, torch.float64),
                                    (torch.uint8, torch.int16)], ids=str)
def test_sparse_times_sparse(mode, pair, dtypes):
    a, b = (t.to(d) for t, d in zip(PAIRS[pair], dtypes))
    want = a * b
    same_sparse(a.to("tpu") * b.to("tpu"), want)
    same_sparse(torch.mul(a.to("tpu"), b.to("tpu")), want)


@pytest.mark.parametrize("pair", ["coalesced", "uncoalesced-coalesced", "coalesced-uncoalesced", "uncoalesced"])
def test_sparse_times_sparse_in_place(mode, pair):
    a, b = PAIRS[pair]
    want = a.double().mul_(b)
    got = a.double().to("tpu")
    got.mul_(b.to("tpu"))
    same_sparse(got, want)
    # A float self cannot hold a product with a double: CPU refuses, so does tpu.
    same_outcome(lambda x, y: x.clone().mul_(y), (a.to("tpu"), b.double().to("tpu")), (a, b.double()))


def test_sparse_times_empty_0dim_sparse(mode):
    """A 0-dimensional sparse tensor holding nothing is 0: the product holds nothing. (CPU's result
    holds the other operand's positions with values it never wrote, so the reference is the dense one.)"""
    zero = torch.sparse_coo_tensor(torch.zeros(0, 0, dtype=torch.long), torch.zeros(0), ())
    for got in (zero.to("tpu") * U.to("tpu"), C.to("tpu") * zero.to("tpu")):
        assert got.is_sparse and got.is_coalesced() and got._nnz() == 0 and got.shape == (3, 4)
        torch.testing.assert_close(got.to_dense().cpu(), torch.zeros(3, 4), rtol=0, atol=0)


def test_sparse_times_sparse_bad_sizes():
    other = torch.zeros(4, 3).to_sparse()
    got, want = same_outcome(lambda x, y: x * y, (C.to("tpu"), other.to("tpu")), (C, other))
    assert got[0] is RuntimeError and "mul" in got[1] and "[3, 4]" in got[1]


# In-place ops whose result type cannot be cast to self's dtype raise on CPU; each of these used to
# cast silently on tpu.
NARROWING = {
    "dense_int.add_(sparse_float)": lambda d, s, D, S: d.add_(S),
    "sparse_int.add_(sparse_float)": lambda d, s, D, S: s.add_(S),
    "sparse_int.add_(dense_float)": lambda d, s, D, S: s.add_(D),
    "dense_int.sub_(sparse_float)": lambda d, s, D, S: d.sub_(S),
    "sparse_int.sub_(sparse_float)": lambda d, s, D, S: s.sub_(S),
    "dense_int.mul_(sparse_float)": lambda d, s, D, S: d.mul_(S),
    "sparse_int.mul_(sparse_float)": lambda d, s, D, S: s.mul_(S),
    "sparse_int.mul_(dense_float)": lambda d, s, D, S: s.mul_(D),
    "sparse_int.mul_(scalar_float)": lambda d, s, D, S: s.mul_(2.5),
    "sparse_int.div_(scalar)": lambda d, s, D, S: s.div_(2),
    "dense_out_int.add(dense, sparse_float)": lambda d, s, D, S: torch.add(d, S, out=d.clone()),
}


@pytest.mark.parametrize("case", NARROWING, ids=list(NARROWING))
@pytest.mark.parametrize("coalesced", [True, False], ids=["coalesced", "uncoalesced"])
def test_in_place_narrowing_raises(mode, case, coalesced):
    make = (lambda t: t.coalesce()) if coalesced else (lambda t: t)
    dense_int, dense_float = C.to_dense().long(), C2.to_dense()
    cpu = (dense_int.clone(), make(U.long()), dense_float, make(U2))
    got, want = same_outcome(NARROWING[case], tuple(x.to("tpu") for x in cpu), cpu)
    assert want[0] is RuntimeError
    if "add" in case and "dense" in case.split(".")[0]:
        assert "Float" in got[1] and "Long" in got[1]


@pytest.mark.parametrize("op", ["add_", "sub_"])
def test_in_place_widening_matches_cpu(mode, op):
    dense = C.to_dense().double()
    want_dense = getattr(dense.clone(), op)(U)
    got_dense = getattr(dense.to("tpu"), op)(U.to("tpu"))
    torch.testing.assert_close(got_dense.cpu(), want_dense, **TOL)
    want = getattr(C.double(), op)(U2.int())
    got = getattr(C.double().to("tpu"), op)(U2.int().to("tpu"))
    same_sparse(got, want, exact_layout=False)


DIVIDENDS = {
    "float-coalesced": C, "float-uncoalesced": U, "int": C2.long(), "int-uncoalesced": U.int(),
    "bool": C2.bool(), "uint8": C2.abs().to(torch.uint8), "int16": U.short(), "hybrid": H,
}
# Divisors: Python numbers, a 0-dimensional float tensor moved to tpu, an int one left on CPU.
DIVISORS = {"int": (2, False), "float": (-0.5, False), "tpu-0dim": (torch.tensor(4.0), True),
            "cpu-int-0dim": (torch.tensor(3), False)}


@pytest.mark.parametrize("dividend", DIVIDENDS, ids=list(DIVIDENDS))
@pytest.mark.parametrize("divisor", DIVISORS, ids=list(DIVISORS))
def test_sparse_div_scalar(mode, dividend, divisor):
    s = DIVIDENDS[dividend]
    d_cpu, move = DIVISORS[divisor]
    d_tpu = d_cpu.to("tpu") if move else d_cpu
    same_sparse(s.to("tpu") / d_tpu, s / d_cpu)
    same_sparse(torch.true_divide(s.to("tpu"), d_tpu), torch.true_divide(s, d_cpu))
    for rounding in ("floor", "trunc"):
        same_sparse(torch.div(s.to("tpu"), d_tpu, rounding_mode=rounding), torch.div(s, d_cpu, rounding_mode=rounding))
    if s.dtype != torch.bool:
        same_sparse(torch.floor_divide(s.to("tpu"), d_tpu), torch.floor_divide(s, d_cpu))
    if s.dtype.is_floating_point:
        want = s.clone().div_(d_cpu)
        got = s.to("tpu")
        got.div_(d_tpu)
        same_sparse(got, want)
        want = s.clone().div_(d_cpu, rounding_mode="floor")
        got = s.to("tpu")
        got.div_(d_tpu, rounding_mode="floor")
        same_sparse(got, want)


@pytest.mark.parametrize("default", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("dtype", [torch.bool, torch.int16, torch.uint8, torch.int32, torch.int64], ids=str)
def test_sparse_div_promotes_integers_to_default_dtype(mode, default, dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        s = torch.tensor([0.0, 3.0, 0.0, 1.0, 2.0]).to(dtype).to_sparse()
        got = s.to("tpu") / 2
        assert got.dtype == default
        same_sparse(got, s / 2)
    finally:
        torch.set_default_dtype(old)


DIV_REFUSED = {
    "sparse/sparse": lambda s, d, z: s / s,
    "dense/sparse": lambda s, d, z: d / s,
    "dense.div_(sparse)": lambda s, d, z: d.clone().div_(s),
    "sparse/dense": lambda s, d, z: s / d,
    "sparse/0-dim-sparse": lambda s, d, z: s / z,
    "sparse/sparse-floor": lambda s, d, z: torch.div(s, s, rounding_mode="floor"),
    "floor_divide(sparse, dense)": lambda s, d, z: torch.floor_divide(s, d),
}


@pytest.mark.parametrize("case", DIV_REFUSED, ids=list(DIV_REFUSED))
def test_sparse_div_by_tensor_raises(case):
    cpu = (C, C2.to_dense(), torch.tensor(2.0).to_sparse())
    got, want = same_outcome(DIV_REFUSED[case], tuple(x.to("tpu") for x in cpu), cpu)
    assert want[0] is RuntimeError
    assert got[1] == want[1]


def _sparse_example(device):
    i = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])  # (0, 2) stored twice: uncoalesced
    return torch.sparse_coo_tensor(i, torch.tensor([3.0, 4.0, 5.0, 6.0]), (2, 3), device=device)


@pytest.mark.parametrize("case", ["sparse.mm", "matmul", "dense @ sparse", "sparse @ sparse", "addmm",
                                  "addmm broadcast", "addmm beta 0", "wrong inner size", "wrong dtype",
                                  "no stored values", "gradient of the dense operand", "gradient of a GCN layer",
                                  "addmm with a sparse mat2"])
def test_sparse_dense_products_match_cpu(case):
    """torch.sparse.mm, sparse @ dense, dense @ sparse and addmm with a sparse mat1 ran into 'Could not run
    aten::addmm with arguments from the Sparsetpu backend'; they now gather and index-add on the device."""
    torch.manual_seed(0)
    w, m = torch.randn(3, 4), torch.randn(5, 2)

    def run(d):
        s = _sparse_example(d)
        if case == "sparse.mm":
            return torch.sparse.mm(s, w.to(d))
        if case == "matmul":
            return s @ w.to(d)
        if case == "dense @ sparse":
            return torch.mm(m.to(d), s)
        if case == "sparse @ sparse":
            return torch.mm(s, s.t()).to_dense()
        if case == "addmm":
            return torch.addmm(torch.ones(2, 4, device=d), s, w.to(d), beta=0.5, alpha=2)
        if case == "addmm broadcast":
            return torch.addmm(torch.ones(4, device=d), s, w.to(d))
        if case == "addmm beta 0":
            return torch.addmm(torch.full((2, 4), float("nan"), device=d), s, w.to(d), beta=0)
        if case == "wrong inner size":
            return torch.sparse.mm(s, torch.ones(4, 2, device=d))
        if case == "wrong dtype":
            return torch.sparse.mm(s, torch.ones(3, 2, dtype=torch.float64, device=d))
        if case == "addmm with a sparse mat2":  # CPU's own error, from CPU's kernel
            return torch.addmm(torch.ones(2, 2, device=d), m.to(d)[:2, :], s.t())
        if case == "no stored values":
            empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 3), device=d)
            return torch.sparse.mm(empty, w.to(d))
        if case == "gradient of the dense operand":
            x = w.clone().to(d).requires_grad_()
            (torch.sparse.mm(s, x) ** 2).sum().backward()
            return x.grad
        lin = torch.nn.Linear(4, 3)
        torch.manual_seed(1)
        lin.reset_parameters()
        lin = lin.to(d)
        torch.sparse.mm(s, lin(w.to(d))).sum().backward()
        return lin.weight.grad

    try:
        want = run("cpu")
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e).splitlines()[0])):
            run("tpu")
        return
    got = run("tpu")
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), want, equal_nan=True)
