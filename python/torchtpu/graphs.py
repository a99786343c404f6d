"""CUDA Graphs' API on tpu: torch.tpu.TPUGraph, torch.tpu.graph, make_graphed_callables.

A capture records the ops of a region of eager code into one program instead of running them (the
engine's graph capture, engine/graph_capture.go). The program binds every storage the region reads by
address and writes every storage it wrote back into that storage, so the usual CUDA pattern holds:
copy new data into the static inputs with copy_, replay(), read the static outputs. A replay is one
launch with fresh seeds for random ops and no per-op work. As on CUDA the captured work does not run at
capture, and a host sync inside the region (.item(), .cpu(), printing) raises a RuntimeError and
leaves the capture invalid. The storages a graph binds stay alive (and keep their memory) until the
graph is reset or collected."""

import weakref

import torch

from . import _lib, _runtime


def _free(state):
    if state[0]:
        _lib.lib().ttpu_program_free(state[0])
        state[0] = 0


class _PoolHandle:
    """An opaque pool token. Storages are engine records, not blocks of a caching allocator, so graphs
    need no memory pool of their own: the token is accepted for CUDA code's sake and changes nothing."""


def graph_pool_handle():
    """A token to pass as pool= to torch.tpu.graph (accepted for compatibility; see _PoolHandle)."""
    return _PoolHandle()


class TPUGraph:
    """One captured region, replayed as one program."""

    def __init__(self, keep_graph=False):
        self._state = [0]  # the program handle, shared with the finalizer
        self._device = None
        self._capturing = False
        self._finalizer = weakref.finalize(self, _free, self._state)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        _runtime.require()
        if self._state[0]:
            raise RuntimeError("torch.tpu.TPUGraph: this graph already holds a capture (call reset() first)")
        self._device = torch.tpu.current_device()
        torch.ops.torchtpu.graph_capture_begin()
        self._capturing = True

    def capture_end(self):
        if not self._capturing:
            raise RuntimeError("torch.tpu.TPUGraph: capture_end without capture_begin")
        self._capturing = False
        self._state[0] = torch.ops.torchtpu.graph_capture_end()

    def _abort(self):
        self._capturing = False
        torch.ops.torchtpu.capture_abort()

    def replay(self):
        """Launch the captured program once: it reads the static inputs' current values and writes the
        static outputs and every other storage the region wrote."""
        if not self._state[0]:
            raise RuntimeError("torch.tpu.TPUGraph: replay() of a graph that holds no capture")
        mismatch = torch.ops.torchtpu.graph_replay(self._state[0], self._device)
        if mismatch:
            raise RuntimeError(f"torch.tpu.TPUGraph: replay failed: {mismatch}")

    def reset(self):
        """Free the program and release the storages it held."""
        _free(self._state)

    def pool(self):
        return _PoolHandle()

    def enable_debug_mode(self):
        """Accepted for CUDA's API: the captured program's text is always kept, so debug_dump needs no mode."""

    def debug_dump(self, debug_path):
        """Write the captured program, as the StableHLO text it was compiled from, to debug_path (CUDA writes
        a DOT graph of its kernels there)."""
        if not self._state[0]:
            raise RuntimeError("torch.tpu.TPUGraph: debug_dump() of a graph that holds no capture")
        with open(debug_path, "w") as f:
            f.write(torch.ops.torchtpu.program_text(self._state[0]))


class graph:
    """Context manager capturing its body into tpu_graph (CUDA's torch.cuda.graph). pool and stream are
    accepted for compatibility: tpu streams all feed one ordered queue and storages need no pool."""

    def __init__(self, tpu_graph, pool=None, stream=None, capture_error_mode="global"):
        self.tpu_graph = tpu_graph
        self.stream_ctx = torch.tpu.stream(stream) if stream is not None else None

    def __enter__(self):
        torch.tpu.synchronize()
        if self.stream_ctx is not None:
            self.stream_ctx.__enter__()
        self.tpu_graph.capture_begin()

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.tpu_graph.capture_end()
            else:
                self.tpu_graph._abort()
        finally:
            if self.stream_ctx is not None:
                self.stream_ctx.__exit__(exc_type, exc, tb)
        return False


def is_current_stream_capturing():
    """Whether a torch.tpu.graph capture is recording (CUDA's torch.cuda.is_current_stream_capturing). The
    device's streams answer the same through torch.accelerator.current_stream().is_capturing(), which the
    optimizers consult: capturing the step() of one whose capturable flag is False raises, as on CUDA."""
    return torch.accelerator.current_stream(torch.device("tpu", torch.tpu.current_device())).is_capturing()
