"""nn layers, activations and losses on tpu against CPU torch: forward outputs, gradients and
BatchNorm's running stats, in debug, strict and fused mode, with no CPU fallbacks."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import Draws, no_fallbacks

draws = Draws(0)
randn, randint, g = draws.randn, draws.randint, draws.gen
TOL = {"atol": 1e-4, "rtol": 1e-4}


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


def close(got, want, **tol):
    torch.testing.assert_close(got.cpu() if isinstance(got, torch.Tensor) else got, want, **(tol or TOL))


def compare(fn, *inputs, prep=None, module=None, tol=None):
    """Runs fn(module, *inputs) on CPU and on tpu copies; compares the outputs, the gradients of the
    float inputs and of the module's parameters under a random upstream gradient. prep maps each
    leaf to the tensor fn gets (a transpose makes it non-contiguous on either device)."""
    tol = tol or TOL
    results = []
    tmodule = copy.deepcopy(module).to("tpu") if module is not None else None
    for dev in ("cpu", "tpu"):
        mod = module if dev == "cpu" else tmodule
        leaves = [x.detach().to(dev).requires_grad_(x.is_floating_point()) for x in inputs]
        args = [prep(x) if prep else x for x in leaves]
        out = fn(mod, *args)
        outs = list(out) if isinstance(out, tuple) else [out]
        results.append((mod, leaves, outs))
    (cmod, cleaves, couts), (tmod, tleaves, touts) = results
    for c, t in zip(couts, touts):
        close(t, c.detach(), **tol)
    floats = [k for k, c in enumerate(couts) if c.is_floating_point() and c.requires_grad]
    if not floats:
        return touts
    ups = [randn(*couts[k].shape) for k in floats]
    sum((couts[k] * u).sum() for k, u in zip(floats, ups)).backward()
    sum((touts[k] * u.to("tpu")).sum() for k, u in zip(floats, ups)).backward()
    for c, t in zip(cleaves, tleaves):
        if c.grad is not None:
            close(t.grad, c.grad, **tol)
    if cmod is not None:
        for (name, cp), tp in zip(cmod.named_parameters(), tmod.parameters()):
            if cp.grad is not None:
                assert tp.grad is not None, name
                close(tp.grad, cp.grad, **tol)
        for (name, cb), tb in zip(cmod.named_buffers(), tmod.buffers()):
            close(tb, cb, **tol)
    return touts


def call(mod, *xs):
    return mod(*xs)


def transpose(x):
    return x.transpose(0, -1) if x.dim() > 1 else x


def test_linear(mode):
    torch.manual_seed(0)
    compare(call, randn(4, 5), module=nn.Linear(5, 3))
    compare(call, randn(2, 4, 5), module=nn.Linear(5, 3, bias=False))
    compare(call, randn(5, 4), module=nn.Linear(5, 3), prep=transpose)


def test_layer_norm(mode):
    torch.manual_seed(0)
    ln = nn.LayerNorm(5)
    with torch.no_grad():
        ln.weight.copy_(randn(5))
        ln.bias.copy_(randn(5))
    compare(call, randn(4, 5), module=ln)
    compare(call, randn(4, 3, 5), module=nn.LayerNorm([3, 4], eps=1e-3), prep=transpose)
    compare(call, randn(2, 3, 6), module=nn.LayerNorm(6, elementwise_affine=False))
    # The saved statistics, read directly.
    x, w = randn(3, 4), randn(4)
    want = torch.native_layer_norm(x, [4], w, None, 1e-5)
    got = torch.native_layer_norm(x.to("tpu"), [4], w.to("tpu"), None, 1e-5)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        close(a, b)


@pytest.mark.parametrize("kind", ["1d", "1d_seq", "2d"])
def test_batch_norm_train_then_eval(mode, kind):
    torch.manual_seed(0)
    if kind == "2d":
        bn, shape = nn.BatchNorm2d(3), (4, 3, 5, 5)
    else:
        bn, shape = nn.BatchNorm1d(5), ((8, 5) if kind == "1d" else (4, 5, 3))
    with torch.no_grad():
        bn.weight.copy_(randn(bn.num_features))
        bn.bias.copy_(randn(bn.num_features))
    tbn = copy.deepcopy(bn).to("tpu")
    for step in range(3):
        x = randn(*shape) * (step + 1) + step
        xt = x.detach().to("tpu").requires_grad_()
        x.requires_grad_()
        u = randn(*shape)
        y, yt = bn(x), tbn(xt)
        close(yt, y.detach())
        (y * u).sum().backward()
        (yt * u.to("tpu")).sum().backward()
        close(xt.grad, x.grad)
    close(tbn.running_mean, bn.running_mean)
    close(tbn.running_var, bn.running_var)
    assert tbn.num_batches_tracked.item() == 3
    close(tbn.weight.grad, bn.weight.grad)
    close(tbn.bias.grad, bn.bias.grad)
    bn.eval()
    tbn.eval()
    bn.zero_grad()
    tbn.zero_grad()
    x = randn(*shape)
    for dev, m in (("cpu", bn), ("tpu", tbn)):
        xs = x.detach().to(dev).requires_grad_()
        m(xs).sum().backward()
        if dev == "cpu":
            want, want_grad, want_wg = m(x).detach(), xs.grad, m.weight.grad
        else:
            close(m(xs), want)
            close(xs.grad, want_grad)
            close(m.weight.grad, want_wg)
    close(tbn.running_mean, bn.running_mean)


def test_batch_norm_variants(mode):
    torch.manual_seed(0)
    # Cumulative average (momentum=None), no affine, no running stats, non-contiguous input.
    compare(call, randn(6, 4), module=nn.BatchNorm1d(4, momentum=None))
    compare(call, randn(6, 4), module=nn.BatchNorm1d(4, affine=False, momentum=0.3))
    compare(call, randn(3, 2, 4, 5), module=nn.BatchNorm2d(2, track_running_stats=False))
    compare(call, randn(4, 6), module=nn.BatchNorm1d(4), prep=transpose)


def test_batch_norm_overloads(mode):
    """The other batch norm entry points (reached by export and compile paths), called directly."""
    aten = torch.ops.aten
    x, w, b = randn(4, 3, 2), randn(3), randn(3)
    rm, rv = randn(3), randn(3).abs() + 0.5

    def both(f, *args, stats=True):
        cpu = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        tpu = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
        want, got = f(*cpu), f(*tpu)
        for gt, wt in zip(got, want):
            assert gt.shape == wt.shape
            close(gt, wt)
        if stats:
            close(tpu[3], cpu[3])
            close(tpu[4], cpu[4])
        return got
    both(aten._native_batch_norm_legit, x, w, b, rm, rv, True, 0.2, 1e-5)
    both(aten._native_batch_norm_legit.no_stats, x, w, b, True, 0.2, 1e-5, stats=False)
    both(aten._native_batch_norm_legit_no_training, x, w, b, rm, rv, 0.2, 1e-5)
    out = both(lambda *a: aten._batch_norm_with_update(*a)[:3], x, w, b, rm, rv, 0.2, 1e-5)
    gy = randn(4, 3, 2)
    mask = [True, True, True]
    save_mean, save_invstd = out[1].cpu(), out[2].cpu()
    both(aten.batch_norm_backward, gy, x, w, rm, rv, save_mean, save_invstd, True, 1e-5, mask,
         torch.empty(0, dtype=torch.uint8), stats=False)
    both(aten.native_batch_norm_backward, gy, x, w, rm, rv, None, None, False, 1e-5, mask, stats=False)


def test_group_norm(mode):
    torch.manual_seed(0)
    gn = nn.GroupNorm(2, 4)
    with torch.no_grad():
        gn.weight.copy_(randn(4))
        gn.bias.copy_(randn(4))
    compare(call, randn(3, 4, 5), module=gn)
    compare(call, randn(2, 6, 3, 3), module=nn.GroupNorm(3, 6, affine=False))
    compare(call, randn(3, 3, 4, 2), module=nn.GroupNorm(1, 4), prep=lambda x: x.permute(0, 2, 1, 3))


def test_rms_norm(mode):
    torch.manual_seed(0)
    rms = nn.RMSNorm(5)
    with torch.no_grad():
        rms.weight.copy_(randn(5))
    compare(call, randn(3, 5), module=rms)
    compare(call, randn(4, 3, 5), module=nn.RMSNorm([3, 4], eps=1e-5, elementwise_affine=False), prep=transpose)


@pytest.mark.parametrize("scale", [False, True])
def test_embedding(mode, scale):
    torch.manual_seed(0)
    idx = torch.tensor([[0, 2, 3, 2], [9, 2, 0, 1]])
    compare(call, idx, module=nn.Embedding(10, 4, padding_idx=0, scale_grad_by_freq=scale))
    compare(call, idx.t(), module=nn.Embedding(10, 3, scale_grad_by_freq=scale))


ACTIVATIONS = {
    "relu": nn.ReLU(), "gelu": nn.GELU(), "gelu_tanh": nn.GELU("tanh"), "silu": nn.SiLU(),
    "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation(mode, name):
    act = ACTIVATIONS[name]
    x = randn(4, 6) * 3
    x[0, :3] = torch.tensor([0.0, -0.0, 1e-8])
    compare(lambda m, t: act(t), x)
    compare(lambda m, t: act(t), randn(6, 3), prep=transpose)


def test_cross_entropy_indices(mode):
    x, t = randn(6, 5), torch.tensor([1, 0, 4, 2, 2, 3])
    w = randn(5).abs() + 0.1

    def ce(reduction="mean", **kw):
        return lambda m, a, b: F.cross_entropy(a, b, reduction=reduction, **kw)
    for reduction in ("mean", "sum", "none"):
        compare(ce(reduction, ignore_index=2), x, t)
    compare(lambda m, a, b, c: F.cross_entropy(a, b, weight=c.detach(), ignore_index=0), x, t, w)
    compare(ce("none", label_smoothing=0.2), x, t)
    compare(ce(), randn(5, 6), t, prep=transpose)
    # Spatial inputs reach nll_loss2d; 3-d ones are viewed as 4-d.
    compare(ce("sum", ignore_index=1), randn(2, 5, 3, 4), randint(0, 5, 2, 3, 4))
    compare(ce("none", label_smoothing=0.1), randn(2, 5, 7), randint(0, 5, 2, 7))
    compare(ce(), randn(5), torch.tensor(3))


def test_cross_entropy_probabilities(mode):
    x = randn(4, 5)
    p = randn(4, 5).softmax(1)
    for reduction in ("sum", "none"):
        compare(lambda m, a, b: F.cross_entropy(a, b.detach(), reduction=reduction), x, p)
    compare(lambda m, a, b: F.cross_entropy(a, b.detach(), label_smoothing=0.1), x, p)
    compare(lambda m, a, b: F.cross_entropy(a, b.detach()), randn(2, 5, 3, 3), randn(2, 5, 3, 3).softmax(1))


def test_nll_loss_all_ignored(mode):
    x, t = randn(3, 4).log_softmax(1), torch.tensor([1, 1, 1])
    compare(lambda m, a, b: F.nll_loss(a, b, ignore_index=1, reduction="sum"), x, t)
    got = F.nll_loss(x.to("tpu"), t.to("tpu"), ignore_index=1)
    assert torch.isnan(got.cpu()) and torch.isnan(F.nll_loss(x, t, ignore_index=1))


def test_mse_and_bce_with_logits(mode):
    x, y = randn(4, 5), randn(4, 5)
    p = torch.rand(4, 5, generator=g)
    w, pw = torch.rand(5, generator=g), torch.rand(5, generator=g) + 0.5
    for reduction in ("mean", "sum", "none"):
        compare(lambda m, a, b: F.mse_loss(a, b, reduction=reduction), x, y)
        compare(lambda m, a, b: F.binary_cross_entropy_with_logits(a * 4, b, reduction=reduction), x, p)
    compare(lambda m, a, b: F.mse_loss(a, b), randn(5, 4), randn(5, 4), prep=transpose)
    compare(lambda m, a, b, c, d: F.binary_cross_entropy_with_logits(a * 4, b, weight=c.detach(), pos_weight=d.detach()),
            x, p, w, pw)


@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "scale"])
def test_scaled_dot_product_attention(mode, case):
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    kw = {}
    if case == "causal":
        k, v = randn(2, 3, 4, 8), randn(2, 3, 4, 8)
        kw["is_causal"] = True
    elif case == "bool_mask":
        mask = torch.rand(4, 6, generator=g) > 0.3
        mask[:, 0] = True
        kw["attn_mask"] = mask
    elif case == "float_mask":
        kw["attn_mask"] = randn(2, 1, 4, 6)
    elif case == "scale":
        kw["scale"] = 0.3

    def sdpa(m, a, b, c):
        kw2 = {key: (val.to(a.device) if isinstance(val, torch.Tensor) else val) for key, val in kw.items()}
        return F.scaled_dot_product_attention(a, b, c, dropout_p=0.0, **kw2)
    compare(sdpa, q, k, v)
    if case != "plain":
        return
    # Non-contiguous: [batch, seq, heads, dim] transposed to [batch, heads, seq, dim].
    compare(sdpa, q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous(),
            prep=lambda x: x.transpose(1, 2))


def test_sdpa_fully_masked_row_gives_zeros(mode):
    # CPU's flash kernel writes zeros (and zero gradients) for a query row whose keys are all masked out.
    mask = torch.ones(5, 5, dtype=torch.bool)
    mask[2] = False
    compare(lambda m, a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask.to(a.device)),
            randn(1, 2, 5, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4))


def sdpa_ops(**kw):
    """The ATen ops one scaled_dot_product_attention call reaches on tpu."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__.split(".")[0])
            return func(*args, **(kwargs or {}))

    q, k, v = (randn(2, 4, 6, 8).to("tpu") for _ in range(3))
    kv_heads = kw.pop("kv_heads", 4)
    k, v = k[:, :kv_heads], v[:, :kv_heads]
    backend = kw.pop("backend", None)
    with torch.no_grad(), Ops():
        if backend is None:
            F.scaled_dot_product_attention(q, k, v, **kw)
        else:
            with torch.nn.attention.sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, **kw)
    return seen


