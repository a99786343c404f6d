"""Random ops are planned like the others: a replayed plan uploads each call's seed.

Every call draws new numbers, torch.manual_seed reproduces a sequence whether its calls ran the rule
or replayed its plan, and the arguments besides the seed still reach the numbers.
"""
import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback

X = torch.linspace(0.5, 2.0, 4096).reshape(64, 64)

DRAWS = {
    "dropout": lambda x: F.dropout(x, 0.3, training=True),
    "uniform_": lambda x: x.clone().uniform_(-2.0, 3.0),
    "normal_": lambda x: x.clone().normal_(1.0, 2.0),
    "normal_tensor_float": lambda x: torch.normal(x, 0.5),
    "bernoulli_p": lambda x: torch.bernoulli(x, 0.4),
    "exponential_": lambda x: x.clone().exponential_(2.0),
    "cauchy_": lambda x: x.clone().cauchy_(0.0, 1.0),
    "log_normal_": lambda x: x.clone().log_normal_(0.0, 0.5),
    "geometric_": lambda x: x.clone().geometric_(0.3),
    "random_to": lambda x: x.to(torch.int64).random_(0, 1000),
    "random_from": lambda x: x.to(torch.int64).random_(-50, 50),
    "randint": lambda x: torch.randint(3, 900, x.shape, device=x.device),
    "randperm": lambda x: torch.randperm(500, device=x.device),
    "rrelu": lambda x: F.rrelu(x - 1.25, training=True),
}
# Factories fill a new storage each call, which strict mode's plans cannot bind (they need buffers).
FACTORIES = {"randint", "randperm"}


def fast_path_hits():
    m = torch.tpu.metrics()
    return m["strict_fast_path_hits"] + m["fused_fast_path_hits"] + m["step_replay_ops"]


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_replayed_random_op_draws_each_calls_seed(mode, name):
    draw, x = DRAWS[name], X.to("tpu")
    torch.manual_seed(5)
    hits = fast_path_hits()
    first = [draw(x).cpu() for _ in range(4)]
    if mode != "debug" and not (mode == "strict" and name in FACTORIES):
        assert fast_path_hits() > hits, f"{name} was never replayed from a plan"
    for a, b in zip(first, first[1:]):
        assert not torch.equal(a, b), f"{name}: two calls drew the same numbers"
    torch.manual_seed(5)
    again = [draw(x).cpu() for _ in range(4)]
    for i, (a, b) in enumerate(zip(first, again)):
        assert torch.equal(a, b), f"{name}: call {i} after manual_seed differs"


def test_replayed_dropout_keeps_its_probability(mode):
    x = torch.ones(256, 256, device="tpu")
    for p in (0.1, 0.1, 0.6, 0.6, 0.1):
        y = F.dropout(x, p, training=True).cpu()
        zeros = (y == 0).double().mean().item()
        assert abs(zeros - p) < 0.01, (p, zeros)
        kept = y[y != 0]
        torch.testing.assert_close(kept, torch.full_like(kept, 1 / (1 - p)))


def test_replayed_uniform_keeps_its_bounds(mode):
    x = torch.empty(10_000, device="tpu")
    for lo, hi in ((0.0, 1.0), (0.0, 1.0), (5.0, 6.0), (5.0, 6.0), (-3.0, -2.5)):
        y = x.uniform_(lo, hi).cpu()
        assert y.min() >= lo and y.max() < hi, (lo, hi)
        assert abs(y.mean().item() - (lo + hi) / 2) < 0.02 * (hi - lo)


def test_dropout_in_a_training_step_matches_the_mask(mode):
    """The gradient of a replayed dropout uses the mask its forward drew."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 32).to("tpu")
    for _ in range(4):
        x = torch.randn(16, 32, device="tpu", requires_grad=True)
        y = F.dropout(lin(x), 0.5, training=True)
        y.sum().backward()
        mask = (y != 0).float().cpu()
        expect = (mask * 2.0) @ lin.weight.detach().cpu()
        torch.testing.assert_close(x.grad.cpu(), expect, rtol=1e-5, atol=1e-5)
