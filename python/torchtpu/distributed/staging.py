"""StagingPool: the pinned host buffers tpu_gloo runs gloo on, reused from one collective to the next.

A collective copies its tpu inputs into host buffers, gloo reduces or moves them there, and the
results are copied back into the tpu outputs. Fresh host tensors for every collective cost an
allocation and, for a bucket of megabytes, a page fault per page at first touch, every step.
The pool hands out flat pinned buffers by element count and dtype and takes them back once a
collective's results are on the device (a DDP bucket has the same size every step, so from the
second step on its buffers are the pool's). A buffer whose collective failed is never given back:
gloo may still hold it. The pool keeps at most MAX_BYTES of idle buffers; past that, buffers are
dropped when given back.
"""

import threading

import torch

# The idle bytes the pool keeps (pinned memory is locked in RAM).
MAX_BYTES = 256 << 20

# stats counts, over every pool of this process, the buffers handed out again and those allocated.
stats = {"reused": 0, "made": 0}


class StagingPool:
    """Flat host buffers by (element count, dtype); take() hands one out, give() takes it back."""

    def __init__(self, max_bytes=MAX_BYTES):
        self._free = {}
        self._bytes = 0
        self._max = max_bytes
        self._lock = threading.Lock()

    def take(self, numel, dtype):
        """A flat host buffer of numel elements of dtype, pinned where the host allows it."""
        key = (numel, dtype)
        with self._lock:
            free = self._free.get(key)
            if free:
                buf = free.pop()
                self._bytes -= buf.numel() * buf.element_size()
                stats["reused"] += 1
                return buf
            stats["made"] += 1
        try:
            return torch.empty(numel, dtype=dtype, pin_memory=True)
        except RuntimeError:  # no pinned memory left to lock: an ordinary buffer does as well
            return torch.empty(numel, dtype=dtype)

    def give(self, buf):
        """Take back a buffer from take() whose contents nobody reads any more."""
        size = buf.numel() * buf.element_size()
        with self._lock:
            if self._bytes + size > self._max:
                return
            self._free.setdefault((buf.numel(), buf.dtype), []).append(buf)
            self._bytes += size

    def copy_of(self, t, held):
        """A host copy of tensor t in a pool buffer that gloo may overwrite; the buffer is added to held."""
        buf = self.take(t.numel(), t.dtype)
        held.append(buf)
        host = buf.view(t.shape)
        host.copy_(t.detach())
        return host

    def empty_like(self, t, held):
        """An uninitialized pool buffer shaped like t, for an output gloo fills completely; added to held."""
        buf = self.take(t.numel(), t.dtype)
        held.append(buf)
        return buf.view(t.shape)
