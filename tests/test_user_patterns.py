"""Patterns from PyTorch code a user brings along, beyond single ops, against CPU in each mode.

Function transforms (vmap, jacrev, hessian, per-sample gradients), probability distributions, a gradient
penalty (a second-order backward), a weight average (swa_utils), torch.export's module, and the
TransformerEncoder inference fast path with a padding mask. Inputs are drawn on the CPU and copied, modules are
built on the CPU and moved, so both sides start from the same numbers; values and gradients are compared.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import Draws, no_fallbacks

randn, _ = Draws(31).pair()


def both(build, *inputs, fallback=()):
    """Runs build(device, *inputs on that device) on CPU and tpu; returns the pairs of its results (tpu, CPU).
    Only the ops named in fallback may run on the CPU for the tpu call."""
    torch.manual_seed(0)
    want = build("cpu", *inputs)
    torch.manual_seed(0)
    torch.tpu.reset_metrics()
    got = build("tpu", *[x.to("tpu") for x in inputs])
    got = [g.cpu() for g in got]
    assert set(no_fallbacks()) <= set(fallback), no_fallbacks()
    return list(zip(got, want))


def assert_pairs(pairs, atol=1e-5, rtol=1e-4):
    for i, (g, w) in enumerate(pairs):
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        torch.testing.assert_close(g, w, atol=atol, rtol=rtol, msg=lambda m: f"result {i}: {m}")


def test_vmap_jacrev_hessian(mode):
    w = randn(3, 4)

    def build(d, x, w):
        v = x[0]
        return [torch.vmap(lambda r: (r @ w).relu().sum())(x),
                torch.func.jacrev(lambda u: u.sin() * u.sum())(v),
                torch.func.hessian(lambda u: (u ** 3).sum() + u.prod())(v)]
    assert_pairs(both(build, randn(5, 3), w))  # their zero placeholders (_efficientzerotensor) are made on tpu


def test_per_sample_gradients(mode):
    lin = nn.Linear(4, 2)

    def build(d, x, y):
        m = lin.to(d) if d == "tpu" else lin
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, xi, yi):
            return F.mse_loss(torch.func.functional_call(m, p, (xi[None],)), yi[None])
        g = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
        return [g["weight"], g["bias"]]
    assert_pairs(both(build, randn(6, 4), randn(6, 2)))


def test_distributions(mode):
    def build(d, mu, s, logits, x):
        mu = mu.clone().requires_grad_()
        normal = torch.distributions.Normal(mu, s)
        lp = normal.log_prob(x).sum()
        lp.backward()
        std = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(s))
        cat = torch.distributions.Categorical(logits=logits)
        actions = torch.tensor([0, 2, 4], device=d)
        mvn = torch.distributions.MultivariateNormal(torch.zeros(3, device=d), torch.eye(3, device=d) * 2)
        return [lp.detach(), mu.grad, normal.entropy(), torch.distributions.kl_divergence(normal, std),
                cat.log_prob(actions), cat.entropy(), cat.probs, mvn.log_prob(torch.ones(3, device=d))]
    assert_pairs(both(build, randn(4), randn(4).abs() + 0.5, randn(3, 5), torch.linspace(-1, 1, 4)))


def test_gradient_penalty(mode):
    """WGAN-GP: the penalty is a function of a gradient, so its backward differentiates a backward."""
    critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))

    def build(d, x):
        m = critic.to(d) if d == "tpu" else critic
        m.zero_grad()
        x = x.clone().requires_grad_()
        g, = torch.autograd.grad(m(x).sum(), x, create_graph=True)
        gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
        gp.backward()
        return [gp.detach(), m[0].weight.grad.clone(), m[2].weight.grad.clone()]
    assert_pairs(both(build, randn(5, 4)))


def test_weight_average(mode):
    def build(d, w0):
        m = nn.Linear(4, 4, bias=False).to(d)
        with torch.no_grad():
            m.weight.copy_(w0)
        ema = torch.optim.swa_utils.AveragedModel(m, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))
        swa = torch.optim.swa_utils.AveragedModel(m)
        for i in range(3):
            with torch.no_grad():
                m.weight.mul_(0.5).add_(0.1 * (i + 1))
            ema.update_parameters(m)
            swa.update_parameters(m)
        return [ema.module.weight.detach(), swa.module.weight.detach(), swa.n_averaged]
    assert_pairs(both(build, randn(4, 4)))


def test_exported_program_runs(mode):
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def build(d, x):
        m = net.to(d) if d == "tpu" else net
        ep = torch.export.export(m, (x,))
        return [ep.module()(x), ep.module()(x * 2)]
    assert_pairs(both(build, randn(3, 4)))


@pytest.mark.parametrize("mask", [False, True])
def test_transformer_encoder_inference_fast_path(mode, mask):
    """In eval mode with no grad, nn.TransformerEncoder takes PyTorch's fused fast path; with a padding mask it
    packs the batch into nested tensors, which tpu does not hold: those ops run on the CPU, with CPU's values."""
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])

    def build(d, x, pad):
        m = enc.to(d) if d == "tpu" else enc
        with torch.no_grad():
            return [m(x, src_key_padding_mask=pad if mask else None)]
    nested = {"aten::_nested_tensor_from_mask", "aten::_nested_tensor_from_mask_left_aligned",
              "aten::_transformer_encoder_layer_fwd (nested)"}
    pairs = both(build, randn(2, 5, 16), pad, fallback=nested if mask else ())
    if mask:  # the padded positions come back as zeros on both sides
        assert pairs[0][0][1, 3:].abs().max() == 0
    assert_pairs(pairs, atol=1e-4)


def test_efficient_zero_tensor_is_zeros_on_tpu():
    torch.tpu.reset_metrics()
    z = torch._efficientzerotensor((2, 3), dtype=torch.float64, device="tpu")
    assert z.device.type == "tpu" and z.dtype == torch.float64 and z.shape == (2, 3) and z.stride() == (3, 1)
    assert torch.equal(z.cpu(), torch.zeros(2, 3, dtype=torch.float64))
    assert torch.equal((z + 1).cpu(), torch.ones(2, 3, dtype=torch.float64))
    assert no_fallbacks() == {}
