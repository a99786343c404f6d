"""Python numbers an op reads several times: a foreach op's scalar is one program input for all its tensors
(engine/graph.go, opNumber), and a scalar list whose values are equal at one call and differ at the next still
gives each tensor its own value. CPU PyTorch is the reference, in every mode, over several calls so that plans
and step tapes replay."""
import torch

from conftest import to_cpu, to_tpu


def foreach_steps(ts, scalars_per_step):
    for scalars in scalars_per_step:
        torch._foreach_mul_(ts, 1.25)
        torch._foreach_add_(ts, scalars)
        torch._foreach_addcmul_(ts, ts, ts, value=-0.125)
        torch._foreach_lerp_(ts, [t * 0 + 1.0 for t in ts], 0.25)
    return ts


def test_foreach_numbers_equal_then_apart(mode):
    torch.manual_seed(0)
    ref = [torch.randn(5, 3) for _ in range(40)]
    steps = [[0.5] * 40, [0.5] * 40, [0.5 + 0.01 * i for i in range(40)], [0.5] * 40, [-1.0] * 40]
    want = foreach_steps([t.clone() for t in ref], steps)
    got = foreach_steps(to_tpu([t.clone() for t in ref]), steps)
    for g, w in zip(to_cpu(got), want):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)


def test_foreach_scalar_is_one_input_over_many_tensors():
    """Many ops of many tensors with the same number in one fused graph: the values are CPU's (a buffer used
    more than a thousand times as inputs of one launch was once quadratic in the plugin, now it is one
    input per op)."""
    torch.tpu.set_mode("fused")
    try:
        ref = [torch.full((4,), float(i)) for i in range(160)]
        ts = to_tpu([t.clone() for t in ref])
        for _ in range(3):
            for _ in range(8):
                torch._foreach_mul_(ts, 1.0001)
                torch._foreach_mul_(ref, 1.0001)
            torch.tpu.synchronize()
        for g, w in zip(to_cpu(ts), ref):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
