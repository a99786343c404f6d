"""Optimizers, gradient clipping and LR schedulers on the device against CPU torch."""
import contextlib

import pytest
import torch

from conftest import no_fallbacks


@contextlib.contextmanager
def in_mode(mode):
    """Runs the body in mode, restores strict, and asserts nothing fell back to CPU."""
    torch.tpu.set_mode(mode)
    torch.tpu.reset_metrics()
    try:
        yield mode
        torch.tpu.synchronize()
    finally:
        torch.tpu.set_mode("strict")
    assert no_fallbacks() == {}, "ops fell back to CPU"


@pytest.fixture
def strict():
    with in_mode("strict") as m:
        yield m


class Square(torch.nn.Module):
    def forward(self, x):
        return x * x


def net():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), Square(), torch.nn.Linear(16, 4))


def mse(a, b):
    return ((a - b) ** 2).mean()


def make_models():
    g = torch.Generator().manual_seed(0)
    cpu = net()
    with torch.no_grad():
        for p in cpu.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    tpu = net().to("tpu")
    tpu.load_state_dict(cpu.state_dict())
    x = torch.randn(32, 8, generator=g)
    y = torch.randn(32, 4, generator=g)
    return cpu, tpu, x, y


def train_step(model, opt, x, y, clip=None):
    opt.zero_grad()
    loss = mse(model(x), y)
    loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()


def assert_state_close(opt_cpu, opt_tpu, cpu, tpu):
    for pc, pt in zip(cpu.parameters(), tpu.parameters()):
        torch.testing.assert_close(pt.detach().cpu(), pc.detach(), atol=1e-5, rtol=1e-4)
        sc, st = opt_cpu.state[pc], opt_tpu.state[pt]
        assert sc.keys() == st.keys()
        for k in sc:
            a, b = sc[k], st[k]
            if isinstance(a, torch.Tensor):
                torch.testing.assert_close(b.cpu().to(a.dtype), a, atol=1e-5, rtol=1e-4)


CONFIGS = [
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-2)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, dampening=0.0)),
    ("SGD", dict(lr=1e-3, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=1e-2)),
]


def run_optimizer(name, kw, path):
    cls = getattr(torch.optim, name)
    opts = {"foreach": dict(foreach=True), "single": dict(foreach=False), "fused": dict(fused=True)}[path]
    cpu, tpu, x, y = make_models()
    oc, ot = cls(cpu.parameters(), **kw, **opts), cls(tpu.parameters(), **kw, **opts)
    xt, yt = x.to("tpu"), y.to("tpu")
    for _ in range(10):
        train_step(cpu, oc, x, y)
        train_step(tpu, ot, xt, yt)
    assert_state_close(oc, ot, cpu, tpu)


@pytest.mark.parametrize("path", ["foreach", "single", "fused"])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_optimizer_matches_cpu(strict, name, kw, path):
    run_optimizer(name, kw, path)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, weight_decay=1e-2)), ("Adam", dict(lr=0.01)),
                                     ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01, maximize=True))])
def test_fused_optimizers_compute_float64_params_in_float64(strict, name, kw):
    """A fused step over float64 params computes in float64, as CPU's and CUDA's kernels do (it computed in
    float32: a zero gradient moved 1 + 1e-10 to 1), on the device (Adagrad's ran on CPU)."""
    torch.tpu.reset_metrics()
    g = torch.Generator().manual_seed(0)
    p0 = torch.cat([torch.tensor([1 + 1e-10, 0.1], dtype=torch.float64), torch.randn(30, generator=g, dtype=torch.float64)])
    grads = [torch.randn(32, generator=g, dtype=torch.float64) * (k > 0) for k in range(4)]
    pc, pt = p0.clone().requires_grad_(), p0.to("tpu").requires_grad_()
    oc = getattr(torch.optim, name)([pc], fused=True, **kw)
    ot = getattr(torch.optim, name)([pt], fused=True, **kw)
    for grad in grads:
        pc.grad, pt.grad = grad.clone(), grad.to("tpu")
        oc.step()
        ot.step()
    torch.testing.assert_close(pt.detach().cpu(), pc.detach(), rtol=1e-14, atol=1e-15)
    for k, v in oc.state[pc].items():
        torch.testing.assert_close(ot.state[pt][k].cpu(), v, rtol=1e-14, atol=1e-15)
    assert not {k: v for k, v in torch.tpu.metrics()["cpu_fallbacks"].items() if v}


@pytest.mark.parametrize("case", [(0, "fused"), (6, "fused")])
def test_optimizer_fused_mode(case):
    """A whole step (forward, backward, optimizer) as one graph."""
    with in_mode("fused"):
        name, kw = CONFIGS[case[0]]
        run_optimizer(name, kw, case[1])


@pytest.mark.parametrize("foreach", [True, False])
def test_clip_grad_norm(strict, foreach):
    cpu, tpu, x, y = make_models()
    for m, xx, yy in ((cpu, x, y), (tpu, x.to("tpu"), y.to("tpu"))):
        mse(m(xx), yy).backward()
    nc = torch.nn.utils.clip_grad_norm_(cpu.parameters(), 0.1, foreach=foreach)
    nt = torch.nn.utils.clip_grad_norm_(tpu.parameters(), 0.1, foreach=foreach)
    torch.testing.assert_close(nt.cpu(), nc)
    for pc, pt in zip(cpu.parameters(), tpu.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad)
    nc = torch.nn.utils.clip_grad_norm_(cpu.parameters(), 1.0, norm_type=float("inf"), foreach=foreach)
    nt = torch.nn.utils.clip_grad_norm_(tpu.parameters(), 1.0, norm_type=float("inf"), foreach=foreach)
    torch.testing.assert_close(nt.cpu(), nc)