def test_sdpa_takes_one_fused_op_where_it_fits():
    assert sdpa_ops(is_causal=True) == ["_scaled_dot_product_flash_attention_for_cpu"]
    math = {"bmm", "_safe_softmax"}
    # Grouped query heads take it too, as on CPU; dropout and a forced math backend keep the math decomposition.
    assert sdpa_ops(kv_heads=2, enable_gqa=True) == ["_scaled_dot_product_flash_attention_for_cpu"]
    assert math <= set(sdpa_ops(dropout_p=0.5))
    assert math <= set(sdpa_ops(backend=torch.nn.attention.SDPBackend.MATH))


def test_training_step_no_fallbacks():
    torch.tpu.set_mode("fused")
    try:
        training_steps()
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")


def training_steps():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 8), nn.BatchNorm1d(8),
                          nn.SiLU(), nn.Linear(8, 4))
    tmodel = copy.deepcopy(model).to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    for _ in range(2):
        x, t = randn(5, 6), randint(0, 4, 5)
        loss = F.cross_entropy(model(x), t, label_smoothing=0.1)
        tloss = F.cross_entropy(tmodel(x.to("tpu")), t.to("tpu"), label_smoothing=0.1)
        close(tloss, loss.detach())
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
    for a, b in zip(tmodel.state_dict().values(), model.state_dict().values()):
        close(a, b)


