"""The out= sweep: ops called with a strided, a wrongly sized and a wrongly typed `out` behave on tpu as
on CPU (values, strides, resize warning, exception class).

Cases are built and checked by cases_out.py in worker processes (op_sweep.py); failures must match
expected_out.py. `make test` runs the first sample of the ops in SAMPLE; TORCHTPU_CONFORMANCE=full runs
two samples of every op with supports_out, TORCHTPU_CONFORMANCE_OPS=a,b narrows the run.
"""

import pytest

from . import cases_out, harness, run
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
    names = run.op_names()
    op_db = harness.load_op_db()
    indices = sweep.select(names, lambda i: cases_out.wanted(op_db[i]), SAMPLE)
    results = sweep.sweep("out", indices)
    sweep.write_report("out", results, EXPECTED, {"ops": len(indices)})
    return results, {names[i] for i in indices}


def test_out_behaves_as_on_cpu(outcome, capsys):
    results, ran = outcome
    unlisted, fixed, unknown = sweep.judge(results, EXPECTED, ran)
    cases = [r for r in results if r["status"] != "excluded"]
    with capsys.disabled():
        print(f"\nout= sweep: {len(ran)} ops, {sum(r['status'] == 'pass' for r in cases)}/{len(cases)} "
              f"cases pass, {sum(r['case'] in EXPECTED for r in cases if r['status'] != 'pass')} listed, "
              f"{len(results) - len(cases)} excluded")
    assert not (unlisted or fixed or unknown), sweep.failure_message(
        unlisted, fixed, unknown, "tests/conformance/expected_out.py")


def test_expected_reasons():
    assert all(isinstance(v, str) and v.strip() for v in EXPECTED.values())
    assert all(c.count("/") == 2 for c in EXPECTED)