def test_zero_grad_keep(strict):
    _, tpu, x, y = make_models()
    opt = torch.optim.SGD(tpu.parameters(), lr=0.1)
    mse(tpu(x.to("tpu")), y.to("tpu")).backward()
    opt.zero_grad(set_to_none=False)
    for p in tpu.parameters():
        assert torch.equal(p.grad.cpu(), torch.zeros(p.shape))
    opt.zero_grad()
    assert all(p.grad is None for p in tpu.parameters())


@pytest.mark.parametrize("sched,fused,mode", [
    ("step", False, "strict"), ("cosine", True, "strict"), ("lambda", False, "strict"), ("cosine", False, "fused"),
])
def test_scheduler_no_recompile(sched, fused, mode):
    with in_mode(mode):
        scheduler_run(sched, fused)


def scheduler_run(sched, fused):
    cpu, tpu, x, y = make_models()
    oc = torch.optim.Adam(cpu.parameters(), lr=0.05, fused=fused)
    ot = torch.optim.Adam(tpu.parameters(), lr=0.05, fused=fused)

    def make(o):
        if sched == "step":
            return torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)
        if sched == "cosine":
            return torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10)
        return torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1.0 / (1 + e))

    sc, st = make(oc), make(ot)
    xt, yt = x.to("tpu"), y.to("tpu")
    compiled = []
    for _ in range(10):
        train_step(cpu, oc, x, y, clip=1.0)
        train_step(tpu, ot, xt, yt, clip=1.0)
        sc.step()
        st.step()
        torch.tpu.synchronize()
        compiled.append(torch.tpu.metrics()["graphs_compiled"])
    assert compiled[-1] == compiled[3], f"recompiled as the learning rate changed: {compiled}"
    assert_state_close(oc, ot, cpu, tpu)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_grad_scaler_with_fused_optimizer(name, mode):
    # GradScaler hands fused optimizers grad_scale and found_inf: gradients are unscaled in place and a step whose
    # gradients overflowed changes nothing; parameters, gradients and state equal CPU's at every step.
    kw = dict(SGD=dict(lr=0.1, momentum=0.9, weight_decay=0.01), Adam=dict(lr=0.05, amsgrad=True),
              AdamW=dict(lr=0.05, weight_decay=0.1, maximize=True), Adagrad=dict(lr=0.1, lr_decay=0.01))[name]
    torch.manual_seed(0)
    cpu = net()
    tpu = net()
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")

    def run(model, dev):
        opt = getattr(torch.optim, name)(model.parameters(), fused=True, **kw)
        scaler = torch.amp.GradScaler(dev, init_scale=1024.0, growth_interval=2)
        torch.manual_seed(1)
        seen = []
        for step in range(6):
            x, y = torch.randn(5, 8), torch.randn(5, 4)
            if step == 3:
                x[0, 0] = float("inf")  # this step's gradients overflow: the scaler skips it
            loss = mse(model(x.to(dev)), y.to(dev))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            seen.append([p.detach().cpu().clone() for p in model.parameters()]
                        + [p.grad.cpu().clone() for p in model.parameters()] + [torch.tensor(scaler.get_scale())])
            opt.zero_grad()
        return seen, opt.state_dict()["state"]

    want, want_state = run(cpu, "cpu")
    with in_mode(mode):
        got, got_state = run(tpu, "tpu")
    assert want[3][-1] == want[2][-1] / 2, "the inf step did not halve the scale"
    for step, (w, g) in enumerate(zip(want, got)):
        for a, b in zip(w, g):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, equal_nan=True, msg=lambda m: f"step {step}: {m}")
    for k in want_state:
        for field, v in want_state[k].items():
            torch.testing.assert_close(got_state[k][field].cpu(), v, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [None, float("inf"), float("nan")])
def test_amp_unscale_and_update_scale_ops(strict, bad):
    # The two GradScaler ops directly, every float dtype, against CPU: values, found_inf, scale and tracker.
    def run(dev):
        torch.manual_seed(0)
        ts = [torch.randn(3, 4, dtype=d) for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64)]
        if bad is not None:
            ts[1][2, 1] = bad
        ts = [t.to(dev) for t in ts]
        found = torch.zeros(1, device=dev)
        torch._amp_foreach_non_finite_check_and_unscale_(ts, found, torch.full((1,), 0.125, device=dev))
        scale, tracker = torch.full((1,), 2.0 ** 20, device=dev), torch.full((1,), 2, dtype=torch.int32, device=dev)
        out = [torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 3)]
        out += [torch._amp_update_scale_(scale, tracker, torch.zeros(1, device=dev), 2.0 ** 120, 0.5, 1)]  # grows past float: kept
        return [t.cpu() for t in ts] + [found.cpu(), scale.cpu(), tracker.cpu()] + [o.cpu() for o in out]
    for a, b in zip(run("cpu"), run("tpu")):
        assert a.dtype == b.dtype
        torch.testing.assert_close(b, a, rtol=0, atol=0, equal_nan=True)
