"""Advanced indexing and data-dependent shapes against CPU torch, in every mode."""
import pytest
import torch

from conftest import check

g = torch.Generator().manual_seed(3)


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_index_with_long_tensors(mode):
    x = torch.randn(5, 4, 3, generator=g)
    i = torch.tensor([4, 0, -1, 2])
    j = torch.tensor([[1], [3]])
    check(lambda t, a: t[a], x, i)
    check(lambda t, a: t[:, a[1:3]], x, i)
    check(lambda t, a, b: t[a[:2], b - 1], x, i, j)          # broadcast index block first
    check(lambda t, a: t[a[:2], :, a[1:3].clamp(0, 2)], x, i)  # non-adjacent indexed dims
    check(lambda t, a: t[1:, a[1:3]], x, i)


def test_index_with_masks(mode):
    x = torch.randn(4, 3, generator=g)
    check(lambda t: t[t > 0], x)
    check(lambda t: t[:, torch.tensor([True, False, True], device=t.device)], x)
    check(lambda t: torch.masked_select(t, t < 0.5), x)
    check(lambda t: torch.nonzero(t > 0), x)
    check(lambda t: torch.nonzero(t), torch.tensor([[0.0, 1.5], [2.0, 0.0]]))
    check(lambda t: t[t > 100], x)  # empty selection


def test_index_put(mode):
    def assign(t, idx, v):
        t[idx] = v
        return t

    def accumulate(t, idx, v):
        return t.index_put((idx,), v, accumulate=True)

    x = torch.randn(5, 3, generator=g)
    idx = torch.tensor([0, 3, 3, 1])
    check(lambda t, i: assign(t, i[:2], 7.0), x.clone(), idx)
    check(lambda t, i, v: assign(t, i[:3].unique(), v), x.clone(), idx, torch.randn(2, 3, generator=g))
    check(accumulate, x.clone(), idx, torch.randn(4, 3, generator=g))
    check(lambda t: assign(t, t > 0, 0.0), x.clone())


def test_repeat_interleave(mode):
    check(lambda r: torch.repeat_interleave(r), torch.tensor([2, 0, 3]))
    check(lambda x, r: torch.repeat_interleave(x, r, dim=0), torch.randn(3, 2, generator=g), torch.tensor([1, 2, 0]))


def test_index_out_of_range_raises_at_call(mode):
    x = torch.randn(3, 2)
    t = x.to("tpu")
    with pytest.raises(IndexError, match=r"^index 3 is out of bounds for dimension 0 with size 3"):
        t[torch.tensor([0, 3], device="tpu")]
    assert torch.equal(t.cpu(), x)


def test_unique(mode):
    x = torch.tensor([3.5, -1.0, 3.5, 2.0, -1.0, 0.0])
    check(lambda t: torch.unique(t), x)
    check(lambda t: torch.unique(t, return_inverse=True, return_counts=True), x)
    check(lambda t: torch.unique(t, return_counts=True), torch.tensor([[4, 1], [1, 9]]))
    check(lambda t: torch.unique(t), torch.tensor([True, False, True]))


def test_index_copy_of_a_zero_dim_index_and_source(mode):
    """A 0-dim index and source copy one element (this once failed to compile)."""
    for dst, idx, src in [(torch.zeros(5), torch.tensor(2), torch.tensor(7.0)),
                          (torch.zeros(5), torch.tensor([1, 3]), torch.tensor([4.0, 5.0])),
                          (torch.zeros(()), torch.tensor(0), torch.tensor(3.0)),
                          (torch.zeros(4, 3), torch.tensor([2]), torch.ones(1, 3))]:
        want, got = dst.clone(), dst.to("tpu")
        want.index_copy_(0, idx, src)
        got.index_copy_(0, idx.to("tpu"), src.to("tpu"))
        assert torch.equal(got.cpu(), want)


