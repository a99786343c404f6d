"""The case sweeps' runner (op_sweep.py): a worker that crashes or hangs costs one case, recorded as a
failure, and the sweep carries on with the op's other cases and the ops after it; failures are judged
against an expected-failure list."""

import json
import os

import pytest

from . import run
from . import op_sweep as sweep


@pytest.fixture
def two_ops():
    names = run.op_names()
    return run.select(names, "diag,narrow")


def test_a_dead_worker_costs_one_case(two_ops, tmp_path):
    os.environ["CONFORMANCE_CRASH_CASE"] = "narrow/1"
    os.environ["CONFORMANCE_HANG_CASE"] = "narrow/3"
    try:
        results = sweep.sweep("errors", two_ops, jobs=1, timeout=10, workdir=str(tmp_path))
    finally:
        del os.environ["CONFORMANCE_CRASH_CASE"], os.environ["CONFORMANCE_HANG_CASE"]
    by = {r["case"]: r for r in results}
    assert by["narrow/1"]["status"] == "crash" and "signal" in by["narrow/1"]["detail"]
    assert by["narrow/3"]["status"] == "timeout"
    assert {"narrow/0", "narrow/2", "narrow/4", "narrow/8", "diag/0", "diag/1"} <= set(by), sorted(by)
    assert all(r["status"] in ("pass", "excluded") for c, r in by.items() if c not in ("narrow/1", "narrow/3"))


def test_judge_against_the_list():
    results = [dict(case="a/0", op="a", status="pass"), dict(case="a/1", op="a", status="fail"),
               dict(case="a/2", op="a", status="fail"), dict(case="a/3", op="a", status="excluded")]
    expected = {"a/0": "fixed since", "a/1": "known", "a/3": "no longer a case", "a/9": "gone", "b/0": "not run"}
    unlisted, fixed, unknown = sweep.judge(results, expected, {"a"}, complete=True)
    assert [r["case"] for r in unlisted] == ["a/2"]
    assert fixed == ["a/0"]
    assert unknown == ["a/3", "a/9"]
    assert sweep.judge(results, expected, {"a"}, complete=False)[2] == ["a/3"]
    doc = sweep.summary("x", results, expected)
    assert (doc["cases"], doc["passed"]) == (3, 1)
    assert list(doc["failed"]["listed"]) == ["a/1"] and list(doc["failed"]["unlisted"]) == ["a/2"]
    assert doc["excluded"] == {"a/3": ""}


def test_report_reads_both_report_shapes(tmp_path):
    # The op_db sweeps report failures by case (op_sweep.py), the dtype and module sweeps by reason (sweep.py):
    # the table counts both alike.
    from . import sweep_report
    (tmp_path / "dtypes.json").write_text(json.dumps(
        {"sweep": "dtypes", "cases": 4, "passed": 2, "listed": {"ties": ["sort/a"]}, "unlisted": ["x/b"],
         "excluded": 1, "details": {"x/b": "boom"}}))
    (tmp_path / "errors.json").write_text(json.dumps(
        {"sweep": "errors", "cases": 3, "passed": 2, "excluded": {},
         "failed": {"listed": {"amax/1": {"reason": "dims"}}, "unlisted": {}}}))
    text = sweep_report.table(sweep_report.load(str(tmp_path)))
    assert "| dtypes | 4 | 2 | 50.0% | 1 | 1 | 1 |" in text
    assert "| errors | 3 | 2 | 66.7% | 1 | 0 | 0 |" in text
    assert "x/b: fail: boom" in text
