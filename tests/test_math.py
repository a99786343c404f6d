"""Elementwise special functions, binary math ops and pointwise activations against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

from conftest import Draws, check

randn = Draws(0).randn


pytestmark = pytest.mark.usefixtures("fresh_metrics")  # every test: metrics reset, no CPU fallback


# Each entry: (function, domain map applied to the input on CPU first).
UNARY = {
    "lgamma": (torch.lgamma, None), "digamma": (torch.digamma, None), "erfc": (torch.erfc, None),
    "sinh": (torch.sinh, None), "cosh": (torch.cosh, None), "atan": (torch.atan, None),
    "asinh": (torch.asinh, None), "sinc": (torch.sinc, None), "exp2": (torch.exp2, None),
    "frac": (torch.frac, None), "sgn": (torch.sgn, None), "angle": (torch.angle, None),
    "ndtr": (torch.special.ndtr, None), "entr": (torch.special.entr, None),
    "trigamma": (lambda t: torch.polygamma(1, t), None), "polygamma3": (lambda t: torch.polygamma(3, t), None),
    "asin": (torch.asin, torch.tanh), "acos": (torch.acos, torch.tanh),
    "atanh": (torch.atanh, lambda t: t.tanh() * 0.9), "erfinv": (torch.erfinv, torch.tanh),
    "acosh": (torch.acosh, lambda t: t.abs() + 1), "logit": (torch.logit, torch.sigmoid),
    "ndtri": (torch.special.ndtri, torch.sigmoid), "mvlgamma": (lambda t: torch.mvlgamma(t, 3), lambda t: t.abs() + 2),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special(mode, name):
    fn, domain = UNARY[name]
    x = randn(4, 5) * 3
    if domain is not None:
        x = domain(x)
    check(fn, x, atol=1e-4, rtol=1e-4)


def test_signbit_and_int_inputs(mode):
    x = torch.tensor([-1.0, -0.0, 0.0, 2.0, float("nan"), -float("inf")])
    check(torch.signbit, x)
    check(torch.lgamma, torch.arange(1, 6))
    check(torch.sinh, torch.arange(-3, 3))


BINARY = {
    "xlogy": torch.xlogy, "xlog1py": torch.special.xlog1py, "hypot": torch.hypot,
    "copysign": torch.copysign, "logaddexp": torch.logaddexp, "logaddexp2": torch.logaddexp2,
    "fmax": torch.fmax, "fmin": torch.fmin, "nextafter": torch.nextafter,
    "heaviside": torch.heaviside, "floor_divide": torch.floor_divide, "rsub": torch.rsub,
    "zeta": lambda x, y: torch.special.zeta(x.abs() + 1.5, y),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_special(mode, name):
    x, y = randn(4, 5) * 3, randn(5) * 3
    x[0, 0], y[1] = 0.0, float("nan")
    check(BINARY[name], x, y, atol=1e-5, rtol=1e-5)


ACTS = {
    "softplus": lambda t: F.softplus(t, beta=2, threshold=3), "mish": F.mish, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "softshrink": F.softshrink, "hardshrink": F.hardshrink,
    "elu": F.elu, "celu": lambda t: F.celu(t, 0.5), "selu": F.selu, "relu6": F.relu6,
    "hardtanh": lambda t: F.hardtanh(t, -0.5, 2), "leaky_relu": lambda t: F.leaky_relu(t, 0.2),
    "threshold": lambda t: F.threshold(t, 0.3, -2.0), "rrelu": F.rrelu, "logit": lambda t: torch.logit(t, 0.1),
    "prelu": lambda t: F.prelu(t, torch.tensor([0.1, 0.2, 0.3, 0.4], device=t.device)),
    "digamma": torch.digamma, "lgamma": torch.lgamma,
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_grad(mode, name):
    base = randn(3, 4) * 3

    def run(dev):
        x = base.clone().to(dev).requires_grad_()
        if name == "logit":
            y = ACTS[name](x.sigmoid())
        else:
            y = ACTS[name](x)
        y.sum().backward()
        return y.detach().cpu(), x.grad.cpu()

    want, got = run("cpu"), run("tpu")
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_rrelu_training_noise(mode):
    x = randn(64).to("tpu")
    y = F.rrelu(x, 0.1, 0.3, training=True).cpu()
    xc = x.cpu()
    ratio = (y / xc)[xc < 0]
    assert ((ratio >= 0.1) & (ratio <= 0.3)).all()
    assert torch.equal(y[xc > 0], xc[xc > 0])
