"""Results carry PyTorch's strides: elementwise ops follow TensorIterator's layout rule, convolutions,
pooling and normalization keep channels_last, *_like and clone keep the input's layout, and views that
rely on those strides work, eagerly (in each mode) and under torch.compile. CPU PyTorch is the reference
for strides and values."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from compile_util import run
from conftest import to_tpu


def flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    out = []
    for v in x:
        out += flat(v)
    return out


def check_layout(fn, *args, atol=1e-5, rtol=1.3e-6):
    """Asserts fn's results on tpu copies of args have CPU's sizes, strides, dense storages and values."""
    on_tpu = to_tpu(args)
    want, got = flat(fn(*args)), flat(fn(*on_tpu))
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        assert g.device.type == "tpu"
        assert g.shape == w.shape, f"result {i}: sizes {tuple(g.shape)} != {tuple(w.shape)}"
        assert g.stride() == w.stride(), f"result {i}: strides {g.stride()} != CPU's {w.stride()}"
        need = (max((s - 1) * st for s, st in zip(g.shape, g.stride())) + 1 if g.dim() else 1) * g.element_size()
        assert g.untyped_storage().nbytes() >= need + g.storage_offset() * g.element_size()
        if w.untyped_storage().nbytes() == need and w.storage_offset() == 0:  # a new dense result
            assert g.untyped_storage().nbytes() == need and g.storage_offset() == 0, f"result {i}: storage size"
        torch.testing.assert_close(g.cpu(), w, atol=atol, rtol=rtol, equal_nan=True)
    return got


def nchw_cl(*shape):
    return torch.randn(*shape).contiguous(memory_format=torch.channels_last)


def heads(x):
    """[2, 32, 64] -> [2, 4, 32, 16]: a head split whose strides are not contiguous."""
    return x.view(2, 32, 4, 16).transpose(1, 2)


# Elementwise: TensorIterator gives the output the memory order of its inputs.

ELEMENTWISE = {
    "unary": (lambda x: (x.neg(), x.exp(), F.relu(x), x.sigmoid(), x.abs().sqrt()), [(2, 32, 64)]),
    "scalar": (lambda x: (x * 2.0, x + 1, 3 - x, x / 4, x ** 2), [(2, 32, 64)]),
    "binary_same": (lambda x, y: (x + y, x * y, torch.maximum(x, y), x > y), [(2, 32, 64), (2, 32, 64)]),
    "binary_contig_other": (lambda x, y: (x + y.contiguous(), y.contiguous() * x), [(2, 32, 64), (2, 32, 64)]),
    "cast": (lambda x: (x.to(torch.float16), (x > 0).float(), x.to(torch.int32)), [(2, 32, 64)]),
}


@pytest.mark.parametrize("case", sorted(ELEMENTWISE))
def test_elementwise_on_permuted_inputs_keeps_their_layout(mode, case):
    fn, shapes = ELEMENTWISE[case]
    args = [torch.randn(*s) for s in shapes]
    check_layout(lambda *a: fn(*[heads(t) if t.dim() == 3 else t for t in a]), *args)


def test_binary_broadcast_ternary_and_mixed_layouts(mode):
    x, y, bias, m = torch.randn(2, 32, 64), torch.randn(2, 32, 64), torch.randn(16), torch.randn(2, 4, 32, 16)
    check_layout(lambda x, y, b, m: (heads(x) + b, heads(x) * heads(y), heads(x) + m, m - heads(x),
                                     torch.where(heads(x) > 0, heads(x), heads(y)), torch.where(m > 0, heads(x), 0.5),
                                     torch.lerp(heads(x), heads(y), 0.3), torch.addcmul(heads(x), heads(y), m)),
                 x, y, bias, m)
    # a transposed matrix, an expanded row and a channels_last image
    a, r, img = torch.randn(5, 7), torch.randn(1, 5), nchw_cl(2, 3, 4, 5)
    check_layout(lambda a, r, img: (a.t() + 1, a.t() * r, r.expand(7, 5) + a.t(), img * 2, img + img[:, :1],
                                    F.gelu(img), img.clamp(-1, 1)), a, r, img)


def test_reductions_with_keepdim_follow_the_input(mode):
    x = torch.randn(2, 32, 64)
    check_layout(lambda x: (heads(x).sum(2, keepdim=True), heads(x).mean(-1, keepdim=True),
                            heads(x).amax(1, keepdim=True), heads(x).sum(1)), x, atol=1e-4, rtol=1e-5)
    img = nchw_cl(2, 6, 5, 4)
    check_layout(lambda t: (t.sum(1, keepdim=True), t.mean((2, 3), keepdim=True), t.var(1, keepdim=True)),
                 img, atol=1e-4, rtol=1e-5)


# channels_last through the layers of a CNN, forward and backward.

def test_conv_pool_norm_interpolate_cat_keep_channels_last(mode):
    torch.manual_seed(0)
    img, w, b = nchw_cl(2, 3, 9, 9), torch.randn(8, 3, 3, 3), torch.randn(8)
    check_layout(lambda x, w, b: F.conv2d(x, w, b, padding=1), img, w, b, atol=1e-4, rtol=1e-4)
    check_layout(lambda x, w: F.conv2d(x, w.contiguous(memory_format=torch.channels_last), stride=2),
                 img.contiguous(), w, atol=1e-4, rtol=1e-4)
    x = nchw_cl(2, 4, 8, 8)
    rm, rv = torch.zeros(4), torch.ones(4)
    check_layout(lambda x: (F.max_pool2d(x, 2), F.avg_pool2d(x, 3, stride=2, padding=1),
                            F.adaptive_avg_pool2d(x, (3, 3)), F.interpolate(x, scale_factor=2, mode="nearest"),
                            F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
                            torch.cat([x, x * 2], 1), torch.cat([x, x], 0)), x, atol=1e-5, rtol=1e-5)
    check_layout(lambda x, rm, rv: (F.batch_norm(x, rm.clone(), rv.clone(), training=True),
                                    F.batch_norm(x, rm, rv, training=False), F.group_norm(x, 2)),
                 x, rm, rv, atol=1e-5, rtol=1e-4)
    vol = torch.randn(2, 3, 4, 5, 6).contiguous(memory_format=torch.channels_last_3d)
    check_layout(lambda v: (F.conv3d(v, v.new_ones(4, 3, 1, 1, 1)), v * 2, F.max_pool3d(v, 2)), vol,
                 atol=1e-4, rtol=1e-5)


def test_channels_last_cnn_gradients_match_cpu(mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    model = model.to(memory_format=torch.channels_last)
    tpu_model = copy.deepcopy(model).to("tpu")
    x = nchw_cl(2, 3, 10, 10)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    model(xc).square().sum().backward()
    tpu_model(xt).square().sum().backward()
    assert xt.grad.stride() == xc.grad.stride()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, atol=1e-4, rtol=1e-4)
    for name, p in tpu_model.named_parameters():
        want = dict(model.named_parameters())[name].grad
        assert p.grad.stride() == want.stride(), name
        torch.testing.assert_close(p.grad.cpu(), want, atol=1e-4, rtol=1e-4)


# *_like, clone and contiguous(memory_format=...)

def test_like_clone_and_memory_format_conversions(mode):
    img, pt, vol = nchw_cl(2, 3, 4, 5), torch.randn(4, 5, 6).permute(2, 0, 1), torch.randn(2, 3, 4, 5, 6)
    check_layout(lambda t: (torch.zeros_like(t), torch.ones_like(t), torch.full_like(t, 7.0), t.clone(),
                            torch.empty_like(t).fill_(1), t.contiguous(), torch.clone(t, memory_format=torch.contiguous_format)),
                 img)
    check_layout(lambda t: (torch.zeros_like(t), t.clone(), torch.ones_like(t, dtype=torch.float64)), pt)
    check_layout(lambda t: (t.contiguous(memory_format=torch.channels_last), t.clone(memory_format=torch.channels_last),
                            t.to(memory_format=torch.channels_last) + 1), img.contiguous())
    check_layout(lambda v: (v.contiguous(memory_format=torch.channels_last_3d),
                            torch.zeros_like(v.contiguous(memory_format=torch.channels_last_3d))), vol)
    shape_only = [torch.randn_like(heads(torch.zeros(2, 32, 64), ).to("tpu")), torch.empty_like(img.to("tpu"))]
    assert shape_only[0].stride() == torch.randn_like(heads(torch.zeros(2, 32, 64))).stride()
    assert shape_only[1].stride() == img.stride()


# The views that broke: they rely on the strides above.

def test_eager_view_after_permuted_elementwise(mode):
    x = torch.randn(2, 32, 64)
    fn = lambda x: (heads(x) * 2.0).transpose(1, 2).view(2, 32, -1)  # noqa: E731
    check_layout(fn, x)


def test_eager_view_of_channels_last_conv(mode):
    conv = nn.Conv2d(3, 16, 3, padding=1)
    img = nchw_cl(2, 3, 8, 8)
    want = conv(img).permute(0, 2, 3, 1).view(2, 16, -1)
    got = conv.to("tpu")(img.to("tpu")).permute(0, 2, 3, 1).view(2, 16, -1)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want.detach(), atol=1e-4, rtol=1e-4)


def test_contiguous_inputs_keep_contiguous_results(mode):
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    got = check_layout(lambda a, b: (a + b, a.sum(0, keepdim=True), F.relu(a)), a, b)
    assert all(g.is_contiguous() for g in got)


def test_compiled_permuted_elementwise_then_reshape():
    res, _ = run("""
