"""In-place ops check self's memory as CPU's kernels do; deterministic mode fills new memory and alerts as CPU does.

An expanded self (two elements at one address) or an input sharing only part of self's memory raises CPU's
RuntimeError, except for the ops CPU lets through (fill_, zero_, masked_fill_, index_put_, addmm-like ops);
values of the ops that pass are CPU's. With torch.use_deterministic_algorithms(True) and
torch.utils.deterministic.fill_uninitialized_memory, empty tensors and the grown part of a resized storage hold
NaN or the dtype's largest value, as on CPU.
"""
import pytest
import torch
from torch.testing._internal.common_utils import DeterministicGuard

I = [0, 2]


def expanded(d):
    return torch.arange(1.0, 2.0, device=d).expand(6)


def ix(d):
    return torch.tensor(I, device=d)


INTERNAL = {
    "add_": lambda x, d: x.add_(1),
    "mul_": lambda x, d: x.mul_(2),
    "copy_": lambda x, d: x.copy_(torch.ones(6, device=d)),
    "exp_": lambda x, d: x.exp_(),
    "clamp_": lambda x, d: x.clamp_(0, 0.5),
    "addcmul_": lambda x, d: x.addcmul_(torch.ones(6, device=d), torch.ones(6, device=d)),
    "uniform_": lambda x, d: x.uniform_(),
    "normal_": lambda x, d: x.normal_(),
    "bernoulli_": lambda x, d: x.bernoulli_(0.5),
    "bernoulli_ tensor p": lambda x, d: x.bernoulli_(torch.full((6,), 0.5, device=d)),
    "index_add_": lambda x, d: x.index_add_(0, ix(d), torch.ones(2, device=d)),
    "index_copy_": lambda x, d: x.index_copy_(0, ix(d), torch.ones(2, device=d)),
    "scatter_": lambda x, d: x.scatter_(0, ix(d), torch.ones(2, device=d)),
    "put_": lambda x, d: x.put_(ix(d), torch.ones(2, device=d)),
    "masked_scatter_": lambda x, d: x.masked_scatter_(torch.ones(6, dtype=torch.bool, device=d), torch.ones(6, device=d)),
    "cumsum_": lambda x, d: x.cumsum_(0),
}

ALLOWED = {
    "fill_": lambda x, d: x.fill_(3),
    "zero_": lambda x, d: x.zero_(),
}

PARTIAL = {
    "add_": lambda s, d: s[:9].add_(s[3:12]),
    "copy_": lambda s, d: s[:9].copy_(s[3:12]),
    "lerp_": lambda s, d: s[:9].lerp_(s[3:12], 0.5),
    "index_add_": lambda s, d: s[:9].index_add_(0, ix(d), s[3:5]),
    "index_copy_": lambda s, d: s[:9].index_copy_(0, ix(d), s[3:5]),
}

FULL = {
    "index_add_ self as index": lambda i: i.index_add_(0, i, i.clone()),
    "index_add_ self as source": lambda i: i.index_add_(0, i.clone(), i),
    "index_copy_ self as index": lambda i: i.index_copy_(0, i, i.clone()),
    "index_fill_ self as index": lambda i: i.index_fill_(0, i, 0),
    "index_put_ self as index": lambda i: i.index_put_((i,), i.clone()),
    "put_ self as source": lambda i: i.put_(i.clone(), i),
    "scatter_ self as index": lambda i: i.scatter_(0, i, i.clone()),
    "scatter_add_ self as source": lambda i: i.scatter_add_(0, i.clone(), i),
}


@pytest.mark.parametrize("name", sorted(FULL))
def test_index_ops_refuse_self_as_an_input(mode, name):
    # The index and scatter kernels refuse self as its own index or source, even the very same tensor.
    for d in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor refer"):
            FULL[name](torch.tensor([2, 1, 0], device=d))


PARTIAL_ALLOWED = {
    "masked_fill_ 0-dim value": lambda s, d: s[:9].masked_fill_(torch.ones(9, dtype=torch.bool, device=d), s[3]),
    "addmm_": lambda s, d: s[:4].view(2, 2).addmm_(s[2:6].view(2, 2), torch.ones(2, 2, device=d)),
    "add_ of itself": lambda s, d: s[:9].add_(s[:9]),
    "add_ of a disjoint part": lambda s, d: s[:9].add_(s[9:]),
}


def outcome(fn, d):
    try:
        return fn(d)
    except RuntimeError as e:
        return e


@pytest.mark.parametrize("name", sorted(INTERNAL))
def test_expanded_self_raises(mode, name):
    for d in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
            INTERNAL[name](expanded(d), d)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_expanded_self_allowed(mode, name):
    want = ALLOWED[name](expanded("cpu"), "cpu")
    got = ALLOWED[name](expanded("tpu"), "tpu")
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_partly_shared_input_raises(mode, name):
    for d in ("cpu", "tpu"):
        s = torch.arange(18.0, device=d)
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor refer"):
            PARTIAL[name](s, d)


