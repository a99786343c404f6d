"""The out= sweep: ops called with a strided, a wrongly sized and a wrongly typed `out` behave on tpu as
on CPU (values, strides, resize warning, exception class).

Cases are built and checked by cases_out.py in worker processes (op_sweep.py); failures must match
expected_out.py. `make test` runs the first sample of the ops in SAMPLE; TORCHTPU_CONFORMANCE=full runs
two samples of every op with supports_out, TORCHTPU_CONFORMANCE_OPS=a,b narrows the run.
"""

import pytest

from . import cases_out
from . import op_sweep as sweep
from .expected_out import EXPECTED

# A fixed sample covering the families with out=: unary and binary elementwise, comparisons, reductions
# with and without indices, scans, matmul, indexing, shape-building ops, sorting, linear algebra, FFT,
# special functions and factories.
SAMPLE = [
    "abs", "exp", "nan_to_num", "round.decimals_3", "add", "div.floor_rounding", "pow", "clamp", "where",
    "addcmul", "eq", "sum", "mean", "amax", "argmax", "max.reduction_with_dim", "aminmax", "cumsum", "mm",
    "addmm", "bmm", "gather", "index_select", "take", "masked_select", "cat", "tril", "narrow_copy",
    "nonzero", "sort", "topk", "linalg.inv", "linalg.solve", "fft.rfft", "softmax", "zeros", "arange",
]


@pytest.fixture(scope="module")
def outcome():
    return sweep.run_sample("out", cases_out.wanted, SAMPLE, EXPECTED)


def test_out_behaves_as_on_cpu(outcome, capsys):
    line, failure = sweep.verdict("out= sweep", "out", *outcome, EXPECTED)
    with capsys.disabled():
        print("\n" + line)
    assert failure is None, failure


def test_expected_reasons():
    assert all(isinstance(v, str) and v.strip() for v in EXPECTED.values())
    assert all(c.count("/") == 2 for c in EXPECTED)
