"""Bad input raises on tpu the exception class CPU raises, with CPU's message first.

Each case runs the same call on CPU and on tpu; the tpu message is CPU's followed by the op and its
arguments. The cases are error inputs of PyTorch's OpInfo database that the error-input sweep's default
sample (tests/conformance/test_sweep_errors.py) does not run.
"""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F


def raised(fn, device):
    try:
        fn(device)
    except Exception as e:  # noqa: BLE001
        return e
    return None


CASES = {
    "max_pool3d negative pad": lambda d: F.max_pool3d(torch.zeros(1, 1, 4, 4, 4, device=d), 2, padding=-1),
    "max_pool3d pad beyond the dilated kernel": lambda d: F.max_pool3d(
        torch.zeros(1, 1, 5, 5, 5, device=d), 3, padding=(3, 1, 1), dilation=2),
    "max_pool2d zero stride": lambda d: F.max_pool2d(torch.zeros(1, 1, 5, 5, device=d), 2, stride=0),
    "max_pool3d empty plane": lambda d: F.max_pool3d(torch.zeros(2, 1, 0, 1, 2, device=d), 1),
    "adaptive_max_pool2d negative size": lambda d: F.adaptive_max_pool2d(torch.zeros(1, 1, 1, 1, device=d), (-1, 0)),
    "conv1d fewer filters than groups": lambda d: F.conv1d(
        torch.zeros(2, 6, 5, device=d), torch.zeros(2, 2, 2, device=d), groups=3),
    "histogramdd bins count": lambda d: torch.histogramdd(torch.zeros(5, 6, device=d), bins=[1, 1, 1, 1, 1]),
    "multi_margin_loss empty input": lambda d: F.multi_margin_loss(
        torch.zeros(0, device=d), torch.zeros(5, device=d).long()),
    "multi_margin_loss target shape before target dtype": lambda d: F.multi_margin_loss(
        torch.zeros(5, 4, device=d), torch.zeros(5, 4, device=d)),
    "multi_margin_loss weight size": lambda d: F.multi_margin_loss(
        torch.zeros(5, 4, device=d), torch.zeros(5, device=d).long(), weight=torch.ones(5, device=d)),
    "multilabel_margin_loss empty input": lambda d: F.multilabel_margin_loss(
        torch.zeros(0, device=d), torch.zeros(0, device=d).long()),
    "multilabel_margin_loss target past the classes": lambda d: F.multilabel_margin_loss(
        torch.zeros(2, 5, device=d), torch.tensor([[0, 9, -1, 0, 0], [1, -1, 0, 0, 0]], device=d)),
    "multilabel_margin_loss target below -1, after the end": lambda d: F.multilabel_margin_loss(
        torch.zeros(1, 5, device=d), torch.tensor([[0, -1, -2, 0, 0]], device=d)),
    "softshrink negative lambda": lambda d: F.softshrink(torch.zeros(3, device=d), -0.5),
    "softshrink lambda beyond half": lambda d: F.softshrink(torch.zeros(3, device=d, dtype=torch.half), 1e6),
    "ormqr tau length": lambda d: torch.ormqr(
        torch.zeros(5, 5, device=d), torch.zeros(3, device=d), torch.zeros(5, 5, device=d)),
    "renorm on a scalar": lambda d: torch.renorm(torch.tensor(1.0, device=d), 2, 0, 1.0),
    "max_unpool3d zero stride": lambda d: F.max_unpool3d(
        torch.zeros(1, 1, 2, 2, 2, device=d), torch.zeros(1, 1, 2, 2, 2, device=d).long(), 2, stride=0),
    "multinomial out dtype": lambda d: torch.multinomial(
        torch.ones(1, 2, device=d, dtype=torch.float64), 2, out=torch.zeros(1, 2, device=d, dtype=torch.float64)),
    "fill overflow": lambda d: torch.zeros(3, device=d).fill_(1e300),
    "masked_fill overflow into uint8": lambda d: torch.zeros(3, device=d, dtype=torch.uint8).masked_fill(
        torch.ones(3, device=d, dtype=torch.bool), 300),
    "masked_fill complex into float": lambda d: torch.zeros(3, device=d).masked_fill(
        torch.ones(3, device=d, dtype=torch.bool), 1j),
    "eye negative m": lambda d: torch.eye(0, -3, out=torch.zeros(0, device=d)),
    "roll of a scalar": lambda d: torch.roll(torch.tensor(1.0, device=d), 0, 0),
    "in-place abs of complex": lambda d: torch.ones(3, dtype=torch.complex64, device=d).abs_(),
    "random_ beyond bool": lambda d: torch.empty(3, dtype=torch.bool, device=d).random_(1, 3),
    "random_ below uint8": lambda d: torch.empty(3, dtype=torch.uint8, device=d).random_(-1, 1),
    "random_ beyond int8": lambda d: torch.empty(3, dtype=torch.int8, device=d).random_(0, 300),
    "random_ beyond half": lambda d: torch.empty(3, dtype=torch.half, device=d).random_(0, 70000),
    "grid_sampler_3d batch before last dim": lambda d: torch.grid_sampler_3d(
        torch.zeros(5, 5, 5, 5, 5, device=d), torch.zeros(1, 1, 1, 4, 4, device=d), 0, 0, True),
    "grid_sampler_2d grid's last dim": lambda d: torch.grid_sampler_2d(
        torch.zeros(5, 5, 5, 5, device=d), torch.zeros(5, 1, 4, 4, device=d), 0, 0, True),
    "grid_sampler empty spatial dim": lambda d: torch.grid_sampler(
        torch.zeros(2, 3, 0, 4, device=d), torch.zeros(2, 1, 4, 2, device=d), 0, 0, True),
    "vector_norm narrowing dtype": lambda d: torch.linalg.vector_norm(
        torch.ones(3, dtype=torch.float64, device=d), dtype=torch.float32),
    "vector_norm real dtype of complex": lambda d: torch.linalg.vector_norm(
        torch.ones(3, dtype=torch.complex64, device=d), dtype=torch.float32),
    "vector_norm complex dtype of real": lambda d: torch.linalg.vector_norm(
        torch.ones(3, dtype=torch.float16, device=d), dtype=torch.complex64),
    "indices that do not broadcast": lambda d: torch.zeros(5, 5, device=d)[[0, 1], [0, 1, 2]],
    "indices that do not broadcast, set": lambda d: torch.zeros(5, 5, device=d).__setitem__(([0, 1], [0, 1, 2]), 0),
    "false mask beside a list": lambda d: torch.ones(2, 3, 4, device=d)[torch.tensor(False, device=d), [0, 1], ...],
    "float indices": lambda d: torch.tensor([1, 2, 3], device=d)[torch.tensor([], device=d)],
    "mask of the wrong shape": lambda d: torch.ones(5, 4, 3, device=d)[(slice(None), torch.zeros(4, 4, device=d,
                                                                                              dtype=torch.uint8))],
    "values that do not broadcast to the result": lambda d: (lambda a: a.__setitem__(
        a > -1, torch.tensor([1, 2, 3], device=d)))(torch.arange(4, device=d)[:1]),
    "index_fill out of range": lambda d: torch.zeros(5, device=d).index_fill_(0, torch.tensor([1, 10], device=d), 0.),
    "setitem scalar out of range": lambda d: torch.zeros(5, device=d).__setitem__(torch.tensor([1, 10], device=d), 0),
    "index_add of a vector out of range": lambda d: torch.zeros(5, device=d).index_add_(
        0, torch.tensor([1, 5], device=d), torch.ones(2, device=d)),
    "index_add of a matrix out of range": lambda d: torch.zeros(5, 3, device=d).index_add_(
        1, torch.tensor([1, -1], device=d), torch.ones(5, 2, device=d)),
    "index_add along a middle dim out of range": lambda d: torch.zeros(2, 5, 3, device=d).index_add_(
        1, torch.tensor([1, 5], device=d), torch.ones(2, 2, 3, device=d)),
    "index_copy out of range": lambda d: torch.zeros(5, device=d).index_copy(
        0, torch.tensor([1, 5], device=d), torch.ones(2, device=d)),
    "index_reduce out of range": lambda d: torch.zeros(5, 3, device=d).index_reduce_(
        0, torch.tensor([1, 5], device=d), torch.ones(2, 3, device=d), "amax"),
    "uint16 with int32": lambda d: torch.ones(2, dtype=torch.uint16, device=d) * torch.ones(2, dtype=torch.int32, device=d),
    "reflection_pad1d empty channel dim": lambda d: F.pad(torch.zeros(3, 0, 10, device=d), (2, 2), mode="reflect"),
    "reflection_pad3d empty plane": lambda d: F.pad(torch.zeros(3, 8, 10, 0, 10, device=d), (1,) * 6, mode="reflect"),
    "replication_pad2d empty plane": lambda d: F.pad(torch.zeros(3, 8, 0, 10, device=d), (2,) * 4, mode="replicate"),
    "replication_pad1d unbatched empty": lambda d: F.pad(torch.zeros(0, 4, device=d), (1, 1), mode="replicate"),
    "unfold empty channels": lambda d: F.unfold(torch.zeros(3, 0, 4, 5, device=d), (2, 3)),
    "unfold unbatched empty": lambda d: F.unfold(torch.zeros(0, 4, 5, device=d), 2),
    "fold empty columns": lambda d: F.fold(torch.zeros(3, 0, 4, device=d), (3, 3), 2),
    "hypot of integers": lambda d: torch.hypot(torch.ones(2, dtype=torch.int32, device=d), torch.ones(2, dtype=torch.int32, device=d)),
    "fmod of bools": lambda d: torch.fmod(torch.ones(2, dtype=torch.bool, device=d), True),
    "remainder of bools": lambda d: torch.remainder(*[torch.ones(2, dtype=torch.bool, device=d)] * 2),
    "trunc division of bools": lambda d: torch.div(*[torch.ones(2, dtype=torch.bool, device=d)] * 2, rounding_mode="trunc"),
    "floor division of complex": lambda d: torch.div(*[torch.ones(2, dtype=torch.complex64, device=d)] * 2, rounding_mode="floor"),
    "atan2 of complex": lambda d: torch.atan2(*[torch.ones(2, dtype=torch.complex64, device=d)] * 2),
    "copysign of complex": lambda d: torch.copysign(torch.ones(2, dtype=torch.complex64, device=d), 1.0),
    "logaddexp2 of complex": lambda d: torch.logaddexp2(*[torch.ones(2, dtype=torch.complex64, device=d)] * 2),
    "zeta of bfloat16": lambda d: torch.special.zeta(*[torch.ones(2, dtype=torch.bfloat16, device=d)] * 2),
    "maximum of complex": lambda d: torch.maximum(*[torch.ones(2, dtype=torch.complex64, device=d)] * 2),
    "bitwise_and of floats": lambda d: torch.bitwise_and(*[torch.ones(2, device=d)] * 2),
    "shift of bools": lambda d: torch.bitwise_left_shift(*[torch.ones(2, dtype=torch.bool, device=d)] * 2),
    "pow of bool tensors": lambda d: torch.pow(*[torch.ones(2, dtype=torch.bool, device=d)] * 2),
    "lerp end of another dtype": lambda d: torch.lerp(torch.ones(2, device=d), torch.ones(2, dtype=torch.uint8, device=d), 0.5),
    "lerp of integers": lambda d: torch.lerp(*[torch.ones(2, dtype=torch.int32, device=d)] * 3),
    "clamp of bools by numbers": lambda d: torch.clamp(torch.ones(2, dtype=torch.bool, device=d), True, True),
    "clamp of complex": lambda d: torch.clamp(torch.ones(2, dtype=torch.complex64, device=d), min=1.0),
    "clamp by a complex tensor": lambda d: torch.clamp(torch.ones(2, device=d), min=torch.ones(2, dtype=torch.complex64, device=d)),
    "normal_ of integers": lambda d: torch.empty(3, dtype=torch.int32, device=d).normal_(),
    "normal with a negative std element": lambda d: torch.normal(torch.zeros(3, device=d), torch.tensor([1.0, -1.0, 1.0], device=d)),
    "normal with a NaN std element": lambda d: torch.normal(0.0, torch.tensor([1.0, float("nan")], device=d)),
    "bernoulli of probabilities above 1": lambda d: torch.bernoulli(torch.full((3,), 1.5, device=d)),
    "bernoulli of a NaN probability": lambda d: torch.bernoulli(torch.tensor([0.5, float("nan")], device=d)),
    "bernoulli_ with negative probabilities": lambda d: torch.empty(3, device=d).bernoulli_(torch.full((3,), -0.5, device=d)),
    "bernoulli of integer probabilities": lambda d: torch.bernoulli(torch.ones(3, dtype=torch.long, device=d)),
    "nearest upsampling of int8 (1-d)": lambda d: F.interpolate(torch.ones(1, 2, 4, dtype=torch.int8, device=d), scale_factor=2),
    "nearest upsampling of int64 (2-d)": lambda d: F.interpolate(torch.ones(1, 2, 4, 4, dtype=torch.int64, device=d), (6, 6)),
    "nearest-exact upsampling of int32 (3-d)": lambda d: F.interpolate(
        torch.ones(1, 1, 2, 2, 2, dtype=torch.int32, device=d), scale_factor=2, mode="nearest-exact"),
    "nearest upsampling of bools": lambda d: F.interpolate(torch.ones(1, 2, 4, 4, dtype=torch.bool, device=d), (8, 8)),
    # CPU's structured meta checks, which tpu's rules skipped (they computed a result instead).
    "int tensor minus True": lambda d: torch.tensor([1, 2], device=d) - True,
    "bool tensor minus 2": lambda d: torch.tensor([True, False], device=d) - 2,
    "2 minus a bool tensor (rsub)": lambda d: 2 - torch.tensor([True], device=d),
    "float tensor minus a bool tensor": lambda d: torch.ones(2, device=d) - torch.tensor([True, False], device=d),
    "bool tensor minus bool tensor": lambda d: torch.tensor([True], device=d) - torch.tensor([False], device=d),
    "add with a bool alpha to an int result": lambda d: torch.add(torch.ones(2, dtype=torch.long, device=d), 1, alpha=True),
    "add with a float alpha to an int result": lambda d: torch.add(torch.ones(2, dtype=torch.long, device=d), 1, alpha=2.0),
    "sub_ with a float alpha to an int result": lambda d: torch.ones(2, dtype=torch.long, device=d).sub_(1, alpha=2.0),
    "add with an alpha past float16": lambda d: torch.add(torch.ones(2, dtype=torch.half, device=d), 1, alpha=1e10),
    "add with an alpha past int8": lambda d: torch.add(torch.ones(2, dtype=torch.int8, device=d), 1, alpha=300),
    "int tensor to a negative int power": lambda d: torch.tensor([1, 2], device=d) ** -3,
    "int tensor to a negative int power in place": lambda d: torch.tensor([1, 2], device=d).pow_(-2),
    "float16 tensor to a power past float16": lambda d: torch.ones(2, dtype=torch.half, device=d) ** 1e10,
    "addcmul of bools": lambda d: torch.addcmul(*[torch.tensor([True], device=d)] * 3),
    "addcmul of int8 with a value past int8": lambda d: torch.addcmul(*[torch.ones(1, dtype=torch.int8, device=d)] * 3, value=300),
    "hardtanh of bools": lambda d: F.hardtanh(torch.tensor([True], device=d)),
    "hardtanh of ints with infinite bounds": lambda d: F.hardtanh(torch.ones(2, dtype=torch.long, device=d), -math.inf, math.inf),
    "hardtanh of float16 with bounds past float16": lambda d: F.hardtanh(torch.ones(2, dtype=torch.half, device=d), -1e10, 1e10),
    "heaviside with complex values": lambda d: torch.heaviside(torch.ones(1, device=d), torch.tensor(1 + 1j, device=d)),
    "roll with no shifts and a dim": lambda d: torch.ones(2, 4, device=d).roll(shifts=(), dims=1),
    "randint of complex64": lambda d: torch.randint(6, (2,), dtype=torch.complex64, device=d),
    "uniform_ over a range wider than float32": lambda d: torch.empty(3, device=d).uniform_(-3e38, 3e38),
    # Integer division by zero: CPU raises, XLA gave -1 or the dividend.
    "int64 floor division by 0": lambda d: torch.tensor([5, -5], device=d) // 0,
    "int64 floor division by a tensor holding 0": lambda d: torch.tensor([5, -5], device=d) // torch.tensor([0, 1], device=d),
    "uint8 floor division by a tensor of 0": lambda d: torch.tensor([5], dtype=torch.uint8, device=d) // torch.zeros(1, dtype=torch.uint8, device=d),
    "int64 remainder by 0": lambda d: torch.tensor([5], device=d) % 0,
    "5 % an int tensor holding 0": lambda d: 5 % torch.tensor([0, 1], device=d),
    "int32 fmod by 0": lambda d: torch.fmod(torch.tensor([5], dtype=torch.int32, device=d), 0),
    "int64 truncating division by 0": lambda d: torch.div(torch.tensor([5], device=d), 0, rounding_mode="trunc"),
    "in-place floor division by a 0-dim CPU 0": lambda d: torch.tensor([5, 6], device=d).floor_divide_(torch.tensor(0)),
    "bincount of floats": lambda d: torch.bincount(torch.tensor([1.0, 2.0], device=d)),
    "bincount of bools": lambda d: torch.bincount(torch.tensor([True], device=d)),
    "aminmax of a 0-dim complex tensor": lambda d: torch.aminmax(torch.tensor(1 + 1j, device=d)),
    "aminmax of complex": lambda d: torch.aminmax(torch.tensor([1 + 1j, 2j], device=d)),
    "histc of ints with min above max": lambda d: torch.histc(torch.tensor([1, 2], dtype=torch.int32, device=d), 4, 5, 1),
    "histc of data holding inf": lambda d: torch.histc(torch.tensor([1.0, 2.0, math.inf], device=d), bins=4),
    "histc with a NaN min": lambda d: torch.histc(torch.tensor([1.0, 2.0], device=d), bins=4, min=math.nan, max=3),
    "histc with no bins": lambda d: torch.histc(torch.tensor([1.0, 2.0], device=d), bins=0),
    "mode into an int8 indices out": lambda d: torch.mode(torch.ones(10, dtype=torch.uint8, device=d), -1, True, out=(
        torch.ones(10, dtype=torch.uint8, device=d), torch.ones(10, dtype=torch.int8, device=d))),
    "mode into an int8 values out": lambda d: torch.mode(torch.ones(10, dtype=torch.uint8, device=d), -1, True, out=(
        torch.ones(10, dtype=torch.int8, device=d), torch.ones(10, dtype=torch.long, device=d))),
    "arange with an infinite step": lambda d: torch.arange(0, 5, math.inf, device=d),
    "arange with a step of the wrong sign": lambda d: torch.arange(5, 0, 1, device=d),
    "arange to NaN": lambda d: torch.arange(0, math.nan, device=d),
    "argmax of an empty tensor with no dim": lambda d: torch.ones(2, 0, 4, device=d).argmax(),
    "randperm past float16's integers": lambda d: torch.randperm(2**11 + 2, out=torch.empty(0, dtype=torch.half, device=d)),
    "randperm past int8": lambda d: torch.randperm(129, out=torch.empty(0, dtype=torch.int8, device=d)),
    "randperm into bools": lambda d: torch.randperm(3, out=torch.empty(0, dtype=torch.bool, device=d)),
    # index_add/index_copy/index_reduce/index_fill argument checks in CPU's order, words and classes.
    "index_add with a 2-D index": lambda d: torch.zeros(4, device=d).index_add(0, torch.tensor([[0]], device=d), torch.ones(1, device=d)),
    "index_add with a float index": lambda d: torch.zeros(4, device=d).index_add(0, torch.tensor([0.0], device=d), torch.ones(1, device=d)),
    "index_add with more indices than source rows": lambda d: torch.zeros(4, 3, device=d).index_add(0, torch.tensor([0, 1], device=d), torch.ones(1, 3, device=d)),
    "index_add with a source of other slices": lambda d: torch.zeros(4, 3, device=d).index_add(0, torch.tensor([0], device=d), torch.ones(1, 2, device=d)),
    "index_reduce with a 2-D index": lambda d: torch.zeros(4, device=d).index_reduce(0, torch.tensor([[0]], device=d), torch.ones(1, device=d), "prod"),
    "index_copy with a 2-D index": lambda d: torch.zeros(4, device=d).index_copy(0, torch.tensor([[0]], device=d), torch.ones(1, device=d)),
    "index_copy with an int32 index": lambda d: torch.zeros(4, device=d).index_copy(0, torch.tensor([0], dtype=torch.int32, device=d), torch.ones(1, device=d)),
    "index_copy with a source of other rank": lambda d: torch.zeros(4, 3, device=d).index_copy(0, torch.tensor([0], device=d), torch.ones(3, device=d)),
    "index_copy of float64 into float32": lambda d: torch.zeros(4, device=d).index_copy(0, torch.tensor([0], device=d), torch.ones(1, dtype=torch.float64, device=d)),
    "index_fill with a 2-D index": lambda d: torch.zeros(4, device=d).index_fill(0, torch.tensor([[0]], device=d), 1.0),
    "index_fill with an int32 index": lambda d: torch.zeros(4, device=d).index_fill(0, torch.tensor([0], dtype=torch.int32, device=d), 1.0),
    "index_select with a 2-D index": lambda d: torch.ones(2, 3, device=d).index_select(0, torch.tensor([[0]], device=d)),
    "masked_fill with a mask of another size": lambda d: torch.ones(2, 3, 4, device=d).masked_fill(torch.ones(3, dtype=torch.bool, device=d), 0.0),
    "arange over all of int64": lambda d: torch.arange(-2**63, 2**63 - 1, device=d),
    "arange past float32's count": lambda d: torch.arange(1.175494351e-38, 3.402823466e38, device=d),
    "kthvalue along an empty dim": lambda d: torch.kthvalue(torch.ones(2, 0, 4, device=d), k=1, dim=1),
    "searchsorted with a sorter of another size": lambda d: torch.searchsorted(
        torch.rand(9, device=d), torch.rand(9, device=d), sorter=torch.arange(8, device=d)),
    "searchsorted with an int32 sorter": lambda d: torch.searchsorted(
        torch.rand(9, device=d), torch.rand(9, device=d), sorter=torch.arange(9, dtype=torch.int32, device=d)),
    "searchsorted with a sorter index past the boundaries": lambda d: torch.searchsorted(
        torch.rand(9, device=d), torch.rand(9, device=d), sorter=torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 9], device=d)),
    # An unpooling index outside the output plane was dropped by the scatter (the value vanished without an error).
    "max_unpool1d with an index past the output": lambda d: F.max_unpool1d(
        torch.ones(1, 2, 4, device=d), torch.tensor([[[0, 1, 2, 9], [0, 1, 2, 3]]], device=d), 2),
    "max_unpool2d with a negative index": lambda d: F.max_unpool2d(
        torch.ones(1, 1, 2, 2, device=d), torch.tensor([[[[0, 1], [-1, 3]]]], device=d), 2),
    "max_unpool3d with an index past the output": lambda d: F.max_unpool3d(
        torch.ones(1, 1, 1, 2, 2, device=d), torch.tensor([[[[[0, 1], [2, 500]]]]], device=d), 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_matches_cpu(name):
    want = raised(CASES[name], "cpu")
    assert want is not None, "CPU accepts this input; the case is stale"
    got = raised(CASES[name], "tpu")
    assert got is not None, f"tpu accepts what CPU rejects with {type(want).__name__}: {want}"
    assert type(got) is type(want), f"tpu raised {type(got).__name__}: {got}; CPU {type(want).__name__}: {want}"
    assert str(got).startswith(str(want).splitlines()[0]), f"tpu: {got}\nCPU: {want}"


def test_fill_values_that_fit_still_work():
    """Infinities, NaN and integers that wrap into uint8 are not overflows on CPU either."""
    for dtype, v in [(torch.float32, float("inf")), (torch.float32, float("nan")), (torch.uint8, -1),
                     (torch.int64, 2**62), (torch.bool, 2)]:
        want = torch.zeros(3, dtype=dtype).fill_(v)
        got = torch.zeros(3, dtype=dtype, device="tpu").fill_(v)
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def test_pow_of_bools_by_zero_or_one_runs_as_on_cpu():
    """CPU's structured pow answers exponents 0 and 1 before its kernel, so a bool tensor takes them."""
    for exponent in (0, 1, True, False):
        want = torch.pow(torch.tensor([True, False]), exponent)
        got = torch.pow(torch.tensor([True, False], device="tpu"), exponent)
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want)


