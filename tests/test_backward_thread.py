"""backward() runs tpu nodes on the thread that calls it (torchtpu._backward_on_caller), as CPU's run:
hooks see the caller's thread, gradients equal CPU's in every mode, through reentrant checkpoints,
across devices and from other threads; TORCHTPU_AUTOGRAD_THREADS=1 keeps the engine's device threads."""
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
import torch.utils.checkpoint as cp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _step(device, reentrant=None):
    """Gradients of a small MLP's loss on device (a checkpointed block with reentrant set) and the
    threads its tensor hooks ran on."""
    torch.manual_seed(0)
    lin1, lin2 = torch.nn.Linear(8, 16).to(device), torch.nn.Linear(16, 4).to(device)
    x = torch.randn(5, 8).to(device).requires_grad_()  # reentrant checkpoints need an input that does
    seen = set()

    def block(h):
        return torch.tanh(lin1(h))

    h = block(x) if reentrant is None else cp.checkpoint(block, x, use_reentrant=reentrant)
    h.register_hook(lambda g: seen.add(threading.get_ident()))
    loss = lin2(h).square().mean()
    loss.backward()
    grads = [p.grad.cpu() for p in (x, *lin1.parameters(), *lin2.parameters())]
    return grads, seen


@pytest.mark.parametrize("reentrant", [None, True, False])
def test_backward_runs_on_the_caller(mode, reentrant):
    grads, seen = _step("tpu", reentrant)
    ref, _ = _step("cpu", reentrant)
    assert seen == {threading.get_ident()}
    for g, r in zip(grads, ref):
        torch.testing.assert_close(g, r, atol=1e-6, rtol=1e-5)


def test_backward_from_another_thread():
    """A thread other than the importing one keeps PyTorch's default (the device thread) and still
    gets CPU's gradients."""
    out = {}

    def run():
        out["grads"], out["seen"] = _step("tpu")

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    assert not t.is_alive()
    ref, _ = _step("cpu")
    assert out["seen"] and t.ident not in out["seen"]
    for g, r in zip(out["grads"], ref):
        torch.testing.assert_close(g, r, atol=1e-6, rtol=1e-5)


SCRIPT = textwrap.dedent("""
    import os, threading, torch
    assert torch.tpu.device_count() == 2
    seen = set()
    a = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 2, requires_grad=True)
    x0 = a.to("tpu:0")
    y1 = (x0.to("tpu:1") @ w.to("tpu:1")).tanh()
    y1.register_hook(lambda g: seen.add(threading.get_ident()))
    (y1.to("tpu:0").square().sum()).backward()
    ra, rw = a.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    (ra @ rw).tanh().square().sum().backward()
    torch.testing.assert_close(a.grad, ra.grad)
    torch.testing.assert_close(w.grad, rw.grad)
    on_caller = seen == {threading.get_ident()}
    print("caller" if on_caller else "device thread", torch._C._is_multithreading_enabled())
""")


@pytest.mark.parametrize("threads", ["", "1"])
def test_backward_across_devices(threads):
    env = dict(os.environ, TORCHTPU_CPU_DEVICE_COUNT="2", TORCHTPU_AUTOGRAD_THREADS=threads)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    want = "device thread True" if threads == "1" else "caller False"
    assert r.stdout.strip().splitlines()[-1] == want, r.stdout
