"""The error-input sweep: every OpInfo's error inputs, built for tpu, raise on tpu as on CPU.

Cases are built and checked by cases_errors.py in worker processes (op_sweep.py); failures must match
expected_errors.py. `make test` runs the ops in SAMPLE; TORCHTPU_CONFORMANCE=full runs every op with
error inputs, TORCHTPU_CONFORMANCE_OPS=a,b narrows the run.
"""

import pytest

from . import cases_errors
from . import op_sweep as sweep
from .expected_errors import EXPECTED

# A fixed sample covering the families with error inputs: binary elementwise, shape and view ops,
# indexing, reductions, pooling and convolution, losses, FFT, linear algebra, factories.
SAMPLE = [
    "add", "mul", "div.floor_rounding", "atan2", "eq", "clamp_min", "where", "masked_fill", "masked_select",
    "polar", "complex", "diag", "diagonal", "reshape", "view", "narrow", "roll", "cat", "gather",
    "index_select", "index_add", "scatter", "take", "amax", "mean", "kthvalue", "aminmax",
    "nn.functional.conv2d", "nn.functional.max_pool2d", "nn.functional.adaptive_avg_pool2d",
    "nn.functional.group_norm", "native_layer_norm", "nn.functional.embedding", "nn.functional.l1_loss",
    "nn.functional.huber_loss", "fft.fft", "linalg.cross", "dot", "arange", "eye",
]


@pytest.fixture(scope="module")
def outcome():
    return sweep.run_sample("errors", cases_errors.wanted, SAMPLE, EXPECTED)


def test_error_inputs_raise_as_on_cpu(outcome, capsys):
    line, failure = sweep.verdict("error-input sweep", "errors", *outcome, EXPECTED)
    with capsys.disabled():
        print("\n" + line)
    assert failure is None, failure


def test_expected_reasons():
    assert all(isinstance(v, str) and v.strip() for v in EXPECTED.values())
    assert all(c.count("/") >= 1 for c in EXPECTED)