@pytest.mark.parametrize("inplace", ["elu_", "celu_", "leaky_relu_", "rrelu_"])
def test_backward_of_in_place_activation_with_negative_slope_is_refused(inplace):
    """An in-place elu/celu/leaky_relu/rrelu with a negative slope cannot be differentiated from its result; CPU
    raises at backward, and so does tpu."""
    f = {"elu_": lambda t: F.elu_(t, alpha=-2), "celu_": lambda t: F.celu_(t, alpha=-2),
         "leaky_relu_": lambda t: F.leaky_relu_(t, -2), "rrelu_": lambda t: F.rrelu_(t, -5.0, 1.0)}[inplace]
    msgs = []
    for d in ("cpu", "tpu"):
        a = torch.tensor([-1.0, 1.0], device=d, requires_grad=True)
        with pytest.raises(RuntimeError, match="call out-of-place version") as e:
            f(a.clone()).backward(torch.ones(2, device=d))
        msgs.append(str(e.value).split(" (aten")[0])
    assert msgs[1].startswith(msgs[0])


def test_nll_loss_weight_of_the_wrong_rank():
    for d in ("cpu", "tpu"):
        x, t = torch.randn(10, 3, device=d), torch.randint(0, 3, (10,), device=d)
        with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 3 classes or no classes"):
            F.nll_loss(x, t, weight=torch.randn(1, 3, device=d))


