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