fn = lambda x: (x.view(2, 32, 4, 16).transpose(1, 2) * 2.0).transpose(1, 2).contiguous().reshape(2, 32, -1)
x = torch.randn(2, 32, 64)
cf = torch.compile(fn, backend="tpu")
errs = [(cf(x.to("tpu")).cpu() - fn(x)).abs().max().item() for _ in range(2)]
report(errs=errs, **counters())
""")
    assert max(res["errs"]) == 0.0
    assert res["compiled_programs"] >= 1 and res["compiled_fallbacks"] == 0, res


def test_compiled_masked_attention_decoder_block_forward_backward():
    # A decoder block as real models write it: heads split by view + transpose, rotary embeddings on the
    # permuted q and k, a sliding-window causal mask and a padding mask built in the graph.
    res, _ = run("""
torch.manual_seed(0)

def rotate(z):
    a, b = z.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)

class Block(nn.Module):
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.ln, self.qkv, self.proj = h, nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x, attn, window: int = 4):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).split(d, dim=2)
        q, k, v = [z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v)]
        pos = torch.arange(t, device=x.device, dtype=x.dtype)[:, None]
        q, k = q * pos.cos() + rotate(q) * pos.sin(), k * pos.cos() + rotate(k) * pos.sin()
        i = torch.arange(t, device=x.device)
        allowed = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < window)
        mask = allowed[None, None] & attn[:, None, None, :].bool()
        bias = torch.zeros(b, 1, t, t, device=x.device).masked_fill(~mask, float("-inf"))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return x + self.proj(y.transpose(1, 2).reshape(b, t, d))

