"""Nested tensors on tpu (the strided layout), and nn.TransformerEncoder's fast path that builds them.

In eval mode with a key-padding mask, PyTorch's TransformerEncoder turns the padded batch into a nested tensor on
any PrivateUse1 device. Every result is compared with the same code on CPU: values, devices, and that views
share the nested tensor's buffer.
"""

import warnings

import pytest
import torch
import torch.nn as nn

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def pair():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 3, generator=g), torch.randn(4, 3, generator=g)


def nested(device):
    a, b = pair()
    return torch.nested.nested_tensor([a, b], device=device)


def padded(nt, value=0.0):
    return nt.to_padded_tensor(value).cpu()


def test_nested_tensor_lives_on_tpu_and_pads_as_on_cpu():
    t, c = nested("tpu"), nested("cpu")
    assert t.is_nested and t.device.type == "tpu"
    assert torch.equal(padded(t, -1.0), padded(c, -1.0))
    assert torch.equal(padded(c.to("tpu")), padded(c))
    back = t.cpu()
    assert back.is_nested and back.device.type == "cpu"
    assert torch.equal(padded(back), padded(c))
    assert t._nested_tensor_size().device.type == "cpu"
    assert torch.equal(t._nested_tensor_size(), c._nested_tensor_size())


def test_views_of_a_nested_tensor_share_its_buffer():
    t = nested("tpu")
    a, b = pair()
    parts = t.unbind()
    assert [torch.equal(p.cpu(), q) for p, q in zip(parts, (a, b))] == [True, True]
    parts[1].add_(1)
    t.select(0, 0).mul_(2)
    assert torch.equal(padded(t)[0, :2], 2 * a)
    assert torch.equal(padded(t)[1], b + 1)
    t.detach().zero_()
    assert torch.equal(padded(t, 7.0), padded(nested("cpu").detach().zero_(), 7.0))
    tt = nested("tpu").transpose(1, 2)
    assert torch.equal(padded(tt.contiguous()), padded(nested("cpu").transpose(1, 2).contiguous()))


@pytest.mark.parametrize(
    "name, f",
    [
        ("add", lambda x: x + x),
        ("mul_scalar", lambda x: x * 3),
        ("relu", torch.relu),
        ("gelu", nn.functional.gelu),
        ("softmax", lambda x: torch.softmax(x, -1)),
        ("linear", lambda x: nn.functional.linear(x, torch.ones(5, 3, device=x.device), torch.arange(5.0, device=x.device))),
        ("layer_norm", lambda x: nn.functional.layer_norm(x, (3,), torch.ones(3, device=x.device) * 2, torch.ones(3, device=x.device))),
        ("bmm", lambda x: torch.bmm(x, x.transpose(1, 2))),
        ("in_place", lambda x: x.mul_(2).add_(x)),
    ],
)
def test_nested_ops_match_cpu(name, f):
    t, c = f(nested("tpu")), f(nested("cpu"))
    assert t.is_nested and t.device.type == "tpu"
    torch.testing.assert_close(padded(t), padded(c), rtol=1e-6, atol=1e-6)


def test_nested_autograd_matches_cpu():
    def grads(device):
        a, b = pair()
        nt = torch.nested.nested_tensor([a, b], device=device, requires_grad=True)
        w = torch.linspace(-1, 1, 15, device=device).reshape(5, 3).requires_grad_()
        out = nn.functional.linear(nt, w).relu()
        out.to_padded_tensor(0.0).pow(2).sum().backward()
        return [g.cpu() for g in nt.grad.unbind()], w.grad.cpu()

    (tg, tw), (cg, cw) = grads("tpu"), grads("cpu")
    torch.testing.assert_close(tw, cw, rtol=1e-5, atol=1e-5)
    for x, y in zip(tg, cg):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
def test_transformer_encoder_fast_path_with_padding_mask(batch_first):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=batch_first, dropout=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(3, 5, 16) if batch_first else torch.randn(5, 3, 16)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    with torch.no_grad():
        ref = enc(x, src_key_padding_mask=mask)
        enc.to("tpu")
        out = enc(x.to("tpu"), src_key_padding_mask=mask.to("tpu"))
        layer_out = enc.layers[0](x.to("tpu"), src_key_padding_mask=mask.to("tpu"))
        layer_ref = enc.layers[0].cpu()(x, src_key_padding_mask=mask)
    assert out.device.type == "tpu" and not out.is_nested
    assert out.shape == ref.shape
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(layer_out.cpu(), layer_ref, rtol=1e-5, atol=1e-5)


def test_transformer_encoder_training_then_eval_matches_cpu():
    def run(device):
        torch.manual_seed(1)
        layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = nn.TransformerEncoder(layer, 1).to(device)
        opt = torch.optim.SGD(enc.parameters(), lr=0.1)
        x = torch.randn(2, 4, 8).to(device)
        mask = torch.tensor([[False] * 4, [False, False, True, True]]).to(device)
        for _ in range(3):
            opt.zero_grad()
            enc(x, src_key_padding_mask=mask).pow(2).mean().backward()
            opt.step()
        enc.eval()
        with torch.no_grad():
            return enc(x, src_key_padding_mask=mask).cpu()

    torch.testing.assert_close(run("tpu"), run("cpu"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_fast_path_without_mask_runs_on_tpu(norm_first, activation):
    """Without a padding mask the eval fast path is _transformer_encoder_layer_fwd on dense tensors: ATen's generic
    layer kernel, with its attention (_native_multi_head_attention) and feed-forward (_addmm_activation) on tpu."""
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, dropout=0.0, norm_first=norm_first,
                                       activation=activation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.randn(3, 5, 16)
    src_mask = nn.Transformer.generate_square_subsequent_mask(5).bool()
    with torch.no_grad():
        ref, ref_causal = enc(x), enc(x, mask=src_mask)
        enc.to("tpu")
        torch.tpu.reset_metrics()
        out, out_causal = enc(x.to("tpu")), enc(x.to("tpu"), mask=src_mask.to("tpu"))
        assert "none" in torch.tpu.metrics_report().split("CPU fallbacks:")[1].split("\n")[1]
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out_causal.cpu(), ref_causal, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
def test_multihead_attention_fast_path_matches_cpu(need_weights, average):
    """nn.MultiheadAttention in eval mode calls _native_multi_head_attention; a row whose keys are all padded is
    NaN on both devices, and weights come back only when asked for."""
    torch.manual_seed(3)
    m = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(3, 5, 16)
    kpm = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [True] * 5])
    with torch.no_grad():
        ref = m(x, x, x, key_padding_mask=kpm, need_weights=need_weights, average_attn_weights=average)
        m.to("tpu")
        got = m(*[x.to("tpu")] * 3, key_padding_mask=kpm.to("tpu"), need_weights=need_weights,
                average_attn_weights=average)
    torch.testing.assert_close(got[0].cpu(), ref[0], rtol=1e-5, atol=1e-5, equal_nan=True)
    assert (got[1] is None) == (ref[1] is None)
    if ref[1] is not None:
        torch.testing.assert_close(got[1].cpu(), ref[1], rtol=1e-5, atol=1e-6, equal_nan=True)
