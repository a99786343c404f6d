"""Several tpu devices in one process (TORCHTPU_CPU_DEVICE_COUNT=4), run in a subprocess since the
device count is fixed when the plugin starts: tensors on each device, copies between them, the
current device, per-device pending graphs in fused mode, and PyTorch's refusals."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import torch

    assert torch.tpu.device_count() == 4
    x = torch.arange(12.0).reshape(3, 4)
    on = [x.to(f"tpu:{i}") for i in range(4)]
    for i, t in enumerate(on):
        assert t.device == torch.device("tpu", i)
        y = t * (i + 1) + t.sum()
        assert y.device == t.device
        torch.testing.assert_close(y.cpu(), x * (i + 1) + x.sum())
    # copies between devices, both ways and through views
    moved = on[1].to("tpu:3")
    assert moved.device.index == 3
    torch.testing.assert_close(moved.cpu(), x)
    dst = torch.zeros(3, 4, device="tpu:2")
    dst[1:].copy_(on[0][:2])
    torch.testing.assert_close(dst.cpu(), torch.cat([torch.zeros(1, 4), x[:2]]))
    # the current device: set_device, the context manager, factories
    with torch.tpu.device(2):
        assert torch.tpu.current_device() == 2
        z = torch.ones(2, device="tpu")
        assert z.device.index == 2 and (z + 1).device.index == 2
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(1)
    assert torch.randn(3, device="tpu").device.index == 1
    torch.tpu.set_device(0)
    assert torch.full((2,), 5.0, device="tpu:3").device.index == 3
    # fused mode: each device keeps its own pending graph; interleaved work stays correct
    torch.tpu.set_mode("fused")
    a, b = on[0].clone(), on[1].clone()
    for step in range(3):
        a = a * 2 + 1
        b = b - a.to("tpu:1")
    torch.tpu.synchronize()
    ra, rb = x.clone(), x.clone()
    for step in range(3):
        ra = ra * 2 + 1
        rb = rb - ra
    torch.testing.assert_close(a.cpu(), ra)
    torch.testing.assert_close(b.cpu(), rb)
    torch.tpu.set_mode("strict")
    # a model on another device trains there
    m = torch.nn.Linear(4, 2).to("tpu:3")
    loss = m(on[3]).square().mean()
    loss.backward()
    assert m.weight.grad.device.index == 3
    # refusals
    try:
        on[0] + on[1]
        raise SystemExit("mixing devices was accepted")
    except RuntimeError as e:
        assert "Expected all tensors to be on the same device, but found at least two devices, tpu:0 and tpu:1" in str(e), e
    for bad in (lambda: torch.ones(1, device="tpu:4"), lambda: torch.tpu.set_device(7), lambda: x.to("tpu:9")):
        try:
            bad()
            raise SystemExit("an out-of-range device index was accepted")
        except RuntimeError as e:
            assert "invalid device index" in str(e) and "4 tpu devices" in str(e), e
    print("devices ok")
""")


def test_four_devices_in_one_process():
    env = dict(os.environ, TORCHTPU_CPU_DEVICE_COUNT="4", PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "devices ok" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]


DATA_PARALLEL = textwrap.dedent("""
    import copy

    import torch
    from torch import nn
    from torchtpu.distributed import all_reduce_devices

    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    x, y = torch.randn(32, 6), torch.randn(32, 3)

    # one device, the whole batch
    one = copy.deepcopy(base).to("tpu:0")
    opt = torch.optim.SGD(one.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        nn.functional.mse_loss(one(x.to("tpu:0")), y.to("tpu:0")).backward()
        opt.step()

    # four devices, a quarter each, gradients averaged by one XLA all_reduce per parameter
    reps = [copy.deepcopy(base).to(f"tpu:{d}") for d in range(4)]
    opts = [torch.optim.SGD(r.parameters(), lr=0.1) for r in reps]
    for _ in range(3):
        for d, (r, o) in enumerate(zip(reps, opts)):
            o.zero_grad()
            xs, ys = x[8 * d:8 * (d + 1)].to(f"tpu:{d}"), y[8 * d:8 * (d + 1)].to(f"tpu:{d}")
            nn.functional.mse_loss(r(xs), ys).backward()
        for params in zip(*[r.parameters() for r in reps]):
            all_reduce_devices([p.grad for p in params], op="avg")
        for o in opts:
            o.step()
    for d, r in enumerate(reps):
        for p, q in zip(r.parameters(), one.parameters()):
            assert p.device.index == d
            torch.testing.assert_close(p.detach().cpu(), q.detach().cpu(), rtol=0, atol=1e-5)
    # the reductions, checked by hand
    ts = [torch.arange(4.0, device=f"tpu:{d}") + 4 * d for d in range(4)]
    all_reduce_devices(ts)
    for t in ts:
        torch.testing.assert_close(t.cpu(), torch.tensor([24.0, 28.0, 32.0, 36.0]))
    ts = [torch.full((3,), d + 1, dtype=torch.int64, device=f"tpu:{d}") for d in range(4)]
    all_reduce_devices(ts, op="product")
    assert ts[2].cpu().tolist() == [24, 24, 24]
    ts = [torch.tensor([d, -d], dtype=torch.bfloat16, device=f"tpu:{d}") for d in range(4)]
    all_reduce_devices(ts, op="max")
    assert ts[0].cpu().tolist() == [3.0, 0.0]
    try:
        all_reduce_devices([torch.zeros(2, device="tpu:0"), torch.zeros(3, device="tpu:1")])
        raise SystemExit("mismatched shapes were accepted")
    except ValueError as e:
        assert "tensor 1 is [3]" in str(e), e
    print("data parallel ok")
""")


def test_data_parallel_step_on_four_devices_matches_one():
    env = dict(os.environ, TORCHTPU_CPU_DEVICE_COUNT="4", PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, "-c", DATA_PARALLEL], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "data parallel ok" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
