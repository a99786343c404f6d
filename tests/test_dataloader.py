"""DataLoader workers are forked processes: they make CPU tensors for a tpu loop, and touching the
device in one raises a clear RuntimeError that reaches the main process."""
import pytest
import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        x = torch.full((3,), float(i))
        return x, x * x


class TouchesDevice(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.ones(1, device="tpu")


def test_workers_feed_a_tpu_loop():
    loader = DataLoader(Squares(), batch_size=4, num_workers=2)
    w = torch.zeros(3, device="tpu")
    seen = []
    for x, y in loader:
        assert x.device.type == "cpu"
        x, y = x.to("tpu"), y.to("tpu")
        w = w + (y - x).sum(0)
        seen.extend(int(v) for v in x[:, 0].cpu())
    assert sorted(seen) == list(range(32))
    want = sum(float(i * i - i) for i in range(32))
    torch.testing.assert_close(w.cpu(), torch.full((3,), want))
    # The device still works in the main process after the workers exit.
    torch.testing.assert_close((torch.ones(2, device="tpu") * 3).cpu(), torch.full((2,), 3.0))


def test_workers_run_twice_with_persistent_workers():
    loader = DataLoader(Squares(), batch_size=8, num_workers=2, persistent_workers=True)
    for _ in range(2):
        total = torch.zeros((), device="tpu")
        for x, _ in loader:
            total = total + x.to("tpu").sum()
        assert total.item() == 3 * sum(range(32))


def test_touching_the_device_in_a_worker_raises():
    loader = DataLoader(TouchesDevice(), batch_size=2, num_workers=2)
    with pytest.raises(RuntimeError, match=r"(?s)DataLoader worker.*cannot be used in a forked child process"):
        for _ in loader:
            pass
    assert (torch.ones(2, device="tpu") + 1).sum().item() == 4.0
