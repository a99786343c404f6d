"""The error-input sweep: every OpInfo's error inputs, built for tpu, raise on tpu as on CPU.

Cases are built and checked by cases_errors.py in worker processes (op_sweep.py); failures must match
expected_errors.py. `make test` runs the ops in SAMPLE; TORCHTPU_CONFORMANCE=full runs every op with
error inputs, TORCHTPU_CONFORMANCE_OPS=a,b narrows the run.
"""

import pytest

from . import cases_errors, harness, run
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
    names = run.op_names()
    op_db = harness.load_op_db()
    indices = sweep.select(names, lambda i: cases_errors.wanted(op_db[i]), SAMPLE)
    results = sweep.sweep("errors", indices)
    sweep.write_report("errors", results, EXPECTED, {"ops": len(indices)})
    return results, {names[i] for i in indices}


def test_error_inputs_raise_as_on_cpu(outcome, capsys):
    results, ran = outcome
    unlisted, fixed, unknown = sweep.judge(results, EXPECTED, ran)
    cases = [r for r in results if r["status"] != "excluded"]
    with capsys.disabled():
        print(f"\nerror-input sweep: {len(ran)} ops, {sum(r['status'] == 'pass' for r in cases)}/{len(cases)} "
              f"cases pass, {sum(r['case'] in EXPECTED for r in cases if r['status'] != 'pass')} listed, "
              f"{len(results) - len(cases)} excluded")
    assert not (unlisted or fixed or unknown), sweep.failure_message(
        unlisted, fixed, unknown, "tests/conformance/expected_errors.py")


def test_expected_reasons():
    assert all(isinstance(v, str) and v.strip() for v in EXPECTED.values())
    assert all(c.count("/") >= 1 for c in EXPECTED)
