"""_scaled_dot_product_flash_attention_for_cpu (the op scaled_dot_product_attention picks on tpu) and its backward
against CPU torch: values, gradients, the logsumexp and CPU's strides."""
import pytest
import torch

from conftest import Draws, check, check_grad

randn = Draws(0).randn


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def test_flash_attention_dropout_is_refused_like_cpu():
    q = randn(1, 2, 4, 8).to("tpu")
    with pytest.raises(RuntimeError, match="Currently do not support dropout > 0"):
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, dropout_p=0.5)


def test_flash_attention_for_cpu(mode):
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    mask = randn(4, 6)
    check_grad(lambda a, b, c: f(a, b, c, is_causal=True)[0], q, k, v, rtol=1e-5)
    check_grad(lambda a, b, c: f(a, b, c, attn_mask=mask.to(a.device), scale=0.3)[0], q, k, v, rtol=1e-5)
    check(lambda a, b, c: f(a, b, c)[1], q, k, v, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(is_causal=True), dict(mask=True), dict()])
def test_grouped_query_attention_matches_cpu(mode, kw):
    # enable_gqa: three query heads share each key and value head (repeat_interleave); the gradients of the keys
    # and values sum over their query heads.
    f = torch.nn.functional.scaled_dot_product_attention
    q, k, v = randn(2, 6, 4, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    mask = randn(2, 1, 4, 5) if kw.pop("mask", False) else None
    g = randn(2, 6, 4, 8)
    runs = []
    for dev in ("cpu", "tpu"):
        a, b, c = (x.detach().to(dev).requires_grad_() for x in (q, k, v))
        out = f(a, b, c, attn_mask=None if mask is None else mask.to(dev), enable_gqa=True, **kw)
        out.backward(g.to(dev))
        runs.append([out, a.grad, b.grad, c.grad])
    for want, got in zip(*runs):
        assert got.shape == want.shape and got.stride() == want.stride(), (got.shape, got.stride(), want.stride())
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)


def test_flash_attention_strides_match_cpu():
    # Compiled graphs view these results with the strides CPU's kernels (and their meta functions) give.
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    layouts = []
    for dev in ("cpu", "tpu"):
        # The query as a transformer block makes it: heads split out of [B, L, H*E] and moved forward.
        a = q.transpose(1, 2).contiguous().to(dev).transpose(1, 2)
        b, c = k.to(dev), v.to(dev)
        out, lse = f(a, b, c, is_causal=True)
        grads = bwd(out, a, b, c, out, lse, 0.0, True)
        layouts.append([(t.shape, t.stride()) for t in (out, lse, *grads)])
        if dev == "tpu":
            torch.testing.assert_close(grads[1].cpu(), cpu_grads[1], atol=1e-5, rtol=1e-5)
        cpu_grads = grads
    assert layouts[0] == layouts[1]


@pytest.mark.parametrize("which", ["query", "key", "value"])
def test_sdpa_of_a_transposed_last_dim_takes_the_math_path_as_on_cpu(mode, which):
    """CPU picks its flash kernel only when query, key and value have a dense last dim; otherwise the math path gives
    a contiguous result. tpu chose flash and returned the transposed query's layout."""
    import torch.nn.functional as F
    q, k, v = randn(2, 3, 6, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    args = {"query": q, "key": k, "value": v}
    args[which] = args[which].transpose(-1, -2).contiguous().transpose(-1, -2)
    want = F.scaled_dot_product_attention(*args.values(), is_causal=True)
    got = F.scaled_dot_product_attention(*[t.to("tpu") for t in args.values()], is_causal=True)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)


def test_saturated_softmax_gradients_match_cpu(mode):
    # Scores of 1e3 and more make the softmax one-hot: the gradients of q and k are about 1e-12. The reference is
    # CPU in float64: CPU's float32 flash kernel gets 1e-12 with its AVX2 code but 5e-3 with its AVX-512 code.
    # The backward once shifted its recomputed scores by the forward's logsumexp, and a last-bit difference
    # between the two programs' scores made the largest weight 1 +- 1e-4: dq and dk of 4e-3, dv off by 2e-3. On
    # AVX-512 hosts XLA's exp and divide made that weight 1 - 2^-24 within one program: dq and dk of 5e-4.
    torch.manual_seed(0)
    q, k, v = [torch.randn(2, 2, 6, 8) * 100 for _ in range(3)]
    go = torch.randn(2, 2, 6, 8)

    def grads(dev, dtype=torch.float32):
        qq, kk, vv = [t.to(dev, dtype).requires_grad_() for t in (q, k, v)]
        torch.nn.functional.scaled_dot_product_attention(qq, kk, vv).backward(go.to(dev, dtype))
        return [t.grad.cpu() for t in (qq, kk, vv)]

    for got, want in zip(grads("tpu"), grads("cpu", torch.float64)):
        assert got.dtype == torch.float32
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)
