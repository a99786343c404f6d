"""In-place ops bump the autograd version counters of what they write, as on CPU, so a backward through a
graph that saved a tensor later changed in place raises instead of using the new values. CPU's in-place
_foreach_ ops bump each tensor of their written list once (an optimizer's step between a forward and its
backward is then an error); its fused optimizers and the AMP unscale do not. tpu's did not bump at all."""
import pytest
import torch
import torch.nn as nn


def _versions(dev):
    out = {}
    ps = [torch.randn(3, device=dev) for _ in range(2)]
    gs = [torch.randn(3, device=dev) for _ in range(2)]
    ops = {
        "add_list": lambda: torch._foreach_add_(ps, gs),
        "add_scalar": lambda: torch._foreach_add_(ps, 1.0),
        "mul_scalarlist": lambda: torch._foreach_mul_(ps, [2.0, 3.0]),
        "addcmul": lambda: torch._foreach_addcmul_(ps, gs, gs, value=0.5),
        "lerp": lambda: torch._foreach_lerp_(ps, gs, 0.5),
        "zero": lambda: torch._foreach_zero_(ps),
        "copy": lambda: torch._foreach_copy_(ps, gs),
        "sqrt": lambda: torch._foreach_sqrt_(ps),
        "out_of_place": lambda: torch._foreach_add(ps, gs),
    }
    for name, op in ops.items():
        before = [p._version for p in ps]
        op()
        out[name] = [p._version - b for p, b in zip(ps, before)]
    steps = [torch.zeros((), device=dev) for _ in range(2)]
    avg, avg_sq = [torch.zeros(3, device=dev) for _ in range(2)], [torch.zeros(3, device=dev) for _ in range(2)]
    before = [p._version for p in ps]
    torch._fused_adam_(ps, gs, avg, avg_sq, [], steps, lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8,
                       amsgrad=False, maximize=False)
    out["fused_adam"] = [p._version - b for p, b in zip(ps, before)]
    with torch.inference_mode():
        before = [p._version for p in ps]
        torch._foreach_add_(ps, 1.0)
        out["inference_mode"] = [p._version - b for p, b in zip(ps, before)]
    return out


def test_foreach_ops_bump_versions_as_on_cpu():
    got, want = _versions("tpu"), _versions("cpu")
    assert got == want, (got, want)
    assert want["add_list"] == [1, 1] and want["out_of_place"] == [0, 0]


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_a_stale_backward_after_an_optimizer_step_raises(mode, opt):
    torch.manual_seed(0)
    model = nn.Linear(3, 1).to("tpu")
    make = {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[opt]
    optimizer = make(model.parameters(), lr=0.1)  # the default foreach step
    x = torch.randn(2, 3).to("tpu")
    model(x).sum().backward()
    stale = (model.weight ** 2).sum()  # saves the weight for its backward
    optimizer.step()
    # Before, tpu backpropagated through the stepped weight's new values without a word.
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        stale.backward()