def test_where_and_one_element_fills_of_half_types_saturate_as_on_cpu():
    # CPU fills a one-element float16/bfloat16 tensor without the overflow check (scalar_fill), and torch.where with
    # a number builds its bound that way: where(c, x_half, 1e10) gives inf on CPU; tpu raised the overflow error.
    c, h = torch.tensor([True, False]), torch.tensor([1.0, 2.0], dtype=torch.half)
    assert torch.equal(torch.where(c.to("tpu"), h.to("tpu"), 1e10).cpu(), torch.where(c, h, 1e10))
    assert torch.equal(torch.where(c.to("tpu"), -1e10, h.to("tpu")).cpu(), torch.where(c, -1e10, h))
    for dtype in (torch.half, torch.bfloat16):
        assert torch.equal(torch.empty((), dtype=dtype, device="tpu").fill_(1e39).cpu(),
                           torch.empty((), dtype=dtype).fill_(1e39))
    assert raised(lambda d: torch.empty(2, dtype=torch.half, device=d).fill_(1e10), "tpu") is not None


def test_pow_in_place_with_a_number_takes_pows_tensor_scalar_rule():
    # pow_.Scalar is pow.Tensor_Scalar in place; it was registered as the in-place form of pow.Scalar (a number to a
    # tensor power), so z.pow_(2) went through XLA's complex power: pow_(100j, 2) had an imaginary part of -8.7e-4.
    z = torch.tensor([100j, 3 + 4j, -2.5 + 0.5j], dtype=torch.complex64)
    assert torch.equal(z.to("tpu").pow_(2).cpu(), z.clone().pow_(2))
    x = torch.tensor([0.5, 2.0, 3.0])
    torch.testing.assert_close(x.to("tpu").pow_(0.5).cpu(), x.clone().pow_(0.5))


