"""The sweep runner (cases.py) records a crash, a hang and a raising case as that case's failure and runs the
rest; the expected-list check fails on an unlisted failure and on a listed case that passes."""

from . import cases, sweep


def test_crash_hang_and_raise_cost_one_case_each(tmp_path):
    ids = ["a", "crash1", "b", "hang1", "c", "raise1", "d"]
    res = cases.run_cases("tests.conformance.selftest_worker", ids, jobs=1, chunk=10, timeout=3,
                          workdir=str(tmp_path))
    assert sorted(res) == sorted(ids)
    assert {c: s for c, (s, _) in res.items()} == {
        "a": "pass", "b": "pass", "c": "pass", "d": "pass", "crash1": "fail", "hang1": "fail", "raise1": "fail"}
    assert "SIGABRT" in res["crash1"][1]
    assert res["hang1"][1].startswith("timeout")
    assert "ValueError: bad case" in res["raise1"][1]


def test_a_slow_worker_start_is_not_a_case_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("SELFTEST_STARTUP_SECONDS", "4")
    res = cases.run_cases("tests.conformance.selftest_worker", ["a", "b"], jobs=1, chunk=10, timeout=2,
                          workdir=str(tmp_path))
    assert res == {"a": ("pass", ""), "b": ("pass", "")}


def test_expected_list_check():
    results = {"x": ("pass", ""), "y": ("fail", "wrong values"), "z": ("fail", "crash"), "w": ("skip", "")}
    rep = sweep.summarize("t", results, {"x": "was broken", "z": "known crash", "gone": "old"}, all_ids=list(results))
    assert (rep["cases"], rep["passed"], rep["excluded"]) == (4, 1, 1)
    assert rep["listed"] == {"known crash": ["z"]}
    assert rep["unlisted"] == ["y"]
    assert rep["fixed"] == ["x", "gone"]
    msg = sweep.failure_message(rep, "expected_t.py")
    assert "y: wrong values" in msg and "remove them" in msg and "  gone" in msg
    clean = sweep.summarize("t", {"z": ("fail", "crash")}, {"z": "known crash"})
    assert sweep.failure_message(clean, "expected_t.py") is None
