"""Streams, events and pinned host memory, checked as on CUDA: ordering, timing, the current
stream and its context, and page-locked buffers for pin_memory() and DataLoader(pin_memory=True)."""
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset


def test_streams_current_default_and_context():
    default = torch.tpu.default_stream()
    assert default.stream_id == 0 and default.device == torch.device("tpu", 0)
    assert torch.tpu.current_stream() == default
    s = torch.tpu.Stream()
    assert s != default and s.device_type == default.device_type
    with torch.tpu.stream(s):
        assert torch.tpu.current_stream() == s
        assert torch.accelerator.current_stream() == s
    assert torch.tpu.current_stream() == default
    # Streams are hashable and equal by identity of (device, id), as FSDP's dict keys need.
    assert {s: 1}[torch.tpu.Stream(stream_id=s.stream_id, device_index=0, device_type=s.device_type)] == 1
    generic = torch.Stream("tpu")
    assert generic.device.type == "tpu" and generic.stream_id not in (0, s.stream_id)


def test_work_on_two_streams_is_ordered():
    x = torch.arange(12.0).reshape(3, 4)
    a = x.to("tpu")
    side = torch.tpu.Stream()
    side.wait_stream(torch.tpu.current_stream())
    with torch.tpu.stream(side):
        b = a * 2 + 1
        done = side.record_event()
    torch.tpu.current_stream().wait_event(done)
    c = b @ a.T
    assert done.query()
    side.synchronize()
    assert side.query()
    torch.testing.assert_close(c.cpu(), (x * 2 + 1) @ x.T)
    b.record_stream(side)


def test_events_record_wait_synchronize_and_time():
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    assert start.query()  # never recorded: complete
    x = torch.randn(64, 64, device="tpu")
    start.record()
    for _ in range(5):
        x = torch.tanh(x @ x)
    end.record()
    end.synchronize()
    assert end.query()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0.0
    plain = torch.tpu.Event()
    plain.record()
    plain.wait()
    plain.synchronize()
    assert plain.query()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain.elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        torch.tpu.Event(enable_timing=True).elapsed_time(end)
    generic = torch.Event("tpu", enable_timing=True)
    generic.record(torch.tpu.current_stream())
    generic.synchronize()
    assert generic.query()


def test_pin_memory_is_page_locked():
    x = torch.randn(1000)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p[10:].is_pinned()
    torch.testing.assert_close(p, x)
    assert not p.clone().is_pinned()
    torch.testing.assert_close(p.to("tpu", non_blocking=True).cpu(), x)
    with open("/proc/self/status") as f:
        locked = [line for line in f if line.startswith("VmLck:")]
    assert locked and int(locked[0].split()[1]) >= 4  # kB locked by this process


def test_dataloader_pin_memory():
    ds = TensorDataset(torch.arange(40.0).reshape(20, 2), torch.arange(20))
    loader = DataLoader(ds, batch_size=5, pin_memory=True)
    total = torch.zeros(2, device="tpu")
    for x, y in loader:
        assert x.is_pinned() and y.is_pinned()
        total += x.to("tpu", non_blocking=True).sum(0)
    torch.testing.assert_close(total.cpu(), torch.arange(40.0).reshape(20, 2).sum(0))
