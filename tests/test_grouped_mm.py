"""torch._grouped_mm (transformers' default mixture-of-experts matmul) against CPU in every mode: its four operand
layouts, gradients, float32 and bfloat16, with the group offsets kept on the device (no host read), so a compiled
graph holding it is one program."""
import pytest
import torch

from conftest import Draws

draws = Draws(0)
randn = draws.randn

pytestmark = pytest.mark.usefixtures("fresh_metrics")

I32 = torch.int32
# (mat_a, mat_b, offs, output shape); CPU wants every stride a multiple of 16 bytes.
LAYOUTS = {
    "2d x 3d, an empty group, rows past the last offset": ((12, 8), (4, 8, 8), [3, 3, 7, 10], (12, 8)),
    "3d x 2d": ((4, 8, 8), (8, 16), [4, 4, 8, 16], (8, 16)),
    "2d x 2d": ((8, 16), (16, 8), [4, 4, 12, 16], (4, 8, 8)),
    "3d x 3d": ((3, 8, 8), (3, 8, 8), None, (3, 8, 8)),
}


def run(device, a, b, offs, grad):
    a = a.detach().to(device).requires_grad_()
    b = b.detach().to(device).requires_grad_()
    out = torch._grouped_mm(a, b, offs=None if offs is None else offs.to(device))
    out.backward(grad.to(device))
    return out.detach().cpu(), a.grad.cpu(), b.grad.cpu(), out.stride()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_grouped_mm_and_its_gradients_match_cpu(mode, layout, dtype):
    sa, sb, offs, so = LAYOUTS[layout]
    a, b, grad = randn(*sa).to(dtype), randn(*sb).to(dtype), randn(*so).to(dtype)
    offs = None if offs is None else torch.tensor(offs, dtype=I32)
    torch.tpu.reset_metrics()
    got = run("tpu", a, b, offs, grad)
    assert torch.tpu.metrics()["device_to_host_transfers"] == 3  # the three results read above, never the offsets
    want = run("cpu", a, b, offs, grad)
    if len(sa) == 2 and len(sb) == 3:  # CPU leaves the rows past the last offset (and their gradient) unwritten
        n = int(offs[-1])
        assert torch.equal(got[0][n:], torch.zeros_like(got[0][n:]))
        got, want = (got[0][:n], got[1][:n], got[2], got[3]), (want[0][:n], want[1][:n], want[2], want[3])
    tol = {"atol": 2e-6, "rtol": 2e-6} if dtype == torch.float32 else {"atol": 0, "rtol": 0}
    for g, w in zip(got[:3], want[:3]):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, **tol)
    assert got[3] == want[3]


def test_compiled_grouped_mm_is_one_program():
    torch._dynamo.reset()
    torch.tpu.reset_metrics()
    a, b, offs = randn(12, 8), randn(4, 8, 8), torch.tensor([3, 3, 7, 10], dtype=I32)
    f = torch.compile(lambda a, b, o: torch._grouped_mm(a, b, offs=o) * 2, backend="tpu")
    for _ in range(2):
        got = f(a.to("tpu"), b.to("tpu"), offs.to("tpu")).cpu()
    m = torch.tpu.metrics()
    assert m["compiled_fallbacks"] == 0, m["compiled_fallback_reasons"]
    assert m["compiled_replays"] >= 1
    torch.testing.assert_close(got[:10], torch._grouped_mm(a, b, offs=offs)[:10] * 2, atol=2e-6, rtol=2e-6)


def test_grouped_mm_refusals_name_the_problem():
    a, b = torch.randn(6, 4, device="tpu"), torch.randn(3, 4, 8, device="tpu")
    with pytest.raises(RuntimeError, match="Offsets tensor not provided"):
        torch._grouped_mm(a, b)
    with pytest.raises(RuntimeError, match="int32"):
        torch._grouped_mm(a, b, offs=torch.tensor([2, 4, 6], device="tpu"))