def test_loss_errors(mode):
    x = randn(4, 5).to("tpu")
    with pytest.raises(RuntimeError, match="^expected target dtype to be Long or Byte, but got Int.*nll_loss"):
        F.cross_entropy(x, torch.tensor([1, 0, 4, 2], dtype=torch.int32).to("tpu"))
    with pytest.raises(RuntimeError, match="^expected target dtype to be Long or Byte, but got Float.*nll_loss"):
        F.cross_entropy(x, torch.rand(4).to("tpu"))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected.*nll_loss"):
        F.cross_entropy(x, torch.rand(4, 3).to("tpu"))
    with pytest.raises(IndexError, match="^Target 7 is out of bounds.*nll_loss"):
        F.cross_entropy(x, torch.tensor([1, 0, 7, 2]).to("tpu"))
    with pytest.raises(IndexError, match="^Target -3 is out of bounds.*nll_loss"):
        F.cross_entropy(x, torch.tensor([1, 0, -3, 2]).to("tpu"), ignore_index=-1)
    with pytest.raises(IndexError, match="^Target 9 is out of bounds.*nll_loss2d"):
        F.cross_entropy(randn(2, 5, 3, 3).to("tpu"), torch.full((2, 3, 3), 9).to("tpu"))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(randn(2, 5, 3, 3).to("tpu"), torch.rand(2, 3, 3).to("tpu"))
    # The device stays usable after the errors.
    close(F.cross_entropy(x, torch.tensor([1, 0, 4, 2]).to("tpu")), F.cross_entropy(x.cpu(), torch.tensor([1, 0, 4, 2])))


