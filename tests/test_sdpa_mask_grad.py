"""scaled_dot_product_attention with a float mask that requires grad (T5's learned relative position bias): the
flash kernel has no gradient for its mask, so tpu must take the math path, as CPU does, and give the output and
the gradients of query, key, value and mask that CPU gives, in every mode and under torch.compile."""
import pytest
import torch
import torch.nn.functional as F

from conftest import Draws, MODES, no_fallbacks

randn = Draws(0).randn


def attend(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


# A mask per batch and head, one broadcast over the batch (T5's bias: [1, heads, q, k]) and a 2-D one.
MASKS = {"4d": (2, 3, 5, 7), "batch_broadcast": (1, 3, 5, 7), "2d": (5, 7)}


@pytest.mark.parametrize("run", MODES + ["compile"])
@pytest.mark.parametrize("mask_shape", list(MASKS))
def test_sdpa_mask_requiring_grad_matches_cpu(run, mask_shape):
    q, k, v, m = randn(2, 3, 5, 8), randn(2, 3, 7, 8), randn(2, 3, 7, 8), randn(*MASKS[mask_shape])
    w = randn(2, 3, 5, 8)  # weights the output so every gradient differs from a plain sum's
    want_in = [t.clone().requires_grad_() for t in (q, k, v, m)]
    want = attend(*want_in)
    (want * w).sum().backward()

    torch.tpu.set_mode("strict" if run == "compile" else run)
    try:
        fn = attend
        if run == "compile":
            torch._dynamo.reset()
            fn = torch.compile(attend, backend="tpu", dynamic=False)
        torch.tpu.reset_metrics()
        got_in = [t.to("tpu").requires_grad_() for t in (q, k, v, m)]
        got = fn(*got_in)
        (got * w.to("tpu")).sum().backward()
        torch.testing.assert_close(got.cpu(), want.detach())
        for name, a, b in zip("qkvm", got_in, want_in):
            torch.testing.assert_close(a.grad.cpu(), b.grad, msg=lambda s, n=name: f"grad of {n}: {s}")
        assert not no_fallbacks()
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")


def test_mask_not_requiring_grad_still_takes_the_fused_kernel():
    # Only a mask that needs a gradient leaves the fused kernel.
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__.split(".")[0])
            return func(*args, **(kwargs or {}))

    q, k, v = (randn(2, 3, 5, 8).to("tpu").requires_grad_() for _ in range(3))
    for mask_grad in (False, True):
        seen.clear()
        m = randn(1, 3, 5, 5).to("tpu").requires_grad_(mask_grad)
        with Ops():
            attend(q, k, v, m)
        fused = "_scaled_dot_product_flash_attention_for_cpu" in seen
        assert fused != mask_grad, (mask_grad, seen)