t = 12
cpu = Block()
dev = Block()
dev.load_state_dict(cpu.state_dict())
dev = dev.to("tpu")
cf = torch.compile(dev, backend="tpu")
out = {}
for name, pad_from in {"sliding": t, "padding": 9}.items():
    x = torch.randn(2, t, 32)
    attn = torch.ones(2, t)
    attn[1, pad_from:] = 0
    cpu.zero_grad()
    want_x = x.clone().requires_grad_()
    want = cpu(want_x, attn)
    want.square().sum().backward()
    errs = []
    for _ in range(2):   # capture, then replay
        dev.zero_grad()
        got_x = x.to("tpu").requires_grad_()
        got = cf(got_x, attn.to("tpu"))
        got.square().sum().backward()
        errs.append(max([(got.detach().cpu() - want.detach()).abs().max().item(),
                         (got_x.grad.cpu() - want_x.grad).abs().max().item()] +
                        [(p.grad.cpu() - q.grad).abs().max().item() for p, q in zip(dev.parameters(), cpu.parameters())]))
    out[name] = max(errs)
report(errs=out, **counters())
""")
    assert all(e < 1e-4 for e in res["errs"].values()), res["errs"]
    assert res["compiled_programs"] >= 2 and res["compiled_replays"] >= 2 and res["compiled_fallbacks"] == 0, res


def test_resize_as_keeps_the_memory_format_asked_for(mode):
    """resize_as_ with preserve_format (and channels_last) gives the template's layout, as on CPU."""
    x = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    for fmt in (torch.preserve_format, torch.channels_last, torch.contiguous_format):
        want = torch.empty(5).resize_as_(x, memory_format=fmt)
        got = torch.empty(5, device="tpu").resize_as_(x.to("tpu"), memory_format=fmt)
        assert got.shape == want.shape and got.stride() == want.stride(), (fmt, got.stride(), want.stride())


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_fft_results_put_transformed_dims_innermost(mode):
    """CPU's FFTs lay the transformed dimensions out innermost even for contiguous inputs; tpu's match."""
    x = torch.randn(5, 10, 7)
    with torch.tpu.mode(mode):
        check_layout(lambda t: torch.fft.fft(t, dim=1), x, atol=1e-4)
        check_layout(lambda t: torch.fft.rfft(t, dim=1), x, atol=1e-4)
        check_layout(lambda t: torch.fft.fftn(t, dim=(0, 1)), x, atol=1e-4)
        check_layout(lambda t: torch.fft.irfft(t, dim=1), torch.fft.rfft(x, dim=1), atol=1e-4)
        check_layout(lambda t: torch.fft.hfft(t, dim=1), x.to(torch.complex64), atol=1e-3)
        for dims in [(0, 1, 2), (1, 0, 2), (2, 0), (0, 2), (1, 0), (2, 1, 0)]:  # real-to-complex, several dims
            check_layout(lambda t: torch.fft.rfftn(t, dim=dims), x, atol=1e-4)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_reflection_and_replication_pads_keep_channels_last(mode):
    """CPU's reflection and replication pads allocate their result in the input's memory format."""
    check_layout(lambda t: F.pad(t, (1, 2, 2, 1), mode=mode), torch.randn(2, 3, 5, 6).to(memory_format=torch.channels_last))
    check_layout(lambda t: F.pad(t, (1, 2, 2, 1, 1, 1), mode=mode),
                 torch.randn(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d))
    check_layout(lambda t: F.pad(t, (1, 2, 2, 1), mode=mode), torch.randn(3, 6, 5).transpose(1, 2))


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4)])
def test_linear_algebra_results_are_column_major_as_on_cpu(shape):
    """CPU's LAPACK-backed results are column-major matrices; tpu's have the same strides."""
    a = torch.randn(*shape, dtype=torch.float64)
    spd = a.mT @ a + torch.eye(shape[-1], dtype=torch.float64)
    # Factors defined up to sign are compared by magnitude.
    check_layout(lambda t: [x.abs() for x in torch.linalg.qr(t)], a)
    check_layout(lambda t: torch.geqrf(t)[0].abs(), a)
    check_layout(lambda t: [x.abs() for x in torch.linalg.svd(t, full_matrices=False)], a)
    check_layout(lambda t: torch.linalg.eigh(t)[1].abs(), spd)
    check_layout(torch.linalg.cholesky, spd)
    check_layout(lambda t: torch.linalg.lu_factor(t)[0], spd)
    check_layout(lambda t: torch.linalg.solve(t, t[..., :2]), spd)
    check_layout(torch.linalg.inv, spd)


