"""out= arguments behave on tpu as on CPU: dtype rules, resizing (warning, memory order), overlap checks.

Each case calls the op with the same out on CPU and on tpu and compares what happens: the exception
class and message, or the out's values, shape, strides and the resize warning.
"""

import warnings

import pytest
import torch


def run(fn, device):
    """(exception, out tensors on CPU, whether a resize warning came) of fn(device)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outs = fn(device)
            err = None
        except Exception as e:  # noqa: BLE001
            outs, err = None, e
    warned = any("An output with one or more elements was resized" in str(w.message) for w in caught)
    if outs is not None:
        outs = [(t.cpu(), t.stride()) for t in (outs if isinstance(outs, (tuple, list)) else (outs,))]
    return err, outs, warned


def same_as_cpu(fn):
    want_err, want, want_warn = run(fn, "cpu")
    got_err, got, got_warn = run(fn, "tpu")
    if want_err is not None:
        assert got_err is not None, f"tpu accepts what CPU rejects: {want_err}"
        assert type(got_err) is type(want_err), f"tpu: {got_err!r}; CPU: {want_err!r}"
        assert str(got_err).startswith(str(want_err).splitlines()[0]), f"tpu: {got_err}\nCPU: {want_err}"
        return
    assert got_err is None, f"tpu raised {got_err!r}; CPU accepts"
    assert got_warn == want_warn, f"resize warning: tpu {got_warn}, CPU {want_warn}"
    for (g, gs), (w, ws) in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and gs == ws, (g.dtype, g.shape, gs, w.dtype, w.shape, ws)
        torch.testing.assert_close(g, w)


def data(device, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(len(shape) * 7 + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype).to(device)


CASES = {
    # Kernels that want out's dtype to be the result's, each with its own message.
    "mm into float64": lambda d: torch.mm(data(d, 3, 4), data(d, 4, 2), out=torch.zeros(3, 2, device=d,
                                                                                      dtype=torch.float64)),
    "abs into float64": lambda d: torch.abs(data(d, 5), out=torch.zeros(5, device=d, dtype=torch.float64)),
    "sort values into float64": lambda d: torch.sort(data(d, 5), out=(
        torch.zeros(5, device=d, dtype=torch.float64), torch.zeros(5, device=d, dtype=torch.long))),
    "amax into float64": lambda d: torch.amax(data(d, 4, 5), 1, out=torch.zeros(4, device=d, dtype=torch.float64)),
    "where into float64": lambda d: torch.where(data(d, 5) > 0, data(d, 5), data(d, 5),
                                                out=torch.zeros(5, device=d, dtype=torch.float64)),
    # Kernels that cast: add into a wider dtype works, into an integer fails; cat raises TypeError.
    "add into float64": lambda d: torch.add(data(d, 5), data(d, 5), out=torch.zeros(5, device=d, dtype=torch.float64)),
    "add into int64": lambda d: torch.add(data(d, 5), data(d, 5), out=torch.zeros(5, device=d, dtype=torch.long)),
    "cat into int64": lambda d: torch.cat([data(d, 2, 3), data(d, 2, 3)], out=torch.zeros(4, 3, device=d,
                                                                                          dtype=torch.long)),
    # Kernels that compute in out's dtype.
    "cumsum into int64": lambda d: torch.cumsum(data(d, 6) * 3, 0, out=torch.zeros(6, device=d, dtype=torch.long)),
    "cumsum into float64": lambda d: torch.cumsum(data(d, 6), 0, out=torch.zeros(6, device=d, dtype=torch.float64)),
    "bernoulli into int64": lambda d: torch.bernoulli(torch.ones(5, device=d), out=torch.zeros(5, device=d,
                                                                                          dtype=torch.long)),
    # Resizing a wrongly sized out: with a warning, quietly, or in column-major order.
    "add resized": lambda d: torch.add(data(d, 2, 3), 1, out=torch.zeros(1, device=d)),
    "eye resized quietly": lambda d: torch.eye(3, out=torch.zeros(1, device=d)),
    "arange resized quietly": lambda d: torch.arange(5, out=torch.zeros(1, device=d)),
    "cholesky resized column-major": lambda d: torch.linalg.cholesky(
        torch.eye(4, device=d) * 2 + 0.1, out=torch.zeros(1, device=d)),
    "batched solve resized column-major": lambda d: torch.linalg.solve(
        torch.eye(3, device=d).expand(2, 3, 3) * 2, data(d, 2, 3, 4), out=torch.zeros(1, device=d)),
    "qr resized column-major": lambda d: torch.linalg.qr(data(d, 5, 3), out=(torch.zeros(1, device=d),
                                                                             torch.zeros(1, device=d))),
    "batch norm stats out with running stats": lambda d: torch.ops.aten._native_batch_norm_legit.out(
        data(d, 4, 3), None, None, torch.zeros(3, device=d), torch.ones(3, device=d), True, 0.1, 1e-5,
        out=torch.zeros(1, device=d), save_mean=torch.zeros(1, device=d), save_invstd=torch.zeros(1, device=d)),
    # A resized out of an elementwise op takes its inputs' memory order, as CPU's TensorIterator gives it.
    "eq resized permuted": lambda d: torch.eq(data(d, 2, 3, 4).permute(0, 2, 1), data(d, 3),
                                              out=torch.zeros(0, device=d, dtype=torch.bool)),
    "add resized permuted": lambda d: torch.add(data(d, 3), data(d, 2, 3, 4).permute(0, 2, 1), alpha=2,
                                                out=torch.zeros(0, device=d)),
    "pow resized permuted": lambda d: torch.pow(data(d, 2, 3, 4).permute(0, 2, 1), 2, out=torch.zeros(0, device=d)),
    "exp resized from a wrong size": lambda d: torch.exp(data(d, 2, 3, 4).permute(0, 2, 1), out=torch.zeros(5, device=d)),
    "sigmoid resized channels_last": lambda d: torch.sigmoid(
        data(d, 2, 3, 5, 5).to(memory_format=torch.channels_last), out=torch.zeros(0, device=d)),
    "sum resized stays contiguous": lambda d: torch.sum(data(d, 2, 3, 4).permute(0, 2, 1), 1,
                                                        out=torch.zeros(0, device=d)),
    "cumsum resized stays contiguous": lambda d: torch.cumsum(data(d, 2, 3, 4).permute(0, 2, 1), 1,
                                                              out=torch.zeros(0, device=d)),
    # Memory overlap.
    "gather into an expanded out": lambda d: torch.gather(data(d, 6), 0, torch.tensor([0, 2, 4], device=d),
                                                          out=torch.zeros(1, device=d).expand(3)),
    "gather into its input": lambda d: (lambda x: torch.gather(x, 0, torch.tensor([0, 2, 4, 1, 3, 5], device=d),
                                                               out=x))(data(d, 6)),
    "add into its input": lambda d: (lambda x: torch.add(x, 1, out=x))(data(d, 6)),
    "add into an expanded out": lambda d: torch.add(data(d, 3), 1, out=torch.zeros(1, device=d).expand(3)),
    "cat into a view of an input": lambda d: (lambda x: torch.cat([data(d, 2, 6), x], out=x[:2]))(data(d, 4, 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_matches_cpu(name):
    same_as_cpu(CASES[name])


def test_strided_out_keeps_its_strides():
    """A non-contiguous out of the right size is written through its view: CPU's values, strides kept,
    the elements between left alone."""
    for dev in ("cpu", "tpu"):
        base = torch.full((4, 10), 7.0, device=dev)
        out = base[:, ::2]
        torch.mul(data(dev, 4, 5), 2, out=out)
        if dev == "cpu":
            want_base, want_stride = base.clone(), out.stride()
        else:
            assert out.stride() == want_stride
            torch.testing.assert_close(base.cpu(), want_base)
