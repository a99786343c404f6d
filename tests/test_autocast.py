"""torch.autocast on tpu: CUDA's op policies, bfloat16 by default."""
import pytest
import torch
import torch.nn.functional as F

from conftest import no_fallbacks


def test_default_dtype_and_amp_module():
    assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert torch.amp.is_autocast_available("tpu")
    with torch.amp.autocast("tpu"):
        assert torch.is_autocast_enabled("tpu")
        assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("tpu")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_linear_runs_in_lower_precision(mode, dtype):
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 5)
    x = torch.randn(4, 8)
    with torch.autocast(device_type="cpu", dtype=dtype):
        want = lin(x)
    tlin = lin.to("tpu")
    torch.tpu.reset_metrics()
    with torch.autocast(device_type="tpu", dtype=dtype):
        got = tlin(x.to("tpu"))
        mm = torch.mm(x.to("tpu"), x.to("tpu").t())
        bmm = torch.bmm(x.to("tpu")[None], x.to("tpu").t()[None])
    assert got.dtype == dtype and mm.dtype == dtype and bmm.dtype == dtype
    assert not no_fallbacks()
    assert want.dtype == dtype
    torch.testing.assert_close(got.cpu().float(), want.float(), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(mm.cpu().float(), (x @ x.t()), atol=1e-1, rtol=2e-2)


def test_fp32_ops_stay_float32(mode):
    x = torch.randn(4, 6)
    tx = x.to("tpu")
    with torch.autocast(device_type="tpu", dtype=torch.bfloat16):
        h = tx @ tx.t()  # bfloat16
        assert h.dtype == torch.bfloat16
        s = torch.softmax(h, dim=-1)
        ls = F.log_softmax(h, dim=-1)
        e = torch.exp(h)
        total = h.sum()
        ln = F.layer_norm(h, (4,))
        mse = F.mse_loss(h, torch.zeros(4, 4, device="tpu"))
        ce = F.cross_entropy(h, torch.tensor([0, 1, 2, 3], device="tpu"))
    for t in (s, ls, e, total, ln, mse, ce):
        assert t.dtype == torch.float32
    hc = (x.bfloat16() @ x.bfloat16().t())
    torch.testing.assert_close(h.cpu(), hc)
    # In fused mode XLA may keep h in float32 inside the graph (excess precision), so the float32
    # references hold to bfloat16 precision only.
    torch.testing.assert_close(s.cpu(), torch.softmax(hc.float(), -1), atol=5e-3, rtol=2e-2)
    torch.testing.assert_close(ce.cpu(), F.cross_entropy(hc.float(), torch.tensor([0, 1, 2, 3])),
                               atol=5e-3, rtol=2e-2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cross_entropy_computes_in_float32(mode, dtype):
    """cross_entropy runs in float32 under autocast, as on CPU and torch_xla: it asks log_softmax for its input's
    dtype, which CUDA's policy keeps, and the float32 loss held only the half type's precision (4e-3 off)."""
    torch.manual_seed(0)
    x = (torch.randn(8, 32) * 3).to(dtype)
    y = torch.randint(0, 32, (8,))
    w = torch.rand(32)
    for kw in ({}, {"weight": w, "label_smoothing": 0.1}, {"reduction": "none", "ignore_index": int(y[0])}):
        with torch.autocast(device_type="cpu", dtype=dtype):
            want = F.cross_entropy(x, y, **kw)
        with torch.autocast(device_type="tpu", dtype=dtype):
            got = F.cross_entropy(x.to("tpu"), y.to("tpu"), **{k: v.to("tpu") if torch.is_tensor(v) else v
                                                                 for k, v in kw.items()})
        assert got.dtype == want.dtype == torch.float32
        torch.testing.assert_close(got.cpu(), want, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(got.cpu(), F.cross_entropy(x.double(), y, **{k: v.double() if torch.is_tensor(v)
                                                                                else v for k, v in kw.items()}).float(),
                                   atol=1e-6, rtol=1e-6)


def test_promote_ops(mode):
    a = torch.randn(2, 3).to("tpu")
    with torch.autocast(device_type="tpu", dtype=torch.bfloat16):
        b = a @ torch.eye(3, device="tpu")
        assert b.dtype == torch.bfloat16
        c = torch.cat([a, b])
        st = torch.stack([a, b])
        ac = torch.addcmul(a, b, b)
    assert c.dtype == st.dtype == ac.dtype == torch.float32


def test_binary_cross_entropy_is_refused():
    x = torch.rand(3, device="tpu")
    with torch.autocast(device_type="tpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(x, x)


def test_mlp_forward_backward(mode):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    ref = [p.detach().clone() for p in model.parameters()]
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        loss_cpu = F.cross_entropy(model(x), y)
    loss_cpu.backward()
    grads_cpu = [p.grad.clone() for p in model.parameters()]

    model = model.to("tpu")
    model.zero_grad(set_to_none=True)
    with torch.autocast(device_type="tpu"):
        out = model(x.to("tpu"))
        assert out.dtype == torch.bfloat16
        loss = F.cross_entropy(out, y.to("tpu"))
    assert loss.dtype == torch.float32
    loss.backward()
    for p, r, g in zip(model.parameters(), ref, grads_cpu):
        assert p.dtype == torch.float32 and p.grad.dtype == torch.float32
        assert torch.isfinite(p.grad.cpu()).all()
        torch.testing.assert_close(p.detach().cpu(), r)
        torch.testing.assert_close(p.grad.cpu(), g, atol=3e-2, rtol=5e-2)
    torch.testing.assert_close(loss.cpu(), loss_cpu.detach(), atol=2e-2, rtol=2e-2)