def test_nonzero_and_argwhere_are_column_major_as_on_cpu():
    """CPU's nonzero fills the transpose of a (dims, count) buffer: its result's strides are (1, count)."""
    for x in (torch.randn(4, 5) > 0, torch.randn(2, 3, 4) > 0, torch.eye(3) > 0):
        check_layout(torch.nonzero, x)
        check_layout(torch.argwhere, x)


@pytest.mark.parametrize("layout", ["transposed", "permuted", "channels_last", "channels_last_3d"])
def test_batch_norm_result_takes_the_inputs_suggested_format(mode, layout):
    """CPU's batch norm allocates its result in input.suggest_memory_format(): contiguous for a transposed input
    (the meta kernel keeps the transposed strides), channels-last for a channels-last one; so .view() works alike."""
    g = torch.Generator().manual_seed(0)
    if layout == "channels_last_3d":
        x = torch.randn(2, 3, 4, 5, 6, generator=g).to(memory_format=torch.channels_last_3d)
    else:
        x = torch.randn(2, 3, 4, 5, generator=g)
        x = {"transposed": x.transpose(1, 3), "permuted": x.permute(2, 0, 3, 1),
             "channels_last": x.to(memory_format=torch.channels_last)}[layout]
    bn = nn.BatchNorm2d(x.shape[1]) if x.dim() == 4 else nn.BatchNorm3d(x.shape[1])
    tbn = copy.deepcopy(bn).to("tpu")
    for train in (True, False):
        bn.train(train)
        tbn.train(train)
        want, got = bn(x), tbn(x.to("tpu"))
        assert got.stride() == want.stride(), (train, got.stride(), want.stride())
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    f = F.batch_norm(x.to("tpu"), None, None, training=True)
    assert f.stride() == F.batch_norm(x, None, None, training=True).stride()


