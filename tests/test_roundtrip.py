"""CPU -> tpu -> CPU round trips for every supported dtype."""
import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.uint8, torch.int32, torch.int64, torch.bool]


def sample(dtype, shape=(3, 5)):
    g = torch.Generator().manual_seed(1)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 100).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000), shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip(dtype):
    x = sample(dtype)
    t = x.to("tpu")
    assert t.device.type == "tpu" and t.dtype == dtype and t.shape == x.shape
    back = t.cpu()
    assert torch.equal(back, x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_non_contiguous(dtype):
    x = sample(dtype, (4, 6))
    for src in (x.t(), x[1:, ::2], x[:, 3], x.unsqueeze(0).expand(2, 4, 6)):
        assert not src.is_contiguous() or src.dim() == 1
        assert torch.equal(src.to("tpu").cpu(), src)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tpu_views_read_back(dtype):
    x = sample(dtype, (4, 6))
    t = x.to("tpu")
    for f in (lambda a: a.t(), lambda a: a[1:, ::2], lambda a: a[:, 3], lambda a: a.view(3, 8),
              lambda a: a[2], lambda a: a.unsqueeze(1).expand(4, 3, 6)):
        assert torch.equal(f(t).cpu(), f(x))


def test_scalar_and_empty():
    assert torch.tensor(3.5).to("tpu").item() == 3.5
    assert torch.tensor(7, dtype=torch.int64).to("tpu").item() == 7
    assert torch.tensor(True).to("tpu").item() is True
    e = torch.empty(0, 3).to("tpu")
    assert e.shape == (0, 3) and e.cpu().shape == (0, 3)


def test_copy_between_tpu_tensors_with_cast():
    x = torch.randn(5, 4)
    a = x.to("tpu")
    b = torch.zeros(5, 4, dtype=torch.float64, device="tpu")
    b.copy_(a)
    assert torch.equal(b.cpu(), x.double())
    c = a.to(torch.int32)
    assert torch.equal(c.cpu(), x.to(torch.int32))
    d = a.to(torch.bfloat16)
    assert torch.equal(d.cpu(), x.to(torch.bfloat16))
    assert torch.equal((a > 0).cpu(), x > 0)