@pytest.mark.parametrize("name", sorted(PARTIAL_ALLOWED))
def test_partly_shared_input_allowed(mode, name):
    results = []
    for d in ("cpu", "tpu"):
        s = torch.arange(18.0, device=d)
        PARTIAL_ALLOWED[name](s, d)
        results.append(s.cpu())
    assert torch.equal(results[1], results[0])


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.complex64, torch.int32, torch.int64,
          torch.uint8, torch.bool, torch.complex32]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_deterministic_empty_is_filled(dtype):
    makers = [
        lambda d: torch.empty(4, 3, device=d, dtype=dtype),
        lambda d: torch.empty_like(torch.zeros(4, 3, device=d, dtype=dtype)),
        lambda d: torch.empty_strided((4, 3), (1, 5), device=d, dtype=dtype),
        lambda d: torch.empty(4, 3, out=torch.zeros(1, device=d, dtype=dtype)),
    ]
    for make in makers:
        with DeterministicGuard(True, fill_uninitialized_memory=True):
            want, got = make("cpu"), make("tpu")
        assert torch.equal(got.cpu().isnan(), want.isnan()) if dtype.is_floating_point or dtype.is_complex \
            else torch.equal(got.cpu(), want)
        if dtype.is_floating_point or dtype.is_complex:
            assert got.cpu().isnan().all()


def test_deterministic_resize_fills_the_grown_part():
    for d in ("cpu", "tpu"):
        a = torch.zeros(2, 3, device=d)
        with DeterministicGuard(True, fill_uninitialized_memory=True):
            a.resize_(3, 4)
        flat = torch.tensor(a.untyped_storage().cpu(), dtype=torch.float32) if False else a.flatten().cpu()
        assert torch.equal(flat[:6], torch.zeros(6)), d
        assert flat[6:].isnan().all(), d


def test_without_deterministic_mode_nothing_is_filled():
    # The default path stays as it was: empty() does no work on the device.
    torch.tpu.synchronize()
    before = torch.tpu.metrics()["executions"]
    torch.empty(100, device="tpu")
    torch.tpu.synchronize()
    assert torch.tpu.metrics()["executions"] == before


ALERTS = {
    "max_unpool2d": (lambda d: torch.nn.functional.max_unpool2d(
        torch.randn(1, 1, 2, 2, device=d), torch.zeros(1, 1, 2, 2, dtype=torch.long, device=d), 2),
        "max_unpooling2d_forward_out"),
    "max_unpool3d": (lambda d: torch.nn.functional.max_unpool3d(
        torch.randn(1, 1, 2, 2, 2, device=d), torch.zeros(1, 1, 2, 2, 2, dtype=torch.long, device=d), 2),
        "max_unpooling3d_forward_out"),
    "put_": (lambda d: torch.zeros(4, device=d).put_(torch.tensor([0, 0], device=d), torch.ones(2, device=d)), "put_"),
}


@pytest.mark.parametrize("name", sorted(ALERTS))
def test_nondeterministic_alert(name):
    fn, caller = ALERTS[name]
    for d in ("cpu", "tpu"):
        with DeterministicGuard(True):
            with pytest.raises(RuntimeError, match=caller + " does not have a deterministic implementation"):
                fn(d)
        with DeterministicGuard(True, warn_only=True):
            with pytest.warns(UserWarning, match=caller + " does not have a deterministic implementation"):
                fn(d)
        fn(d)  # no alert without deterministic mode


def test_accumulating_put_does_not_alert():
    with DeterministicGuard(True):
        for d in ("cpu", "tpu"):
            torch.zeros(4, device=d).put_(torch.tensor([0, 0], device=d), torch.ones(2, device=d), accumulate=True)


@pytest.mark.parametrize("op", ["masked_fill_", "index_fill_", "index_put_"])
def test_expanded_write_warns_as_cpu(op):
    calls = {
        "masked_fill_": lambda x: x.masked_fill_(torch.ones(6, dtype=torch.bool, device=x.device), 2.0),
        "index_fill_": lambda x: x.index_fill_(0, torch.tensor([0], device=x.device), 2.0),
        "index_put_": lambda x: x.index_put_((torch.tensor([0], device=x.device),), torch.tensor(2.0, device=x.device)),
    }
    for d in ("cpu", "tpu"):
        with pytest.warns(UserWarning, match=f"Use of {op} on expanded tensors is deprecated"):
            calls[op](expanded(d))


def test_complex32_experimental_warning():
    torch._C._set_warnAlways(True)
    try:
        for d in ("cpu", "tpu"):
            with pytest.warns(UserWarning, match="ComplexHalf support is experimental"):
                torch.empty(3, dtype=torch.chalf, device=d)
    finally:
        torch._C._set_warnAlways(False)