def test_index_select_of_empty_inputs(mode):
    """Selecting nothing, or from an empty tensor, gives an empty result of CPU's shape."""
    long = torch.long
    for x, i in [(torch.empty(0), torch.empty(0, dtype=long)), (torch.randn(3, 0), torch.tensor([0, 2])),
                 (torch.randn(0, 4), torch.empty(0, dtype=long))]:
        got = torch.index_select(x.to("tpu"), 0, i.to("tpu"))
        assert got.shape == torch.index_select(x, 0, i).shape
    e = torch.empty(0, dtype=long)
    assert torch.repeat_interleave(e.to("tpu"), e.to("tpu")).shape == torch.repeat_interleave(e, e).shape


@pytest.mark.parametrize("shape,index", [
    ((10, 0), (slice(None), [0, 1])),      # an empty dimension: CPU's own message, before any value check
    ((10, 3), (slice(None), [0, 5])),      # the message names the index's place among the indexed dims
    ((3, 3), ([0], [5])),
    ((3, 3, 3), ("mask", [7])),            # a mask's dims count among them
    ((4, 5), (slice(None), [-9])),
])
def test_index_errors_name_what_cpu_names(mode, shape, index):
    def run(device):
        x = torch.zeros(*shape, device=device)
        idx = tuple(torch.tensor([[True, False, True]] * 3, device=device) if i == "mask" else i for i in index)
        with pytest.raises(IndexError) as e:
            x[idx]
        return str(e.value)
    want = run("cpu")
    assert run("tpu").startswith(want)


def test_uint8_masks_warn_as_cpu_does(mode):
    """Indexing with a uint8 mask works and warns that uint8 indices are deprecated, once per index and op."""
    import warnings

    def run(device):
        v = torch.arange(105.0, device=device).reshape(5, 7, 3)
        mask = torch.tensor([1, 0, 1, 1, 0], dtype=torch.uint8, device=device)
        y = torch.ones(10, 10, device=device)
        m = torch.tensor([1, 0] * 5, dtype=torch.uint8, device=device)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = v[mask]
            y.index_put_((m,), y[m], accumulate=True)
            y[m] = torch.full((10,), 2.0, device=device)
        return a.cpu(), y.cpu(), [str(x.message).split(" (Triggered internally")[0] for x in w]
    a, y, warned = run("tpu")
    ca, cy, cwarned = run("cpu")
    torch.testing.assert_close(a, ca)
    torch.testing.assert_close(y, cy)
    assert warned == cwarned and len(cwarned) == 4


def test_cpu_tensor_indexed_by_tpu_indices_is_refused_as_cuda_refuses_it():
    """A CPU tensor indexed by tpu indices (alone or mixed with CPU ones) raises the error CUDA raises, naming cpu."""
    x = torch.randn(3, 4, 4, 4, 3)
    ia, ib = torch.tensor([0, 2, 1], device="tpu"), torch.tensor([0, 2, 1])
    for index in [lambda: x[:, ia, None, ib, 0], lambda: x[ia], lambda: x.index_put_((ia,), torch.tensor(1.0))]:
        with pytest.raises(RuntimeError, match=r"^indices should be either on cpu or on the same device as the "
                                               r"indexed tensor \(cpu\)"):
            index()
    assert x.device.type == "cpu"


def test_index_fill_takes_an_index_held_on_the_cpu():
    """CPU PyTorch's index_fill takes an index of any size from the CPU (PyTorch's own sort tests fill tpu
    tensors at CPU indices); before, only a 0-dim one was accepted."""
    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor([1, 3, 1])
    got = x.to("tpu").index_fill(1, idx, float("nan")).cpu()
    assert torch.equal(got.isnan(), x.index_fill(1, idx, float("nan")).isnan())
    y = x.to("tpu")
    y.index_fill_(0, torch.tensor([2]), torch.tensor(-1.0))
    assert torch.equal(y.cpu(), x.index_fill(0, torch.tensor([2]), -1.0))
    g = torch.ones(3, 4, requires_grad=True)
    gt = g.detach().to("tpu").requires_grad_()
    (gt.index_fill(1, idx, 0.0) * 2).sum().backward()
    (g.index_fill(1, idx, 0.0) * 2).sum().backward()
    assert torch.equal(gt.grad.cpu(), g.grad)