def test_integer_division_by_nonzero_values_runs_on_tpu():
    # The checks read a divisor tensor only when its values are not known; true division and floats never check.
    x, y = torch.tensor([7, -7, 9, 0]), torch.tensor([2, 3, -4, 5])
    xt, yt = x.to("tpu"), y.to("tpu")
    torch.tpu.reset_metrics()
    assert torch.equal((xt // yt).cpu(), x // y) and torch.equal((xt % yt).cpu(), x % y)
    assert torch.equal(torch.fmod(xt, yt).cpu(), torch.fmod(x, y))
    torch.testing.assert_close(torch.div(xt, 0, rounding_mode=None).cpu(), torch.div(x, 0, rounding_mode=None),
                               equal_nan=True)
    assert torch.equal((5 % yt).cpu(), 5 % y)
    z = xt.clone()
    z //= yt  # floor_divide_.Tensor had no rule and ran on the CPU
    assert torch.equal(z.cpu(), x // y)
    assert not torch.tpu.metrics()["cpu_fallbacks"]
    f = torch.tensor([5.0, -5.0, 0.0])
    torch.testing.assert_close((f.to("tpu") // 0).cpu(), f // 0, equal_nan=True)


def test_arange_into_an_out_of_another_count_warns_as_cpu():
    # Rounding gives arange(-1, 1, 2/49) 50 elements; CPU warns before resizing an out= tensor of 49 (tpu was silent).
    def run(device):
        line = torch.zeros(1, 49, device=device)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            torch.arange(-1, 1, 2.0 / 49, dtype=torch.float32, out=line)
            torch.arange(0, 5, out=torch.empty(0, device=device))  # an empty out resizes silently
        return line.shape, [str(w.message).split(" (Triggered internally")[0] for w in ws]
    assert run("tpu") == run("cpu")
