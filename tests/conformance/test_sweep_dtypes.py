"""The dtype sweep: OpInfo ops in every dtype CPU supports for them (but float32), tpu against CPU.

See dtype_worker.py for what a case checks. By default a fixed sample of ops (SAMPLE, one or two per family)
runs, 2 samples per case; TORCHTPU_CONFORMANCE=full runs every op, 3 samples per case;
TORCHTPU_CONFORMANCE_CASES="add/*,*/uint8" runs the matching cases. Known failures are listed in
expected_dtypes.py.
"""

from . import cases, dtype_worker, harness, sweep
from .expected_dtypes import EXPECTED

# One or two ops of each family, chosen for the dtypes they take.
SAMPLE = [
    # Elementwise arithmetic, comparison, bitwise, unary math.
    "add", "mul", "div.floor_rounding", "remainder", "neg", "abs", "exp", "sin", "eq", "maximum", "where",
    "bitwise_xor", "clamp", "pow",
    # Reductions and scans.
    "sum", "prod", "amax", "argmax", "cumsum",
    # Sorting, matmul, indexing, shapes, creation.
    "sort", "mm", "index_select", "gather", "cat", "flip", "full_like", "nn.functional.relu",
    # Complex and FFT.
    "fft.fft", "view_as_real",
]


def test_sample_names_exist():
    names = {harness.variant_name(op) for op in harness.load_op_db()}
    assert [n for n in SAMPLE if n not in names] == []


def test_sweep_dtypes():
    op_db = harness.load_op_db()
    all_ids = dtype_worker.case_ids(op_db)
    sample = set(SAMPLE)
    ids = sweep.select(all_ids, lambda c: c.rsplit("/", 1)[0] in sample)
    limit = "3" if sweep.full() else "2"
    results = cases.run_cases("tests.conformance.dtype_worker", ids, ["--limit-samples", limit],
                              jobs=sweep.jobs(), chunk=cases.balanced_chunks(ids, sweep.jobs(), 120))
    msg = sweep.check("dtypes", results, EXPECTED, all_ids, "tests/conformance/expected_dtypes.py")
    assert msg is None, msg