@pytest.mark.parametrize("case", ["channels_last", "converted", "channels_last_3d", "transpose", "permute3", "size1",
                                  "strided"])
def test_dense_permuted_tensors_read_back_in_memory_order(mode, case):
    """`.cpu()` of a dense tensor in another memory order gives CPU's strides and values; in strict mode the
    tpu tensor that is its whole storage is read from its buffer as it is (no program), and a view that is not
    dense still reads right."""
    g = torch.Generator().manual_seed(3)
    base = {"channels_last": lambda: torch.randn(2, 5, 3, 7, generator=g).to(memory_format=torch.channels_last),
            "channels_last_3d": lambda: torch.randn(2, 3, 4, 3, 5, generator=g).to(memory_format=torch.channels_last_3d),
            "transpose": lambda: torch.randn(9, 11, generator=g).t(),
            "permute3": lambda: torch.randn(3, 4, 5, generator=g).permute(2, 0, 1),
            "size1": lambda: torch.randn(1, 6, 1, generator=g).permute(2, 1, 0),
            "strided": lambda: torch.randn(8, 10, generator=g)[:, ::2],
            "converted": lambda: None}[case]()
    x = base.to("tpu") if case in ("channels_last", "channels_last_3d") else None
    if case == "converted":  # made on tpu: a new storage written in memory order (as model.to(memory_format=...))
        base = torch.randn(4, 6, 3, 5, generator=g)
        x = base.to("tpu").contiguous(memory_format=torch.channels_last)
        base = base.contiguous(memory_format=torch.channels_last)
    if x is None:  # the view is made on tpu, of a storage laid out as the CPU one's base
        t = base._base if base._base is not None else base
        views = {"transpose": lambda v: v.t(), "permute3": lambda v: v.permute(2, 0, 1),
                 "size1": lambda v: v.permute(2, 1, 0), "strided": lambda v: v[:, ::2]}
        x = views[case](t.to("tpu"))
    y = x * 3  # a result in the same memory order
    want_x, want_y = base, base * 3
    torch.tpu.synchronize()
    torch.tpu.reset_metrics()
    # A copy to the host has the strides CPU's copy of the same tensor has (preserve_format). y of size1: CPU's
    # TensorIterator and its meta kernel differ in the stride of a size-1 dimension there.
    for got, want in ((x, want_x), (y, want_y))[:1 if case == "size1" else 2]:
        host, ref = got.cpu(), want.clone()
        assert host.stride() == ref.stride() and torch.equal(host, ref), (host.stride(), ref.stride())
    if mode == "strict" and case in ("channels_last", "converted", "transpose", "size1"):
        assert torch.tpu.metrics()["graphs_compiled"] == 0
