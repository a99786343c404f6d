"""Streams and events of torch.tpu, shaped like torch.cuda's.

Every stream of a device feeds the device's one ordered queue, so work issued on any stream runs
after everything issued before it; waiting on a stream or an event is therefore free, and an event
is complete when the device has finished the work issued before it. Timing events take their time
stamp once that work has finished.
"""

import torch

from .devices import _index, current_device, set_device


def _device(device):
    return torch.device("tpu", _index(device))


class Stream(torch.Stream):
    """A tpu stream: `torch.tpu.Stream(device=None, priority=0)`."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=_device(device), priority=priority)

    def __repr__(self):
        return f"<torch.tpu.Stream device={self.device} stream_id={self.stream_id}>"


def _wrap(s):
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class Event(torch.Event):
    """A tpu event: `torch.tpu.Event(enable_timing=False, blocking=False, interprocess=False)`."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        return super().__new__(cls, device="tpu", enable_timing=enable_timing, blocking=blocking,
                               interprocess=interprocess)

    def record(self, stream=None):
        super().record(current_stream() if stream is None else stream)

    def wait(self, stream=None):
        super().wait(current_stream() if stream is None else stream)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to end_event (both recorded with enable_timing=True)."""
        if not isinstance(end_event, torch.Event):
            raise TypeError(f"torch.tpu.Event.elapsed_time: expected an Event, got {type(end_event).__name__}")
        return torch.ops.torchtpu.event_elapsed_ms(self.event_id, end_event.event_id)


def current_stream(device=None):
    """This thread's current stream on device (the current device by default)."""
    return _wrap(torch.accelerator.current_stream(_device(device)))


def default_stream(device=None):
    """The default stream (id 0) of device."""
    s = torch.accelerator.current_stream(_device(device))
    return Stream(stream_id=0, device_index=s.device_index, device_type=s.device_type)


def set_stream(stream):
    """Make stream current on its device for this thread."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """`with torch.tpu.stream(s):` makes s (and its device) current, restoring both afterwards."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = None
        self.prev_device = None

    def __enter__(self):
        if self.stream is None:
            return self
        self.prev_device = current_device()
        if self.stream.device_index != self.prev_device:
            set_device(self.stream.device_index)
        self.prev_stream = torch.accelerator.current_stream(self.stream.device)
        torch.accelerator.set_stream(self.stream)
        return self

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        torch.accelerator.set_stream(self.prev_stream)
        set_device(self.prev_device)
        return False


def stream(s):
    """Context manager selecting stream s (None selects nothing)."""
    return StreamContext(s)