def _weight_norm_cases():
    from torch.nn.utils import weight_norm
    from torch.nn.utils.parametrizations import weight_norm as param_weight_norm

    return [
        (lambda: weight_norm(nn.Conv1d(4, 6, 5, padding=2), dim=0), (2, 4, 7)),
        (lambda: weight_norm(nn.Linear(5, 3), dim=1), (2, 5)),
        # wav2vec2's positional convolution: grouped, normalized over the kernel dim
        (lambda: param_weight_norm(nn.Conv1d(4, 4, 3, padding=2, groups=2), dim=2), (2, 4, 7)),
        (lambda: weight_norm(nn.Linear(5, 3), dim=None), (2, 5)),
    ]


@pytest.mark.parametrize("case", range(4))
def test_weight_norm_matches_cpu_without_fallback(mode, case):
    make, shape = _weight_norm_cases()[case]
    torch.manual_seed(1)
    want_m = make()
    torch.manual_seed(1)
    got_m = make().to("tpu")
    x = torch.randn(*shape)
    torch.tpu.reset_metrics()
    (want_m(x) ** 2).sum().backward()
    y = got_m(x.to("tpu"))
    (y ** 2).sum().backward()
    torch.testing.assert_close(y.detach().cpu(), want_m(x).detach(), atol=1e-5, rtol=1e-5)
    for (n, p), q in zip(want_m.named_parameters(), got_m.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-5, rtol=1e-5, msg=lambda m: f"{n}: {m}")
    assert not no_fallbacks()


def test_weight_norm_compiles():
    """A graph holding weight normalization compiles instead of running uncompiled."""
    make, shape = _weight_norm_cases()[2]
    torch.manual_seed(1)
    want_m = make()
    torch.manual_seed(1)
    got_m = make().to("tpu")
    x = torch.randn(*shape)
    f = torch.compile(got_m, backend="tpu")
    torch.tpu.reset_metrics()
    for _ in range(2):
        y = f(x.to("tpu"))
    torch.testing.assert_close(y.detach().cpu(), want_m(x).detach(), atol=1e-5, rtol=1e-5)
    m = torch.tpu.metrics()
    assert m["compiled_fallbacks"] == 0 and m["compiled_replays"] >= 1, m["compiled_fallback_reasons"]
    assert not no_fallbacks()
